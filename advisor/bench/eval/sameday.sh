#!/usr/bin/env bash
# Ground truth and live trials of the same hour, scenario by scenario.
#
# The oracle drifts between days on this kind of host (insert at 128 users:
# RT0 1.5x RT1 one day, 0.93x two days later), so a trial scored against a
# ground truth measured on another day mixes the advisor's error with the
# host's drift. This runs, for each scenario whose key contains FILTER,
# measure.py (every configuration, fresh runs, interleaved) and then at
# once trials.py (the live `diagnose --trial`, with the calibration that
# left the scenario's workload out), so each trial's oracle was measured
# minutes before it. Score with:
#   advice_eval score OUT/ground-truth.jsonl --trials OUT/trials.jsonl
#
# Usage: advisor/bench/eval/sameday.sh FILTER OUT FOLDS
#   FILTER  a substring of the scenario keys, e.g. "read_write/" (the
#           read_write family) or "/1024u/"
#   OUT     directory for ground-truth.jsonl, trials.jsonl, the logs and
#           raw/ (each diagnosis's whole JSON: every trial window)
#           (an interrupted run resumes: finished scenarios are skipped)
#   FOLDS   the calibrations per held-out workload
#           (`advice_eval folds DATA.jsonl FOLDS`)
# ALT=PATH also runs the trials with another redoctor binary (an A/B of two
# builds against the same hour's oracle) into OUT/trials-alt.jsonl, its raw
# JSON in OUT/raw-alt; the two builds take turns going first.
# Needs root and a release build (cargo build --release -p redoctor-agent
# -p redoctor-engine-cli); keep the machine otherwise idle.
set -euo pipefail
[[ $# -eq 3 ]] || { sed -n 2,26p "$0" >&2; exit 2; }
filter=$1 out=$2 folds=$3
[[ -d $folds ]] || { echo "sameday.sh: no folds directory $folds (make it with: advice_eval folds DATA.jsonl $folds)" >&2; exit 1; }
mkdir -p "$out"
cd "$(dirname "$0")/../../.."
plan=advisor/bench/eval/plan.toml
mapfile -t keys < <(python3 - "$plan" "$filter" <<'PY'
import sys, tomllib
sys.path.insert(0, "advisor/bench/eval")
import measure
plan = tomllib.load(open(sys.argv[1], "rb"))
for s in measure.scenarios(plan):
    if sys.argv[2] in measure.key(s):
        print(measure.key(s))
PY
)
((${#keys[@]})) || { echo "sameday.sh: no scenario key contains '$filter'" >&2; exit 1; }
echo "${#keys[@]} scenarios" >&2
trial() { # trial KEY SUFFIX [--redoctor PATH]
    local k=$1 sfx=$2
    shift 2
    echo "[$(date +%T)] trial${sfx:+ ($sfx)} $k" >&2
    python3 advisor/bench/eval/trials.py "$plan" "$folds" "$out/trials${sfx:+-$sfx}.jsonl" --resume --only "$k" \
        --raw "$out/raw${sfx:+-$sfx}" "$@" >>"$out/trials${sfx:+-$sfx}.log" 2>&1
}
n=0
for k in "${keys[@]}"; do
    echo "[$(date +%T)] ground truth $k" >&2
    python3 advisor/bench/eval/measure.py "$plan" "$out/ground-truth.jsonl" --resume --only "$k" \
        >>"$out/measure.log" 2>&1
    if [[ -z ${ALT:-} ]]; then
        trial "$k" ""
    elif ((n++ % 2 == 0)); then
        trial "$k" "" && trial "$k" alt --redoctor "$ALT"
    else
        trial "$k" alt --redoctor "$ALT" && trial "$k" ""
    fi
done
echo "[$(date +%T)] done: advice_eval score $out/ground-truth.jsonl --trials $out/trials.jsonl" >&2
