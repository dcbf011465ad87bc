#!/usr/bin/env python3
"""How long after a load step each redo mode takes to reach its steady
state: the phase bench's load (`serve`, 2 CPUs, data on disk, sysbench
oltp_update_index; 4 users for A seconds, then 256 users for B seconds)
run statically with the redo log threads ON (RT1) and OFF (RT0), the two
alternating round by round, every second's TPS kept.

Per bin of seconds after the step it prints each mode's median TPS over
the rounds and the RT0/RT1 ratio of the rounds' bin means (geometric mean
of the adjacent rounds' ratios, with a t interval over the rounds): where
the ratio moves with time since the step, a trial started early in the
phase reads another effect than the phase's steady state (the daemon's
trials of phase B begin ~7 s after the change).

With `--trials AT,AT...` the runs are not static: each round runs phase
A with RT1 (the daemon's starting point), then during phase B one
fixed-horizon switchback trial of RT0 (`redoctor diagnose --trial
--candidate innodb_log_writer_threads=OFF --trial-looks 1`, BUDGET s) is
started AT s after the step, for each AT (RT1 restored after each): does a
trial begun soon after a step read the steady state's effect?

Usage: agent/bench/step_profile.py OUT.json [--rounds 4] [--a 40] [--b 90] [--bin 10]
           [--trials 7,50 [--budget 15] [--looks 1|default]]
       agent/bench/step_profile.py --summary OUT.json [--bin 10]
       (root; release build of redoctor-engine; sysbench and the mysql client)
"""
import argparse
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from phase import CONFIGS, apply, serve, sysbench, sysbench_cmd  # noqa: E402
from meter_power import diagnose_trial, trial_summary  # noqa: E402
from search_sim import t_critical  # noqa: E402  (advisor/bench/eval, on the path by phase)


def trial_table(saved):
    """Per start time: the trials' estimates, and each later start paired
    with the first by round."""
    rows = saved["trials"]
    ats = sorted({r["at_s"] for r in rows if r["estimate"]})
    for r in rows:
        if not r["estimate"]:
            print(f"round {r['round'] + 1}, trial at {r['at_s']} s: {r['outcome']}: {r['reason']}")
    print("| trial began after the step | estimates of RT0/RT1 by round | geometric mean [95%] |")
    print("|---|---|---|")
    by = {at: {r["round"]: r["estimate"] for r in rows if r["at_s"] == at and r["estimate"]} for at in ats}
    for at in ats:
        logs = [math.log(x) for x in by[at].values()]
        m, half = mean_ci(logs)
        print(f"| {at} s | " + ", ".join(f"{x:.3f}" for x in by[at].values()) +
              f" | {math.exp(m):.3f} [{math.exp(m - half):.3f}, {math.exp(m + half):.3f}] |")
    for at in ats[1:]:
        both = [r for r in by[ats[0]] if r in by[at]]
        d = [math.log(by[ats[0]][r] / by[at][r]) for r in both]
        m, half = mean_ci(d)
        print(f"began at {ats[0]} s over began at {at} s, paired by round ({len(d)}): "
              f"{math.exp(m):.3f} [{math.exp(m - half):.3f}, {math.exp(m + half):.3f}]")


def mean_ci(logs):
    """Mean of `logs` and the half-width of its 95% t interval."""
    m = statistics.mean(logs)
    if len(logs) < 2:
        return m, float("nan")
    return m, t_critical(0.05, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))


def summary(saved, width):
    if "trials" in saved:
        trial_table(saved)
        return
    runs = saved["runs"]
    b = saved["b_secs"]
    print(f"| seconds after the step | RT1 median TPS | RT0 median TPS | RT0/RT1 [95%] ({len(runs) // 2} pairs) |")
    print("|---|---|---|---|")
    by = {n: [r["b_per_s"] for r in runs if r["config"] == n] for n in ("RT0", "RT1")}
    pairs = min(len(by["RT0"]), len(by["RT1"]))
    for lo in range(0, b, width):
        hi = min(lo + width, b)

        def mean(v):
            w = v[lo:hi]
            return statistics.mean(w) if w else float("nan")
        rt0 = [mean(v) for v in by["RT0"][:pairs]]
        rt1 = [mean(v) for v in by["RT1"][:pairs]]
        logs = [math.log(x / y) for x, y in zip(rt0, rt1) if x > 0 and y > 0]
        m, half = mean_ci(logs)
        print(f"| {lo}-{hi} | {statistics.median(rt1):.0f} | {statistics.median(rt0):.0f} | "
              f"{math.exp(m):.3f} [{math.exp(m - half):.3f}, {math.exp(m + half):.3f}] |")
    for phase, key in (("A (4 users)", "a_tps"), ("B (256 users)", "b_tps")):
        logs = [math.log(x[key] / y[key]) for x, y in zip([r for r in runs if r["config"] == "RT0"],
                                                           [r for r in runs if r["config"] == "RT1"])]
        m, half = mean_ci(logs)
        print(f"whole phase {phase}: RT0/RT1 {math.exp(m):.3f} [{math.exp(m - half):.3f}, "
              f"{math.exp(m + half):.3f}] over {len(logs)} pairs")


def trial_rounds(a, engine, socket):
    """Phase A with RT1, then trials of RT0 begun `a.trials` s into phase B."""
    trials = []
    for r in range(a.rounds):
        apply(socket, CONFIGS["RT1"])
        sysbench(socket, 4, a.a)
        step = time.time()
        load = subprocess.Popen(sysbench_cmd(socket, "--threads=256", f"--time={a.b}") + ["run"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for at in [int(x) for x in a.trials.split(",")]:
                time.sleep(max(0.0, step + at - time.time()))
                t, failed = diagnose_trial(engine.pid, socket, "innodb_log_writer_threads=OFF",
                                           a.budget, ["--trial-design", "switchback"] +
                                           ([] if a.looks == "default" else ["--trial-looks", a.looks]))
                apply(socket, CONFIGS["RT1"])  # whatever it decided
                if failed:
                    sys.exit(f"a trial failed: {failed}")
                row = dict(trial_summary(t), round=r, at_s=at, looks=a.looks,
                           log_ratios=t["log_ratios"],
                           began_s=round(time.time() - step - t["elapsed_s"], 1))
                trials.append(row)
                print(f"[{r + 1}] trial at {at} s: {row['outcome']}, estimate {row['estimate']}",
                      flush=True)
        finally:
            load.wait()
    return trials


def static_rounds(a, socket):
    """RT1 and RT0 static through both phases, alternating by round."""
    runs = []
    for r in range(a.rounds):
        for name in ("RT1", "RT0") if r % 2 == 0 else ("RT0", "RT1"):
            apply(socket, CONFIGS[name])
            _, a_tps, _ = sysbench(socket, 4, a.a)
            _, b_tps, b_per_s = sysbench(socket, 256, a.b)
            runs.append({"config": name, "round": r, "a_tps": a_tps, "b_tps": b_tps,
                         "b_per_s": b_per_s})
            print(f"[{r + 1}] {name}: A {a_tps:.0f} TPS, B {b_tps:.0f} TPS", flush=True)
    return runs


def main():
    ap = argparse.ArgumentParser(description="RT0 and RT1 over time after a load step.")
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=4, help="pairs of static runs (RT1 and RT0 each)")
    ap.add_argument("--a", type=int, default=40, help="seconds at 4 users before the step")
    ap.add_argument("--b", type=int, default=90, help="seconds at 256 users after it")
    ap.add_argument("--bin", type=int, default=10)
    ap.add_argument("--summary", action="store_true", help="print the table from OUT")
    ap.add_argument("--trials", default="", metavar="AT,AT...",
                    help="seconds after the step at which a trial of RT0 begins")
    ap.add_argument("--budget", type=int, default=15)
    ap.add_argument("--looks", default="1",
                    help="the trials' looks (1: fixed horizon; 'default': the sequential "
                         "looks and early stops the daemon's trials use)")
    a = ap.parse_args()
    if a.summary:
        summary(json.load(open(a.out)), a.bin)
        return
    for tool in ("sysbench", "mysql"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is not installed (apt-get install sysbench mariadb-client)")
    work = tempfile.mkdtemp(prefix="redoctor-step.", dir="/var/tmp")
    engine, socket = serve(work)
    runs, trials = [], []
    try:
        if a.trials:
            trials = trial_rounds(a, engine, socket)
        else:
            runs = static_rounds(a, socket)
    finally:
        engine.send_signal(signal.SIGTERM)
        engine.wait()
        shutil.rmtree(work, ignore_errors=True)
    saved = {"a_secs": a.a, "b_secs": a.b, "runs": runs}
    if a.trials:
        saved = {"a_secs": a.a, "b_secs": a.b, "budget_s": a.budget, "trials": trials}
    with open(a.out, "w") as f:
        json.dump(saved, f)
    summary(saved, a.bin)


if __name__ == "__main__":
    main()
