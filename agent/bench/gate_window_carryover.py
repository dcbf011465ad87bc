#!/usr/bin/env python3
"""Each knob's carryover against the engine's spin gate window: on one
running load, `redoctor meter --knob` (the knob alternating every
`--every`, the commit counter read every 25 ms) with
`redoctor_spin_gate_window_ms` at each of `--windows`, the windows
interleaved round by round. The mean trajectory after a switch into each
value, pooled over rounds (weighted by switches), is printed in bins of
50 ms as a fraction of the new value's steady state (the second half of
its phase), and every meter report goes to OUT.jsonl.

The load is `meter_power.py`'s: `redoctor-engine run` at the demo load
(update_index, 64 users) or, with `--serve-threads N`, `serve` under
sysbench oltp_update_index with N threads. `--sql STMT` (repeatable)
runs on the server once the load has settled (e.g. `SET GLOBAL
innodb_log_spin_cpu_pct_hwm = 0` to hold the spin gate shut), and is
recorded with each report.

Usage: agent/bench/gate_window_carryover.py OUT [--windows 200,50]
       [--rounds 2] [--secs 30] [--every 1s] [--serve-threads N]
       [--knobs innodb_log_writer_threads=OFF,ON;...] [--sql STMT ...]
       agent/bench/gate_window_carryover.py --summary OUT.jsonl
       (root; release builds of redoctor and redoctor-engine)
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import meter_power as mp  # noqa: E402  (the loads)

KNOBS = ("innodb_log_writer_threads=OFF,ON;innodb_thread_concurrency=0,4;"
         "innodb_max_active_transactions=0,16;redoctor_debug_commit_spin_ns=0,8000")
BINS_MS = [(0, 50), (50, 100), (100, 150), (150, 200), (200, 300), (300, 500),
           (500, 750), (750, 1000), (1000, 1500)]


def pooled(path, key):
    """Each meter report's carryover trajectories in OUT.jsonl, pooled by
    `key(record, carryover)` and weighted by switches: {key: (switches,
    mean trajectory, tick in s)}."""
    acc = {}
    for line in open(path):
        r = json.loads(line)
        for c in r["report"]["carryover"]:
            a = acc.setdefault(key(r, c), [0, [0.0] * len(c["trajectory"]), r["report"]["tick_s"]])
            a[0] += c["switches"]
            a[1] = [x + y * c["switches"] for x, y in zip(a[1], c["trajectory"])]
    return {k: (n, [x / n for x in tr], tick) for k, (n, tr, tick) in acc.items()}


def binned(tr, tick):
    """A trajectory's mean in each of BINS_MS (None for an empty bin)."""
    cells = []
    for a, b in BINS_MS:
        pts = [x for i, x in enumerate(tr) if a <= i * tick * 1e3 < b]
        cells.append(sum(pts) / len(pts) if pts else None)
    return cells


def summary(path):
    rows = pooled(path, lambda r, c: (r["load"] + "".join(f"; {q}" for q in r.get("sql") or []),
                                      c["knob"], c["to"], r["gate_window_ms"]))
    head = " | ".join(f"{a}-{b} ms" for a, b in BINS_MS)
    print(f"| load | knob | to | gate window | switches | {head} |")
    print("|---|---|---|---|---|" + "---|" * len(BINS_MS))
    for (load, knob, to, w), (n, tr, tick) in sorted(rows.items()):
        cells = ["-" if x is None else f"{x:.3f}" for x in binned(tr, tick)]
        print(f"| {load} | {knob} | {to} | {w} ms | {n} | " + " | ".join(cells) + " |")


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--summary":
        return summary(sys.argv[2])
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--windows", default="200,50")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--secs", type=int, default=30)
    ap.add_argument("--every", default="1s")
    ap.add_argument("--knobs", default=KNOBS)
    ap.add_argument("--sql", action="append", default=[])
    mp.add_load_args(ap)
    args = ap.parse_args()
    windows = [int(w) for w in args.windows.split(",")]
    knobs = [(k, v) for k, v in (kv.split("=") for kv in args.knobs.split(";"))]
    load = mp.load_label(args)
    with mp.running(args, args.sql) as (_, sock, _), open(args.out, "a") as out:
        for r in range(args.rounds):
            for w in windows if r % 2 == 0 else windows[::-1]:
                mp.mysql(sock, f"SET GLOBAL redoctor_spin_gate_window_ms = {w}")
                for knob, values in knobs:
                    cmd = [mp.REDOCTOR, "meter", "--socket", sock, "--duration", f"{args.secs}s",
                           "--json", "--knob", knob, "--values", values, "--every", args.every]
                    rep = subprocess.run(cmd, capture_output=True, text=True)
                    if rep.returncode != 0:
                        sys.exit(f"redoctor meter: {rep.stderr.strip()}")
                    mp.mysql(sock, f"SET GLOBAL {knob} = {values.split(',')[0]}")
                    out.write(json.dumps(dict(load=load, gate_window_ms=w, round=r, knob=knob,
                                              values=values, sql=args.sql, report=json.loads(rep.stdout))) + "\n")
                    out.flush()
                    print(f"[{r + 1}] window {w} ms: {knob} {values}", flush=True)
    summary(args.out)


if __name__ == "__main__":
    main()
