#!/usr/bin/env bash
# Seed 002's experiment on the engine itself: tables on pages, the buffer
# pool at RATIOS of the data, doublewrite `legacy` against `files`, USERS
# user threads, update_index (uniform). Each cell runs on a fresh data
# directory under DIR (this host's disk), the two designs alternating
# order per round. Prints one JSON line per run: ratio, users, design,
# round, tps, p95 latency, and the mechanism from SHOW GLOBAL STATUS (the
# run's page_status_delta): page reads, single-page flushes by user
# threads, cleaner pages and doublewrite waits per commit, and the share
# of the users' time spent waiting on the doublewrite buffer.
# With DW_DIR set, the doublewrite buffer's copies go there
# (innodb_doublewrite_dir, emptied before every cell): e.g. a directory on
# tmpfs, to see what the designs do when the copies' syncs cost nothing.
# TABLES and ROWS (default 4 x 50,000) size the data.
# With DEVICE_US set, the engine models a device with that latency per sync
# and no limit on syncs in flight (redoctor_device_sync_latency_us): put DIR
# (and DW_DIR) on tmpfs to measure on that device alone.
# usage: [DW_DIR=DIR] [TABLES=N ROWS=N] [DEVICE_US=N] dblwr_sweep.sh ENGINE DIR SECS ROUNDS "RATIOS" "USERS" [WORKLOAD]
set -euo pipefail
engine=$1 dir=$2 secs=$3 rounds=$4 ratios=$5 users=$6 wl=${7:-update_index}
dw=()
[[ -n ${DW_DIR:-} ]] && dw=(--set "innodb_doublewrite_dir=$DW_DIR")
tables=${TABLES:-4} rows=${ROWS:-50000} device=${DEVICE_US:-0}
# sbtest rows on 16 KiB pages of 87 rows (4 x 50,000: 2,300 pages).
data_bytes=$((tables * ((rows + 86) / 87) * 16384))
mkdir -p "$dir"
for r in $(seq 1 "$rounds"); do
  for ratio in $ratios; do
    pool=$(python3 -c "print(int($data_bytes * $ratio))")
    for u in $users; do
      order="legacy files"; (( r % 2 == 0 )) && order="files legacy"
      for design in $order; do
        rm -rf "$dir/cell"
        [[ -n ${DW_DIR:-} ]] && rm -rf "$DW_DIR" && mkdir -p "$DW_DIR"
        out=$("$engine" run --workload "$wl" --users "$u" --duration "$secs" \
          --tables $tables --table-size $rows --datadir "$dir/cell" --json \
          --set innodb_buffer_pool_size="$pool" --set innodb_doublewrite_design="$design" \
          --set innodb_io_capacity=2000 --set redoctor_device_sync_latency_us="$device" \
          "${dw[@]}" 2>/dev/null)
        python3 -c '
import json, sys
d = json.loads(sys.argv[1])
p = d.get("page_status_delta", {})
c = max(d["engine_commits"], 1)
per = lambda k: round(p.get(k, 0) / c, 4)
# The doublewrite wait share: time user threads and cleaners spent waiting
# for the legacy mutex and slots or for a segment, over the users time.
share = p.get("Innodb_dblwr_wait_us", 0) / (int(sys.argv[3]) * d["measured_secs"] * 1e6)
print(json.dumps({"ratio": float(sys.argv[2]), "users": int(sys.argv[3]), "design": sys.argv[4],
  "tables": int(sys.argv[7]), "rows": int(sys.argv[8]),
  "dblwr_dir": sys.argv[6] or None, "device_sync_us": int(sys.argv[9]),
  "round": int(sys.argv[5]), "tps": round(d["tps"], 1), "p95_us": d["latency_us"]["p95_us"],
  "reads_per_commit": per("Innodb_buffer_pool_reads"),
  "single_page_flushes_per_commit": per("Innodb_buffer_pool_pages_flushed_single_page"),
  "cleaner_pages_per_commit": per("Innodb_buffer_pool_pages_flushed_by_cleaners"),
  "dblwr_waits_per_commit": per("Innodb_dblwr_waits"),
  "dblwr_wait_share": round(share, 4)}))' \
          "$out" "$ratio" "$u" "$design" "$r" "${DW_DIR:-}" "$tables" "$rows" "$device"
      done
    done
  done
done
