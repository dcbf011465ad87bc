#!/usr/bin/env bash
# The doublewrite rules' candidates, measured: tables on pages, the legacy
# design with one page cleaner as the starting point, against each static
# change the rules in rules/doublewrite.toml propose (the files design,
# page cleaners = the CPUs, twice the buffer pool). Cells are "RATIO:USERS"
# (pool as a share of the data); every round runs each candidate once on a
# fresh data directory under DIR, the order rotating per round. One JSON
# line per run: cell, candidate, round, tps, and the mechanism from SHOW
# GLOBAL STATUS (single-page flushes per commit, the users' doublewrite
# wait share). Feeds rules/priors/restart.toml (training cells) and the
# advice check (a held-out cell).
# usage: dblwr_candidates.sh ENGINE DIR SECS ROUNDS "CELLS" [TABLE_SIZE] [WORKLOAD]
set -euo pipefail
engine=$1 dir=$2 secs=$3 rounds=$4 cells=$5 rows=${6:-50000} wl=${7:-update_index}
tables=4
cpus=$(nproc)
data_bytes=$((tables * ((rows + 86) / 87) * 16384))
declare -A cand=(
  [current]=""
  [files]="FILES"
  [cleaners]="--set innodb_page_cleaners=$cpus"
  [pool_x2]="POOLX2"
)
names=(current files cleaners pool_x2)
mkdir -p "$dir"
for r in $(seq 1 "$rounds"); do
  for cell in $cells; do
    ratio=${cell%%:*} u=${cell##*:}
    pool=$(python3 -c "print(int($data_bytes * $ratio))")
    n=${#names[@]}
    for i in $(seq 0 $((n - 1))); do
      c=${names[$(( (i + r) % n ))]}
      extra=${cand[$c]} p=$pool design=legacy
      if [[ $extra == POOLX2 ]]; then extra="" p=$((2 * pool)); fi
      if [[ $extra == FILES ]]; then extra="" design=files; fi
      rm -rf "$dir/cell"
      # shellcheck disable=SC2086
      out=$("$engine" run --workload "$wl" --users "$u" --duration "$secs" \
        --tables $tables --table-size "$rows" --datadir "$dir/cell" --json \
        --set innodb_buffer_pool_size="$p" --set innodb_doublewrite_design=$design \
        --set innodb_io_capacity=2000 $extra 2>/dev/null)
      python3 -c '
import json, sys
d = json.loads(sys.argv[1])
p = d.get("page_status_delta", {})
c = max(d["engine_commits"], 1)
share = p.get("Innodb_dblwr_wait_us", 0) / (int(sys.argv[3]) * d["measured_secs"] * 1e6)
print(json.dumps({"ratio": float(sys.argv[2]), "users": int(sys.argv[3]), "candidate": sys.argv[4],
  "round": int(sys.argv[5]), "tps": round(d["tps"], 1),
  "single_page_flushes_per_commit": round(p.get("Innodb_buffer_pool_pages_flushed_single_page", 0) / c, 4),
  "dblwr_wait_share": round(share, 4)}))' "$out" "$ratio" "$u" "$c" "$r"
    done
  done
done
