#!/usr/bin/env python3
"""The engine process's CPU use in 200-ms readings (the spin gate's own
window, as a share of the CPUs it may use; from /proc, the same count
the gate's getrusage reads), `serve` under sysbench oltp_update_index
with 4 threads, the debug spin off and on (20 s each, twice): how near
the load sits to the gate's mark (innodb_log_spin_cpu_pct_hwm, 50%).

Usage: agent/bench/gate_cpu.py [SPIN_NS (8000)]   (root; release builds
of redoctor-engine; sysbench and the mariadb client installed)
"""
import os
import statistics
import sys
import tempfile
import time
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import meter_power as mp  # noqa: E402  (the load)

MARK = 50  # the gate's default innodb_log_spin_cpu_pct_hwm


def main():
    on = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
    load = SimpleNamespace(serve_threads=4, workload="update_index", users=4)
    proc, sock, sb = mp.start(load, tempfile.mkdtemp(dir="/var/tmp"))
    tick = os.sysconf("SC_CLK_TCK")
    ncpu = len(os.sched_getaffinity(proc.pid))

    def cpu_s():
        f = open(f"/proc/{proc.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / tick

    try:
        for spin in (0, on, 0, on):
            mp.mysql(sock, f"SET GLOBAL {mp.KNOB} = {spin}")
            time.sleep(2)
            pcts = []
            c0, t0 = cpu_s(), time.monotonic()
            for _ in range(100):
                time.sleep(0.2)
                c1, t1 = cpu_s(), time.monotonic()
                pcts.append(100 * (c1 - c0) / (t1 - t0) / ncpu)
                c0, t0 = c1, t1
            q = statistics.quantiles(pcts, n=10)
            above = sum(p >= MARK for p in pcts) / len(pcts)
            print(f"spin {spin}: CPU use {statistics.median(pcts):.0f}% of {ncpu} CPUs "
                  f"(10th-90th {q[0]:.0f}-{q[-1]:.0f}%), readings at or above the gate's "
                  f"{MARK}%: {above:.0%}", flush=True)
    finally:
        sb.kill()
        proc.kill()


if __name__ == "__main__":
    main()
