#!/usr/bin/env python3
"""Overhead of `redoctor probe` within one engine run, probes on and off in turn.

Separate engine runs differ by +-8% here whatever the probes do (thread
placement, the host's load), which hides a 3% effect unless the rounds are
many. This script keeps one engine process running the high-event-rate
scenario (update_index, 32 users, RT1, 2 CPUs, data on tmpfs) and attaches
`redoctor probe` for PHASE seconds, detaches it for PHASE seconds, and so on.
The engine reports its throughput every second (`--report-interval 1`, with
wall-clock stamps); each 1-second interval is classed as "on" when it lies
inside an attached phase (from ON_AFTER seconds after the agent started,
default 0.7, which covers its loading, to its exit) and "off" when it lies
outside every attached phase (from 0.3 s after the agent exited). Intervals
that straddle a change are dropped.

The host's speed drifts over a run, so each attached phase is also compared
with the detached phases just before and after it: "paired" is the mean
(and standard error) of those per-phase ratios, the figure to trust.

Several agents can be compared in the same engine run: AGENTS="a=PATH,b=PATH"
attaches them in turn (off, a, off, b, off, a, ...), PHASES times each. An
entry may carry arguments for `probe` after the path ("floor=PATH
--empty-programs"). The decomposition of the overhead in one run:
  AGENTS="null=probes/bench/null-agent.sh,\
  floor-nosys=target/release/redoctor --empty-programs --no-syscalls,\
  floor=target/release/redoctor --empty-programs,agent=target/release/redoctor"
(`--empty-programs`, a hidden bench control: every hook attached, the
scheduler and syscall programs returning at once).

Prints, per agent, the TPS on and off and on/off as a percentage, and the
paired figure by second since the agent's start (a warm-up cost would show
in the first seconds). A CPU line follows: the engine's CPU time per
commit (user + system of all its threads, which includes the BPF programs
run in their context), paired on/off like the TPS, and the machine's idle
and steal shares on and off, sampled from /proc every 0.25 s. A loss that
shows as more CPU per commit is work added to the engine's own path (the
hooks, the cache misses they cause); one that shows as less engine CPU at
the same cost per commit is CPU taken away from it.
`probes/bench/null-agent.sh` is a control: an "agent" that attaches nothing,
whose figure is the bench's own bias (it reads ~100%).
`probes/bench/burn-agent.py --percent N` is the other control: it attaches
nothing and spins in user space for N% of one CPU, so its figure says what
that much CPU costs the engine's TPS at this scenario.
`probes/bench/dispatch-agent.sh` attaches empty programs to the two
scheduler tracepoints from a minimal libbpf loader with no agent loop:
dispatch alone, without the agent's map and /proc reads.
`probes/bench/bpftrace-agent.sh` runs the bpftrace equivalents of the main
measurements instead, for comparison (it loads slowly: set ON_AFTER=3).

ENGINE_ARGS adds arguments to the engine's command line (e.g. an admin
socket for agent/bench/daemon-agent.sh, which runs the daemon instead).

Usage: probes/bench/alternating.py [PHASE_SECONDS] [PHASES] [-- AGENT ARGS...]
       (defaults 4 s, 8 phases each way; needs root and a release build:
        cargo build --release -p redoctor-engine-cli -p redoctor-agent)
"""
import bisect
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
ENGINE = os.path.join(ROOT, "target/release/redoctor-engine")
AGENT = os.environ.get("AGENT", os.path.join(ROOT, "target/release/redoctor"))
# Seconds from an agent's start to the first interval counted as "on".
ON_AFTER_MS = 1000 * float(os.environ.get("ON_AFTER", "0.7"))
SCENARIO = ["-w", "update_index", "--users", "32", "--redo-threads", "on", "--cpus", "2",
            "--tables", "4", "--table-size", "10000"] + os.environ.get("ENGINE_ARGS", "").split()


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


class CpuSampler(threading.Thread):
    """Every 0.25 s: the machine's idle and steal time and the engine's own
    CPU time (user + system, which includes BPF programs run in its
    threads' context), as cumulative seconds stamped with wall-clock ms."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.stop = pid, threading.Event()
        self.stamps, self.values = [], []  # wall ms; counters at that time
        self.hz = os.sysconf("SC_CLK_TCK")

    def read(self):
        with open("/proc/stat") as f:
            cpu = [int(x) for x in f.readline().split()[1:]]
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        engine = int(fields[11]) + int(fields[12])  # utime, stime
        # idle + iowait, steal, all, engine
        return [(cpu[3] + cpu[4]) / self.hz, cpu[7] / self.hz, sum(cpu[:8]) / self.hz,
                engine / self.hz]

    def run(self) -> None:
        while not self.stop.wait(0.25):
            try:
                values = self.read()
            except (OSError, IndexError, ValueError):
                return  # the engine is gone
            self.stamps.append(time.time() * 1000)
            self.values.append(values)

    def finish(self) -> None:
        self.stop.set()
        self.join()

    def delta(self, start_ms: float, end_ms: float):
        """Counters over [start, end], interpolated between samples; None
        when the samples do not cover it. Call after finish()."""

        def at(t):
            i = bisect.bisect_left(self.stamps, t)
            if i == 0 or i == len(self.stamps):
                return None
            t0, t1 = self.stamps[i - 1], self.stamps[i]
            v0, v1 = self.values[i - 1], self.values[i]
            f = (t - t0) / (t1 - t0)
            return [a + f * (b - a) for a, b in zip(v0, v1)]
        a, b = at(start_ms), at(end_ms)
        return None if a is None or b is None else [y - x for x, y in zip(a, b)]


def agents() -> list:
    """(label, binary, extra probe args) of each agent to compare."""
    spec = os.environ.get("AGENTS")
    if not spec:
        return [("agent", AGENT, [])]
    out = []
    for item in spec.split(","):
        label, _, command = item.partition("=")
        words = command.split()
        if not label or not words or not os.access(words[0], os.X_OK):
            sys.exit(f"AGENTS: {item!r} is not LABEL=EXECUTABLE [ARG...]")
        out.append((label, words[0], words[1:]))
    return out


def run(shm: str, phase: float, phases: int, agent_args: list) -> None:
    err_path = os.path.join(shm, "engine.err")
    which = agents()
    # Loading an agent takes up to a second: leave room, and stop the engine
    # once the phases are done.
    duration = (2 * phase + 4) * (phases * len(which) + 1)
    with open(err_path, "w") as err:
        engine = subprocess.Popen(
            [ENGINE, "run", "--datadir", os.path.join(shm, "data"), "--json",
             "--duration", str(duration), "--warmup", "3", "--report-interval", "1"] + SCENARIO,
            stdout=subprocess.DEVNULL, stderr=err)
    while not intervals(err_path):  # the measured window is open
        if engine.poll() is not None:
            sys.exit(f"the engine exited early; see its output:\n{open(err_path).read()}")
        time.sleep(0.05)
    sampler = CpuSampler(engine.pid)
    sampler.start()
    spans = []  # (agent index, start ms, end ms)
    for i in range(phases * len(which)):
        k = i % len(which)
        time.sleep(phase)
        started = time.time() * 1000
        out_path, agent_err = os.path.join(shm, "agent.out"), os.path.join(shm, "agent.err")
        with open(out_path, "w") as out, open(agent_err, "w") as aerr:
            agent = subprocess.Popen([which[k][1], "probe", "--pid", str(engine.pid),
                                      "--interval", "1s", "--json"] + which[k][2] + agent_args,
                                     stdout=out, stderr=aerr)
        time.sleep(phase)
        # An agent that failed (to load, say) would leave an "on" phase
        # unprobed and pass for free: stop the bench instead.
        failed = None
        if agent.poll() is not None:
            failed = f"exited during its phase (status {agent.returncode})"
        agent.send_signal(signal.SIGTERM)  # SIGINT is ignored when started in the background
        agent.wait()
        if failed is None and not intervals(out_path):
            failed = "closed no window in its phase"
        if failed:
            engine.send_signal(signal.SIGTERM)
            engine.wait()  # before its data directory is removed
            sys.exit(f"{which[k][0]}: the agent {failed}:\n{open(agent_err).read()}")
        spans.append((k, started, time.time() * 1000))
        if engine.poll() is not None:
            sys.exit("the engine run ended before the phases did")
    time.sleep(phase)
    sampler.finish()
    engine.send_signal(signal.SIGTERM)
    engine.wait()
    # Per span: its "on" intervals (whole seconds since the agent's start,
    # TPS); between spans: "off" intervals (TPS).
    on = [[] for _ in spans]
    off = [[] for _ in range(len(spans) + 1)]  # off[j] lies before spans[j]
    # The same for CPU: (engine CPU s per commit, idle share, steal share).
    cpu_on = [[] for _ in spans]
    cpu_off = [[] for _ in range(len(spans) + 1)]
    for r in intervals(err_path):
        end = r["unix_ms"]
        start = end - r["secs"] * 1000
        if r["secs"] < 0.9:
            continue
        d = sampler.delta(start, end)
        cpu = None
        if d and d[2] > 0 and r["tps"] > 0:
            cpu = (d[3] / (r["tps"] * r["secs"]), d[0] / d[2], d[1] / d[2])
        for j, (_, s, e) in enumerate(spans):
            if start >= s + ON_AFTER_MS and end <= e:
                on[j].append((int((start - s) // 1000), r["tps"]))
                if cpu:
                    cpu_on[j].append(cpu)
        if all(end <= s or start >= e + 300 for _, s, e in spans):
            j = sum(1 for _, s, _ in spans if start >= s)
            off[j].append(r["tps"])
            if cpu:
                cpu_off[j].append(cpu)
    all_off = [t for o in off for t in o]
    if not all_off:
        sys.exit("no whole interval off: use longer phases")
    print(f"## one engine run, probes on and off every {phase:g} s ({phases} phases per agent, "
          f"on from {ON_AFTER_MS / 1000:g} s after each start); agent args: {' '.join(agent_args) or '(all probes)'}")
    print(f"TPS off ({len(all_off)} s): mean {statistics.mean(all_off):.0f}, "
          f"median {statistics.median(all_off):.0f}, stdev {statistics.stdev(all_off):.0f}")
    for k, (label, _, _) in enumerate(which):
        mine = [j for j, sp in enumerate(spans) if sp[0] == k]
        ons = [t for j in mine for _, t in on[j]]
        if len(ons) < 2:
            sys.exit(f"{label}: no whole interval on: use longer phases")
        ratios = []
        by_second = {}  # seconds since the agent's start -> paired ratios
        for j in mine:
            near = off[j] + off[j + 1]
            if on[j] and near:
                base = statistics.mean(near)
                ratios.append(statistics.mean(t for _, t in on[j]) / base)
                for sec, t in on[j]:
                    by_second.setdefault(sec, []).append(t / base)
        se = statistics.stdev(ratios) / len(ratios) ** 0.5 if len(ratios) > 1 else float("nan")
        print(f"{label}: TPS on ({len(ons)} s): mean {statistics.mean(ons):.0f}, "
              f"median {statistics.median(ons):.0f}, stdev {statistics.stdev(ons):.0f}")
        print(f"{label}: on/off: mean {100 * statistics.mean(ons) / statistics.mean(all_off):.1f}%, "
              f"median {100 * statistics.median(ons) / statistics.median(all_off):.1f}%, "
              f"paired {100 * statistics.mean(ratios):.1f}% +- {100 * se:.1f}  (target >= 97%)")
        print_cpu(label, [(cpu_on[j], cpu_off[j] + cpu_off[j + 1]) for j in mine])
        # Whether the first seconds after attaching (loading, first reads,
        # maps filling) cost more than the steady state.
        print(f"{label}: paired by second since start: " + ", ".join(
            f"{sec}s {100 * statistics.mean(v):.1f}% (n={len(v)})"
            for sec, v in sorted(by_second.items())))


def print_cpu(label: str, pairs: list) -> None:
    """Where a TPS loss comes from: more CPU per commit (the hooks' cost,
    in the engine's own threads, cache misses included), or CPU left idle
    (or taken by the host: steal)."""
    ratios = [statistics.mean(c for c, _, _ in on) / statistics.mean(c for c, _, _ in off)
              for on, off in pairs if on and off]
    if len(ratios) < 2:
        print(f"{label}: CPU: too few sampled intervals")
        return
    # Columns over every interval: CPU per commit, idle share, steal share.
    per_on, idle_on, steal_on = zip(*(c for on, _ in pairs for c in on))
    per_off, idle_off, steal_off = zip(*(c for _, off in pairs for c in off))
    se = statistics.stdev(ratios) / len(ratios) ** 0.5
    print(f"{label}: engine CPU per commit, paired on/off {100 * statistics.mean(ratios):.1f}% "
          f"+- {100 * se:.1f} ({1e6 * statistics.mean(per_on):.2f} against "
          f"{1e6 * statistics.mean(per_off):.2f} us); machine idle on {100 * statistics.mean(idle_on):.1f}% "
          f"off {100 * statistics.mean(idle_off):.1f}%, steal on {100 * statistics.mean(steal_on):.1f}% "
          f"off {100 * statistics.mean(steal_off):.1f}%")


if __name__ == "__main__":
    main()
