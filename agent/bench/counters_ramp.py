#!/usr/bin/env python3
"""What moves after a knob switch: `redoctor meter --knob` on one running
load, once per server counter (`--counters`, each a counter of SHOW
GLOBAL STATUS, read every 25 ms), round by round. Per counter and
direction, the counter's mean rate after a switch in bins of 50 ms, as a
fraction of the new setting's steady state (the second half of its
phase); then, from the redo counters, the mean fdatasync time
(Innodb_redo_fsync_ns / Innodb_os_log_fsyncs) and the commits per
fdatasync (Com_commit / Innodb_os_log_fsyncs) on the same scale. Every
meter report goes to OUT.jsonl.

It tells apart where a switch's ramp comes from: fewer commits per
fdatasync (the engine's grouping), longer fdatasyncs (the device), or a
flusher that is not kept busy (fdatasync time per second below 1).

The load is `meter_power.py`'s (`--serve-threads N`: `serve` under
sysbench oltp_update_index; otherwise `redoctor-engine run`).

Usage: agent/bench/counters_ramp.py OUT [--rounds 2] [--secs 60]
       [--every 3s] [--knob innodb_log_writer_threads --values OFF,ON]
       [--counters Com_commit,Innodb_os_log_fsyncs,Innodb_redo_fsync_ns]
       [--serve-threads N] [--workdir DIR]
       agent/bench/counters_ramp.py --summary OUT.jsonl
       (root; release builds of redoctor and redoctor-engine)
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import meter_power as mp  # noqa: E402  (the loads)
from gate_window_carryover import BINS_MS, binned, pooled  # noqa: E402

COUNTERS = "Com_commit,Innodb_os_log_fsyncs,Innodb_redo_fsync_ns"


def summary(path):
    rows = {k: (n, binned(tr, tick)) for k, (n, tr, tick) in
            pooled(path, lambda r, c: (r["load"], r["knob"], r["counter"], c["to"])).items()}
    head = " | ".join(f"{a}-{b} ms" for a, b in BINS_MS)
    print(f"| load | knob | figure | to | switches | {head} |")
    print("|---|---|---|---|---|" + "---|" * len(BINS_MS))
    derived = {"fdatasync time": ("Innodb_redo_fsync_ns", "Innodb_os_log_fsyncs"),
               "commits per fdatasync": ("Com_commit", "Innodb_os_log_fsyncs")}
    for (load, knob, counter, to) in list(rows):
        for name, (num, den) in derived.items():
            a, b = rows.get((load, knob, num, to)), rows.get((load, knob, den, to))
            if counter == den and a and b:
                rows[(load, knob, name, to)] = (min(a[0], b[0]),
                                                [x / y for x, y in zip(a[1], b[1])])
    for (load, knob, fig, to), (n, cells) in sorted(rows.items()):
        print(f"| {load} | {knob} | {fig} | {to} | {n} | " + " | ".join(f"{x:.3f}" for x in cells) + " |")


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--summary":
        return summary(sys.argv[2])
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--secs", type=int, default=60)
    ap.add_argument("--every", default="3s")
    ap.add_argument("--knob", default="innodb_log_writer_threads")
    ap.add_argument("--values", default="OFF,ON")
    ap.add_argument("--counters", default=COUNTERS)
    mp.add_load_args(ap)
    args = ap.parse_args()
    load = mp.load_label(args) + ("" if args.workdir == "/var/tmp" else f", data in {args.workdir}")
    with mp.running(args) as (_, sock, _), open(args.out, "a") as out:
        for r in range(args.rounds):
            for counter in args.counters.split(","):
                cmd = [mp.REDOCTOR, "meter", "--socket", sock, "--duration", f"{args.secs}s",
                       "--json", "--counter", counter, "--knob", args.knob,
                       "--values", args.values, "--every", args.every]
                rep = subprocess.run(cmd, capture_output=True, text=True)
                if rep.returncode != 0:
                    sys.exit(f"redoctor meter: {rep.stderr.strip()}")
                mp.mysql(sock, f"SET GLOBAL {args.knob} = {args.values.split(',')[0]}")
                out.write(json.dumps(dict(load=load, round=r, knob=args.knob, values=args.values,
                                          counter=counter, report=json.loads(rep.stdout))) + "\n")
                out.flush()
                print(f"[{r + 1}] {counter}", flush=True)
    summary(args.out)


if __name__ == "__main__":
    main()
