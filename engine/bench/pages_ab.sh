#!/usr/bin/env bash
# Interleaved A/B of two engine builds (`redoctor-engine` binaries) with
# tables on pages: 4 sbtest tables of 50,000 rows, the buffer pool at
# RATIO of the row pages (1.2: the data fits; 0.5: IO-bound), on tmpfs so
# the disk's fsync swings stay out and what differs is the builds' CPU per
# commit. The pairs, their order and the summary are `inmem_ab.sh`'s.
# usage: pages_ab.sh OLD NEW PAIRS WORKLOAD USERS SECS RATIO
set -euo pipefail
old=$1 new=$2 pairs=$3 wl=$4 users=$5 secs=$6 ratio=$7
tables=4 rows=50000
data_bytes=$((tables * ((rows + 86) / 87) * 16384))
pool=$(python3 -c "print(int($data_bytes * $ratio))")
exec "$(dirname "$0")/inmem_ab.sh" "$old" "$new" "$pairs" "$wl" "$users" "$secs" \
  --tables $tables --table-size $rows --set "innodb_buffer_pool_size=$pool"
