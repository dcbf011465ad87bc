#!/usr/bin/env bash
# Advice-quality benchmark (issue 7): for every scenario of a sweep results
# file, diagnose the engine in its default configuration and compare the TPS
# of the advised configuration with the oracle's best and three static
# policies. Needs root (the probes).
#
#   advisor/bench/advice_quality.sh RESULTS.json [--duration 3s] [--only W/USERS/CORES/BINLOG ...]
#   advisor/bench/advice_quality.sh --sweep GRID.toml RESULTS.json [...]   # run the sweep first
#
# e.g. the quick slice (96 cells, ~8 min on 2 cores, then ~1 min of diagnoses):
#   advisor/bench/advice_quality.sh --sweep advisor/bench/quick.toml /tmp/quick.json
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -q -p redoctor-engine -p redoctor-agent
cargo build --release -q -p redoctor-advisor --example advice_quality
if [[ "${1:-}" == "--sweep" ]]; then
    grid=${2:?--sweep needs a grid file}
    results=${3:?and a results file}
    shift 3
    target/release/redoctor-engine sweep --grid "$grid" --out "$results" --quiet --resume
    set -- "$results" "$@"
fi
exec target/release/examples/advice_quality "$@" --redoctor target/release/redoctor
