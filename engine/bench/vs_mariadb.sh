#!/usr/bin/env bash
# The bundled engine behind `redoctor-engine serve` against MariaDB, same box,
# same sysbench commands: oltp_read_write and oltp_update_index at rising
# thread counts, durable settings on both (every commit fsync'd:
# innodb_flush_log_at_trx_commit=1 on both; MariaDB's binary log is off, so
# sync_binlog does not apply). Prints a markdown table of TPS and p95 latency
# on stdout; progress goes to stderr.
#
# MariaDB (Debian's mariadb-server, 10.11) is started by this script on a
# private datadir and socket with networking off, and stopped at the end.
# Both datadirs live under DISK_DIR, so both engines fsync the same disk.
#
# Usage: engine/bench/vs_mariadb.sh
# Environment (default in brackets):
#   DURATION [10]        measured seconds per run    WARMUP [2]  seconds of an unmeasured run before each
#   THREADS ["1 4 16 64"]                            WORKLOADS ["oltp_read_write oltp_update_index"]
#   TABLES [4]  TABLE_SIZE [10000]                   DISK_DIR [/var/tmp]
#   BUFFER_POOL [1G]     MariaDB's innodb_buffer_pool_size (the tables fit in memory on both)
#   KEEP [unset]         keep the work directory (datadirs, logs, sysbench output)
# Needs: sysbench, mariadb-server, mariadb-client (apt-get install -y sysbench mariadb-server mariadb-client).
set -euo pipefail

DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
THREADS=${THREADS:-"1 4 16 64"}
WORKLOADS=${WORKLOADS:-"oltp_read_write oltp_update_index"}
TABLES=${TABLES:-4}
TABLE_SIZE=${TABLE_SIZE:-10000}
DISK_DIR=${DISK_DIR:-/var/tmp}
BUFFER_POOL=${BUFFER_POOL:-1G}

for tool in sysbench mariadbd mariadb-install-db mariadb; do
    command -v "$tool" >/dev/null || {
        echo "vs_mariadb.sh needs $tool: apt-get install -y sysbench mariadb-server mariadb-client" >&2
        exit 1
    }
done

cd "$(dirname "$0")/../.."
cargo build --release -q -p redoctor-engine-cli --bin redoctor-engine
BIN=$PWD/target/release/redoctor-engine

WORK=$(mktemp -d "$DISK_DIR/vs_mariadb.XXXXXX")
RD_SOCK=$WORK/redoctor.sock
MD_SOCK=$WORK/mariadb.sock
RD_PID=""
MD_PID=""
cleanup() {
    [ -n "$RD_PID" ] && kill "$RD_PID" 2>/dev/null && wait "$RD_PID" 2>/dev/null
    [ -n "$MD_PID" ] && kill "$MD_PID" 2>/dev/null && wait "$MD_PID" 2>/dev/null
    if [ -z "${KEEP:-}" ]; then rm -rf "$WORK"; else echo "kept $WORK" >&2; fi
}
trap cleanup EXIT

wait_for_socket() {
    for _ in $(seq 1 300); do
        [ -S "$1" ] && return 0
        sleep 0.1
    done
    echo "no socket at $1; see the logs in $WORK" >&2
    exit 1
}

start_redoctor() {
    "$BIN" serve --datadir "$WORK/redoctor-data" --socket "$RD_SOCK" --flush-at-commit 1 \
        2>"$WORK/redoctor.log" &
    RD_PID=$!
    wait_for_socket "$RD_SOCK"
}

start_mariadb() {
    mariadb-install-db --no-defaults --user=root --datadir="$WORK/mariadb-data" \
        --auth-root-authentication-method=normal --skip-test-db >"$WORK/mariadb-install.log" 2>&1
    mariadbd --no-defaults --user=root --datadir="$WORK/mariadb-data" --socket="$MD_SOCK" \
        --skip-networking --pid-file="$WORK/mariadb.pid" --log-error="$WORK/mariadb.err" \
        --innodb-flush-log-at-trx-commit=1 --innodb-buffer-pool-size="$BUFFER_POOL" \
        --innodb-log-file-size=512M --max-connections=300 --skip-log-bin &
    MD_PID=$!
    wait_for_socket "$MD_SOCK"
    for _ in $(seq 1 100); do
        mariadb --socket="$MD_SOCK" -uroot -e "CREATE DATABASE IF NOT EXISTS sbtest" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "MariaDB did not accept connections; see $WORK/mariadb.err" >&2
    exit 1
}

# sb SOCKET SCRIPT COMMAND THREADS -> sysbench output
sb() {
    sysbench --db-driver=mysql --mysql-socket="$1" --mysql-user=root --mysql-db=sbtest \
        --tables="$TABLES" --table-size="$TABLE_SIZE" --threads="$4" --time="${SB_TIME:-$DURATION}" \
        --report-interval=0 --percentile=95 "$2" "$3"
}

# measure ENGINE SOCKET: appends "engine workload threads tps p95" lines to $WORK/results
measure() {
    for w in $WORKLOADS; do
        echo "$1: $w prepare" >&2
        sb "$2" "$w" prepare 4 >"$WORK/$1-$w-prepare.out" 2>&1
        rows=$(mariadb --socket="$2" -uroot -N -e "SELECT COUNT(*) FROM sbtest.sbtest$TABLES" 2>&1 || true)
        if grep -q FATAL "$WORK/$1-$w-prepare.out" || [ "$rows" != "$TABLE_SIZE" ]; then
            echo "$1: $w prepare failed (sbtest$TABLES has '$rows' rows, want $TABLE_SIZE):" >&2
            tail -c 2000 "$WORK/$1-$w-prepare.out" >&2
            exit 1
        fi
        for t in $THREADS; do
            echo "$1: $w $t threads" >&2
            out=$WORK/$1-$w-$t.out
            # sysbench 1.0 has no --warmup-time: an unmeasured run first.
            SB_TIME=$WARMUP sb "$2" "$w" run "$t" >/dev/null 2>&1 || true
            sb "$2" "$w" run "$t" >"$out" 2>&1 || {
                echo "sysbench failed, see $out" >&2
                cat "$out" >&2
                exit 1
            }
            tps=$(awk '/transactions:/ {gsub(/\(/, "", $3); print $3}' "$out")
            p95=$(awk '/95th percentile:/ {print $3}' "$out")
            echo "$1 $w $t $tps $p95" >>"$WORK/results"
        done
        sb "$2" "$w" cleanup 1 >/dev/null
    done
}

start_redoctor
measure redoctor "$RD_SOCK"
kill "$RD_PID" && wait "$RD_PID" || true
RD_PID=""
start_mariadb
MD_VERSION=$(mariadb --socket="$MD_SOCK" -uroot -N -e "SELECT VERSION()")
measure mariadb "$MD_SOCK"

echo "$(uname -sr), $(nproc) cpus, $TABLES tables x $TABLE_SIZE rows, ${DURATION}s per run after ${WARMUP}s warm-up, flush_at_commit=1 on both; MariaDB $MD_VERSION; datadirs under $DISK_DIR"
echo
echo "| workload | threads | redoctor tps | MariaDB tps | redoctor/MariaDB | redoctor p95 ms | MariaDB p95 ms |"
echo "|---|---|---|---|---|---|---|"
for w in $WORKLOADS; do
    for t in $THREADS; do
        read -r _ _ _ rt rp <<<"$(grep "^redoctor $w $t " "$WORK/results")"
        read -r _ _ _ mt mp <<<"$(grep "^mariadb $w $t " "$WORK/results")"
        ratio=$(awk -v a="$rt" -v b="$mt" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
        echo "| $w | $t | $rt | $mt | $ratio | $rp | $mp |"
    done
done
