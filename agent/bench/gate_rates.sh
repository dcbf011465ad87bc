#!/usr/bin/env bash
# Detection and false-alarm rates of `redoctor gate` (root; agent/GATE.md).
#
#   agent/bench/gate_rates.sh [N] [SCENARIO]
#
# Records a baseline of SCENARIO (default tests/gate/engine-commit-path.toml),
# then runs the gate N times (default 20) on each of: the unchanged build,
# the build with one more notifier hop per commit
# (redoctor_debug_commit_extra_hop=ON), and with a 200 us sleep per commit
# (redoctor_debug_commit_sleep_us=200), interleaved. Prints how often each
# passed (exit 0), failed (1) or erred (2), and which metrics failed.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-20}
SCENARIO=${2:-tests/gate/engine-commit-path.toml}
cargo build --release -q -p redoctor-agent -p redoctor-engine-cli
BIN=target/release/redoctor
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

variant() { # NAME EXTRA_SETTING
    local out=$WORK/$1.toml
    if [[ -z "$2" ]]; then
        cp "$SCENARIO" "$out"
    else
        sed "s/^settings = { \(.*\) }$/settings = { \1, $2 }/" "$SCENARIO" >"$out"
        grep -q "${2%% *}" "$out" || { echo "cannot add $2 to $SCENARIO's settings line" >&2; exit 2; }
    fi
    echo "$out"
}
declare -A SC=(
    [unchanged]=$(variant unchanged "")
    [extra_hop]=$(variant extra_hop 'redoctor_debug_commit_extra_hop = "ON"')
    [sleep_200us]=$(variant sleep_200us 'redoctor_debug_commit_sleep_us = "200"')
)
echo "recording the baseline of $SCENARIO ..." >&2
$BIN gate run --scenario "${SC[unchanged]}" --baseline "$WORK/base.json" --update-baseline 2>/dev/null
declare -A PASS FAIL ERR FAILED_ON
start=$(date +%s)
for ((i = 1; i <= N; i++)); do
    for v in unchanged extra_hop sleep_200us; do
        set +e
        $BIN gate run --scenario "${SC[$v]}" --baseline "$WORK/base.json" --format json \
            --out "$WORK/$v.$i.json" 2>/dev/null
        rc=$?
        set -e
        case $rc in
            0) PASS[$v]=$((${PASS[$v]:-0} + 1)) ;;
            1) FAIL[$v]=$((${FAIL[$v]:-0} + 1))
               m=$(jq -r '[.comparison.metrics[] | select(.verdict == "regression") | .name] | join(",")' "$WORK/$v.$i.json")
               FAILED_ON[$v]="${FAILED_ON[$v]:-} [$m]" ;;
            *) ERR[$v]=$((${ERR[$v]:-0} + 1)) ;;
        esac
    done
    echo "round $i/$N done ($(($(date +%s) - start)) s)" >&2
done
echo "scenario: $SCENARIO; $N gate runs per variant; $(date -u +%F) $(git rev-parse --short HEAD); $(nproc) CPUs"
printf '%-12s %6s %6s %6s  %s\n' variant pass fail error "failed metrics"
for v in unchanged extra_hop sleep_200us; do
    printf '%-12s %6d %6d %6d  %s\n' "$v" "${PASS[$v]:-0}" "${FAIL[$v]:-0}" "${ERR[$v]:-0}" "${FAILED_ON[$v]:-}"
done
echo "wall time $(($(date +%s) - start)) s for $((3 * N)) gate runs"
