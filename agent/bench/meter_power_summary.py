#!/usr/bin/env python3
"""Summary of a `meter_power.py` run (its JSONL): per injected slowdown the
true effect (long interleaved static phases), the trials' detection rate,
the rate the trials' own stated resolution predicts, and how often the
trial's interval held the true ratio; for the A/A trials (spin 0) how many
kept anything and the median |estimate|.

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

Usage: agent/bench/meter_power_summary.py RUN.jsonl
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


def main():
    rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
    truth = {r["spin_ns"]: r for r in rows if r["kind"] == "truth"}
    trials = [r for r in rows if r["kind"] == "trial" and "outcome" in r]
    errors = [r for r in rows if r["kind"] == "trial" and "error" in r]
    print(f"{len(trials)} trials ({len(errors)} failed to run)")
    print("| spin (ns) | true ratio, static [95%] | pooled trials [95%] | trials | detected | predicted (static / pooled) | kept | interval held the static truth | stated resolution (median) | elapsed (median s) |")
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
            return statistics.mean(
                NormalDist().cdf(abs(d) / (math.log1p(r["resolution"]) / (Z975 + Z80)) - Z975)
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
