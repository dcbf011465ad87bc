#!/bin/sh
# An "agent" for probes/bench/alternating.py that runs `redoctor agent`
# (recommend mode, the default sampling: probes attached 1 s + 2 s every
# 120 s, status counters polled every second) instead of `redoctor probe`.
# alternating.py calls it as `daemon-agent.sh probe --pid PID ...`; it
# prints one JSON line a second while the daemon runs, as the bench expects
# of an agent, and stops the daemon on SIGTERM. The engine must serve its
# admin socket at $ADMIN_SOCKET (ENGINE_ARGS="--admin-socket ...").
# Steady-state cost, one engine run, daemon on and off every 60 s:
#   ADMIN_SOCKET=/dev/shm/redoctor-bench.sock \
#   ENGINE_ARGS="--admin-socket /dev/shm/redoctor-bench.sock" \
#   AGENTS="daemon=agent/bench/daemon-agent.sh" probes/bench/alternating.py 60 5
set -eu
pid=$3
here=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d /dev/shm/redoctor-daemon.XXXXXX)
cat > "$dir/agent.toml" <<CFG
[agent]
state_dir = "$dir/state"
metrics = "127.0.0.1:${METRICS_PORT:-19465}"

[[target]]
name = "engine"
pid = $pid
socket = "${ADMIN_SOCKET:?set ADMIN_SOCKET to the engine's --admin-socket}"
CFG
"${AGENT:-$here/target/release/redoctor}" agent --config "$dir/agent.toml" 2>"$dir/agent.err" &
agent=$!
started=$(date +%s.%N)
stop() {
	# The daemon's own CPU (user + system, clock ticks) and peak RSS, one
	# line per phase appended to $DAEMON_COST_LOG.
	ticks=$(awk '{print $14 + $15}' "/proc/$agent/stat" 2>/dev/null || echo 0)
	hwm=$(awk '/VmHWM/ {print $2}' "/proc/$agent/status" 2>/dev/null || echo 0)
	echo "elapsed_s=$(echo "$(date +%s.%N) - $started" | bc) cpu_s=$(echo "$ticks / $(getconf CLK_TCK)" | bc -l) rss_hwm_kib=$hwm" \
		>>"${DAEMON_COST_LOG:-/tmp/redoctor-daemon-cost.log}"
	kill -TERM "$agent" 2>/dev/null || true
	wait "$agent" || true
	rm -rf "$dir"
	exit 0
}
trap stop TERM INT
while kill -0 "$agent" 2>/dev/null; do
	echo '{"daemon_agent":true}'
	sleep 1 &
	wait $! || true
done
cat "$dir/agent.err" >&2
exit 1
