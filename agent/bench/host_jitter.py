#!/usr/bin/env python3
"""How much of the steady-state bench's noise is the host's?

Runs, one after another on the same CPUs, for SECS seconds each:
  1. an ALU-only reference load (no memory traffic) on every CPU;
  2. a memory-bound reference load (random reads and writes over 64 MiB per
     thread) on every CPU;
  3. the steady-state scenario of agent/bench (update_index, 32 users, RT1,
     2 CPUs, data on tmpfs), without any probe.
and prints each one's per-second rate: mean, coefficient of variation, and
the lag-1 autocorrelation (near 0: independent seconds, averaging helps;
near 1: slow drift, only interleaving helps).

If the memory-bound reference varies as much as the engine while the ALU
reference does not, the engine's swings come from the host's memory system
(neighbours sharing caches and memory bandwidth), not from the engine.

Usage: agent/bench/host_jitter.py [SECS]   (release build of
       redoctor-engine-cli; a C compiler)
"""
import math
import os
import shutil
import statistics as st
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "probes/bench"))
from alternating import ENGINE, SCENARIO, intervals  # noqa: E402  (the steady-state bench)

SOURCE = os.path.join(ROOT, "agent/bench/host_jitter.c")
CPUS = 2  # as SCENARIO's --cpus


def describe(name, v):
    mean = st.fmean(v)
    cv = st.pstdev(v) / mean
    lv = [math.log(x) for x in v]
    m = st.fmean(lv)
    den = sum((x - m) ** 2 for x in lv)
    r1 = sum((a - m) * (b - m) for a, b in zip(lv, lv[1:])) / den if den else 0.0
    print(f"{name:<34} n={len(v):>3}  mean {mean:>12.0f}  cv {cv * 100:5.1f}%  "
          f"lag-1 autocorr {r1:+.2f}  min/max {min(v) / mean:.2f}/{max(v) / mean:.2f}")


def reference(binary, mode, secs):
    out = subprocess.run(["taskset", "-c", ",".join(str(c) for c in range(CPUS)),
                          binary, mode, str(CPUS), str(secs)],
                         capture_output=True, text=True, check=True)
    return [float(x) for x in out.stdout.split()]


def engine(secs, work):
    err = os.path.join(work, "engine.err")
    with open(err, "w") as f:
        out = subprocess.run([ENGINE, "run", "--datadir", os.path.join(work, "engine"), "--json",
                              "--warmup", "2", "--duration", str(secs), "--report-interval", "1"]
                             + SCENARIO, stdout=subprocess.DEVNULL, stderr=f)
    if out.returncode != 0:
        sys.exit(f"redoctor-engine run failed:\n{open(err).read()}")
    return [r["tps"] for r in intervals(err)]


def main():
    secs = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    if not os.path.exists(ENGINE):
        sys.exit("build first: cargo build --release -p redoctor-engine-cli")
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        sys.exit("no C compiler (cc, gcc or clang) on PATH: install one")
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(dir=shm) as work:
        binary = os.path.join(work, "host_jitter")
        subprocess.run([cc, "-O2", "-pthread", "-o", binary, SOURCE], check=True)
        describe("ALU reference (loops/s)", reference(binary, "alu", secs))
        describe("memory reference (loops/s)", reference(binary, "mem", secs))
        describe("engine, update_index 32u (TPS)", engine(secs, work))


if __name__ == "__main__":
    main()
