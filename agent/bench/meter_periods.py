#!/usr/bin/env python3
"""What a switchback trial resolves at each period length: A/A
fixed-horizon trials (`redoctor diagnose --trial --candidate
redoctor_debug_commit_spin_ns=0 --trial-looks 1`, the setting against
itself, so the whole budget runs and no early stop biases it) with the
designs interleaved round by round on one running load, each trial's
stated resolution (the change it detects with 80% power) and estimate
recorded.

With `--spin NS` the candidate is a real slowdown (the spin after each
durable commit) instead of the setting itself: the designs' estimates of
one effect side by side, so a design that dilutes it (a switch that lands
after its guard) shows as a smaller estimate than the longer periods'.
`--candidate NAME=VALUE` trials another knob instead (e.g.
`innodb_log_writer_threads=OFF` from the load's ON), and `--reset
NAME=VALUE` restores it after each trial, whatever the trial decided:
how each design reads a real knob whose switch has a carryover, against
the longest periods' reading. `--static SECS` adds, each round, a pair
of static phases of SECS each (baseline and candidate, the first 2 s
discarded, the order alternating by round): the effect as long runs read
it, interleaved with the trials. `--sql STMT` (repeatable) runs on the server once the load has settled,
e.g. `SET GLOBAL innodb_log_spin_cpu_pct_hwm = 0` to hold the engine's
spin gate shut, so a carryover through it can be told from others.
`--windows MS,...` interleaves the engine's spin gate windows
(`redoctor_spin_gate_window_ms`) with the designs, round by round: how
the gate's reading time moves each design's estimate.

The load is `meter_power.py`'s: `redoctor-engine run` at the demo load
(update_index, 64 users) or, with `--serve-threads N`, `serve` under
sysbench oltp_update_index with N threads.

Usage: agent/bench/meter_periods.py OUT [--rounds 3] [--budget 60]
       [--designs 250ms/50ms,100ms/20ms,50ms/10ms] [--serve-threads N]
       [--spin NS (0: A/A) | --candidate NAME=VALUE --reset NAME=VALUE]
       [--static SECS] [--sql STMT ...] [--windows MS,...]
       agent/bench/meter_periods.py --summary RUN.jsonl...
       (per run, design and setup: the estimates pooled by inverse variance on
       the log scale, each trial's standard error from its 95% interval,
       and the median stated resolution)
       (root; release builds of redoctor and redoctor-engine)
"""
import argparse
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import meter_power as mp  # noqa: E402  (the loads and the trial runner)
from meter_accuracy import phase  # noqa: E402  (a static phase)


def static_summary(files):
    """Per run, load and candidate: the static phases' ratio (Welch)."""
    groups = {}
    for f in files:
        for line in open(f):
            r = json.loads(line)
            if r.get("static"):
                key = (r.get("run", "-"), r.get("load", "?"), r.get("candidate") or r.get("spin_ns", 0))
                groups.setdefault(key, []).append(r)
    if not groups:
        return
    print("| run | load | candidate (or spin, ns) | static pairs | seconds a phase | ratio [95%] |")
    print("|---|---|---|---|---|---|")
    for (run, load, cand), rows in sorted(groups.items()):
        head = f"| {run} | {load} | {cand} | {len(rows)} | {rows[0]['secs']} | "
        if len(rows) < 2:
            # One pair has no spread to build an interval from.
            r = rows[0]["cand_rate"] / rows[0]["base_rate"]
            print(f"{head}{r - 1:+.2%} (one pair: no interval) |")
            continue
        r, lo, hi = mp.welch_ci([x["base_rate"] for x in rows], [x["cand_rate"] for x in rows])
        print(f"{head}{r - 1:+.2%} [{lo - 1:+.2%}, {hi - 1:+.2%}] |")
    print()


def summary(files):
    """Per design (and spin, and setup statements): the pooled estimate."""
    static_summary(files)
    groups = {}
    for f in files:
        for line in open(f):
            r = json.loads(line)
            if r.get("static"):
                continue
            setup = list(r.get("sql") or [])
            if r.get("gate_window_ms"):
                setup.append(f"gate window {r['gate_window_ms']} ms")
            key = (r.get("run", "-"), r.get("load", "?"), r.get("candidate") or r.get("spin_ns", 0),
                   " ; ".join(setup), r["period"], r["guard"])
            groups.setdefault(key, []).append(r)
    print("| run | load | candidate (or spin, ns) | setup | period / guard | trials | pooled estimate [95%] | median stated resolution |")
    print("|---|---|---|---|---|---|---|---|")
    for (run, load, spin, sql, period, guard), rows in sorted(groups.items()):
        logs = [(math.log(r["estimate"]),
                 (math.log(r["ci"][1]) - math.log(r["ci"][0])) / (2 * 1.96)) for r in rows]
        w = [1 / s ** 2 for _, s in logs]
        m = sum(x * wi for (x, _), wi in zip(logs, w)) / sum(w)
        se = 1 / math.sqrt(sum(w))
        res = statistics.median(r["resolution"] for r in rows)
        print(f"| {run} | {load} | {spin} | {sql or '-'} | {period} / {guard} | {len(rows)} | "
              f"{math.exp(m) - 1:+.2%} [{math.exp(m - 1.96 * se) - 1:+.2%}, "
              f"{math.exp(m + 1.96 * se) - 1:+.2%}] | {res:.2%} |")


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--summary":
        return summary(sys.argv[2:])
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=int, default=60)
    ap.add_argument("--designs", default="250ms/50ms,100ms/20ms,50ms/10ms")
    mp.add_load_args(ap)
    ap.add_argument("--spin", type=int, default=0)
    ap.add_argument("--candidate", default="")
    ap.add_argument("--reset", default="")
    ap.add_argument("--static", type=float, default=0)
    ap.add_argument("--sql", action="append", default=[])
    ap.add_argument("--windows", default="")
    args = ap.parse_args()
    designs = [tuple(d.split("/")) for d in args.designs.split(",")]
    if bool(args.candidate) != bool(args.reset):
        sys.exit("--candidate and --reset go together (the trial's candidate, and what restores the load's setting)")
    candidate = args.candidate or f"{mp.KNOB}={args.spin}"
    reset = args.reset or f"{mp.KNOB}=0"
    knob, base_value = reset.split("=", 1)
    cand_value = candidate.split("=", 1)[1]
    load = mp.load_label(args)
    with mp.running(args, args.sql) as (proc, sock, _), open(args.out, "a") as out:
        windows = [int(w) for w in args.windows.split(",") if w] or [None]
        cells = [(w, p, g) for w in windows for p, g in designs]
        for r in range(args.rounds):
            for window, period, guard in cells if r % 2 == 0 else cells[::-1]:
                if window is not None:
                    mp.mysql(sock, f"SET GLOBAL redoctor_spin_gate_window_ms = {window}")
                t, failed = mp.diagnose_trial(
                    proc.pid, sock, candidate, args.budget,
                    ["--trial-design", "switchback", "--trial-looks", "1",
                     "--trial-period", period, "--trial-guard", guard])
                if failed:
                    sys.exit(f"a trial failed: {failed}")
                mp.mysql(sock, f"SET GLOBAL {knob} = {base_value}")  # whatever it decided
                row = dict(mp.trial_summary(t), period=period, guard=guard, spin_ns=args.spin, sql=args.sql,
                           candidate=args.candidate or None,
                           gate_window_ms=window, load=load,
                           units=len(t["log_ratios"]), log_ratios=t["log_ratios"])
                out.write(json.dumps(row) + "\n")
                out.flush()
                if row["estimate"] is None:
                    print(f"[{r + 1}] window {window}, {period}/{guard}: {t['outcome']}: {t['reason']}",
                          flush=True)
                else:
                    print(f"[{r + 1}] window {window}, {period}/{guard}: resolution {row['resolution']:.2%}, "
                          f"estimate {row['estimate']:.4f}", flush=True)
            if args.static:
                sides = [("base", base_value), ("cand", cand_value)]
                rates = {side: phase(sock, knob, value, args.static)
                         for side, value in (sides if r % 2 == 0 else sides[::-1])}
                row = dict(static=True, round=r, secs=args.static, base_rate=rates["base"],
                           cand_rate=rates["cand"], spin_ns=args.spin, candidate=args.candidate or None,
                           load=load)
                out.write(json.dumps(row) + "\n")
                out.flush()
                print(f"[{r + 1}] static {args.static:.0f} s a side: ratio {rates['cand'] / rates['base']:.4f}",
                      flush=True)


if __name__ == "__main__":
    main()
