#!/bin/sh
# A comparator for alternating.py: the bpftrace equivalents of the agent's
# main measurements (probes/bpftrace/: switches and wakeups, run-queue
# latency, on-CPU time, writes and fsyncs, futex waits) in one bpftrace
# process, started and stopped like `redoctor probe --pid PID ...`. It
# prints one JSON line a second once bpftrace has attached. bpftrace takes
# ~1.6 s to compile and attach here, so tell the bench to start counting
# later:
#   ON_AFTER=3 AGENTS="bpftrace=probes/bench/bpftrace-agent.sh,agent=target/release/redoctor" \
#     probes/bench/alternating.py 8 10
set -eu
dir=$(dirname "$0")/../bpftrace
pid=
while [ $# -gt 0 ]; do
	case "$1" in
	--pid) pid=$2; shift 2 ;;
	*) shift ;;
	esac
done
[ -n "$pid" ] || { echo "bpftrace-agent: --pid PID is required" >&2; exit 2; }
# bpftrace would attach anyway and filter on a pid that never comes.
[ -d "/proc/$pid" ] || { echo "bpftrace-agent: no process $pid (give the pid of a running engine)" >&2; exit 2; }
command -v bpftrace >/dev/null || { echo "bpftrace-agent: bpftrace is not installed (apt-get install -y bpftrace)" >&2; exit 2; }
work=$(mktemp -d)
script=$work/all.bt
# One program: the five scripts without their #! lines, their one-line END
# blocks (bpftrace allows one) merged into one; futex.bt's @ts is renamed,
# as fsync.bt has its own.
ends=
for f in switches_wakeups runqlat oncpu fsync futex; do
	body=$(grep -v '^#!' "$dir/$f.bt")
	[ "$f" = futex ] && body=$(printf '%s\n' "$body" | sed 's/@ts\b/@fts/g')
	printf '%s\n' "$body" | grep -v '^END'
	ends="$ends $(printf '%s\n' "$body" | sed -n 's/^END {\(.*\)}$/\1/p')"
done >"$script"
echo "END {$ends }" >>"$script"
bpftrace "$script" "$pid" >"$work/out" 2>&1 &
bt=$!
stop() {
	kill -INT "$bt" 2>/dev/null || true
	wait "$bt" 2>/dev/null || true
	rm -rf "$work"
	exit 0
}
trap stop TERM INT
until grep -q '^Attaching' "$work/out"; do
	if ! kill -0 "$bt" 2>/dev/null; then
		cat "$work/out" >&2
		rm -rf "$work"
		exit 1
	fi
	sleep 0.1 &
	wait $! || true
done
while :; do
	echo '{"bpftrace_agent":true}'
	sleep 1 &
	wait $! || true
done
