#!/usr/bin/env bash
# A MariaDB replica's applier rate by slave_parallel_threads, on a backlog.
#
#   agent/bench/mariadb_replica_threads.sh [WORKDIR] [VALUES] [ROUNDS]
#
# Two mariadbd on private datadirs under WORKDIR (default: a temp dir): a
# source on 127.0.0.1 (log_bin, sync_binlog=1, flush at commit) and a
# replica of it (log_slave_updates, sync_binlog=1, flush at commit unless
# DURABLE=0). sysbench oltp_update_index (4 x 10 000 rows, 32 threads)
# fills a backlog of BACKLOG_S seconds (default 60) with the replica's SQL
# thread stopped and keeps writing; then, per round, each value of VALUES
# (default "0 2 8 32 128"; order reversed every other round, so the disk's
# drift lands on all) is set (STOP SLAVE SQL_THREAD; SET GLOBAL; START) and
# the applier's rate measured over WIN seconds (default 3) after a 1-s
# settle, as the advance of gtid_slave_pos (transactions applied) and of
# Handler_commit. One JSON line per window on stdout.
set -euo pipefail
W=${1:-$(mktemp -d /tmp/rd-mariarep-XXXX)}
VALUES=${2:-"0 2 8 32 128"}
ROUNDS=${3:-3}
WIN=${WIN:-3}
DURABLE=${DURABLE:-1}
PORT=${PORT:-33061}
mkdir -p "$W"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
for n in src rep; do
  rm -rf "$W/$n"
  mariadb-install-db --no-defaults --datadir="$W/$n/data" --auth-root-authentication-method=normal \
    --user=root --skip-test-db >/dev/null
done
start() {
  local n=$1; shift
  mariadbd --no-defaults --datadir="$W/$n/data" --socket="$W/$n/m.sock" --pid-file="$W/$n/m.pid" \
    --log-error="$W/$n/error.log" --user=root "$@" &
  pids+=($!)
  for _ in $(seq 200); do mariadb -S "$W/$n/m.sock" -uroot -e "select 1" >/dev/null 2>&1 && return; sleep 0.1; done
  echo "mariadbd $n did not start: $(tail -5 "$W/$n/error.log")" >&2; exit 1
}
flush=$([ "$DURABLE" = 1 ] && echo 1 || echo 2)
sync=$([ "$DURABLE" = 1 ] && echo 1 || echo 0)
start src --port="$PORT" --bind-address=127.0.0.1 --server-id=1 --log-bin=src-bin --sync-binlog=1 \
  --innodb-flush-log-at-trx-commit=1 --max-connections=300
start rep --skip-networking --server-id=2 --log-bin=rep-bin --relay-log=rep-relay-bin --log-slave-updates \
  --sync-binlog="$sync" --innodb-flush-log-at-trx-commit="$flush" --skip-slave-start
S="mariadb -S $W/src/m.sock -uroot -N -B"
R="mariadb -S $W/rep/m.sock -uroot -N -B"
$S -e "CREATE USER repl@'127.0.0.1' IDENTIFIED BY 'r'; GRANT REPLICATION SLAVE ON *.* TO repl@'127.0.0.1'; CREATE DATABASE sbtest"
$R -e "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$PORT, MASTER_USER='repl', MASTER_PASSWORD='r', MASTER_USE_GTID=slave_pos; START SLAVE"
SB=(sysbench oltp_update_index --mysql-socket="$W/src/m.sock" --mysql-user=root --db-driver=mysql --tables=4 --table-size=10000)
"${SB[@]}" prepare >/dev/null
seqno() { awk -F- '{print $NF}' <<<"$1"; }
until [ "$(seqno "$($R -e 'SELECT @@gtid_slave_pos')")" = "$(seqno "$($S -e 'SELECT @@gtid_binlog_pos')")" ]; do sleep 0.2; done
$R -e "STOP SLAVE SQL_THREAD"
"${SB[@]}" --threads=32 --time="${BACKLOG_S:-60}" run >/dev/null
"${SB[@]}" --threads=32 --time=100000 run >/dev/null & pids+=($!)
hc() { $R -e "SHOW GLOBAL STATUS LIKE 'Handler_commit'" | awk '{print $2}'; }
for round in $(seq "$ROUNDS"); do
  vals=$VALUES
  [ $((round % 2)) = 0 ] && vals=$(tr ' ' '\n' <<<"$VALUES" | tac | tr '\n' ' ')
  for n in $vals; do
    $R -e "STOP SLAVE SQL_THREAD; SET GLOBAL slave_parallel_threads=$n; START SLAVE SQL_THREAD"
    sleep 1
    a=$(hc); sa=$(seqno "$($R -e 'SELECT @@gtid_slave_pos')")
    sleep "$WIN"
    b=$(hc); sb=$(seqno "$($R -e 'SELECT @@gtid_slave_pos')")
    left=$(( $(seqno "$($S -e 'SELECT @@gtid_binlog_pos')") - sb ))
    echo "{\"durable\":$DURABLE,\"round\":$round,\"slave_parallel_threads\":$n,\"applied_trx_per_s\":$(( (sb - sa) / WIN )),\"handler_commit_per_s\":$(( (b - a) / WIN )),\"backlog_left\":$left}"
  done
done
