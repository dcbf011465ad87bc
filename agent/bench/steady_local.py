#!/usr/bin/env python3
"""The daemon's steady-state cost, measured where it is paid.

`probes/bench/alternating.py` with `daemon-agent.sh` starts and stops the
daemon every 60 s and compares the phases. The engine's rate drifts over
minutes by more than the daemon costs, so that needs ~100 phases (~3.5 h)
to resolve 1%. Nearly all of the daemon's cost is paid while its probes
are attached: one sampled window every `sampling.every` (loading, 1 s
warm-up, 2 s window). This script keeps one engine run of the highest-event-rate
scenario (update_index, 32 users, RT1, 2 CPUs, tmpfs) and the daemon
running together for SECONDS, and:

- finds each span the probes were attached from the daemon's open file
  descriptors (BPF programs, links and maps are fds; polled every 0.1 s:
  one readdir of /proc, no BPF or HTTP call into the daemon);
- compares the engine's whole seconds inside each span with its seconds
  within NEAR s before and after it (outside any span): drift over minutes
  cancels, since the comparison is local;
- gives the attached cost (mean of the per-span ratios, with its standard
  error), the duty cycle (attached time / run time), and their product:
  the daemon's cost from its probes;
- adds the rest of the daemon's cost, its polling between windows, as a
  bound from its CPU time, all of it (the windows' share counted twice,
  so the bound errs high; probes/bench's burn control: a share of the
  CPUs costs this scenario at most 1.7 times that share in TPS).

It complements, not replaces, the interleaved on/off figure the issue
names: it measures the parts, where the on/off method measures the sum.

Usage: agent/bench/steady_local.py [SECONDS] [NEAR]
       (defaults 1800 s and 8 s; needs root and a release build:
        cargo build --release -p redoctor-engine-cli -p redoctor-agent)
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# The scenario, the binaries and the engine's report reader are the probes
# bench's, so both benches measure the same load.
sys.path.insert(0, os.path.join(ROOT, "probes", "bench"))
from alternating import AGENT, ENGINE, SCENARIO, intervals  # noqa: E402
# TPS lost per share of the 2 CPUs taken (probes/bench/RESULTS.md, burn control).
BURN_FACTOR = 1.7
# Seconds kept clear of a span's edges on either side.
EDGE_MS = 300


class FdWatch(threading.Thread):
    """Every 0.1 s: the daemon's open fd count, stamped (wall ms)."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.stop = pid, threading.Event()
        self.samples = []

    def run(self) -> None:
        path = f"/proc/{self.pid}/fd"
        while not self.stop.wait(0.1):
            try:
                n = len(os.listdir(path))
            except OSError:
                return
            self.samples.append((time.time() * 1000, n))

    def spans(self) -> list:
        """(start ms, end ms) of each stretch above the resting fd count."""
        if not self.samples:
            return []
        rest = statistics.median(n for _, n in self.samples)
        out, start, last = [], None, None
        for t, n in self.samples:
            if n > rest + 4 and start is None:
                start = last if last is not None else t  # it opened after the last low sample
            elif n <= rest + 4 and start is not None:
                out.append((start, t))
                start = None
            last = t
        return out


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1800.0
    near_ms = 1000 * (float(sys.argv[2]) if len(sys.argv) > 2 else 8.0)
    for exe in (ENGINE, AGENT):
        if not os.access(exe, os.X_OK):
            sys.exit(f"{exe} is missing: cargo build --release -p redoctor-engine-cli -p redoctor-agent")
    shm = tempfile.mkdtemp(prefix="redoctor-steady.", dir="/dev/shm")
    try:
        run(shm, seconds, near_ms)
    finally:
        shutil.rmtree(shm, ignore_errors=True)


def run(shm: str, seconds: float, near_ms: float) -> None:
    sock = os.path.join(shm, "admin.sock")
    err_path = os.path.join(shm, "engine.err")
    with open(err_path, "w") as err:
        engine = subprocess.Popen(
            [ENGINE, "run", "--datadir", os.path.join(shm, "data"), "--json",
             "--duration", str(seconds + 20), "--warmup", "3", "--report-interval", "1",
             "--admin-socket", sock] + SCENARIO,
            stdout=subprocess.DEVNULL, stderr=err)
    while not intervals(err_path):
        if engine.poll() is not None:
            sys.exit(f"the engine exited early:\n{open(err_path).read()}")
        time.sleep(0.05)
    cfg = os.path.join(shm, "agent.toml")
    with open(cfg, "w") as f:
        f.write(f'[agent]\nstate_dir = "{shm}/state"\nmetrics = "off"\n\n'
                f'[[target]]\nname = "engine"\npid = {engine.pid}\nsocket = "{sock}"\n')
    with open(os.path.join(shm, "agent.err"), "w") as aerr:
        agent = subprocess.Popen([AGENT, "agent", "--config", cfg], stderr=aerr)
    began = time.time() * 1000
    watch = FdWatch(agent.pid)
    watch.start()
    time.sleep(seconds)
    cpu = cpu_seconds(agent.pid)
    ended = time.time() * 1000
    watch.stop.set()
    watch.join()
    agent.terminate()
    agent.wait()
    engine.terminate()
    engine.wait()
    report(intervals(err_path), watch.spans(), began, ended, cpu, near_ms)


def report(rows, spans, began, ended, cpu, near_ms) -> None:
    secs = [(r["unix_ms"] - r["secs"] * 1000, r["unix_ms"], r["tps"])
            for r in rows if r["secs"] >= 0.9 and began <= r["unix_ms"] - r["secs"] * 1000
            and r["unix_ms"] <= ended]
    if not spans:
        sys.exit("no attached span seen: did the daemon sample? (see its state dir's audit log)")

    def clear(s, e):
        return all(e <= a - EDGE_MS or s >= b + EDGE_MS for a, b in spans)

    ratios, on_all, near_all = [], [], []
    for a, b in spans:
        on = [t for s, e, t in secs if s >= a and e <= b]
        near = [t for s, e, t in secs if clear(s, e)
                and (a - near_ms <= s and e <= a or b <= s and e <= b + near_ms)]
        if on and len(near) >= 2:
            ratios.append(statistics.mean(on) / statistics.mean(near))
            on_all += on
            near_all += near
    if len(ratios) < 2:
        sys.exit(f"too few spans with whole seconds inside ({len(ratios)}): run longer")
    attached = sum(b - a for a, b in spans)
    duty = attached / (ended - began)
    mean = statistics.mean(ratios)
    se = statistics.stdev(ratios) / len(ratios) ** 0.5
    share = cpu / ((ended - began) / 1000)  # of one CPU
    idle_bound = BURN_FACTOR * share / 2
    cost, cost_se = (1 - mean) * duty, se * duty
    print(f"## daemon and engine together {(ended - began) / 1000:.0f} s; {len(spans)} attached spans, "
          f"mean {attached / len(spans) / 1000:.2f} s; duty cycle {100 * duty:.2f}%")
    print(f"engine TPS in attached seconds against their neighbours (within {near_ms / 1000:g} s): "
          f"{100 * mean:.1f}% +- {100 * se:.1f} over {len(ratios)} spans "
          f"({statistics.mean(on_all):.0f} against {statistics.mean(near_all):.0f} TPS)")
    print(f"cost of the probes' windows: {100 * cost:.2f}% +- {100 * cost_se:.2f} of TPS")
    print(f"daemon CPU: {cpu:.2f} s = {100 * share:.2f}% of one CPU; its TPS cost at most "
          f"{100 * idle_bound:.2f}% (x{BURN_FACTOR} its share of the 2 CPUs)")
    total = cost + idle_bound
    print(f"steady state: engine TPS with the daemon >= {100 * (1 - total - 2 * cost_se):.2f}% "
          f"of without (cost {100 * total:.2f}% + 2 se; target >= 99%)")


if __name__ == "__main__":
    main()
