#!/usr/bin/env bash
# What `redoctor probe` costs the processes it does not watch.
#
# Its programs run on every context switch, wakeup and (with the syscall
# hooks) traced syscall of the machine, and return after the target check
# for any other process: a database host's other processes pay that. This
# measures it with perf's micro-benchmarks, on a process that is not the
# target (the agent watches an idle `sleep`), in interleaved rounds:
#   - `perf bench sched pipe` on one CPU: a round trip is 2 context
#     switches, 2 wakeups, 2 pipe writes and 2 reads;
#   - `perf bench syscall basic`: a getppid(2) call, a syscall no hook
#     traces (with the syscall hooks attached every syscall takes the
#     kernel's slow path).
# Modes: no agent; the agent with --no-syscalls (scheduler hooks only); the
# agent with every hook. Prints the median per mode and the differences:
# ns per scheduler event (the pipe's difference / 4), ns per untraced
# syscall, and ns per traced write (the rest of the pipe's difference).
#
# Usage: probes/bench/bystanders.sh [ROUNDS]   (default 5; needs root, perf
#        (apt-get install -y linux-perf) and cargo build --release -p redoctor-agent)
#   AGENT=PATH: another agent binary.
set -euo pipefail
ROUNDS=${1:-5}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
AGENT=${AGENT:-$ROOT/target/release/redoctor}
command -v perf >/dev/null || { echo "bystanders: perf is not installed (apt-get install -y linux-perf)" >&2; exit 2; }
[ -x "$AGENT" ] || { echo "bystanders: no agent at $AGENT (cargo build --release -p redoctor-agent)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "bystanders: the agent needs root (run with sudo)" >&2; exit 2; }
CPU=$(($(nproc) - 1))
work=$(mktemp -d)
sleep 100000 &
idle=$!
agent=
cleanup() {
	[ -n "$agent" ] && kill -TERM "$agent" 2>/dev/null && wait "$agent" 2>/dev/null
	kill "$idle" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

usecs() { awk '/usecs\/op/ { print $1 }'; }
pipe_op() { taskset -c "$CPU" perf bench sched pipe -l 300000 2>/dev/null | usecs; }
syscall_op() { perf bench syscall basic -l 5000000 2>/dev/null | usecs; }

attach() { # attach ARGS...: start the agent on the idle process, wait for its first window
	"$AGENT" probe --pid "$idle" --interval 1s --json "$@" >"$work/out" 2>"$work/err" &
	agent=$!
	for _ in $(seq 50); do
		grep -q '^{' "$work/out" && return 0
		kill -0 "$agent" 2>/dev/null || break
		sleep 0.1
	done
	echo "bystanders: the agent did not start:" >&2
	cat "$work/err" >&2
	exit 1
}
detach() {
	kill -TERM "$agent"
	wait "$agent" || true
	agent=
}

for r in $(seq "$ROUNDS"); do
	for mode in none sched all; do
		case $mode in
		sched) attach --no-syscalls ;;
		all) attach ;;
		esac
		echo "$mode $(pipe_op) $(syscall_op)" >>"$work/results"
		[ "$mode" = none ] || detach
	done
	echo "round $r/$ROUNDS done" >&2
done

awk -v rounds="$ROUNDS" '
function median(arr, n,   i, j, t) {
	for (i = 2; i <= n; i++) for (j = i; j > 1 && arr[j - 1] > arr[j]; j--) { t = arr[j]; arr[j] = arr[j - 1]; arr[j - 1] = t }
	return n % 2 ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2
}
{ n[$1]++; p[$1, n[$1]] = $2 * 1000; s[$1, n[$1]] = $3 * 1000 }
END {
	split("none sched all", modes, " ")
	for (m = 1; m <= 3; m++) {
		k = modes[m]
		for (i = 1; i <= n[k]; i++) { a[i] = p[k, i]; b[i] = s[k, i] }
		P[k] = median(a, n[k]); S[k] = median(b, n[k])
	}
	printf "## redoctor probe attached to another process; medians of %d interleaved rounds\n", rounds
	printf "%-32s %14s %14s\n", "mode", "pipe ns/op", "getppid ns"
	printf "%-32s %14.0f %14.1f\n", "no agent", P["none"], S["none"]
	printf "%-32s %14.0f %14.1f\n", "scheduler hooks (--no-syscalls)", P["sched"], S["sched"]
	printf "%-32s %14.0f %14.1f\n", "every hook", P["all"], S["all"]
	sched = (P["sched"] - P["none"]) / 4
	sys = S["all"] - S["sched"]
	write = (P["all"] - P["sched"] - 4 * sys) / 2
	printf "per scheduler event (switch or wakeup): %+.0f ns\n", sched
	printf "per untraced syscall (slow path):       %+.1f ns\n", sys
	printf "per traced write (its record and exit program): %+.0f ns\n", write
}' "$work/results"
