#!/usr/bin/env bash
# Overhead of `redoctor probe` on the bundled engine.
#
# For each scenario, runs the engine's workload ROUNDS times without probes
# and ROUNDS times with `redoctor probe --json` attached, interleaved
# (off, on, off, on, ...) so drifting machine load hits both alike. Reports:
#   - TPS off/on (median) and on/off as a percentage (target >= 97%);
#   - the agent's CPU time (user+sys, % of one CPU) and peak RSS;
#   - per-event cost of each BPF program in ns, from the kernel's BPF
#     run-time statistics (BPF_ENABLE_STATS, held by the agent) as carried in
#     the Signals `probe_cost` field. The timed rounds run the default agent,
#     which measures its cost in one window of ten only (the statistics add to
#     every event while on); one extra attached run with `--cost-every 1`,
#     not counted in the TPS, gives the per-event costs.
# Scenarios: "high" = the highest event rate we can produce (many users, RT1,
# 2 CPUs, data on tmpfs so fsync costs ~1 µs and commits are bounded by CPU
# and wakeups); "typical" = 8 users, read_write, RT1, data on disk.
#
# Usage: probes/bench/overhead.sh [ROUNDS] [SECONDS]   (defaults 3 rounds, 5 s)
#   AGENT_ARGS="--no-syscalls" or "--no-uprobes": measure a lighter agent;
#   ONLY_HIGH=1: skip the typical scenario.
# Needs root. Numbers are noisy on a shared machine: compare medians.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}
SECS=${2:-5}
WARMUP=2
cargo build --release -q -p redoctor-engine-cli -p redoctor-agent
ENGINE=target/release/redoctor-engine
AGENT=target/release/redoctor
work=$(mktemp -d)
shm=$(mktemp -d /dev/shm/redoctor-bench.XXXXXX)
trap 'rm -rf "$work" "$shm"' EXIT

# run_once NAME DATADIR ATTACH(0|1|cost) ENGINE-ARGS... -> prints tps
# (cost: attached with every window's cost measured, for the ns/event table)
run_once() {
    local name=$1 dir=$2 attach=$3
    shift 3
    rm -rf "$dir"
    "$ENGINE" run --datadir "$dir" --json --duration "$SECS" --warmup "$WARMUP" "$@" \
        >"$work/engine.json" 2>"$work/engine.err" &
    local epid=$!
    if [[ $attach != 0 ]]; then
        local cost=()
        [[ $attach == cost ]] && cost=(--cost-every 1)
        # Attach while the engine prepares and warms up (well before its window).
        /usr/bin/time -f "%U %S %e %M" -o "$work/agent.time" \
            "$AGENT" probe --pid "$epid" --interval 1s --json ${AGENT_ARGS:-} "${cost[@]}" \
            >"$work/agent.jsonl" 2>"$work/agent.err" &
        local apid=$!
    fi
    wait "$epid"
    if [[ $attach != 0 ]]; then
        wait "$apid" || true   # exits with 3 when the engine exits
    fi
    if [[ $attach == 1 ]]; then
        read -r u s e m < <(tail -n 1 "$work/agent.time")
        echo "$u $s $e $m" >>"$work/$name.agent"
    elif [[ $attach == cost ]]; then
        cat "$work/agent.jsonl" >>"$work/$name.signals"
    fi
    jq -r .tps "$work/engine.json"
}

scenario() {
    local name=$1 dir=$2
    shift 2
    : >"$work/$name.off"
    : >"$work/$name.on"
    for ((i = 1; i <= ROUNDS; i++)); do
        run_once "$name" "$dir" 0 "$@" >>"$work/$name.off"
        run_once "$name" "$dir" 1 "$@" >>"$work/$name.on"
    done
    : >"$work/$name.signals"
    run_once "$name" "$dir" cost "$@" >/dev/null
    python3 - "$work" "$name" "$*" <<'PY'
import json, statistics, sys
work, name, args = sys.argv[1:4]
off = [float(x) for x in open(f"{work}/{name}.off")]
on = [float(x) for x in open(f"{work}/{name}.on")]
moff, mon = statistics.median(off), statistics.median(on)
import os
print(f"## {name}: redoctor-engine run {args}   agent args: {os.environ.get('AGENT_ARGS', '(all probes)')}")
print(f"TPS without probes: {', '.join(f'{x:.0f}' for x in off)} (median {moff:.0f})")
print(f"TPS with probes:    {', '.join(f'{x:.0f}' for x in on)} (median {mon:.0f})")
print(f"with/without: {100 * mon / moff:.1f}%  (target >= 97%)")
cpu, rss = [], []
for line in open(f"{work}/{name}.agent"):
    u, s, e, m = line.split()
    cpu.append(100 * (float(u) + float(s)) / max(float(e), 1e-9))
    rss.append(int(m))
print(f"agent CPU: {statistics.median(cpu):.2f}% of one CPU (median), peak RSS {max(rss) / 1024:.1f} MiB")
runs, ns = {}, {}
window_s, cpus = 0.0, 1
uprobe_hits = 0
for line in open(f"{work}/{name}.signals"):
    s = json.loads(line)
    if not s["probe_cost"]:
        continue
    window_s += s["window_ns"] / 1e9
    cpus = max(cpus, s["cpu"]["affinity_cpus"])
    for c in s["probe_cost"]:
        runs[c["program"]] = runs.get(c["program"], 0) + c["runs"]
        ns[c["program"]] = ns.get(c["program"], 0) + c["run_ns"]
print("BPF program cost (extra run, every window measured): program  events  ns/event  events/s")
for p in sorted(runs, key=lambda p: -ns[p]):
    print(f"  {p:<16} {runs[p]:>12} {ns[p] / max(runs[p], 1):>8.0f} {runs[p] / window_s:>10.0f}")
    if not p.startswith(("sched_", "sys_")):
        uprobe_hits += runs[p]
bpf_share = 100 * sum(ns.values()) / 1e9 / window_s / cpus
# A uprobe hit also costs a trap (~1.4 us measured on this VM for functions
# starting with push %rbp), which BPF run-time stats do not include.
trap_share = 100 * uprobe_hits * 1.4e-6 / window_s / cpus
print(f"CPU share of the target's {cpus} CPUs: BPF programs {bpf_share:.2f}%, "
      f"uprobe traps ~{trap_share:.2f}% (est. 1.4 us/hit), total ~{bpf_share + trap_share:.2f}%")
PY
    echo
}

scenario high "$shm/high" -w update_index --users 32 --redo-threads on --cpus 2 --tables 4 --table-size 10000
[[ -n "${ONLY_HIGH:-}" ]] || scenario typical "$work/typical" -w read_write --users 8 --redo-threads on --tables 4 --table-size 10000
