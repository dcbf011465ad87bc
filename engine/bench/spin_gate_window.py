#!/usr/bin/env python3
"""What a spin gate setting costs or buys in throughput: static runs of
`redoctor-engine run` with `--setting` (default
`redoctor_spin_gate_window_ms`) at A and at B, interleaved in pairs (the
order alternating pair by pair, a fresh datadir per run), per user count.
Prints per user count the geometric mean of the pairs' B/A ratios with a
t interval, and A's median commits/s; every run's report goes to
OUT.jsonl.

Usage: engine/bench/spin_gate_window.py OUT [--values 200,50]
       [--setting redoctor_spin_gate_window_ms]
       [--users 1,4,16,64] [--pairs 5 (2..13)] [--duration 10]
       [--workload update_index] [--workdir /var/tmp] [--cpus K]
       (a release build of redoctor-engine)
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import tempfile

# Student's t 97.5% quantiles by degrees of freedom (1..12).
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENGINE = os.path.join(ROOT, "target/release/redoctor-engine")


def run(args, users, value):
    d = tempfile.mkdtemp(dir=args.workdir)
    try:
        cmd = [ENGINE, "run", "--workload", args.workload, "--users", str(users),
               "--duration", str(args.duration), "--datadir", d, "--json",
               "--set", f"{args.setting}={value}"]
        if args.cpus:
            cmd += ["--cpus", str(args.cpus)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
        return json.loads(out.stdout)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--values", "--windows", dest="values", default="200,50")
    ap.add_argument("--setting", default="redoctor_spin_gate_window_ms")
    ap.add_argument("--users", default="1,4,16,64")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--workload", default="update_index")
    ap.add_argument("--workdir", default="/var/tmp")
    ap.add_argument("--cpus", type=int, default=0)
    args = ap.parse_args()
    a, b = (int(w) for w in args.values.split(","))
    print(f"| users | pairs | {b} / {a}, geometric mean [95%] | {a}: median commits/s | {b}: median |")
    print("|---|---|---|---|---|")
    with open(args.out + ".jsonl", "a") as out:
        for users in (int(u) for u in args.users.split(",")):
            tps = {a: [], b: []}
            for i in range(args.pairs):
                for w in (a, b) if i % 2 == 0 else (b, a):
                    r = run(args, users, w)
                    tps[w].append(r["tps"])
                    out.write(json.dumps(dict(users=users, setting=args.setting, value=w, pair=i,
                                              workload=args.workload, report=r)) + "\n")
                    out.flush()
            logs = [math.log(y / x) for x, y in zip(tps[a], tps[b])]
            m = statistics.mean(logs)
            se = statistics.stdev(logs) / math.sqrt(len(logs))
            t = T975[min(len(logs) - 1, len(T975)) - 1]
            print(f"| {users} | {len(logs)} | {math.exp(m) - 1:+.1%} "
                  f"[{math.exp(m - t * se) - 1:+.1%}, {math.exp(m + t * se) - 1:+.1%}] | "
                  f"{statistics.median(tps[a]):.0f} | {statistics.median(tps[b]):.0f} |", flush=True)


if __name__ == "__main__":
    main()
