// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
// Bench control: the two scheduler raw tracepoints the probes use, with
// programs that return at once. No maps, no agent loop: what attaching
// them costs by itself (tracepoint dispatch on every context switch and
// wakeup of the machine). Built and loaded by ../dispatch-agent.sh.
#include "kernel_types.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("raw_tp/sched_switch")
int dispatch_sched_switch(void *ctx)
{
	return 0;
}

SEC("raw_tp/sched_waking")
int dispatch_sched_waking(void *ctx)
{
	return 0;
}
