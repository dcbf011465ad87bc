#!/usr/bin/env bash
# The bundled engine (`redoctor-engine serve`) against its peers, MariaDB and
# PostgreSQL, on the same box with the same stock sysbench workloads and the
# same durability: every commit is fsync'd before it is acknowledged
# (engine --flush-at-commit 1; MariaDB innodb_flush_log_at_trx_commit=1 with
# the binary log off; PostgreSQL fsync=on, synchronous_commit=on).
#
# Each server is started once, on a private datadir and socket with networking
# off, and stopped on exit whatever happens (trap). MariaDB runs as root with
# --user=root; PostgreSQL runs as the `postgres` OS user (via runuser) on a
# private cluster. All datadirs live under DISK_DIR, so all three fsync the
# same disk.
#
# Order of runs: per workload, the tables are (re)created on all three servers,
# then for each repeat and each thread count the servers run back to back
# (engine, MariaDB, PostgreSQL, engine, ...), so a drift of the host over time
# hits all three alike. Each run is a WARMUP-second unmeasured run followed by
# a DURATION-second measured one. oltp_insert grows the tables during its
# runs; they are recreated before the next workload.
#
# Output (in OUT): runs.csv (every measured run), table.md (median and
# min–max of TPS and p95 latency per cell, with the engine/peer ratios of the
# medians). table.md starts with the host facts: the UTC start and end of the
# runs, the CPU model (lscpu), the CPU count, MemTotal, the kernel, and the
# filesystem and device the datadirs are on. table.md is also printed on
# stdout; progress goes to stderr.
#
# Usage: engine/bench/vs_peers.sh
# Environment (default in brackets):
#   DURATION [5]   measured seconds per run      WARMUP [1]   unmeasured seconds before each run
#   REPEATS [3]    runs per cell, at least 3     THREADS ["1 4 16 64 256"]
#   WORKLOADS ["oltp_read_write oltp_update_index oltp_point_select oltp_insert"]
#   SERVERS ["engine mariadb postgres"]          TABLES [4]  TABLE_SIZE [10000]
#                  (also engine_rt0: a second engine, dedicated log threads off;
#                   engine_rt1 likewise with them on, whatever the default;
#                   engine_b: the binary ENGINE_B, e.g. an older build, for an A/B;
#                   engine_self: log threads on with redoctor_log_idle_self_write=ON)
#   ENGINE_ARGS [unset]  extra `serve` options for every engine (e.g. --redo-threads on)
#   DISK_DIR [/var/tmp]  where the datadirs go   BUFFER_POOL [1G] MariaDB buffer pool, PG shared_buffers
#   OUT [vs_peers.<date>]  results directory     KEEP [unset] keep the work directory (datadirs, logs)
#   PG_BIN [/usr/lib/postgresql/15/bin]
# Needs: sysbench, mariadb-server, mariadb-client, postgresql-15; run as root.
# With the defaults the matrix is 4 x 5 x 3 x 3 = 180 runs, about 20 minutes.
# shellcheck disable=SC2034 # VERSION_<server> is read as ${!v} in the summary
set -euo pipefail

DURATION=${DURATION:-5}
WARMUP=${WARMUP:-1}
REPEATS=${REPEATS:-3}
THREADS=${THREADS:-"1 4 16 64 256"}
WORKLOADS=${WORKLOADS:-"oltp_read_write oltp_update_index oltp_point_select oltp_insert"}
SERVERS=${SERVERS:-"engine mariadb postgres"}
TABLES=${TABLES:-4}
TABLE_SIZE=${TABLE_SIZE:-10000}
DISK_DIR=${DISK_DIR:-/var/tmp}
BUFFER_POOL=${BUFFER_POOL:-1G}
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
OUT=${OUT:-$PWD/vs_peers.$(date +%Y%m%d-%H%M%S)}

# sysbench reads --time=0 as "run until stopped": a zero would hang the bench.
for v in DURATION WARMUP REPEATS; do
    [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || { echo "vs_peers.sh: $v=${!v} must be a whole number of at least 1" >&2; exit 1; }
done
# A cell's median and spread mean something from 3 runs on.
if ((REPEATS < 3)); then
    echo "vs_peers.sh: REPEATS=$REPEATS is too few: each cell reports the median and min–max of its runs, which takes at least 3 (REPEATS=3 or more)" >&2
    exit 1
fi

for tool in sysbench mariadbd mariadb-install-db mariadb runuser "$PG_BIN/initdb" "$PG_BIN/pg_ctl" "$PG_BIN/psql"; do
    command -v "$tool" >/dev/null || {
        echo "vs_peers.sh needs $tool: apt-get install -y sysbench mariadb-server mariadb-client postgresql-15" >&2
        exit 1
    }
done
[ "$(id -u)" = 0 ] || { echo "vs_peers.sh runs as root (MariaDB as root, PostgreSQL via runuser)" >&2; exit 1; }

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/../.."
cargo build --release -q -p redoctor-engine-cli --bin redoctor-engine
BIN=$PWD/target/release/redoctor-engine

WORK=$(mktemp -d "$DISK_DIR/vs_peers.XXXXXX")
chmod 755 "$WORK" # the postgres user must reach its directories inside
ENGINE_PIDS=() # every engine started; engine NAME serves on $WORK/NAME.sock
read -r -a ENGINE_EXTRA <<<"${ENGINE_ARGS:-}"
MARIADB_SOCK=$WORK/mariadb.sock
PG_DIR=$WORK/pg # owned by the postgres user: data, log, socket
PG_SOCKDIR=$PG_DIR/sock
MARIADB_PID=""
PG_UP=""

log() { echo "[$(date +%T)] $*" >&2; }

# The host facts table.md starts with (see Output above).
cpu_model() {
    local out model=""
    out=$(lscpu 2>/dev/null || true)
    model=$(sed -n '/^Model name:/{s/^Model name:[[:space:]]*//p;q}' <<<"$out")
    [ -n "$model" ] || model=$(sed -n '/^model name/{s/^model name[[:space:]]*:[[:space:]]*//p;q}' /proc/cpuinfo)
    echo "${model:-unknown CPU model}"
}

mem_total() {
    awk '/^MemTotal:/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo
}

# filesystem type, device and mount point of directory $1
filesystem_of() {
    df -PT "$1" | awk 'NR == 2 {print $2 " on " $1 " (mounted at " $7 ")"}'
}

cleanup() {
    set +e
    for pid in "${ENGINE_PIDS[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
    [ -n "$MARIADB_PID" ] && kill "$MARIADB_PID" 2>/dev/null && wait "$MARIADB_PID" 2>/dev/null
    [ -n "$PG_UP" ] && runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null 2>&1
    if [ -z "${KEEP:-}" ]; then rm -rf "$WORK"; else echo "kept $WORK" >&2; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_for_socket() {
    for _ in $(seq 1 300); do
        [ -S "$1" ] && return 0
        sleep 0.1
    done
    echo "no socket at $1; see the logs in $WORK (KEEP=1 keeps them)" >&2
    exit 1
}

# serve_engine NAME [serve options...]: starts one engine ($ENGINE_BIN,
# default $BIN) on $WORK/NAME.sock
serve_engine() {
    local name=$1 sock=$WORK/$1.sock
    shift
    "${ENGINE_BIN:-$BIN}" serve "${ENGINE_EXTRA[@]}" --datadir "$WORK/$name-data" --socket "$sock" --flush-at-commit 1 "$@" \
        2>"$WORK/$name.log" &
    ENGINE_PIDS+=($!)
    wait_for_socket "$sock"
    mariadb --socket="$sock" -uroot -e "CREATE DATABASE IF NOT EXISTS sbtest" 2>/dev/null || true
}

# The engine as MySQL 8.4 configures itself: dedicated log threads off
# below 32 logical CPUs (serve's own default is MySQL 8.0's, on).
start_engine() {
    local rt=off
    (($(nproc) >= 32)) && rt=on
    serve_engine engine --redo-threads "$rt"
    VERSION_engine="redoctor-engine $(git rev-parse --short HEAD) with MySQL 8.4's log threads ($rt)"
}

start_engine_rt0() {
    serve_engine engine_rt0 --redo-threads off
    VERSION_engine_rt0="redoctor-engine $(git rev-parse --short HEAD) with --redo-threads off"
}

start_engine_rt1() {
    serve_engine engine_rt1 --redo-threads on
    VERSION_engine_rt1="redoctor-engine $(git rev-parse --short HEAD) with --redo-threads on"
}

start_engine_self() {
    serve_engine engine_self --redo-threads on
    mariadb --socket="$WORK/engine_self.sock" -uroot -e "SET GLOBAL redoctor_log_idle_self_write = ON"
    VERSION_engine_self="redoctor-engine $(git rev-parse --short HEAD) with --redo-threads on and idle self-write"
}

start_engine_b() {
    [ -x "${ENGINE_B:-}" ] || { echo "engine_b needs ENGINE_B=path of a redoctor-engine binary" >&2; exit 1; }
    ENGINE_BIN=$ENGINE_B serve_engine engine_b
    VERSION_engine_b="redoctor-engine at $ENGINE_B"
}

start_mariadb() {
    mariadb-install-db --no-defaults --user=root --datadir="$WORK/mariadb-data" \
        --auth-root-authentication-method=normal --skip-test-db >"$WORK/mariadb-install.log" 2>&1
    mariadbd --no-defaults --user=root --datadir="$WORK/mariadb-data" --socket="$MARIADB_SOCK" \
        --skip-networking --pid-file="$WORK/mariadb.pid" --log-error="$WORK/mariadb.err" \
        --innodb-flush-log-at-trx-commit=1 --innodb-buffer-pool-size="$BUFFER_POOL" \
        --innodb-log-file-size=512M --max-connections=400 --skip-log-bin &
    MARIADB_PID=$!
    wait_for_socket "$MARIADB_SOCK"
    for _ in $(seq 1 100); do
        mariadb --socket="$MARIADB_SOCK" -uroot -e "CREATE DATABASE IF NOT EXISTS sbtest" 2>/dev/null && {
            VERSION_mariadb="MariaDB $(mariadb --socket="$MARIADB_SOCK" -uroot -N -e 'SELECT VERSION()')"
            return 0
        }
        sleep 0.1
    done
    echo "MariaDB did not accept connections; see $WORK/mariadb.err" >&2
    exit 1
}

start_postgres() {
    mkdir -p "$PG_SOCKDIR"
    chown -R postgres: "$PG_DIR"
    chmod 700 "$PG_DIR" "$PG_SOCKDIR"
    runuser -u postgres -- "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres --auth=trust \
        >"$PG_DIR/initdb.log" 2>&1
    runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/pg.log" -w -t 60 start -o \
        "-c listen_addresses='' -c unix_socket_directories='$PG_SOCKDIR' -c fsync=on \
         -c synchronous_commit=on -c full_page_writes=on -c shared_buffers=${BUFFER_POOL}B \
         -c max_connections=400 -c max_wal_size=4GB" >/dev/null
    PG_UP=1
    "$PG_BIN/psql" -h "$PG_SOCKDIR" -U postgres -qc "CREATE DATABASE sbtest" postgres
    VERSION_postgres="PostgreSQL $("$PG_BIN/psql" -h "$PG_SOCKDIR" -U postgres -tAc 'SHOW server_version' postgres)"
}

# sb SERVER WORKLOAD COMMAND THREADS SECONDS -> sysbench output
sb() {
    local conn
    case $1 in
        engine*) conn=(--db-driver=mysql --mysql-socket="$WORK/$1.sock" --mysql-user=root --mysql-db=sbtest) ;;
        mariadb) conn=(--db-driver=mysql --mysql-socket="$MARIADB_SOCK" --mysql-user=root --mysql-db=sbtest) ;;
        postgres) conn=(--db-driver=pgsql --pgsql-host="$PG_SOCKDIR" --pgsql-user=postgres --pgsql-db=sbtest) ;;
    esac
    sysbench "${conn[@]}" --tables="$TABLES" --table-size="$TABLE_SIZE" --threads="$4" --time="$5" \
        --report-interval=0 --percentile=95 "$2" "$3"
}

# row count of the last table, to check a prepare
rows() {
    case $1 in
        engine*) mariadb --socket="$WORK/$1.sock" -uroot -N -e "SELECT COUNT(*) FROM sbtest.sbtest$TABLES" ;;
        mariadb) mariadb --socket="$MARIADB_SOCK" -uroot -N -e "SELECT COUNT(*) FROM sbtest.sbtest$TABLES" ;;
        postgres) "$PG_BIN/psql" -h "$PG_SOCKDIR" -U postgres -tAc "SELECT COUNT(*) FROM sbtest$TABLES" sbtest ;;
    esac
}

prepare() { # SERVER WORKLOAD
    local out=$WORK/$1-$2-prepare.out n
    sb "$1" "$2" cleanup 1 1 >/dev/null 2>&1 || true
    sb "$1" "$2" prepare 4 1 >"$out" 2>&1 || true
    n=$(rows "$1" 2>&1 || true)
    if grep -q FATAL "$out" || [ "$n" != "$TABLE_SIZE" ]; then
        echo "$1: $2 prepare failed (sbtest$TABLES has '$n' rows, want $TABLE_SIZE):" >&2
        tail -c 2000 "$out" >&2
        exit 1
    fi
    # PostgreSQL plans from statistics; give it fresh ones as a DBA would.
    if [ "$1" = postgres ]; then "$PG_BIN/psql" -h "$PG_SOCKDIR" -U postgres -qc "VACUUM ANALYZE" sbtest; fi
}

STARTED_UTC=$(date -u +%FT%TZ)
for s in $SERVERS; do log "starting $s"; "start_$s"; done

echo "server,workload,threads,repeat,tps,p95_ms,errors_per_s,started" >"$OUT/runs.csv"
total=$(( $(wc -w <<<"$WORKLOADS") * $(wc -w <<<"$THREADS") * REPEATS * $(wc -w <<<"$SERVERS") ))
done_runs=0
for w in $WORKLOADS; do
    for s in $SERVERS; do log "$s: $w prepare"; prepare "$s" "$w"; done
    for r in $(seq 1 "$REPEATS"); do
        for t in $THREADS; do
            for s in $SERVERS; do
                done_runs=$((done_runs + 1))
                out=$WORK/$s-$w-$t-$r.out
                started=$(date -u +%FT%TZ)
                # sysbench 1.0 has no --warmup-time: an unmeasured run first.
                sb "$s" "$w" run "$t" "$WARMUP" >/dev/null 2>&1 || true
                if ! sb "$s" "$w" run "$t" "$DURATION" >"$out" 2>&1; then
                    echo "sysbench failed on $s $w $t threads:" >&2
                    tail -c 2000 "$out" >&2
                    exit 1
                fi
                tps=$(awk '/transactions:/ {gsub(/\(/, "", $3); print $3}' "$out")
                p95=$(awk '/95th percentile:/ {print $3}' "$out")
                err=$(awk '/ignored errors:/ {gsub(/\(/, "", $4); print $4}' "$out")
                echo "$s,$w,$t,$r,$tps,$p95,${err:-0},$started" >>"$OUT/runs.csv"
                log "[$done_runs/$total] $s $w t=$t rep $r: $tps tps, p95 $p95 ms"
            done
        done
    done
    for s in $SERVERS; do sb "$s" "$w" cleanup 1 1 >/dev/null 2>&1 || true; done
done

# ---- summary: median and min–max per cell, ratios of the medians ----
versions=""
for s in $SERVERS; do v=VERSION_$s; versions="$versions${versions:+; }${!v}"; done
{
    echo "Date (UTC): $STARTED_UTC to $(date -u +%FT%TZ)."
    echo "Host: $(cpu_model); $(nproc) CPUs; MemTotal $(mem_total); kernel $(uname -srm);"
    echo "datadirs on $(filesystem_of "$WORK")."
    echo "$TABLES tables x $TABLE_SIZE rows; ${DURATION}s measured after ${WARMUP}s warm-up;"
    echo "$REPEATS interleaved repeats per cell, median (min–max); every commit fsync'd on all servers; $versions."
    echo
    awk -F, -v servers="$SERVERS" -v workloads="$WORKLOADS" -v threads="$THREADS" '
        NR > 1 { k = $1 SUBSEP $2 SUBSEP $3; n[k]++; tps[k, n[k]] = $5; p95[k, n[k]] = $6 }
        function sortn(a, m,   i, j, x) { for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x } }
        function med(a, m) { return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
        # stat(src, key) -> sets MED, LO, HI
        function stat(which, k,   a, i, m) {
            m = n[k]; for (i = 1; i <= m; i++) a[i] = (which == "tps" ? tps[k, i] : p95[k, i]) + 0
            sortn(a, m); MED = med(a, m); LO = a[1]; HI = a[m]
        }
        function cell(which, k, fmt) {
            if (!n[k]) return "-"
            stat(which, k); return sprintf(fmt " (" fmt "–" fmt ")", MED, LO, HI)
        }
        BEGIN {
            ns = split(servers, S, " "); nw = split(workloads, W, " "); nt = split(threads, T, " ")
            name["engine"] = "engine"; name["engine_rt0"] = "engine RT0"; name["engine_rt1"] = "engine RT1"; name["engine_b"] = "engine B"; name["engine_self"] = "engine RT1+self"; name["mariadb"] = "MariaDB"; name["postgres"] = "PostgreSQL"
        }
        END {
            h = "| workload | threads |"; sep = "|---|---|"
            for (i = 1; i <= ns; i++) { h = h " " name[S[i]] " TPS |"; sep = sep "---|" }
            for (i = 1; i <= ns; i++) if (S[i] != "engine") { h = h " engine / " name[S[i]] " |"; sep = sep "---|" }
            for (i = 1; i <= ns; i++) { h = h " " name[S[i]] " p95 ms |"; sep = sep "---|" }
            print h; print sep
            for (a = 1; a <= nw; a++) for (b = 1; b <= nt; b++) {
                line = "| " W[a] " | " T[b] " |"
                ek = "engine" SUBSEP W[a] SUBSEP T[b]
                for (i = 1; i <= ns; i++) line = line " " cell("tps", S[i] SUBSEP W[a] SUBSEP T[b], "%.0f") " |"
                for (i = 1; i <= ns; i++) if (S[i] != "engine") {
                    k = S[i] SUBSEP W[a] SUBSEP T[b]
                    if (n[ek] && n[k]) { stat("tps", ek); e = MED; stat("tps", k); line = line sprintf(" %.2f |", MED > 0 ? e / MED : 0) }
                    else line = line " - |"
                }
                for (i = 1; i <= ns; i++) line = line " " cell("p95", S[i] SUBSEP W[a] SUBSEP T[b], "%.2f") " |"
                print line
            }
        }' "$OUT/runs.csv"
} >"$OUT/table.md"
cat "$OUT/table.md"
log "results in $OUT (runs.csv, table.md)"
