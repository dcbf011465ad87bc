#!/usr/bin/env bash
# Seed 003 on this host: a replica's applier rate catching up a backlog,
# the `lock` arbitration design (MySQL before 8.0.1) against `position`
# (8.0.1), by workload, durability and replica_parallel_workers. The bench
# itself is engine/workload/examples/replica_apply.rs (its header says
# how each cell runs); this runs it and charts the result with
# `redoctor-sweep plot-replica` (SVGs and a markdown table of the medians
# and position/lock ratios). Every cell also checks the replica's tables
# against the source's after catch-up; a difference fails the run.
# usage: replica_apply.sh OUT.jsonl CHART_DIR [BACKLOG_TRX] [ROUNDS] [WORKERS] [WORKLOADS] [durable|nondurable|both]
set -euo pipefail
out=$1 charts=$2 backlog=${3:-20000} rounds=${4:-4} workers=${5:-0,1,2,4}
workloads=${6:-update_index,read_write} durability=${7:-both}
cd "$(dirname "$0")/../.."
cargo build --release -q -p redoctor-workload --example replica_apply -p redoctor-sweep
dir=$(mktemp -d /var/tmp/replica-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
target/release/examples/replica_apply "$dir" "$backlog" "$rounds" "$workers" "$workloads" "$durability" > "$out"
target/release/redoctor-sweep plot-replica "$out" --out "$charts"
