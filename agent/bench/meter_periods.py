#!/usr/bin/env python3
"""What a switchback trial resolves at each period length: A/A
fixed-horizon trials (`redoctor diagnose --trial --candidate
redoctor_debug_commit_spin_ns=0 --trial-looks 1`, the setting against
itself, so the whole budget runs and no early stop biases it) with the
designs interleaved round by round on one running load, each trial's
stated resolution (the change it detects with 80% power) and estimate
recorded.

The load is `meter_power.py`'s: `redoctor-engine run` at the demo load
(update_index, 64 users) or, with `--serve-threads N`, `serve` under
sysbench oltp_update_index with N threads.

Usage: agent/bench/meter_periods.py OUT [--rounds 3] [--budget 60]
       [--designs 250ms/50ms,100ms/20ms,50ms/10ms] [--serve-threads N]
       (root; release builds of redoctor and redoctor-engine)
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import meter_power as mp  # noqa: E402  (the loads and the trial runner)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=int, default=60)
    ap.add_argument("--designs", default="250ms/50ms,100ms/20ms,50ms/10ms")
    ap.add_argument("--serve-threads", type=int, default=0)
    ap.add_argument("--workload", default="update_index")
    ap.add_argument("--users", type=int, default=64)
    ap.add_argument("--workdir", default="/var/tmp")
    args = ap.parse_args()
    designs = [tuple(d.split("/")) for d in args.designs.split(",")]
    d = tempfile.mkdtemp(dir=args.workdir)
    proc, sock, sb = mp.start(args, d)
    try:
        with open(args.out, "a") as out:
            for r in range(args.rounds):
                for period, guard in designs if r % 2 == 0 else designs[::-1]:
                    t, failed = mp.diagnose_trial(
                        proc.pid, sock, f"{mp.KNOB}=0", args.budget,
                        ["--trial-design", "switchback", "--trial-looks", "1",
                         "--trial-period", period, "--trial-guard", guard])
                    if failed:
                        sys.exit(f"a trial failed: {failed}")
                    row = dict(mp.trial_summary(t), period=period, guard=guard,
                               units=len(t["log_ratios"]), log_ratios=t["log_ratios"])
                    out.write(json.dumps(row) + "\n")
                    out.flush()
                    print(f"[{r + 1}] {period}/{guard}: resolution {row['resolution']:.2%}, "
                          f"estimate {row['estimate']:.4f}", flush=True)
    finally:
        if sb:
            sb.kill()
        proc.kill()


if __name__ == "__main__":
    main()
