#!/usr/bin/env bash
# Redo log threads off (RT0: user threads write and fsync the log) against on
# (RT1: dedicated writer/flusher/notifier threads) under update_index, for each
# storage (a directory on disk, one on tmpfs), CPU count and user count.
# Prints a markdown table on stdout; progress goes to stderr.
#
# The RT0 and RT1 runs of a cell run back to back, in alternating order from
# cell to cell, so slow drift of the machine favours neither. Every run gets
# a fresh datadir.
#
# Usage: engine/bench/redo_modes.sh
# Environment (default in brackets):
#   DURATION [5]             measured seconds per run
#   WARMUP [1]               warm-up seconds per run
#   USERS ["1 4 16 64 256"]  user counts
#   CPUS ["1 2"]             CPU counts (--cpus); counts above nproc are skipped
#   STORAGE ["disk shm"]     storages to measure
#   DISK_DIR [/var/tmp]      where "disk" datadirs are created
#   SHM_DIR [/dev/shm]       where "shm" datadirs are created
#   WORKLOAD [update_index]  TABLES [4]  TABLE_SIZE [10000]  FLUSH_AT_COMMIT [1]
#   OUT [new temp dir]       keeps runs.jsonl (every JSON report) and each run's stderr
# Needs jq.
set -euo pipefail

DURATION=${DURATION:-5}
WARMUP=${WARMUP:-1}
USERS=${USERS:-"1 4 16 64 256"}
CPUS=${CPUS:-"1 2"}
STORAGE=${STORAGE:-"disk shm"}
DISK_DIR=${DISK_DIR:-/var/tmp}
SHM_DIR=${SHM_DIR:-/dev/shm}
WORKLOAD=${WORKLOAD:-update_index}
TABLES=${TABLES:-4}
TABLE_SIZE=${TABLE_SIZE:-10000}
FLUSH_AT_COMMIT=${FLUSH_AT_COMMIT:-1}

command -v jq >/dev/null || {
    echo "redo_modes.sh needs jq: apt-get install -y jq" >&2
    exit 1
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
engine_dir=$(dirname "$here")
OUT=${OUT:-$(mktemp -d -t redoctor-redo-modes.XXXXXX)}
mkdir -p "$OUT"

echo "building the release binary..." >&2
bin=$(cd "$engine_dir" &&
    cargo build --release -p redoctor-engine-cli --bin redoctor-engine --message-format=json-render-diagnostics |
    jq -r 'select(.reason == "compiler-artifact" and .target.name == "redoctor-engine" and .executable != null) | .executable' |
        tail -n 1)
if [[ -z "$bin" || ! -x "$bin" ]]; then
    echo "cannot find the redoctor-engine binary cargo built" >&2
    exit 1
fi

storage_dir() {
    case "$1" in
    disk) echo "$DISK_DIR" ;;
    shm) echo "$SHM_DIR" ;;
    *)
        echo "unknown storage '$1': use disk or shm" >&2
        exit 1
        ;;
    esac
}

for s in $STORAGE; do
    d=$(storage_dir "$s")
    [[ -d "$d" && -w "$d" ]] || {
        echo "$s directory $d is missing or not writable: set ${s^^}_DIR" >&2
        exit 1
    }
    fstype=$(stat -f -c %T "$d")
    if [[ "$s" == disk && "$fstype" == tmpfs ]]; then
        echo "warning: DISK_DIR $d is on tmpfs, not a disk: set DISK_DIR" >&2
    fi
done

ncpu=$(nproc)
current_dir=""
cleanup() {
    if [[ -n "$current_dir" ]]; then rm -rf "$current_dir"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# run_one STORAGE CPUS USERS on|off: sets RESULT to the JSON report ("" on failure).
run_one() {
    local storage=$1 cpus=$2 users=$3 mode=$4 log
    current_dir=$(mktemp -d "$(storage_dir "$storage")/redoctor-bench.XXXXXX")
    log="$OUT/$storage-cpus$cpus-users$users-$mode.err"
    if RESULT=$("$bin" run --workload "$WORKLOAD" --users "$users" \
        --duration "$DURATION" --warmup "$WARMUP" \
        --redo-threads "$mode" --flush-at-commit "$FLUSH_AT_COMMIT" --cpus "$cpus" \
        --tables "$TABLES" --table-size "$TABLE_SIZE" \
        --datadir "$current_dir/data" --json 2>"$log"); then
        jq -c --arg storage "$storage" '. + {storage: $storage}' <<<"$RESULT" >>"$OUT/runs.jsonl"
    else
        echo "  run failed ($storage, $cpus cpus, $users users, redo threads $mode): $(tail -n 1 "$log")" >&2
        RESULT=""
    fi
    rm -rf "$current_dir"
    current_dir=""
}

# fields JSON: "tps commits_per_fsync ctx_switches_per_commit p95_us", "-" when unknown.
fields() {
    if [[ -z "$1" ]]; then
        echo "- - - -"
        return
    fi
    jq -r '[
        .tps,
        (.commits_per_fsync // "-"),
        (if .ctx_switches.voluntary_per_commit == null then "-"
         else .ctx_switches.voluntary_per_commit + .ctx_switches.involuntary_per_commit end),
        .latency_us.p95_us
    ] | map(tostring) | join(" ")' <<<"$1"
}

# fmt DECIMALS VALUE: a number rounded, or "-".
fmt() {
    if [[ "$2" == "-" ]]; then echo "-"; else LC_ALL=C printf "%.${1}f" "$2"; fi
}

ratio() {
    if [[ "$1" == "-" || "$2" == "-" ]]; then
        echo "-"
    else
        awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "-" }'
    fi
}

cells=0
for s in $STORAGE; do
    for c in $CPUS; do
        if ((c > ncpu)); then
            echo "skipping $c cpus: this machine has $ncpu" >&2
            continue
        fi
        for u in $USERS; do cells=$((cells + 1)); done
    done
done
echo "$cells cells x 2 modes, about $(((cells * 2 * (${DURATION%.*} + ${WARMUP%.*} + 1) + 59) / 60)) min; reports in $OUT/runs.jsonl" >&2

rows=()
cell=0
for s in $STORAGE; do
    for c in $CPUS; do
        if ((c > ncpu)); then continue; fi
        for u in $USERS; do
            if ((cell % 2 == 0)); then order="off on"; else order="on off"; fi
            cell=$((cell + 1))
            rt0="" rt1=""
            for mode in $order; do
                echo "[$cell/$cells] $s, $c cpus, $u users, redo threads $mode" >&2
                run_one "$s" "$c" "$u" "$mode"
                if [[ $mode == off ]]; then rt0=$RESULT; else rt1=$RESULT; fi
            done
            read -r tps0 cpf0 ctx0 p950 <<<"$(fields "$rt0")"
            read -r tps1 cpf1 ctx1 p951 <<<"$(fields "$rt1")"
            row="| $s | $c | $u | $(fmt 0 "$tps0") | $(fmt 0 "$tps1") | $(ratio "$tps0" "$tps1") | $(fmt 1 "$cpf0") / $(fmt 1 "$cpf1") | $(fmt 2 "$ctx0") / $(fmt 2 "$ctx1") | $(fmt 0 "$p950") / $(fmt 0 "$p951") |"
            echo "$row" >&2
            rows+=("$row")
        done
    done
done

echo "## redo log threads off (RT0) vs on (RT1): $WORKLOAD, ${DURATION}s after ${WARMUP}s warm-up, flush_at_commit $FLUSH_AT_COMMIT"
echo
echo "$(uname -sr), $ncpu cpus, $TABLES tables x $TABLE_SIZE rows; disk = $DISK_DIR ($(stat -f -c %T "$DISK_DIR")), shm = $SHM_DIR"
echo
echo "| storage | cpus | users | RT0 tps | RT1 tps | RT1/RT0 | commits/fsync RT0 / RT1 | ctx switches/commit RT0 / RT1 | p95 µs RT0 / RT1 |"
echo "|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
