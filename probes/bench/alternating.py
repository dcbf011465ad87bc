#!/usr/bin/env python3
"""Overhead of `redoctor probe` within one engine run, probes on and off in turn.

Separate engine runs differ by +-8% here whatever the probes do (thread
placement, the host's load), which hides a 3% effect unless the rounds are
many. This script keeps one engine process running the high-event-rate
scenario (update_index, 32 users, RT1, 2 CPUs, data on tmpfs) and attaches
`redoctor probe` for PHASE seconds, detaches it for PHASE seconds, and so on.
The engine reports its throughput every second (`--report-interval 1`, with
wall-clock stamps); each 1-second interval is classed as "on" when it lies
inside an attached phase (from 0.7 s after the agent started, which covers
its loading, to its exit) and "off" when it lies outside every attached phase
(from 0.3 s after the agent exited). Intervals that straddle a change are
dropped.

Prints the TPS of both classes and on/off as a percentage (mean and median).

Usage: probes/bench/alternating.py [PHASE_SECONDS] [PHASES] [-- AGENT ARGS...]
       (defaults 4 s, 8 phases each way; needs root and a release build:
        cargo build --release -p redoctor-engine -p redoctor-agent)
"""
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
ENGINE = os.path.join(ROOT, "target/release/redoctor-engine")
AGENT = os.environ.get("AGENT", os.path.join(ROOT, "target/release/redoctor"))
SCENARIO = ["-w", "update_index", "--users", "32", "--redo-threads", "on", "--cpus", "2",
            "--tables", "4", "--table-size", "10000"]


def main() -> None:
    args = sys.argv[1:]
    agent_args = []
    if "--" in args:
        i = args.index("--")
        args, agent_args = args[:i], args[i + 1:]
    phase = float(args[0]) if args else 4.0
    phases = int(args[1]) if len(args) > 1 else 8
    shm = tempfile.mkdtemp(prefix="redoctor-alt.", dir="/dev/shm")
    try:
        run(shm, phase, phases, agent_args)
    finally:
        shutil.rmtree(shm, ignore_errors=True)


def intervals(path: str) -> list:
    with open(path) as f:
        return [json.loads(line) for line in f if line.startswith("{")]


def run(shm: str, phase: float, phases: int, agent_args: list) -> None:
    err_path = os.path.join(shm, "engine.err")
    duration = phase * (2 * phases + 1)
    with open(err_path, "w") as err:
        engine = subprocess.Popen(
            [ENGINE, "run", "--datadir", os.path.join(shm, "data"), "--json",
             "--duration", str(duration), "--warmup", "3", "--report-interval", "1"] + SCENARIO,
            stdout=subprocess.DEVNULL, stderr=err)
    while not intervals(err_path):  # the measured window is open
        if engine.poll() is not None:
            sys.exit(f"the engine exited early; see its output:\n{open(err_path).read()}")
        time.sleep(0.05)
    spans = []
    for _ in range(phases):
        time.sleep(phase)
        started = time.time() * 1000
        agent = subprocess.Popen([AGENT, "probe", "--pid", str(engine.pid), "--interval", "1s",
                                  "--json"] + agent_args,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(phase)
        agent.send_signal(signal.SIGINT)
        agent.wait()
        spans.append((started, time.time() * 1000))
    engine.wait()
    on, off = [], []
    for r in intervals(err_path):
        end = r["unix_ms"]
        start = end - r["secs"] * 1000
        if r["secs"] < 0.9:
            continue
        if any(start >= s + 700 and end <= e for s, e in spans):
            on.append(r["tps"])
        elif all(end <= s or start >= e + 300 for s, e in spans):
            off.append(r["tps"])
    if not on or not off:
        sys.exit("no whole interval on or off: use longer phases")
    print(f"## one engine run, probes on and off every {phase:g} s ({phases} phases each); "
          f"agent args: {' '.join(agent_args) or '(all probes)'}")
    print(f"TPS off ({len(off)} s): mean {statistics.mean(off):.0f}, median {statistics.median(off):.0f}, "
          f"stdev {statistics.stdev(off):.0f}")
    print(f"TPS on  ({len(on)} s): mean {statistics.mean(on):.0f}, median {statistics.median(on):.0f}, "
          f"stdev {statistics.stdev(on):.0f}")
    print(f"on/off: mean {100 * statistics.mean(on) / statistics.mean(off):.1f}%, "
          f"median {100 * statistics.median(on) / statistics.median(off):.1f}%  (target >= 97%)")


if __name__ == "__main__":
    main()
