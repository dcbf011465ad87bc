#!/usr/bin/env python3
"""Summary of a `meter_power.py` run (its JSONL): per injected slowdown the
true effect (long interleaved static phases), the trials' detection rate,
the rate the trials' own stated resolution predicts, and how often the
trial's interval held the true ratio; for the A/A trials (spin 0) how many
kept anything and the median |estimate|.

The truth is the static phases' ratio, or where `--fast-truth` ran, the
fixed-horizon trials' (before and after the trials, pooled).

Predicted detection: a trial states the change it detects with 80% power
(`resolution` r), so its standard error is ln(1 + r) / (z(0.975) + z(0.8));
at a true log effect d it detects with probability
Phi(|d| / se - z(0.975)) (one side; the other side is negligible). The
mean over the trials is what the stated resolution predicts, at the
static phases' true effect and at the trials' pooled one (the mean of their
log estimates: 20 trials of switchback are 20 minutes of alternation, far
more than the static phases; its 95% interval from the trials' spread).
A trial that stopped early reports an estimate biased away from no change
(its reason says so), so the pooled ratio leans away from 1 too: it is an
upper bound on the effect's size, not a corrected estimate.

Each trial's own resolution is the one it stated at its stop: after an
early stop that is fewer blocks at a stricter look's level, so the mean
over the trials predicts far less than they detect. Trials since
2026-12-05 also state what their whole budget would resolve
(`full_resolution`), and the prediction uses that where it is set. For
older runs, `--full A.jsonl`
predicts instead from what a trial that runs its whole budget states at
the same load: the median resolution of the A/A trials in A.jsonl (spin 0)
that ran to their budget, the figure a user sees after a full trial.

Usage: agent/bench/meter_power_summary.py RUN.jsonl [--full AA.jsonl]
"""
import json
import math
import statistics
import sys
from statistics import NormalDist

Z975, Z80 = 1.959964, 0.841621


def pooled(rs):
    """The trials' pooled ratio and its 95% interval (t quantile)."""
    logs = [math.log(r["estimate"]) for r in rs if r.get("estimate")]
    if len(logs) < 2:
        return "-"
    m, se = statistics.mean(logs), statistics.stdev(logs) / math.sqrt(len(logs))
    # Student t quantile by a Cornish-Fisher step (enough from 5 trials).
    df = len(logs) - 1
    t = Z975 + (Z975**3 + Z975) / (4 * df)
    return f"{math.exp(m):.3f} [{math.exp(m - t * se):.3f}, {math.exp(m + t * se):.3f}]"


def full_resolution(path):
    """The median resolution A/A trials state after running their whole
    budget (not stopped early), and how many there were."""
    rs = [json.loads(l) for l in open(path) if l.strip()]
    full = [r["resolution"] for r in rs
            if r.get("kind") == "trial" and r.get("spin_ns") == 0 and r.get("resolution")
            and r.get("outcome") == "inconclusive" and "stopped early" not in r["reason"]]
    if not full:
        sys.exit(f"{path}: no A/A trial ran to its budget")
    return statistics.median(full), len(full)


def detect_at(d, resolution):
    """The chance a trial stating `resolution` detects a log effect `d`."""
    return NormalDist().cdf(abs(d) / (math.log1p(resolution) / (Z975 + Z80)) - Z975)


def fast_truths(rows):
    """Per spin, the fixed-horizon trials' ratio and 95% interval
    (`meter_power.py --fast-truth`): the runs before and after the trials
    pooled by inverse variance on the log scale (each run's standard
    error from its interval, t quantile ~2.0 at its ~60 blocks)."""
    out = {}
    for spin in {r["spin_ns"] for r in rows if r["kind"] == "truth_fast"}:
        w = m = 0.0
        for r in rows:
            if r["kind"] == "truth_fast" and r["spin_ns"] == spin:
                se = (math.log(r["ci"][1]) - math.log(r["ci"][0])) / (2 * 2.0)
                w += 1 / se**2
                m += math.log(r["ratio"]) / se**2
        m, se = m / w, 1 / math.sqrt(w)
        out[spin] = {"ratio": math.exp(m), "ci": [math.exp(m - Z975 * se), math.exp(m + Z975 * se)]}
    return out


def main():
    args = sys.argv[1:]
    full = None
    if "--full" in args:
        i = args.index("--full")
        full = full_resolution(args[i + 1])
        del args[i:i + 2]
        print(f"a full trial at this load states ±{full[0]:.2%} (median of {full[1]} A/A trials that ran their budget)")
    rows = [json.loads(l) for l in open(args[0]) if l.strip()]
    truth = {r["spin_ns"]: r for r in rows if r["kind"] == "truth"}
    truth.update(fast_truths(rows))  # the tighter truth where it was measured
    trials = [r for r in rows if r["kind"] == "trial" and "outcome" in r]
    errors = [r for r in rows if r["kind"] == "trial" and "error" in r]
    print(f"{len(trials)} trials ({len(errors)} failed to run)")
    print("| spin (ns) | true ratio [95%] | pooled trials [95%] | trials | detected | predicted (truth / pooled) | kept | interval held the truth | stated resolution (median) | elapsed (median s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for spin in sorted({r["spin_ns"] for r in trials}):
        rs = [r for r in trials if r["spin_ns"] == spin]
        kept = sum(r["outcome"] == "kept" for r in rs)
        res = [r["resolution"] for r in rs if r.get("resolution")]
        el = statistics.median(r["elapsed_s"] for r in rs)
        if spin == 0:
            ests = [abs(r["estimate"] - 1) for r in rs if r.get("estimate")]
            decided = sum(r["outcome"] in ("kept", "rolled_back_worse") for r in rs)
            floor = sum(r["outcome"] == "aborted_floor" for r in rs)
            print(f"| 0 (A/A) | 1 | {pooled(rs)} | {len(rs)} | decided {decided} ({decided / len(rs):.0%}), "
                  f"aborted by the floor {floor} | - | {kept} ({kept / len(rs):.1%}) | - | "
                  f"{statistics.median(res):.1%} | {el:.0f} |")
            print(f"|  | median abs(estimate) {statistics.median(ests):.2%} |  |  |  |  |  |  |  |  |")
            continue
        t = truth.get(spin)
        det = sum(r["outcome"] == "rolled_back_worse" or r["reason"].startswith("likely slower")
                  for r in rs)
        def predicted(d):
            if full:
                return detect_at(d, full[0])
            return statistics.mean(detect_at(d, r.get("full_resolution") or r["resolution"])
                                   for r in rs if r.get("resolution"))
        logs = [math.log(r["estimate"]) for r in rs if r.get("estimate")]
        pred_pooled = predicted(statistics.mean(logs)) if logs else float("nan")
        if t:
            pred = predicted(math.log(t["ratio"]))
            held = sum(1 for r in rs if r["ci"][0] is not None and r["ci"][0] <= t["ratio"] <= r["ci"][1])
            tt = f"{t['ratio']:.3f} [{t['ci'][0]:.3f}, {t['ci'][1]:.3f}]"
        else:
            pred, held, tt = float("nan"), 0, "-"
        print(f"| {spin} | {tt} | {pooled(rs)} | {len(rs)} | {det} ({det / len(rs):.0%}) | "
              f"{pred:.0%} / {pred_pooled:.0%} | {kept} | "
              f"{held} of {len(rs)} | {statistics.median(res):.1%} | {el:.0f} |")


if __name__ == "__main__":
    main()
