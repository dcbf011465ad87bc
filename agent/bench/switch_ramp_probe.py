#!/usr/bin/env python3
"""What the threads do in the first hundreds of ms after a redo mode
switch: `redoctor probe --json` in short windows on a running load while
the redo mode alternates every `--every` seconds, each window placed by
its midpoint after the last switch and binned; per bin and direction, the
user and log threads' on-CPU time, run-queue wait and wakeups (per second
of window), as a fraction of the same figure in the direction's steady
state (the second half of the phase).

It tells apart the two explanations of the switch ON's ramp left open in
`agent/bench/RESULTS.md` (2026-12-06 evening): the waiters spinning on
CPUs the resumed log threads need (the users' on-CPU time up, the log
threads' run-queue wait up), or the scheduler placing threads that slept
for seconds badly (run-queue wait up without more on-CPU time).

The load is `meter_power.py`'s (`--serve-threads N`: `serve` under
sysbench oltp_update_index; otherwise `redoctor-engine run`). Every
window and the switch times go to OUT.jsonl; `--summary OUT.jsonl`
prints the table again.

Usage: agent/bench/switch_ramp_probe.py OUT [--serve-threads 4] [--secs 60]
       [--every 3] [--interval 50ms] [--sql STMT ...]
       agent/bench/switch_ramp_probe.py --summary OUT.jsonl
       (root; release builds of redoctor and redoctor-engine)
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import meter_power as mp  # noqa: E402  (the loads)

BINS_MS = [(0, 50), (50, 100), (100, 150), (150, 200), (200, 300), (300, 500), (500, 1000)]
LOG_ROLES = ("log_writer", "log_flusher", "log_notifier")
FIGURES = ("oncpu_ns", "runq_wait_ns", "wakeups_sent", "involuntary_switches")


def role_sums(window):
    """(users, log threads): each a dict of FIGURES summed over the roles."""
    roles = window.get("roles", {})
    user = {f: roles.get("user", {}).get(f, 0) for f in FIGURES}
    log = {f: sum(roles.get(r, {}).get(f, 0) for r in LOG_ROLES) for f in FIGURES}
    return user, log


def trimmed(window):
    """A probe window cut to what the summary reads."""
    roles = {r: {f: x.get(f, 0) for f in FIGURES}
             for r, x in window["roles"].items() if r == "user" or r in LOG_ROLES}
    return {"end_unix_ms": window["end_unix_ms"], "window_ns": window["window_ns"], "roles": roles}


def summary(path):
    windows, switches, every = [], [], None
    for line in open(path):
        r = json.loads(line)
        if "switches" in r:
            switches, every = r["switches"], r["every_s"]
        else:
            windows.append(r)
    # cells[(direction, bin)] = [sum of per-second figures..., count]
    cells = {}
    for w in windows:
        mid = w["end_unix_ms"] / 1e3 - w["window_ns"] / 2e9
        last = [s for s in switches if s["t"] <= mid]
        if not last:
            continue
        s = last[-1]
        after_ms = (mid - s["t"]) * 1e3
        if after_ms >= every * 1e3:
            continue
        if after_ms >= every * 1e3 / 2:
            b = "steady"
        else:
            b = next((f"{a}-{z}" for a, z in BINS_MS if a <= after_ms < z), None)
        if b is None:
            continue
        user, log = role_sums(w)
        per_s = 1e9 / w["window_ns"]
        vals = [user[f] * per_s for f in FIGURES] + [log[f] * per_s for f in FIGURES]
        acc = cells.setdefault((s["to"], b), [[0.0] * len(vals), 0])
        acc[0] = [a + v for a, v in zip(acc[0], vals)]
        acc[1] += 1
    names = [f"user {f}" for f in FIGURES] + [f"log {f}" for f in FIGURES]
    for to in ("OFF", "ON"):
        steady = cells.get((to, "steady"))
        if not steady:
            continue
        base = [x / steady[1] for x in steady[0]]
        print(f"\ninto {to}: fraction of the steady state (windows per bin in brackets); "
              f"steady per second: " + ", ".join(f"{n} {v:,.0f}" for n, v in zip(names, base)))
        print("| figure | " + " | ".join(f"{a}-{z} ms" for a, z in BINS_MS) + " |")
        print("|---|" + "---|" * len(BINS_MS))
        for i, n in enumerate(names):
            row = []
            for a, z in BINS_MS:
                c = cells.get((to, f"{a}-{z}"))
                row.append(f"{c[0][i] / c[1] / base[i]:.2f} ({c[1]})" if c and base[i] else "-")
            print(f"| {n} | " + " | ".join(row) + " |")


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--summary":
        return summary(sys.argv[2])
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--secs", type=int, default=60)
    ap.add_argument("--every", type=float, default=3.0)
    ap.add_argument("--interval", default="50ms")
    ap.add_argument("--sql", action="append", default=[])
    mp.add_load_args(ap)
    args = ap.parse_args()
    with mp.running(args, args.sql) as (proc, sock, d):
        mp.mysql(sock, "SET GLOBAL innodb_log_writer_threads = ON")
        probe_out = os.path.join(d, "probe.jsonl")
        probe = subprocess.Popen(
            [mp.REDOCTOR, "probe", "--pid", str(proc.pid), "--interval", args.interval,
             "--duration", f"{args.secs + 4}s", "--json"],
            stdout=open(probe_out, "w"), stderr=subprocess.PIPE, text=True)
        time.sleep(3)  # the probes attach
        switches, mode = [], "ON"
        t_end = time.time() + args.secs
        while time.time() < t_end:
            mode = "OFF" if mode == "ON" else "ON"
            mp.mysql(sock, f"SET GLOBAL innodb_log_writer_threads = {mode}")
            switches.append({"t": time.time(), "to": mode})
            time.sleep(args.every)
        _, err = probe.communicate()
        if probe.returncode != 0:
            sys.exit(f"redoctor probe failed: {err.strip()[-400:]}")
        with open(args.out, "w") as out:
            out.write(json.dumps({"switches": switches, "every_s": args.every, "sql": args.sql,
                                  "load": mp.load_label(args)}) + "\n")
            for line in open(probe_out):
                w = json.loads(line)
                out.write(json.dumps(trimmed(w)) + "\n")
    summary(args.out)


if __name__ == "__main__":
    main()
