#!/usr/bin/env bash
# One engine build, tables in memory against tables on pages with the
# buffer pool 1.2x the row pages (the data fits): 4 sbtest tables of
# 50,000 rows, the data directory on tmpfs (/dev/shm), PAIRS interleaved
# pairs, the order alternating per pair. Prints the geometric mean of
# the per-pair ratios pages/memory with +-2 standard errors.
# usage: pages_vs_memory.sh ENGINE PAIRS WORKLOAD USERS SECS
set -euo pipefail
bin=$1 pairs=$2 wl=$3 users=$4 secs=$5
tables=4 rows=50000
pool=$((tables * ((rows + 86) / 87) * 16384 * 12 / 10))
for i in $(seq 1 "$pairs"); do
  order="mem pages"; (( i % 2 == 0 )) && order="pages mem"
  for side in $order; do
    rm -rf /dev/shm/rdb-pvm
    set_pool=()
    [[ $side == pages ]] && set_pool=(--set "innodb_buffer_pool_size=$pool")
    tps=$("$bin" run --workload "$wl" --users "$users" --duration "$secs" \
      --tables $tables --table-size $rows --datadir /dev/shm/rdb-pvm --json \
      "${set_pool[@]}" 2>/dev/null |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["tps"])')
    echo "$i $side $tps"
  done
done | tee /dev/stderr | python3 -c '
import sys, math, statistics as st
d = {}
for line in sys.stdin:
    i, side, tps = line.split()
    d.setdefault(i, {})[side] = float(tps)
r = [v["pages"] / v["mem"] for v in d.values()]
lr = [math.log(x) for x in r]
m = st.mean(lr); se = st.stdev(lr) / math.sqrt(len(lr))
print("pages/memory geometric mean %.3f (pairs %d; +-2se %.3f..%.3f); memory median tps %.0f, pages %.0f" % (
    math.exp(m), len(r), math.exp(m - 2 * se), math.exp(m + 2 * se),
    st.median(v["mem"] for v in d.values()), st.median(v["pages"] for v in d.values())))'
rm -rf /dev/shm/rdb-pvm
