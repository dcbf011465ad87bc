// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/* redoctor probes: per-process scheduler, I/O, futex and engine signals.
 *
 * Every program first checks that the event belongs to the target (tgid
 * `target_tgid`, set by the loader; with `follow_children`, any process in
 * `tracked_tgids`: the target and its descendants) and returns at once
 * otherwise.
 * Everything is aggregated in maps; user space reads the maps once per
 * window and takes differences of the cumulative values. Each map is named
 * after the metric it exports.
 */
#include "kernel_types.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Process to observe: set by the loader before the object is loaded. */
const volatile __u32 target_tgid = 0;
/* futex_wait_by_lock records a wait when (random & mask) == 0: one in
 * mask + 1 (a power of two), set by the loader; 0 records every wait. */
const volatile __u32 futex_sample_mask = 31;
/* CLOCK_MONOTONIC ns just before the programs were loaded, set by the
 * loader: a thread started after it is accounted from its birth. */
const volatile __u64 probes_start_ns = 0;
/* thread_sched_slots has thread_slot_mask + 1 entries (a power of two),
 * set by the loader together with the map's size. */
const volatile __u32 thread_slot_mask = 8191; /* THREAD_SLOTS_DEFAULT - 1 */
/* A bench control, set by the loader: the hot programs (scheduler and
 * syscall hooks) return at once, so only their dispatch costs. Read-only
 * data is frozen before the verifier runs, and it removes the branch not
 * taken: either way what is left of the check is one load, from the line
 * that holds target_tgid. */
const volatile bool empty_programs = 0;
/* Set by the loader for a target made of processes (a PostgreSQL cluster:
 * the postmaster and every process it forks): the target is every tgid in
 * tracked_tgids, which sched_process_fork extends. When 0 the check is the
 * single compare with target_tgid: read-only data is frozen before the
 * verifier runs, so the hash lookup is not even in the program. */
const volatile bool follow_children = 0;
/* Set by the loader for a cross-check against BCC's runqlat: the run-queue
 * histogram counts microseconds, not nanoseconds (runqlat's buckets:
 * bucket i = [2^i, 2^(i+1)) us, bucket 0 also < 1 us). Frozen before the
 * verifier runs, so the default keeps no trace of it. */
const volatile bool runq_hist_us = 0;
/* Set by the loader to time run-queue waits from the probes' own clock
 * stamps, as runqlat does (stamped at sched_wakeup/_new or when a runnable
 * thread is switched out, ended when it is switched in), instead of from
 * the kernel's schedstat. The two differ below a few microseconds: after a
 * wakeup that preempts the running thread the kernel skips the next
 * run-queue clock update (rq_clock_skip_update), so schedstat reads such a
 * wait as ~0. Costs two more hooks and a hash update per switch-in of a
 * target thread; frozen before the verifier runs, so the default keeps no
 * trace of it. */
const volatile bool runq_stamps = 0;
/* Set by the loader from the profile (`new_threads`): where the writes of a
 * thread user space has not marked yet count, the background's (1) or the
 * foreground's (0). A server that starts threads on demand while it runs
 * (MariaDB's task pool, whose threads submit the page cleaner's batches)
 * would otherwise count their writes as the foreground's until the next
 * window marks them. */
const volatile bool unmarked_background = 0;

#define HIST_BUCKETS 64
#define READ_BUCKETS 32 /* READ_BUCKETS in maps.rs: 1 ns to 2 s, the last open */
#define MAX_THREADS 16384
#define THREAD_SLOTS_DEFAULT 8192 /* DEFAULT_THREAD_SLOTS in loader.rs */
#define MAX_FDS 4096
#define FD_SLOTS 1024 /* FD_SLOTS in maps.rs */
#define MAX_PAIRS 65536
#define MAX_FUTEX_KEYS 16384 /* FUTEX_KEYS in prune.rs */
#define MAX_TRACKED 16384 /* MAX_TRACKED in loader.rs */
#define MAX_PROC_FDS 8192

/* ---- the target's processes --------------------------------------------- */

/* With follow_children: tgid -> tgid of its parent, for the target and every
 * descendant; filled from /proc by the loader, extended at each fork by a
 * tracked process, an entry removed when its process exits. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TRACKED);
	__type(key, __u32);
	__type(value, __u32);
} tracked_tgids SEC(".maps");

/* Whether process `tgid` is (part of) the target. */
static __always_inline bool tracked(__u32 tgid)
{
	if (!follow_children)
		return tgid == target_tgid;
	return bpf_map_lookup_elem(&tracked_tgids, &tgid) != 0;
}

/* ---- scheduler ---------------------------------------------------------- */

/* Per thread of the target: time on CPU and context switches. */
struct thread_sched {
	__u64 oncpu_ns;     /* ns on CPU (the kernel's sum_exec_runtime), summed over completed slices */
	__u64 voluntary;    /* switched out while blocking (futex, I/O, sleep) */
	__u64 involuntary;  /* switched out while still runnable (preempted, yield) */
	__u64 runq_wait_ns; /* ns spent runnable but waiting for a CPU */
	__u64 task;         /* address of its task_struct, set at its first switch-out:
			     * names the wakee of wakeups_by_pair keys (see wake_pair) */
	char comm[16];      /* thread name, refreshed every COMM_REFRESH-th switch-out */
	__u64 run_delay_ns; /* the kernel's run_delay at its last switch-out */
	__u64 futex_uaddr;  /* futex word it blocked on at its last switch-out; 0 = none */
	__u64 futex_since_ns; /* when it blocked there (run-queue clock) */
	__u32 family;       /* comm_family(comm): the thread's name without digits */
	__u32 tid;          /* owner of a thread_sched_slots entry; 0 = free */
	__u64 futex_wait_ns; /* ns blocked in futex waits (all of them) */
	__u64 futex_waits;   /* such waits */
	__u64 exec_ns;       /* the kernel's sum_exec_runtime at its last switch-out */
	__u64 call_start_ns; /* when the traced syscall it is in began */
	__u32 call_fd;       /* that call's descriptor */
	__u32 call_kind;     /* enum call_kind of that call; 0 = in none */
	__u32 background_writer; /* set by user space: WRITER_BACKGROUND when
				  * the thread runs no transactions (a page
				  * cleaner, a checkpointer, PostgreSQL's
				  * background writer, a task pool), its writes
				  * counted apart; WRITER_FOREGROUND when it
				  * does; 0 until marked */
	__u32 pad;
};

/* The thread name is copied at the first switch-out of a thread and then at
 * every 64th: names are set once at thread start, and copying 16 bytes on
 * every switch is measurable at 200k switches/s. */
#define COMM_REFRESH 64

/* Per-thread state lives in a direct-mapped array, entry `tid & mask`,
 * owned by the thread whose tid it holds: finding it is an inlined array
 * access and a compare, where a hash lookup costs ~55 ns, and this runs at
 * every switch-out. User space maps the array into its memory and scans
 * it once per window; it frees the entries of exited threads (zeroing
 * them, then the owner). A thread whose entry another thread owns goes to
 * the overflow hash below, and stays there for its life. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, THREAD_SLOTS_DEFAULT); /* the loader may resize */
	__type(key, __u32); /* tid & thread_slot_mask */
	__type(value, struct thread_sched);
} thread_sched_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_THREADS);
	__type(key, __u32); /* tid */
	__type(value, struct thread_sched);
} thread_sched_stats SEC(".maps");

/* Run-queue latency histogram: bucket i counts waits w with
 * 2^i <= w_ns < 2^(i+1) (bucket 0 also holds w < 1 ns). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HIST_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} runq_latency_ns_log2 SEC(".maps");

/* With runq_stamps: when each runnable target thread was queued (tid ->
 * ns), removed when it is switched in. runqlat's `start` map. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_THREADS);
	__type(key, __u32);
	__type(value, __u64);
} runq_queued_at_ns SEC(".maps");

/* Wakeups by (waker thread, wakee thread); one side is in the target.
 * When the waker is in the target (nearly every wakeup of a busy server),
 * the wakee is its task_struct's address, which sched_waking has without a
 * memory read; user space names it through thread_sched.task (an address
 * that is no thread of the target is a thread outside it). Otherwise the
 * wakee is `tgid << 32 | tid`, read from its task to filter on the target.
 * Kernel addresses have their top bit set, ids never. */
struct wake_pair {
	__u32 waker_tid;
	__u32 waker_pid; /* tgid of the waker */
	__u64 wakee;     /* task address (waker in the target), else tgid << 32 | tid */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PAIRS);
	__type(key, struct wake_pair);
	__type(value, __u64);
} wakeups_by_pair SEC(".maps");

/* Recent pairs, per CPU, direct-mapped: a wakeup of a pair already in its
 * slot is one add in a small per-CPU array (no hashing, no shared cache
 * line). A pair arriving at an occupied slot moves the old pair's count
 * into wakeups_by_pair first. A pair's total is its count there plus its
 * count in any slot of any CPU. sched_waking runs on the waker's thread,
 * often a log notifier waking dozens of users in a row: its cost is paid on
 * the commit path, which is why it is kept this small. */
#define PAIR_SLOTS 512

struct pair_slot {
	struct wake_pair pair;
	__u64 count;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PAIR_SLOTS);
	__type(key, __u32);
	__type(value, struct pair_slot);
} wakeups_by_pair_recent SEC(".maps");

static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0;
	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r;
}

/* Histogram bucket of `v` (see runq_latency_ns_log2), bounded for the verifier. */
static __always_inline __u32 log2_bucket(__u64 v)
{
	__u32 b = log2_u64(v);
	return b < HIST_BUCKETS ? b : HIST_BUCKETS - 1;
}

static __always_inline void hist_add(void *map, __u64 v)
{
	__u32 b = log2_bucket(v);
	__u64 *slot = bpf_map_lookup_elem(map, &b);
	if (slot)
		*slot += 1;
}

/* The value at `key` in a hash map, inserted as `init` first when absent
 * (a concurrent insert of the same key wins; either way the entry is found).
 * Callers pass a `static const` zero: nothing is built on the stack per event. */
/* Events not recorded because a hash map was full (lookup_or_init found no
 * room): the agent's `lost events`. Only the failure path touches it. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} events_lost_total SEC(".maps");

static __always_inline void *lookup_or_init(void *map, const void *key, const void *init)
{
	void *v = bpf_map_lookup_elem(map, key);
	if (v)
		return v;
	bpf_map_update_elem(map, key, init, BPF_NOEXIST);
	v = bpf_map_lookup_elem(map, key);
	if (!v) {
		__u32 zero_key = 0;
		__u64 *lost = bpf_map_lookup_elem(&events_lost_total, &zero_key);
		if (lost)
			*lost += 1;
	}
	return v;
}

/* `tgid << 32 | pid` of task `t` (the layout of bpf_get_current_pid_tgid),
 * in one memory read when the kernel keeps the two fields adjacent, as every
 * kernel does; the offsets are CO-RE constants fixed at load time. */
static __always_inline __u64 task_ids(struct task_struct *t)
{
	if (bpf_core_field_offset(struct task_struct, tgid) ==
	    bpf_core_field_offset(struct task_struct, pid) + 4) {
		__u64 ids = 0;
		bpf_probe_read_kernel(&ids, sizeof(ids), __builtin_preserve_access_index(&t->pid));
		return ids;
	}
	return (__u64)BPF_CORE_READ(t, tgid) << 32 | (__u32)BPF_CORE_READ(t, pid);
}

/* The state of thread `tid`: its own entry of thread_sched_slots, else
 * its overflow entry, else a free entry of the array claimed now, else a
 * new overflow entry. */
static __always_inline struct thread_sched *thread_stats(__u32 tid)
{
	static const struct thread_sched zero;
	__u32 idx = tid & thread_slot_mask;
	struct thread_sched *s = bpf_map_lookup_elem(&thread_sched_slots, &idx);
	if (!s)
		return 0;
	if (s->tid == tid)
		return s;
	struct thread_sched *o = bpf_map_lookup_elem(&thread_sched_stats, &tid);
	if (o)
		return o;
	/* A free entry is all zero (user space zeroes it before freeing it). */
	if (s->tid == 0 && __sync_val_compare_and_swap(&s->tid, 0, tid) == 0)
		return s;
	return lookup_or_init(&thread_sched_stats, &tid, &zero);
}

/* Futex wait time by (lock address, thread family), for a random sample
 * of 1 wait in futex_sample_mask + 1 (user space scales it back; default
 * 32): a wait array of 2048 slots cycles through 2048 words, so every wait
 * would touch a cold hash entry (~150-200 ns on the commit path; ~50 ns a
 * switch on average at 1 in 8). Each
 * thread's totals are exact (thread_sched). */

/* Keyed by thread family, not thread: a wait array of 2048 slots waited on
 * by 32 users would otherwise need 65536 keys, and a full map makes every
 * new key cost a failed insert. Families (user/N, log_writer, ...) are few
 * and map to roles in user space. */
struct futex_key {
	__u64 uaddr;
	__u32 family;
	__u32 pad;
};

struct futex_wait {
	__u64 wait_ns; /* ns blocked in FUTEX_WAIT / FUTEX_WAIT_BITSET */
	__u64 waits;   /* such calls */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_FUTEX_KEYS);
	__type(key, struct futex_key);
	__type(value, struct futex_wait);
} futex_wait_by_lock SEC(".maps");

#define NR_futex 202
#define FUTEX_CMD_MASK 0x7f /* without FUTEX_PRIVATE_FLAG (128), CLOCK_REALTIME (256) */
#define FUTEX_WAIT 0
#define FUTEX_WAIT_BITSET 9

/* The futex word `task` (current) is blocking on, or 0. Called in sched_switch for
 * a thread that switches out without being runnable, where current is still
 * that thread: its user registers as saved at syscall entry tell the call
 * (orig_ax), the futex word (di) and the operation (si). Futex waits are
 * measured from the scheduler events alone, so no program runs on the
 * futex syscalls themselves, the most frequent syscall of a busy engine. */
static __always_inline __u64 blocked_futex(struct task_struct *task)
{
	/* A BTF pointer: plain loads, checked by the verifier, no helper calls. */
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (regs->orig_ax != NR_futex)
		return 0;
	__u32 op = regs->si & FUTEX_CMD_MASK;
	if (op != FUTEX_WAIT && op != FUTEX_WAIT_BITSET)
		return 0;
	return regs->di;
}

/* Adds one sampled wait of `ns` on futex word `uaddr` by a thread of `family`. */
static __always_inline void futex_wait_add(__u64 uaddr, __u32 family, __u64 ns)
{
	struct futex_key k = { .uaddr = uaddr, .family = family };
	static const struct futex_wait zero;
	struct futex_wait *w = lookup_or_init(&futex_wait_by_lock, &k, &zero);
	if (w) {
		__sync_fetch_and_add(&w->wait_ns, ns);
		__sync_fetch_and_add(&w->waits, 1);
	}
}

/* FNV-1a of a thread name with its ASCII digits left out, so `user/1` and
 * `user/17` are one family (user space computes the same, see maps.rs). */
static __always_inline __u32 comm_family(const char *comm)
{
	__u32 h = 2166136261u;
	for (int i = 0; i < 16; i++) {
		char c = comm[i];
		if (!c)
			break;
		if (c >= '0' && c <= '9')
			continue;
		h = (h ^ (__u8)c) * 16777619u;
	}
	return h;
}

/* Everything is accounted when a thread of the target switches OUT, where
 * it is still `current`: its task is read through a BTF pointer (plain
 * loads), and its state is one inlined array access away. Nothing runs
 * for the thread that switches in, and sched_waking does not touch the
 * thread state.
 *   - on-CPU time: the slice that ends now, from the kernel's own
 *     `se.sum_exec_runtime` (updated just before this tracepoint) as the
 *     difference from the last switch-out;
 *   - run-queue wait: the wait before that slice, from the kernel's own
 *     cumulative `sched_info.run_delay` (enqueue to arrival on a CPU, what
 *     runqlat measures), likewise;
 *   - futex wait: a thread that blocked in FUTEX_WAIT at its last
 *     switch-out (the start of that slice plus its length) waited until
 *     this slice started (`sched_info.last_arrival`, stamped by the kernel
 *     at every switch-in). Both are the run-queue clock, comparable across
 *     CPUs: no clock is read here.
 * The first switch-out seen of a thread only takes the baselines, unless
 * the thread started after the probes were loaded: then they are zero, and
 * its whole life is counted.
 * TP_PROTO(bool preempt, struct task_struct *prev, struct task_struct *next,
 *          unsigned int prev_state) */
/* runq_stamps: the run-queue wait that ends as `next` is switched in, and
 * the one that starts if `prev` (current) stays runnable. */
static __always_inline void runq_stamp_switch(struct bpf_raw_tracepoint_args *ctx, __u64 cur)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 prev_state = ctx->args[3];
	if (prev_state == 0 && tracked((__u32)(cur >> 32))) {
		__u32 tid = (__u32)cur;
		bpf_map_update_elem(&runq_queued_at_ns, &tid, &now, BPF_ANY);
	}
	__u64 next = task_ids((struct task_struct *)ctx->args[2]);
	if (!tracked((__u32)(next >> 32)))
		return;
	__u32 next_tid = (__u32)next;
	__u64 *at = bpf_map_lookup_elem(&runq_queued_at_ns, &next_tid);
	if (!at)
		return;
	__u64 wait = now - *at;
	bpf_map_delete_elem(&runq_queued_at_ns, &next_tid);
	hist_add(&runq_latency_ns_log2, runq_hist_us ? wait / 1000 : wait);
}

/* runq_stamps: a target thread woken (put on a run queue) is stamped.
 * TP_PROTO(struct task_struct *p) */
static __always_inline int runq_stamp_wakeup(struct bpf_raw_tracepoint_args *ctx)
{
	if (!runq_stamps)
		return 0;
	__u64 ids = task_ids((struct task_struct *)ctx->args[0]);
	if (!tracked((__u32)(ids >> 32)))
		return 0;
	__u32 tid = (__u32)ids;
	__u64 now = bpf_ktime_get_ns();
	bpf_map_update_elem(&runq_queued_at_ns, &tid, &now, BPF_ANY);
	return 0;
}

SEC("raw_tp/sched_wakeup")
int runq_wakeup(struct bpf_raw_tracepoint_args *ctx)
{
	return runq_stamp_wakeup(ctx);
}

SEC("raw_tp/sched_wakeup_new")
int runq_wakeup_new(struct bpf_raw_tracepoint_args *ctx)
{
	return runq_stamp_wakeup(ctx);
}

SEC("raw_tp/sched_switch")
int sched_switch(struct bpf_raw_tracepoint_args *ctx)
{
	if (empty_programs)
		return 0;
	/* `prev` is still `current` here: its ids come without a memory read. */
	__u64 cur = bpf_get_current_pid_tgid();
	if (runq_stamps)
		runq_stamp_switch(ctx, cur);
	if (!tracked((__u32)(cur >> 32)))
		return 0;
	__u32 tid = (__u32)cur;
	struct thread_sched *s = thread_stats(tid);
	if (!s)
		return 0;
	bool preempt = ctx->args[0];
	__u32 state = ctx->args[3];
	bool still_runnable = preempt || state == 0;
	/* A BTF pointer: plain loads, checked by the verifier, no helper calls. */
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 exec = task->se.sum_exec_runtime;
	__u64 run_delay = task->sched_info.run_delay;
	__u64 seen = s->voluntary + s->involuntary;
	if (seen % COMM_REFRESH == 0) {
		/* Names of short-lived threads outlive them here. */
		bpf_get_current_comm(s->comm, sizeof(s->comm));
		s->family = comm_family(s->comm);
		s->task = bpf_get_current_task();
	}
	/* Born before the probes: the first switch-out only takes the baselines. */
	bool baseline_only = 0;
	if (seen == 0)
		baseline_only = task->start_time < probes_start_ns;
	if (baseline_only) {
		s->exec_ns = exec;
		s->run_delay_ns = run_delay;
	}
	__u64 slice = exec - s->exec_ns;
	__u64 wait = run_delay - s->run_delay_ns;
	s->exec_ns = exec;
	s->run_delay_ns = run_delay;
	s->oncpu_ns += slice;
	if (!baseline_only) {
		s->runq_wait_ns += wait;
		if (!runq_stamps)
			hist_add(&runq_latency_ns_log2, runq_hist_us ? wait / 1000 : wait);
	}
	/* When this slice began, on the run-queue clock (the kernel stamps
	 * it at every switch-in): no clock read here. */
	__u64 arrived = task->sched_info.last_arrival;
	if (s->futex_uaddr) {
		/* Blocked from switch-out to switch-in, as futexctn counts the
		 * wait syscall (run-queue wait included). */
		__u64 since = s->futex_since_ns;
		__u64 ns = arrived > since ? arrived - since : 0;
		s->futex_wait_ns += ns;
		s->futex_waits += 1;
		if ((bpf_get_prandom_u32() & futex_sample_mask) == 0)
			futex_wait_add(s->futex_uaddr, s->family, ns);
		s->futex_uaddr = 0;
	}
	if (still_runnable) {
		s->involuntary += 1;
	} else {
		s->voluntary += 1;
		__u64 uaddr = blocked_futex(task);
		if (uaddr) {
			s->futex_uaddr = uaddr;
			/* Switching out now: the slice's start plus its length. */
			s->futex_since_ns = arrived + slice;
		}
	}
	return 0;
}

/* TP_PROTO(struct task_struct *p); runs in the waker's context. */
SEC("raw_tp/sched_waking")
int sched_waking(struct bpf_raw_tracepoint_args *ctx)
{
	if (empty_programs)
		return 0;
	__u64 cur = bpf_get_current_pid_tgid();
	__u32 waker_pid = cur >> 32;
	__u64 wakee = ctx->args[0];
	if (!tracked(waker_pid)) {
		wakee = task_ids((struct task_struct *)wakee);
		if (!tracked((__u32)(wakee >> 32)))
			return 0;
	}

	struct wake_pair key = {
		.waker_tid = (__u32)cur,
		.waker_pid = waker_pid,
		.wakee = wakee,
	};
	/* Task structs are cache-line aligned: fold the address's higher bits in. */
	__u32 idx = (key.waker_tid * 2654435761u ^ (__u32)(wakee ^ (wakee >> 6) ^ (wakee >> 32))) %
		    PAIR_SLOTS;
	struct pair_slot *slot = bpf_map_lookup_elem(&wakeups_by_pair_recent, &idx);
	if (!slot)
		return 0;
	/* Per CPU, and a nested run on this CPU is refused by the kernel: no
	 * atomics on the slot. */
	if (slot->pair.wakee == key.wakee && slot->pair.waker_tid == key.waker_tid &&
	    slot->pair.waker_pid == key.waker_pid) {
		slot->count += 1;
		return 0;
	}
	if (slot->count) {
		static const __u64 none;
		__u64 *n = lookup_or_init(&wakeups_by_pair, &slot->pair, &none);
		if (n)
			__sync_fetch_and_add(n, slot->count);
	}
	slot->pair = key;
	slot->count = 1;
	return 0;
}

/* ---- syscalls: writes, fsyncs and positional reads ----------------------- */

/* Per file descriptor of the target; user space maps fd -> path -> kind. */
struct fd_io {
	/* write/pwrite64/writev/pwritev(2) calls that returned >= 0, by threads
	 * not marked background writers, and the bytes they wrote; the
	 * background writers' are the last two fields. A write counts in one
	 * pair only, so a read of the entry that a write races (user space
	 * reads it field by field) moves the write to the next window, never
	 * to the other pair. */
	__u64 foreground_write_calls;
	__u64 foreground_write_bytes;
	__u64 fsync_calls;  /* fsync + fdatasync calls (any result) */
	__u64 fsync_ns;     /* ns spent inside them */
	__u64 fsync_ns_log2[HIST_BUCKETS]; /* their latency histogram */
	__u64 fdatasync_calls; /* of fsync_calls, the fdatasync ones */
	__u64 read_calls;   /* pread64/preadv/preadv2(2) calls that returned >= 0 */
	__u64 read_bytes;   /* bytes they read */
	__u64 read_ns;      /* ns spent inside them */
	__u64 read_ns_log2[READ_BUCKETS]; /* their latency histogram */
	__u64 background_write_calls; /* the writes by a thread user space
				       * marked a background writer */
	__u64 background_write_bytes; /* the bytes they wrote */
};

/* Descriptors below FD_SLOTS (where a server opens its log files) are
 * entries of an array indexed by the descriptor, mapped by user space like
 * thread_sched_slots; higher ones go to the hash. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, FD_SLOTS);
	__type(key, __u32); /* fd */
	__type(value, struct fd_io);
} io_by_fd_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_FDS);
	__type(key, __u32);
	__type(value, struct fd_io);
} io_by_fd SEC(".maps");

/* With follow_children, descriptors are per process and per file:
 * (tgid, fd, the file's device and inode at the call). A descriptor number
 * names many files over a process's life (PostgreSQL closes a WAL segment,
 * zero-fills the next one as pg_wal/xlogtemp.PID and reopens the renamed
 * segment, all on one descriptor number); keyed by the file, each count
 * stays with its file, which user space names by its inode from /proc,
 * not by whatever the number names at the window's end. */
struct proc_fd {
	__u32 tgid;
	__u32 fd;
	__u64 ino;
	__u32 dev;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PROC_FDS);
	__type(key, struct proc_fd);
	__type(value, struct fd_io);
} io_by_proc_fd SEC(".maps");

/* What a traced syscall is (thread_sched.call_kind holds CALL_FSYNC for a
 * thread inside an fsync, CALL_READ inside a positional read: only those
 * are timed, so only they need their entry seen; a write is counted at its
 * exit alone). Positional reads are file reads (a page read on a miss of
 * the buffer pool); plain read(2) is left out, as sockets and pipes use it. */
enum call_kind { CALL_WRITE = 1, CALL_FSYNC = 2, CALL_FDATASYNC = 3, CALL_READ = 4 };

/* Fills in the device and inode of the file descriptor `k->fd` of the
 * current process names now (left 0 when it names none). */
static __always_inline void fd_file(struct proc_fd *k)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	if (!fdt || k->fd >= BPF_CORE_READ(fdt, max_fds))
		return;
	struct file **fds = BPF_CORE_READ(fdt, fd);
	struct file *f = 0;
	bpf_probe_read_kernel(&f, sizeof(f), &fds[k->fd]);
	if (!f)
		return;
	struct inode *inode = BPF_CORE_READ(f, f_inode);
	if (!inode)
		return;
	k->ino = BPF_CORE_READ(inode, i_ino);
	k->dev = BPF_CORE_READ(inode, i_sb, s_dev);
}

/* The key of descriptor `fd` of the current process: the descriptor, and
 * with follow_children the process and the file it names now. */
static __always_inline void fd_key(__u32 fd, struct proc_fd *k)
{
	k->tgid = bpf_get_current_pid_tgid() >> 32;
	k->fd = fd;
	k->ino = 0;
	k->dev = 0;
	k->pad = 0;
	if (follow_children)
		fd_file(k);
}

/* The totals kept under key `k` (from fd_key, in any context: a ring's
 * completion may run in another process). */
static __always_inline struct fd_io *fd_stats_of(struct proc_fd *k)
{
	static const struct fd_io zero;
	if (follow_children)
		return lookup_or_init(&io_by_proc_fd, k, &zero);
	__u32 fd = k->fd;
	if (fd < FD_SLOTS)
		return bpf_map_lookup_elem(&io_by_fd_slots, &fd);
	return lookup_or_init(&io_by_fd, &fd, &zero);
}

/* The totals of descriptor `fd` of the current process (with
 * follow_children: of the file it names now). */
static __always_inline struct fd_io *fd_stats(__u32 fd)
{
	struct proc_fd k;
	fd_key(fd, &k);
	return fd_stats_of(&k);
}

/* x86-64 syscall numbers. */
#define NR_write 1
#define NR_pread64 17
#define NR_pwrite64 18
#define NR_writev 20
#define NR_fsync 74
#define NR_fdatasync 75
#define NR_preadv 295
#define NR_pwritev 296
#define NR_preadv2 327
#define NR_pwritev2 328

/* Which traced call syscall `id` is, or 0. */
static __always_inline __u32 call_kind_of(long id)
{
	switch (id) {
	case NR_write:
	case NR_pwrite64:
	case NR_writev:
	case NR_pwritev:
	case NR_pwritev2:
		return CALL_WRITE;
	case NR_fsync:
	case NR_fdatasync:
		return CALL_FSYNC;
	case NR_pread64:
	case NR_preadv:
	case NR_preadv2:
		return CALL_READ;
	default:
		return 0;
	}
}

/* A timed call starts (an fsync, fdatasync when `nr` is NR_fdatasync, or a
 * positional read when `kind` is CALL_READ): note in the thread's entry
 * when, and on which descriptor. */
static __always_inline void timed_enter(__u32 tid, __u64 fd, long nr, __u32 kind)
{
	struct thread_sched *t = thread_stats(tid);
	if (!t)
		return;
	t->call_start_ns = bpf_ktime_get_ns();
	t->call_fd = fd;
	t->call_kind = kind == CALL_READ ? CALL_READ
		       : nr == NR_fdatasync ? CALL_FDATASYNC : CALL_FSYNC;
}

/* A read of `bytes` that took `ns` joins the totals `s`. */
static __always_inline void count_read(struct fd_io *s, __s64 bytes, __u64 ns)
{
	__u32 b = log2_bucket(ns);
	if (b >= READ_BUCKETS)
		b = READ_BUCKETS - 1;
	__sync_fetch_and_add(&s->read_calls, 1);
	__sync_fetch_and_add(&s->read_bytes, bytes);
	__sync_fetch_and_add(&s->read_ns, ns);
	__sync_fetch_and_add(&s->read_ns_log2[b & (READ_BUCKETS - 1)], 1);
}

/* A write of `bytes` joins the totals `s` of its writer's kind. */
static __always_inline void count_write(struct fd_io *s, __s64 bytes, bool background)
{
	if (background) {
		__sync_fetch_and_add(&s->background_write_calls, 1);
		__sync_fetch_and_add(&s->background_write_bytes, bytes);
	} else {
		__sync_fetch_and_add(&s->foreground_write_calls, 1);
		__sync_fetch_and_add(&s->foreground_write_bytes, bytes);
	}
}

/* A timed call returns `ret`: add it to its descriptor's totals (a read
 * only when it succeeded; an fsync whatever its result). */
static __always_inline void timed_exit(__u32 tid, __s64 ret)
{
	struct thread_sched *t = thread_stats(tid);
	if (!t)
		return;
	__u32 kind = t->call_kind;
	if (kind != CALL_FSYNC && kind != CALL_FDATASYNC && kind != CALL_READ)
		return;
	__u32 fd = t->call_fd;
	t->call_kind = 0;
	__u64 ns = bpf_ktime_get_ns() - t->call_start_ns;
	if (kind == CALL_READ && ret < 0)
		return;
	struct fd_io *s = fd_stats(fd);
	if (!s)
		return;
	if (kind == CALL_READ) {
		count_read(s, ret, ns);
		return;
	}
	__sync_fetch_and_add(&s->fsync_calls, 1);
	__sync_fetch_and_add(&s->fsync_ns, ns);
	__sync_fetch_and_add(&s->fsync_ns_log2[log2_bucket(ns)], 1);
	if (kind == CALL_FDATASYNC)
		__sync_fetch_and_add(&s->fdatasync_calls, 1);
}

/* The current thread's user registers as saved at syscall entry (the
 * kernel does not change them before the exit), through a BTF pointer:
 * plain loads, checked by the verifier. */
static __always_inline struct pt_regs *current_user_regs(void)
{
	return (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
}

#define WRITER_FOREGROUND 1 /* WRITER_FOREGROUND in maps.rs */
#define WRITER_BACKGROUND 2 /* WRITER_BACKGROUND in maps.rs */

/* Whether thread `tid`'s writes count as the background's: as user space
 * marked it, else (not marked yet, or in the overflow hash, which user
 * space does not mark) as the profile says for unmarked threads. Only its
 * own entry of thread_sched_slots is looked at (an array access and a
 * compare). */
static __always_inline bool background_writer(__u32 tid)
{
	__u32 idx = tid & thread_slot_mask;
	struct thread_sched *t = bpf_map_lookup_elem(&thread_sched_slots, &idx);
	__u32 mark = t && t->tid == tid ? t->background_writer : 0;
	if (mark == WRITER_BACKGROUND)
		return 1;
	if (mark == WRITER_FOREGROUND)
		return 0;
	return unmarked_background;
}

/* A write on descriptor `fd` (its first argument, still in the saved user
 * registers, so no entry program is needed) by thread `tid` returns `ret`. */
static __always_inline void write_exit(__u32 tid, __u64 fd, __s64 ret)
{
	if (ret < 0)
		return;
	struct fd_io *s = fd_stats(fd);
	if (!s)
		return;
	count_write(s, ret, background_writer(tid));
}

/* Two ways to see the traced syscalls; the loader attaches one pair.
 *
 * Per-syscall tracepoints (syscalls/sys_enter_fdatasync, ...), the default:
 * the kernel runs a program only for the syscalls it is attached to, after
 * a bit test, so the other syscalls (futex above all: ~360k/s against ~26k
 * writes and fsyncs in the busiest scenario) run no BPF at all. Each
 * traced call pays ~200 ns more for the record the kernel builds. They need
 * tracefs (for the event ids) and a kernel with CONFIG_FTRACE_SYSCALLS.
 *
 * Raw sys_enter/sys_exit, the fallback: no tracefs needed, but one program
 * run for every syscall of every process, which returns after the tgid and
 * syscall-number checks for the untraced ones. */

/* The record of a syscalls/sys_enter_* event (see its tracefs format). */
struct syscall_enter_rec {
	__u64 common;   /* common_type, common_flags, common_preempt_count, common_pid */
	__s32 nr;       /* __syscall_nr */
	__u32 pad;
	__u64 args[6];  /* the call's arguments; the first is the descriptor here */
};

/* The record of a syscalls/sys_exit_* event. */
struct syscall_exit_rec {
	__u64 common;
	__s32 nr;
	__u32 pad;
	__s64 ret;
};

/* Attached to sys_enter_{fsync,fdatasync} (and the positional reads when
 * writes are traced): only timed calls need their start. */
SEC("tracepoint/syscalls/sys_enter_fdatasync")
int sys_enter_traced(struct syscall_enter_rec *ctx)
{
	if (empty_programs)
		return 0;
	__u64 cur = bpf_get_current_pid_tgid();
	if (!tracked((__u32)(cur >> 32)))
		return 0;
	__u32 kind = call_kind_of(ctx->nr);
	if (kind == CALL_FSYNC || kind == CALL_READ)
		timed_enter((__u32)cur, ctx->args[0], ctx->nr, kind);
	return 0;
}

/* Attached to sys_exit_{write,pwrite64,writev,pwritev,pwritev2,fsync,fdatasync}
 * (and pread64, preadv, preadv2 when writes are traced). */
SEC("tracepoint/syscalls/sys_exit_fdatasync")
int sys_exit_traced(struct syscall_exit_rec *ctx)
{
	if (empty_programs)
		return 0;
	__u64 cur = bpf_get_current_pid_tgid();
	if (!tracked((__u32)(cur >> 32)))
		return 0;
	__u32 kind = call_kind_of(ctx->nr);
	if (kind == CALL_WRITE)
		write_exit((__u32)cur, current_user_regs()->di, ctx->ret);
	else if (kind == CALL_FSYNC || kind == CALL_READ)
		timed_exit((__u32)cur, ctx->ret);
	return 0;
}

/* TP_PROTO(struct pt_regs *regs, long id) */
SEC("raw_tp/sys_enter")
int sys_enter(struct bpf_raw_tracepoint_args *ctx)
{
	if (empty_programs)
		return 0;
	__u64 cur = bpf_get_current_pid_tgid();
	if (!tracked((__u32)(cur >> 32)))
		return 0;
	long nr = ctx->args[1];
	__u32 kind = call_kind_of(nr);
	if (kind != CALL_FSYNC && kind != CALL_READ)
		return 0;
	struct pt_regs *regs = (struct pt_regs *)ctx->args[0];
	timed_enter((__u32)cur, BPF_CORE_READ(regs, di), nr, kind);
	return 0;
}

/* TP_PROTO(struct pt_regs *regs, long ret) */
SEC("raw_tp/sys_exit")
int sys_exit(struct bpf_raw_tracepoint_args *ctx)
{
	if (empty_programs)
		return 0;
	__u64 cur = bpf_get_current_pid_tgid();
	if (!tracked((__u32)(cur >> 32)))
		return 0;
	/* The same registers as args[0], but through a BTF pointer: a plain load. */
	struct pt_regs *regs = current_user_regs();
	__u32 kind = call_kind_of(regs->orig_ax);
	if (kind == CALL_WRITE)
		write_exit((__u32)cur, regs->di, ctx->args[1]);
	else if (kind == CALL_FSYNC || kind == CALL_READ)
		timed_exit((__u32)cur, ctx->args[1]);
	return 0;
}

/* ---- io_uring: reads and writes submitted through a ring ---------------
 *
 * A server with native asynchronous IO (MariaDB's InnoDB on liburing) writes
 * and reads its pages through an io_uring, not through write and pread
 * syscalls. A request is followed by its address from submission (the
 * submitting thread, so a background writer's requests are counted apart,
 * and the time) through the lookup of its file (the descriptor, resolved
 * in the process: the submitter or one of its io-wq workers, which share
 * its descriptor table) to its completion (the bytes, in whatever context
 * the completion runs), where it joins its file's totals like a write or a
 * positional read syscall. A request on a registered (fixed) file never
 * looks its descriptor up and is not counted. The records are the
 * tracepoints' (tracefs formats checked by the loader). */

/* IORING_OP_* of include/uapi/linux/io_uring.h. */
#define RING_OP_READV 1
#define RING_OP_WRITEV 2
#define RING_OP_READ_FIXED 4
#define RING_OP_WRITE_FIXED 5
#define RING_OP_READ 22
#define RING_OP_WRITE 23
#define RING_INFLIGHT 8192

struct ring_req {
	__u64 start_ns;      /* submitted at */
	__u32 kind;          /* CALL_WRITE or CALL_READ */
	__u32 background;    /* submitted by a marked background writer */
	__u32 has_file;      /* its descriptor was looked up */
	__u32 pad;
	struct proc_fd file; /* fd_key of that descriptor */
};

/* Requests in flight by address (an LRU: a request whose completion is
 * never posted, IOSQE_CQE_SKIP_SUCCESS, ages out). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, RING_INFLIGHT);
	__type(key, __u64);
	__type(value, struct ring_req);
} ring_inflight SEC(".maps");

/* io_uring/io_uring_submit_req: ctx, req, user_data, opcode (u8), ... */
struct ring_submit_rec {
	__u64 common;
	__u64 ctx;
	__u64 req;
	__u64 user_data;
	__u8 opcode;
};

/* io_uring/io_uring_file_get: ctx, req, user_data, fd */
struct ring_file_rec {
	__u64 common;
	__u64 ctx;
	__u64 req;
	__u64 user_data;
	__s32 fd;
};

/* io_uring/io_uring_complete: ctx, req, user_data, res, ... */
struct ring_complete_rec {
	__u64 common;
	__u64 ctx;
	__u64 req;
	__u64 user_data;
	__s32 res;
};

static __always_inline __u32 ring_kind(__u8 op)
{
	switch (op) {
	case RING_OP_WRITEV:
	case RING_OP_WRITE_FIXED:
	case RING_OP_WRITE:
		return CALL_WRITE;
	case RING_OP_READV:
	case RING_OP_READ_FIXED:
	case RING_OP_READ:
		return CALL_READ;
	default:
		return 0;
	}
}

SEC("tracepoint/io_uring/io_uring_submit_req")
int ring_submit(struct ring_submit_rec *ctx)
{
	if (empty_programs)
		return 0;
	__u64 cur = bpf_get_current_pid_tgid();
	if (!tracked((__u32)(cur >> 32)))
		return 0;
	__u32 kind = ring_kind(ctx->opcode);
	if (!kind)
		return 0;
	struct ring_req r = {
		.start_ns = bpf_ktime_get_ns(),
		.kind = kind,
		.background = background_writer((__u32)cur),
	};
	__u64 req = ctx->req;
	bpf_map_update_elem(&ring_inflight, &req, &r, BPF_ANY);
	return 0;
}

SEC("tracepoint/io_uring/io_uring_file_get")
int ring_file_get(struct ring_file_rec *ctx)
{
	if (empty_programs)
		return 0;
	__u64 req = ctx->req;
	struct ring_req *r = bpf_map_lookup_elem(&ring_inflight, &req);
	if (!r || r->has_file || ctx->fd < 0)
		return 0;
	fd_key((__u32)ctx->fd, &r->file);
	r->has_file = 1;
	return 0;
}

SEC("tracepoint/io_uring/io_uring_complete")
int ring_complete(struct ring_complete_rec *ctx)
{
	if (empty_programs)
		return 0;
	__u64 req = ctx->req;
	struct ring_req *p = bpf_map_lookup_elem(&ring_inflight, &req);
	if (!p)
		return 0;
	struct ring_req r = *p;
	bpf_map_delete_elem(&ring_inflight, &req);
	__s64 res = ctx->res;
	if (!r.has_file || res < 0)
		return 0;
	struct fd_io *s = fd_stats_of(&r.file);
	if (!s)
		return 0;
	if (r.kind == CALL_WRITE)
		count_write(s, res, r.background);
	else
		count_read(s, res, bpf_ktime_get_ns() - r.start_ns);
	return 0;
}

/* ---- engine probe points (uprobes) -------------------------------------- */

/* Slot per probe point (see engine/PROBES.md): hits, and the sum of one
 * argument (`sum`), and the last value of another (`last`). */
enum engine_point {
	EP_LOG_WRITE = 0,       /* sum: redo bytes (to - from) */
	EP_LOG_FLUSH = 1,       /* sum: fdatasync ns */
	EP_FLUSH_NOTIFIED = 2,  /* sum: waiters woken */
	EP_MODE_SWITCH = 3,     /* last: new mode */
	EP_CHECKPOINT = 4,      /* sum: image bytes */
	EP_FAIL_STOP = 5,       /* last: errno */
	EP_COUNTERS_TICK = 6,   /* last: cumulative commits, last_b: redo bytes; sum: first commits seen */
	EP_LOG_WRITE_USER = 7,  /* hits: writes led by a user thread (RT0) */
	EP_LOG_FLUSH_USER = 8,  /* hits: flushes led by a user thread (RT0) */
	/* USDT probes of the server (PostgreSQL's `postgresql` provider): hits only. */
	EP_TXN_COMMIT = 9,      /* transaction__commit; sum: ns in flight */
	EP_TXN_ABORT = 10,      /* transaction__abort; sum: ns in flight */
	EP_WAL_INSERT = 11,     /* wal__insert: WAL records */
	EP_WAL_SWITCH = 12,     /* wal__switch: segment switches */
	EP_WAL_BUFFER_FULL = 13, /* wal__buffer__write__dirty__start: WAL buffers full */
	EP_IDLE_POLL = 14,      /* redoctor_idle_poll: sum = first total, last = total */
	/* redoctor_page_syncs: six cumulative values, a tick slot each */
	EP_DBLWR_SYNCS = 15,
	EP_DBLWR_SYNC_NS = 16,
	EP_DATA_SYNCS = 17,
	EP_DATA_SYNC_NS = 18,
	EP_OVERLAPPED_SYNCS = 19,
	EP_OVERLAPPED_SYNC_NS = 20,
	EP_COUNT = 21,
};

struct engine_point_stats {
	__u64 hits;
	__u64 sum;
	__u64 last;
	__u64 last_b; /* second value carried by the last hit */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EP_COUNT);
	__type(key, __u32);
	__type(value, struct engine_point_stats);
} engine_probe_point_hits SEC(".maps");

static __always_inline void point_hit(__u32 idx, __u64 add, __u64 last, __u64 last_b)
{
	struct engine_point_stats *s = bpf_map_lookup_elem(&engine_probe_point_hits, &idx);
	if (!s)
		return;
	__sync_fetch_and_add(&s->hits, 1);
	__sync_fetch_and_add(&s->sum, add);
	s->last = last;
	s->last_b = last_b;
}

static __always_inline bool in_target(void)
{
	return tracked((__u32)(bpf_get_current_pid_tgid() >> 32));
}

SEC("uprobe")
int log_write(struct pt_regs *ctx)
{
	if (!in_target())
		return 0;
	__u64 from = ctx->di, to = ctx->si;
	point_hit(EP_LOG_WRITE, to - from, to, 0);
	if ((__u32)ctx->dx)
		point_hit(EP_LOG_WRITE_USER, 0, to, 0);
	return 0;
}

SEC("uprobe")
int log_flush(struct pt_regs *ctx)
{
	if (!in_target())
		return 0;
	point_hit(EP_LOG_FLUSH, ctx->si, ctx->di, 0);
	if ((__u32)ctx->dx)
		point_hit(EP_LOG_FLUSH_USER, 0, ctx->di, 0);
	return 0;
}

SEC("uprobe")
int flush_notified(struct pt_regs *ctx)
{
	if (!in_target())
		return 0;
	point_hit(EP_FLUSH_NOTIFIED, ctx->dx, ctx->si, 0);
	return 0;
}

SEC("uprobe")
int mode_switch(struct pt_regs *ctx)
{
	if (!in_target())
		return 0;
	point_hit(EP_MODE_SWITCH, 0, (__u32)ctx->si, (__u32)ctx->di);
	return 0;
}

SEC("uprobe")
int checkpoint(struct pt_regs *ctx)
{
	if (!in_target())
		return 0;
	point_hit(EP_CHECKPOINT, ctx->si, ctx->di, 0);
	return 0;
}

SEC("uprobe")
int fail_stop(struct pt_regs *ctx)
{
	if (!in_target())
		return 0;
	point_hit(EP_FAIL_STOP, 0, (__s32)ctx->di, 0);
	return 0;
}

/* A tick point carrying cumulative values (`log_checkpoint`, every 100 ms):
 * `last`/`last_b` are the latest, `sum` keeps the first `value` ever seen.
 * One thread ticks, so plain stores suffice. */
static __always_inline int tick_store(__u32 idx, __u64 value, __u64 value_b)
{
	if (!in_target())
		return 0;
	struct engine_point_stats *s = bpf_map_lookup_elem(&engine_probe_point_hits, &idx);
	if (!s)
		return 0;
	if (s->hits == 0)
		s->sum = value;
	s->hits += 1;
	s->last = value;
	s->last_b = value_b;
	return 0;
}

/* redoctor_counters_tick(commits, redo_bytes): cumulative engine counters. */
SEC("uprobe")
int counters_tick(struct pt_regs *ctx)
{
	return tick_store(EP_COUNTERS_TICK, ctx->di, ctx->si);
}

/* redoctor_idle_poll(total_ns): the process's cumulative time polling for work. */
SEC("uprobe")
int idle_poll(struct pt_regs *ctx)
{
	return tick_store(EP_IDLE_POLL, ctx->di, 0);
}

/* redoctor_page_syncs(dblwr_syncs, dblwr_ns, data_syncs, data_ns,
 * overlapped_syncs, overlapped_ns): the process's page syncs as the engine
 * timed them, cumulative. */
SEC("uprobe")
int page_syncs(struct pt_regs *ctx)
{
	tick_store(EP_DBLWR_SYNCS, ctx->di, 0);
	tick_store(EP_DBLWR_SYNC_NS, ctx->si, 0);
	tick_store(EP_DATA_SYNCS, ctx->dx, 0);
	tick_store(EP_DATA_SYNC_NS, ctx->cx, 0);
	tick_store(EP_OVERLAPPED_SYNCS, ctx->r8, 0);
	return tick_store(EP_OVERLAPPED_SYNC_NS, ctx->r9, 0);
}

/* ---- named locks (uprobe on redoctor_named_locks) ------------------------ */

/* The engine's table of named locks (engine/PROBES.md): where it is in the
 * target's memory, how many entries, and the registry generation it
 * describes. User space reads the table itself (process_vm_readv) when the
 * generation changes and maps futex addresses to the range containing them. */
struct named_locks_table {
	__u64 table;      /* address of the first entry in the target */
	__u64 count;      /* entries */
	__u64 generation; /* registry generation the table describes */
	__u64 calls;      /* hits of the probe point */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct named_locks_table);
} engine_named_locks SEC(".maps");

/* redoctor_named_locks(table, count, generation) */
SEC("uprobe")
int named_locks(struct pt_regs *ctx)
{
	if (!in_target())
		return 0;
	__u32 idx = 0;
	struct named_locks_table *t = bpf_map_lookup_elem(&engine_named_locks, &idx);
	if (!t)
		return 0;
	/* One thread calls it; user space re-reads the generation after
	 * reading the table, so a torn update is discarded, not used. */
	t->table = ctx->di;
	t->count = ctx->si;
	t->generation = ctx->dx;
	t->calls += 1;
	return 0;
}

/* ---- processes: forks and exits (with follow_children) ------------------ */

/* TP_PROTO(struct task_struct *parent, struct task_struct *child); runs in
 * the parent. A new process (not a thread) forked by a tracked one joins
 * the target. */
SEC("raw_tp/sched_process_fork")
int process_fork(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 parent = bpf_get_current_pid_tgid() >> 32;
	if (!tracked(parent))
		return 0;
	__u64 ids = task_ids((struct task_struct *)ctx->args[1]);
	__u32 child = ids >> 32;
	if (child == parent)
		return 0; /* a thread */
	if (bpf_map_update_elem(&tracked_tgids, &child, &parent, BPF_ANY)) {
		__u32 zero_key = 0;
		__u64 *lost = bpf_map_lookup_elem(&events_lost_total, &zero_key);
		if (lost)
			*lost += 1;
	}
	return 0;
}

/* TP_PROTO(struct task_struct *p); runs in the exiting thread. The process
 * leaves the target when its main thread exits (the root stays, so the
 * sampler still sees it go). */
SEC("raw_tp/sched_process_exit")
int process_exit(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 cur = bpf_get_current_pid_tgid();
	__u32 tgid = cur >> 32;
	if ((__u32)cur != tgid || tgid == target_tgid)
		return 0;
	bpf_map_delete_elem(&tracked_tgids, &tgid);
	return 0;
}

/* ---- USDT probes (statically defined tracepoints of the server) ---------- */

/* A USDT site whose hits are counted: the attach cookie is its
 * engine_point slot. */
SEC("uprobe")
int usdt_count(struct pt_regs *ctx)
{
	if (!in_target())
		return 0;
	__u32 idx = bpf_get_attach_cookie(ctx);
	point_hit(idx, 0, 0, 0);
	return 0;
}

/* Transactions in flight (PostgreSQL's transaction__start, then
 * transaction__commit or __abort): tid -> when its transaction began (ns). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_THREADS);
	__type(key, __u32);
	__type(value, __u64);
} usdt_txn_since SEC(".maps");

SEC("uprobe")
int usdt_txn_start(struct pt_regs *ctx)
{
	if (!in_target())
		return 0;
	__u32 tid = bpf_get_current_pid_tgid();
	__u64 now = bpf_ktime_get_ns();
	bpf_map_update_elem(&usdt_txn_since, &tid, &now, BPF_ANY);
	return 0;
}

/* A transaction ends: counted in the cookie's engine_point slot, whose sum
 * adds the ns it was in flight (0 when its start was not seen). The sum over
 * a window divided by the window is the mean number of transactions in
 * flight (Little's law). */
SEC("uprobe")
int usdt_txn_end(struct pt_regs *ctx)
{
	if (!in_target())
		return 0;
	__u32 tid = bpf_get_current_pid_tgid();
	__u64 ns = 0;
	__u64 *since = bpf_map_lookup_elem(&usdt_txn_since, &tid);
	if (since) {
		ns = bpf_ktime_get_ns() - *since;
		bpf_map_delete_elem(&usdt_txn_since, &tid);
	}
	point_hit(bpf_get_attach_cookie(ctx), ns, 0, 0);
	return 0;
}

/* The value of user register `reg` at a probe site: its index in the
 * kernel's x86-64 struct pt_regs (r15, r14, r13, r12, bp, bx, r11, r10, r9,
 * r8, ax, cx, dx, si, di: 0 to 14), as usdt.rs encodes it in the attach
 * cookie. The registers are copied to the stack first: the verifier allows
 * no variable offset into the context. */
static __always_inline __u64 usdt_reg(struct pt_regs *ctx, __u32 reg)
{
	__u64 regs[16] = {};
	if (bpf_probe_read_kernel(regs, sizeof(regs), ctx))
		return 0;
	return regs[reg & 15];
}

/* Waits for a named lock the server reports itself (PostgreSQL's LWLock
 * tranches: lwlock__wait__start/done(tranche name, mode)), by name. */
#define LOCK_NAME_LEN 32

struct lock_name {
	char name[LOCK_NAME_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct lock_name);
	__type(value, struct futex_wait);
} usdt_lock_wait_by_name SEC(".maps");

/* tid -> when its current wait began (ns). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_THREADS);
	__type(key, __u32);
	__type(value, __u64);
} usdt_lock_wait_since SEC(".maps");

/* Attach cookie: the pt_regs index of the register holding argument 1
 * (unused at the start). */
SEC("uprobe")
int usdt_lock_wait_start(struct pt_regs *ctx)
{
	__u64 cur = bpf_get_current_pid_tgid();
	if (!tracked(cur >> 32))
		return 0;
	__u32 tid = cur;
	__u64 now = bpf_ktime_get_ns();
	bpf_map_update_elem(&usdt_lock_wait_since, &tid, &now, BPF_ANY);
	return 0;
}

SEC("uprobe")
int usdt_lock_wait_done(struct pt_regs *ctx)
{
	__u64 cur = bpf_get_current_pid_tgid();
	if (!tracked(cur >> 32))
		return 0;
	__u32 tid = cur;
	__u64 *since = bpf_map_lookup_elem(&usdt_lock_wait_since, &tid);
	if (!since)
		return 0;
	__u64 ns = bpf_ktime_get_ns() - *since;
	bpf_map_delete_elem(&usdt_lock_wait_since, &tid);
	struct lock_name k = {};
	__u64 name = usdt_reg(ctx, bpf_get_attach_cookie(ctx));
	if (bpf_probe_read_user_str(k.name, sizeof(k.name), (const void *)name) < 0) {
		/* The string's page is not resident in this process (a name
		 * the process never read itself) and a uprobe cannot fault it
		 * in: key the wait by where the name is (name[0] 0, name[1]
		 * '@', tgid at 4, address at 8) for user space to read. The
		 * failed read left the key zeroed. */
		__u32 tgid = cur >> 32;
		k.name[1] = '@';
		__builtin_memcpy(&k.name[4], &tgid, sizeof(tgid));
		__builtin_memcpy(&k.name[8], &name, sizeof(name));
	}
	static const struct futex_wait zero;
	struct futex_wait *w = lookup_or_init(&usdt_lock_wait_by_name, &k, &zero);
	if (w) {
		__sync_fetch_and_add(&w->wait_ns, ns);
		__sync_fetch_and_add(&w->waits, 1);
	}
	return 0;
}
