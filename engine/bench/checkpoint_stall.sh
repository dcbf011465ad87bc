#!/usr/bin/env bash
# Checkpoints under a growing database: the insert load (or WORKLOAD) at many users, with
# the throughput of every 0.5 s printed, so the dips and stalls a checkpoint
# causes show (engine/DESIGN.md, Checkpoints). Compares engine binaries run
# interleaved (each repeat runs them in a new shuffled order, each run on a
# fresh datadir), one line per run:
#
#   name rep tps lowest_0.5s p10_0.5s p99_us max_us checkpoints log_full_waits bg_bases
#
# bg_bases: checkpoint bases written in the background and published ("-"
# for a build from before they existed).
#
# Usage: engine/bench/checkpoint_stall.sh NAME=BINARY [NAME=BINARY ...]
#   e.g. engine/bench/checkpoint_stall.sh new=target/release/redoctor-engine old=/tmp/old-engine
# Environment (default in brackets):
#   REPS [3]  DURATION [30]  USERS [128]  CPUS [2]  DIR [/var/tmp]
#   WORKLOAD [insert]  e.g. tpcc, whose deltas hold ~20 MB of changed rows
#   EXTRA [""]   more `run` flags for every run, e.g. "--log-file-mb 1024"
# Needs python3.
set -euo pipefail

REPS=${REPS:-3}
DURATION=${DURATION:-30}
USERS=${USERS:-128}
CPUS=${CPUS:-2}
DIR=${DIR:-/var/tmp}
EXTRA=${EXTRA:-}
WORKLOAD=${WORKLOAD:-insert}

if (($# == 0)); then
    echo "usage: $0 NAME=BINARY [NAME=BINARY ...]" >&2
    exit 2
fi
for spec in "$@"; do
    bin=${spec#*=}
    if [[ "$spec" != *=* || ! -x "$bin" ]]; then
        echo "$spec: expected NAME=BINARY with an executable redoctor-engine" >&2
        exit 2
    fi
done

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "name rep tps lowest_0.5s p10_0.5s p99_us max_us checkpoints log_full_waits bg_bases"
for rep in $(seq "$REPS"); do
    for spec in $(printf '%s\n' "$@" | shuf); do
        name=${spec%%=*}
        bin=${spec#*=}
        datadir=$(mktemp -d -p "$DIR")
        # shellcheck disable=SC2086
        "$bin" run --workload "$WORKLOAD" --users "$USERS" --cpus "$CPUS" \
            --duration "$DURATION" --report-interval 0.5 --json \
            --datadir "$datadir" $EXTRA >"$out/report.json" 2>"$out/intervals.jsonl"
        rm -rf "$datadir"
        python3 - "$name" "$rep" "$out" <<'PY'
import json, sys
name, rep, out = sys.argv[1:4]
r = json.load(open(f"{out}/report.json"))
w = []
for line in open(f"{out}/intervals.jsonl"):
    try:
        w.append(json.loads(line)["tps"])
    except (ValueError, KeyError):
        pass
w.sort()
c = r["engine_counters_delta"]
print(name, rep, round(r["tps"]), round(w[0]), round(w[len(w) // 10]),
      r["latency_us"]["p99_us"], r["latency_us"]["max_us"],
      c["checkpoints"], c["redo_log_full_waits"],
      c.get("checkpoint_bases_background", "-"))
PY
    done
done
