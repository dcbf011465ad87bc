#!/usr/bin/env bash
# Interleaved A/B of two engine builds (`redoctor-engine` binaries) on
# in-memory tables, the data directory on tmpfs (/dev/shm) so the disk's
# fsync swings stay out: PAIRS pairs of runs, the order alternating per
# pair; prints the geometric mean of the per-pair ratios NEW/OLD with
# +-2 standard errors, and OLD's median TPS. Arguments after SECS go to
# both runs (`engine/bench/pages_ab.sh` passes tables on pages).
# usage: inmem_ab.sh OLD NEW PAIRS WORKLOAD USERS SECS [RUN ARGS...]
set -euo pipefail
old=$1 new=$2 pairs=$3 wl=$4 users=$5 secs=$6
shift 6
for i in $(seq 1 "$pairs"); do
  order="old new"; (( i % 2 == 0 )) && order="new old"
  for side in $order; do
    bin=$old; [[ $side == new ]] && bin=$new
    rm -rf /dev/shm/rdb
    tps=$("$bin" run --workload "$wl" --users "$users" --duration "$secs" --datadir /dev/shm/rdb --json "$@" 2>/dev/null |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["tps"])')
    echo "$i $side $tps"
  done
done | tee /dev/stderr | python3 -c '
import sys, math, statistics as st
rows=[l.split() for l in sys.stdin]
d={}
for i,s,t in rows: d.setdefault(i,{})[s]=float(t)
r=[v["new"]/v["old"] for v in d.values()]
olds=[v["old"] for v in d.values()]
lr=[math.log(x) for x in r]
m=st.mean(lr); se=st.stdev(lr)/math.sqrt(len(lr))
print(f"new/old geometric mean {math.exp(m):.3f} (pairs {len(r)}; +-2se {math.exp(m-2*se):.3f}..{math.exp(m+2*se):.3f}); old median tps {st.median(olds):.0f}")'
