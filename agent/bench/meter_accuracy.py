#!/usr/bin/env python3
"""Is a live trial's interval right? Twelve scenarios (the redo mode, the
concurrency cap and the transaction throttle; 1 to 512 users; data on disk
and on tmpfs), each on its own `redoctor-engine run` with an admin socket:

1. **Truth.** Long interleaved static phases: baseline and candidate
   alternate every PHASE seconds (the first 2 s of each discarded, the
   order ABBA across pairs), PHASES phases a side, commits counted by
   `Com_commit`: the ratio and its 95% interval (Welch on the phases' logs,
   t quantile).
2. **Trial.** One `redoctor diagnose --trial --candidate NAME=VALUE
   --trial-max BUDGET`, as an operator would, run between the static pairs
   (after the first half of them), so a drift of the host touches both.
   A kept candidate is undone before the next phase.

Per scenario it records whether the trial's stated 95% interval holds the
static estimate (the issue's target: in >= 90% of the scenarios), and, as
the static truth carries noise of its own, whether the two estimates agree
within their combined interval (z = difference / combined standard error).

One JSON line per scenario goes to OUT; a table is printed at the end
(`--summary OUT` prints it again from the file).

`--pause-file PATH` (as `advisor/bench/eval/measure.py`): while PATH
exists another job uses the CPUs, so the engine is stopped (SIGSTOP) and
nothing is measured; a phase pair or trial that overlapped such a job is
measured again.

Usage: agent/bench/meter_accuracy.py OUT [--only 1,5] [--phases 5] [--phase 20]
       [--budget 60] [--pause-file /tmp/redoctor-busy]
       agent/bench/meter_accuracy.py --summary OUT
       (root; release builds of redoctor and redoctor-engine)
"""
import argparse
import json
import math
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from meter_power import (commits, diagnose_trial, mysql, start_engine,  # noqa: E402
                         trial_summary, unbusy, welch_ci)

Z975 = 1.959964
REDO = "innodb_log_writer_threads"
CAP = "innodb_thread_concurrency"
THROTTLE = "innodb_max_active_transactions"
# (name, workload, users, storage, knob, candidate value); every engine
# starts with the redo log threads on (MySQL 8.0's default), no cap and no
# throttle.
SCENARIOS = [
    ("redo-off u1 disk", "update_index", 1, "disk", REDO, "OFF"),
    ("redo-off u16 disk", "update_index", 16, "disk", REDO, "OFF"),
    ("redo-off u64 disk", "update_index", 64, "disk", REDO, "OFF"),
    ("redo-off u256 disk", "update_index", 256, "disk", REDO, "OFF"),
    ("redo-off u64 tmpfs", "update_index", 64, "tmpfs", REDO, "OFF"),
    ("redo-off rw u512 tmpfs", "read_write", 512, "tmpfs", REDO, "OFF"),
    ("cap4 u64 disk", "update_index", 64, "disk", CAP, "4"),
    ("cap8 rw u256 tmpfs", "read_write", 256, "tmpfs", CAP, "8"),
    ("cap16 u512 disk", "update_index", 512, "disk", CAP, "16"),
    ("throttle16 u256 disk", "update_index", 256, "disk", THROTTLE, "16"),
    ("throttle8 u64 tmpfs", "update_index", 64, "tmpfs", THROTTLE, "8"),
    ("throttle32 rw u512 tmpfs", "read_write", 512, "tmpfs", THROTTLE, "32"),
]


def value(sock, knob):
    return mysql(sock, f"SELECT @@{knob}").strip()


def set_knob(sock, knob, v):
    lit = v if v.isdigit() or v in ("ON", "OFF") else f"'{v}'"
    mysql(sock, f"SET GLOBAL {knob} = {lit}")


def phase(sock, knob, v, secs):
    set_knob(sock, knob, v)
    time.sleep(2)
    c0, t0 = commits(sock), time.monotonic()
    time.sleep(secs - 2)
    c1, t1 = commits(sock), time.monotonic()
    return (c1 - c0) / (t1 - t0)


def trial(args, pid, sock, knob, v):
    t, failed = diagnose_trial(pid, sock, f"{knob}={v}", args.budget)
    if failed:
        return {"error": failed}
    return dict(trial_summary(t), design=(t.get("plan") or {}).get("design"))


def scenario(args, spec, workdir):
    name, workload, users, storage, knob, cand = spec
    parent = "/dev/shm" if storage == "tmpfs" else workdir
    with tempfile.TemporaryDirectory(dir=parent) as d:
        proc, sock = start_engine(d, workload, users, ["--redo-threads", "on"])
        try:
            base_v = value(sock, knob)
            base, cands, tr = [], [], None
            for i in range(args.phases):
                def pair():
                    if i % 2 == 0:
                        b = phase(sock, knob, base_v, args.phase)
                        return b, phase(sock, knob, cand, args.phase)
                    c = phase(sock, knob, cand, args.phase)
                    return phase(sock, knob, base_v, args.phase), c
                b, c = unbusy(args, proc, pair)
                base.append(b)
                cands.append(c)
                if i + 1 == args.phases // 2:
                    set_knob(sock, knob, base_v)
                    tr = unbusy(args, proc, trial, args, proc.pid, sock, knob, cand)
                    set_knob(sock, knob, base_v)  # a kept candidate is undone
        finally:
            proc.kill()
            proc.wait()
    r, lo, hi = welch_ci(base, cands)
    return {"scenario": name, "workload": workload, "users": users, "storage": storage,
            "knob": knob, "candidate": cand, "baseline": base_v, "base": base, "cand": cands,
            "truth": r, "truth_ci": [lo, hi], "trial": tr}


def judge(rec):
    """(trial interval holds the static estimate, z of the difference
    against the combined standard error) or None when the trial failed."""
    t = rec["trial"]
    if not t or t.get("error") or t.get("estimate") is None or None in t["ci"]:
        return None
    lo, hi = t["ci"]
    held = lo <= rec["truth"] <= hi
    se_t = (math.log(hi) - math.log(lo)) / (2 * Z975)
    s_lo, s_hi = rec["truth_ci"]
    se_s = (math.log(s_hi) - math.log(s_lo)) / (2 * Z975)
    z = (math.log(t["estimate"]) - math.log(rec["truth"])) / math.hypot(se_t, se_s)
    return held, z


def summary(recs):
    print("| scenario | static truth [95%] | trial | trial estimate [95%] | holds truth | z |")
    print("|---|---|---|---|---|---|")
    held = agree = n = 0
    for r in recs:
        t = r["trial"] or {}
        j = judge(r)
        lo, hi = r["truth_ci"]
        if j is None:
            print(f"| {r['scenario']} | {r['truth']:.3f} [{lo:.3f}, {hi:.3f}] | "
                  f"{t.get('error', 'no estimate')[:60]} | - | - | - |")
            continue
        n += 1
        held += j[0]
        agree += abs(j[1]) <= Z975
        print(f"| {r['scenario']} | {r['truth']:.3f} [{lo:.3f}, {hi:.3f}] | "
              f"{t['outcome']} in {t['elapsed_s']:.0f} s | {t['estimate']:.3f} "
              f"[{t['ci'][0]:.3f}, {t['ci'][1]:.3f}] | {'yes' if j[0] else 'no'} | {j[1]:+.2f} |")
    print(f"\ntrial interval held the static estimate: {held} of {n}; "
          f"the two agreed within their combined 95% interval: {agree} of {n}; "
          f"scenarios without a trial estimate: {len(recs) - n}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--summary", action="store_true", help="print the table of OUT and exit")
    ap.add_argument("--only", help="scenario numbers, 1-based, comma-separated")
    ap.add_argument("--phases", type=int, default=5)
    ap.add_argument("--phase", type=float, default=20.0)
    ap.add_argument("--budget", type=int, default=60)
    ap.add_argument("--workdir", default="/var/tmp")
    ap.add_argument("--pause-file")
    args = ap.parse_args()
    if args.summary:
        summary([json.loads(line) for line in open(args.out)])
        return
    if args.phases < 2:
        sys.exit("--phases: at least 2 (the trial runs between them)")
    picks = [int(x) for x in args.only.split(",")] if args.only else range(1, len(SCENARIOS) + 1)
    recs = []
    with open(args.out, "a") as out:
        for k in picks:
            rec = scenario(args, SCENARIOS[k - 1], args.workdir)
            out.write(json.dumps(rec) + "\n")
            out.flush()
            recs.append(rec)
            t = rec["trial"] or {}
            print(f"[{k}] {rec['scenario']}: truth {rec['truth']:.3f} "
                  f"[{rec['truth_ci'][0]:.3f}, {rec['truth_ci'][1]:.3f}]; trial "
                  f"{t.get('outcome', t.get('error'))} {t.get('estimate')} {t.get('ci')}", flush=True)
    summary(recs)


if __name__ == "__main__":
    main()
