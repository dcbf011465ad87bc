#!/usr/bin/env python3
"""How much one trial pair tells at a load: the spread of a pair's
ln(candidate / baseline) between two settings, measured as the trial
measures it, and how many pairs a trial then needs to tell them apart.

One `redoctor-engine serve` (2 CPUs, data on disk) under sysbench
oltp_update_index with USERS threads (default 4: phase A of phase.py). The
redo mode is switched with SET GLOBAL in ABBA pairs, as the experiment
module does (advisor/EXPERIMENT.md): after each switch one WARMUP-second
window is discarded, then one WINDOW-second window is counted by
`Com_commit` (the trial's meter, probes detached). PAIRS pairs.

Prints each setting's mean rate, the pairs' mean d = ln(RT0 / RT1) with its
standard error, the per-pair standard deviation s, and for that s the
pairs a paired t-test needs to tell the measured gap from 0 at the
trial's last-look level (0.043) with 80% power, and the seconds they take
(2 windows + 1 warm-up per pair).

Usage: agent/bench/pair_noise.py [PAIRS (40)] [--users U] [--window S]
       [--warmup S]   (root; release build of redoctor-engine; sysbench and
       the mysql client installed)
"""
import argparse
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from phase import ENGINE, sql  # the phase bench's engine binary and admin client


def commits(socket):
    return int(sql(socket, "SHOW GLOBAL STATUS LIKE 'Com_commit'").split()[1])


def window(socket, secs):
    c0, t0 = commits(socket), time.monotonic()
    time.sleep(secs)
    c1, t1 = commits(socket), time.monotonic()
    return (c1 - c0) / (t1 - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pairs", nargs="?", type=int, default=40)
    ap.add_argument("--users", type=int, default=4)
    ap.add_argument("--window", type=float, default=1.0)
    ap.add_argument("--warmup", type=float, default=1.0)
    a = ap.parse_args()
    for tool in ("sysbench", "mysql"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is not installed (apt-get install sysbench mariadb-client)")
    if not os.access(ENGINE, os.X_OK):
        sys.exit(f"{ENGINE} is missing: cargo build --release -p redoctor-engine-cli")
    work = tempfile.mkdtemp(prefix="redoctor-pairs.", dir="/var/tmp")
    socket = os.path.join(work, "s.sock")
    engine = subprocess.Popen([ENGINE, "serve", "--datadir", os.path.join(work, "data"),
                               "--socket", socket, "--redo-threads", "on"],
                              stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "err"), "w"))
    load = None
    try:
        while not os.path.exists(socket):
            time.sleep(0.05)
        sb = ["sysbench", "--db-driver=mysql", f"--mysql-socket={socket}", "--mysql-user=root",
              "--mysql-db=sbtest", "--tables=4", "--table-size=10000", "oltp_update_index"]
        subprocess.run(sb + ["prepare"], capture_output=True, check=True)
        secs = int(a.pairs * (2 * a.window + a.warmup + 0.2) + 30)
        load = subprocess.Popen(sb + [f"--threads={a.users}", f"--time={secs}", "run"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(3)
        modes = {"RT1": "ON", "RT0": "OFF"}
        rates = {"RT1": [], "RT0": []}
        d = []
        for i in range(a.pairs):
            order = ["RT1", "RT0"] if i % 2 == 0 else ["RT0", "RT1"]
            got = {}
            # One switch a pair: it starts on the setting the last one ended on.
            for j, m in enumerate(order):
                sql(socket, f"SET GLOBAL innodb_log_writer_threads={modes[m]}")
                if j == 1 or i == 0:
                    time.sleep(a.warmup)
                got[m] = window(socket, a.window)
            for m in got:
                rates[m].append(got[m])
            d.append(math.log(got["RT0"] / got["RT1"]))
            print(f"pair {i + 1}: RT1 {got['RT1']:.0f} RT0 {got['RT0']:.0f} d {d[-1]:+.3f}", flush=True)
    finally:
        if load:
            load.send_signal(signal.SIGTERM)
            load.wait()
        engine.send_signal(signal.SIGTERM)
        engine.wait()
        shutil.rmtree(work, ignore_errors=True)
    n = len(d)
    mean, s = statistics.mean(d), statistics.stdev(d)
    se = s / math.sqrt(n)
    print()
    print(f"users {a.users}, {n} pairs of {a.window:g}-s windows, {a.warmup:g}-s warm-up after each switch")
    for m in rates:
        print(f"{m}: mean {statistics.mean(rates[m]):.0f} commits/s, window CV "
              f"{100 * statistics.stdev(rates[m]) / statistics.mean(rates[m]):.1f}%")
    print(f"d = ln(RT0/RT1): mean {mean:+.4f} (RT0 {100 * (math.exp(mean) - 1):+.1f}%), se {se:.4f}, "
          f"per-pair sd {s:.4f}")
    # Pairs for 80% power at the last look's two-sided 0.043 (normal approximation).
    z_a, z_b = 2.024, 0.842
    for gap in sorted({abs(mean), 0.02, 0.03, 0.05}):
        if gap <= 0:
            continue
        need = math.ceil(((z_a + z_b) * s / gap) ** 2)
        print(f"gap {100 * gap:.1f}%: {need} pairs for 80% power, "
              f"{need * (2 * a.window + a.warmup):.0f} s of trial")


if __name__ == "__main__":
    main()
