#!/usr/bin/env python3
"""Phase-change benchmark of `redoctor agent` in apply mode.

One `redoctor-engine serve` (2 CPUs, data on disk) under sysbench
oltp_update_index: phase A with 4 users for 40 s, then phase B with 256
users for 40 s. The same two-phase load runs with each of the oracle's
static configurations (advisor/bench/eval/plan.toml's six) and with the
agent in apply mode starting from MySQL 8.0's defaults (dedicated log
threads on, no cap, no throttle; `serve` is started with `--redo-threads
on`, since by itself it picks MySQL 8.4's off on a 2-CPU host), interleaved
(agent, two statics, agent, two statics, ...), so a drift of the host
touches all alike.

Per phase it prints: the best static configuration and its TPS; for each
agent run, the configuration it held at the phase's end, when its last
kept change in the phase came (seconds after the phase began), how many
changes it kept in the phase, and its TPS over the phase as a share of the
best static's. Targets (issue): the oracle's best setting within 30 s of
the change, at most one kept change per phase, >= 95% of the best static.

The best static is taken over configurations pooled by what they amount to
under the phase's load (a cap or throttle of at least the users is the bare
redo mode), as the median of the pooled runs: the best of six single noisy
runs would be a winner's curse (at 4 users RT0 and RT0+cap4, one setting,
read 10201 and 12927 TPS in one run of this bench).

The agent predicts with a calibration of this host, as a deployment
would: `redoctor calibrate` runs first, on the storage the engine's data
is on (~3 min), unless `--calibration FILE` names one already made or
`--priors` asks for the model's uncalibrated priors (the bench before
2026-11-27).

`--pause-file PATH` (as `advisor/bench/eval/measure.py`): while PATH
exists another job holds the CPUs, so no run starts, and a run that
overlapped one is run again (an agent run with a fresh state directory).

Usage: agent/bench/phase.py [AGENT_RUNS] [--static-repeats R] [--json OUT]
           [--configs RT0,RT1] [--calibration FILE | --priors]
           [--pause-file /tmp/redoctor-busy] [--fsync-counters-ab]
       (each static configuration runs R times, interleaved with the agent
       runs; R = 2 or more resolves phase B, where nothing pools; root; release build:
       cargo build --release -p redoctor-engine-cli -p redoctor-agent;
       sysbench and the mysql client installed)
       agent/bench/phase.py --rescore OUT   (the table again from a saved --json)
"""
import argparse
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "advisor", "bench", "eval"))
from measure import quiet_cell  # noqa: E402  (the pause-file protocol)
ENGINE = os.path.join(ROOT, "target/release/redoctor-engine")
AGENT = os.path.join(ROOT, "target/release/redoctor")
PHASES = [("A", 4, 40), ("B", 256, 40)]
KNOBS = ["innodb_log_writer_threads", "innodb_thread_concurrency",
         "innodb_admission_policy", "innodb_max_active_transactions"]
CONFIGS = {
    "RT1": {"innodb_log_writer_threads": "ON"},
    "RT0": {"innodb_log_writer_threads": "OFF"},
    "RT1+cap4": {"innodb_log_writer_threads": "ON", "innodb_thread_concurrency": "4",
                 "innodb_admission_policy": "fifo"},
    "RT0+cap4": {"innodb_log_writer_threads": "OFF", "innodb_thread_concurrency": "4",
                 "innodb_admission_policy": "fifo"},
    "RT1+throttle16": {"innodb_log_writer_threads": "ON", "innodb_max_active_transactions": "16"},
    "RT0+throttle16": {"innodb_log_writer_threads": "OFF", "innodb_max_active_transactions": "16"},
}
AGENT_CONFIG = """[agent]
state_dir = "{state}"
metrics = "off"
{calibration}

[[target]]
name = "engine"
pid = {pid}
socket = "{socket}"
mode = "apply"

[target.sampling]
every = "120s"
fsync_counters = {fsync}
warmup = "1s"
window = "2s"
min_gap = "5s"

# Tuned to 40-second phases (the defaults are minutes).
[target.guardrails]
min_dwell = "20s"
stabilization = "20s"

[target.trial]
window = "1s"
warmup = "1s"
max_total = "25s"

[target.phase]
hold = "2s"
"""


def sql(socket, stmt):
    out = subprocess.run(["mysql", "-S", socket, "-uroot", "-N", "-B", "-e", stmt],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"mysql: {stmt}: {out.stderr}")
    return out.stdout


def read_settings(socket):
    s = {}
    for k in KNOBS:
        line = sql(socket, f"SHOW GLOBAL VARIABLES LIKE '{k}'").split("\t")
        s[k] = line[1].strip()
    return s


def apply(socket, settings):
    for k, v in settings.items():
        val = v if v.isdigit() or v in ("ON", "OFF") else f"'{v}'"
        sql(socket, f"SET GLOBAL {k} = {val}")


def name_of(s):
    """The oracle's name for a settings map (RT1+cap4, ...)."""
    n = "RT1" if s.get("innodb_log_writer_threads", "ON") == "ON" else "RT0"
    if s.get("innodb_thread_concurrency", "0") != "0":
        n += f"+cap{s['innodb_thread_concurrency']}"
    if s.get("innodb_max_active_transactions", "0") != "0":
        n += f"+throttle{s['innodb_max_active_transactions']}"
    return n


def sysbench_cmd(socket, *args):
    """sysbench oltp_update_index on the bench's four tables, with `args`."""
    return ["sysbench", "--db-driver=mysql", f"--mysql-socket={socket}", "--mysql-user=root",
            "--mysql-db=sbtest", "--tables=4", "--table-size=10000", *args, "oltp_update_index"]


def serve(work):
    """`serve` with its data in `work`, redo log threads on, its tables
    prepared: (engine process, socket)."""
    socket = os.path.join(work, "s.sock")
    engine = subprocess.Popen([ENGINE, "serve", "--datadir", os.path.join(work, "data"),
                               "--socket", socket, "--redo-threads", "on"],
                              stdout=subprocess.DEVNULL,
                              stderr=open(os.path.join(work, "engine.err"), "w"))
    deadline = time.time() + 30
    while not os.path.exists(socket):
        if engine.poll() is not None or time.time() > deadline:
            engine.kill()
            sys.exit(f"serve did not start (see {work}/engine.err)")
        time.sleep(0.05)
    subprocess.run(sysbench_cmd(socket) + ["prepare"], capture_output=True, check=True)
    return engine, socket


def sysbench(socket, users, secs):
    """(start unix s, TPS over the phase, per-second TPS)."""
    t0 = time.time()
    out = subprocess.run(
        sysbench_cmd(socket, f"--threads={users}", f"--time={secs}", "--report-interval=1") + ["run"],
        capture_output=True, text=True)
    if out.returncode != 0 or "FATAL" in out.stdout + out.stderr:
        sys.exit(f"sysbench failed:\n{out.stdout}\n{out.stderr}")
    m = re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", out.stdout)
    per_s = [float(x) for x in re.findall(r"\] thds: \d+ tps: ([\d.]+)", out.stdout)]
    return t0, float(m.group(1)), per_s


def two_phases(socket):
    return [(name,) + sysbench(socket, users, secs) for name, users, secs in PHASES]


# Audit events kept in the --json per phase (the trial's windows left out).
AUDITED = {"phase_change", "evaluated", "trial_started", "trial", "candidate_refused",
           "setting_changed_externally"}


def phase_events(lines, lo, hi, start):
    """The AUDITED events logged in [lo, hi) (unix s), each with `at_s`
    (seconds after `start`) and without its windows."""
    return [dict({k: v for k, v in l.items() if k not in ("windows", "ts_unix_ms")},
                 at_s=round(l["ts_unix_ms"] / 1000 - start, 3))
            for l in lines
            if l.get("event") in AUDITED and lo <= l["ts_unix_ms"] / 1000 < hi]


def audit(state):
    p = os.path.join(state, "audit.jsonl")
    return [json.loads(l) for l in open(p)] if os.path.exists(p) else []


def agent_run(socket, pid, defaults, work, i, calibration, fsync=True):
    apply(socket, defaults)
    state = os.path.join(work, f"agent{i}")
    cfg = os.path.join(work, f"agent{i}.toml")
    line = f'calibration = "{calibration}"' if calibration else ""
    with open(cfg, "w") as f:
        f.write(AGENT_CONFIG.format(state=state, pid=pid, socket=socket, calibration=line,
                                    fsync=str(fsync).lower()))
    err = open(os.path.join(work, f"agent{i}.err"), "w")
    agent = subprocess.Popen([AGENT, "agent", "--config", cfg], stderr=err, stdout=subprocess.DEVNULL)
    phases = two_phases(socket)
    end = time.time()
    agent.send_signal(signal.SIGTERM)
    agent.wait(timeout=10)
    lines = audit(state)
    out = []
    bounds = [p[1] for p in phases] + [end]
    settings = dict(defaults)
    for j, (name, start, tps, per_s) in enumerate(phases):
        def in_phase(l, event):
            return l.get("event") == event and bounds[j] <= l["ts_unix_ms"] / 1000 < bounds[j + 1]
        kept, last = 0, None
        for l in lines:
            if in_phase(l, "trial") and l.get("outcome") == "kept":
                kept += 1
                last = l["ts_unix_ms"] / 1000 - start
                settings.update(l["candidate"])
        trials = [l for l in lines if in_phase(l, "trial")]
        # When the first trial of the phase began (s after the phase
        # started) and how long each ran: where the time to converge goes.
        starts = [l["ts_unix_ms"] / 1000 - start for l in lines if in_phase(l, "trial_started")]
        out.append({"phase": name, "tps": tps, "per_s": per_s, "held": name_of(settings),
                    "kept": kept, "last_change_s": last, "trials": len(trials),
                    "first_trial_s": min(starts) if starts else None,
                    "trial_elapsed_s": [t.get("elapsed_s") for t in trials],
                    "trial_reasons": [t.get("reason") for t in trials],
                    # The agent's own account of the phase (seconds after
                    # it began), for a run that needs explaining later:
                    # the audit trail lives in a directory removed at exit.
                    "events": phase_events(lines, bounds[j], bounds[j + 1], start),
                    "outcomes": [f"{name_of(dict(defaults, **t['candidate']))}:{t['outcome']}" for t in trials],
                    "fsync_counters": fsync})
    return out


def effective(name, users):
    """The configuration `name` amounts to under `users` users: a cap or a
    throttle of at least the users never holds anyone back, so RT0+cap4 at
    4 users is RT0 (advice_eval pools the oracle's cells the same way)."""
    return name_of({k: v for k, v in CONFIGS[name].items()
                    if not (v.isdigit() and int(v) >= users)})


def pooled_statics(statics, j, users):
    """Per effective configuration in phase j: the median of every static
    run that amounts to it, and those runs."""
    pools = {}
    for n, runs in statics.items():
        pools.setdefault(effective(n, users), []).extend(r[j] for r in runs)
    return {n: (statistics.median(v), v) for n, v in pools.items()}


def score(statics, agents):
    """Prints the table against the best static (pooled) and returns the
    report."""
    report = {"phases": [], "statics": statics, "agent_runs": agents}
    print()
    print("| phase | best static (pooled runs) | its TPS | agent run | held at end | last kept change "
          "| kept | TPS | of best |")
    print("|---|---|---|---|---|---|---|---|---|")
    pools = [pooled_statics(statics, j, users) for j, (_, users, _) in enumerate(PHASES)]
    for j, (name, users, secs) in enumerate(PHASES):
        best = max(pools[j], key=lambda n: pools[j][n][0])
        best_tps, runs = pools[j][best]
        report["phases"].append({"phase": name, "users": users, "best": best, "best_tps": best_tps,
                                 "pooled": {n: v for n, (_, v) in pools[j].items()}})
        for i, a in enumerate(agents):
            p = a[j]
            last = f"{p['last_change_s']:.0f} s" if p["last_change_s"] is not None else "none"
            print(f"| {name} ({users} users, {secs} s) | {best} ({len(runs)}) | {best_tps:.0f} | {i + 1} | "
                  f"{p['held']} | {last} | {p['kept']} | {p['tps']:.0f} | "
                  f"{100 * p['tps'] / best_tps:.1f}% |")
    print()
    for (name, _, _), pool in zip(PHASES, pools):
        print(f"phase {name} static TPS by effective configuration: " + "; ".join(
            f"{n} " + "/".join(f"{t:.0f}" for t in v) for n, (_, v) in pool.items()))
    for i, a in enumerate(agents):
        for p in a:
            first = p.get("first_trial_s")
            timing = "" if first is None else (
                f" (first began at {first:.1f} s; ran " +
                ", ".join(f"{e:.1f}" for e in p["trial_elapsed_s"] if e is not None) + " s)")
            print(f"agent run {i + 1} phase {p['phase']} trials: {', '.join(p['outcomes']) or 'none'}{timing}")
    return report


def run_order(saved, repeats=None):
    """[(configuration or "agent", [TPS per phase])] in the order the runs
    ran: `order` of a saved --json, or (before 2026-12-06 evening, when
    no order was saved) rebuilt from the interleaving main() uses."""
    statics, agents = saved["statics"], saved["agent_runs"]
    if "order" in saved:
        names = saved["order"]
    else:
        chosen = list(statics)
        r = repeats or len(statics[chosen[0]])
        queue = [n for _ in range(r) for n in chosen]
        per = -(-len(queue) // len(agents))
        names = [x for i in range(len(agents)) for x in ["agent"] + queue[i * per:(i + 1) * per]]
    seen = {}
    out = []
    for n in names:
        i = seen.get(n, 0)
        seen[n] = i + 1
        out.append((n, [p["tps"] for p in agents[i]] if n == "agent" else statics[n][i]))
    return out


def neighbours(saved, report):
    """The host's drift from run to run: the correlation of consecutive
    runs' log TPS (each over its configuration's median; agent runs over
    theirs), and each agent run scored against the best static's runs
    next to it in time (the mean of the nearest one before and after)
    rather than its pooled median: a lever only if consecutive runs move
    together."""
    seq = run_order(saved)
    for j, (name, _, _) in enumerate(PHASES):
        med = {n: statistics.median(v[j] for m, v in seq if m == n) for n, _ in seq}
        res = [math.log(v[j] / med[n]) for n, v in seq]
        r = statistics.correlation(res[:-1], res[1:])
        best = report["phases"][j]["best"]
        near = []
        for i, (n, v) in enumerate(seq):
            if n != "agent":
                continue
            def is_best(m):
                return m != "agent" and effective(m, PHASES[j][1]) == best
            sides = [next((w[j] for m, w in reversed(seq[:i]) if is_best(m)), None),
                     next((w[j] for m, w in seq[i + 1:] if is_best(m)), None)]
            ref = statistics.mean(x for x in sides if x is not None)
            near.append(v[j] / ref)
        print(f"phase {name}: consecutive runs correlate r = {r:.2f} ({len(res) - 1} pairs); "
              f"agent runs against the {best} runs beside them: " +
              ", ".join(f"{100 * x:.1f}%" for x in near) +
              f" ({sum(x >= 0.95 for x in near)} of {len(near)} >= 95%)")


def by_fsync(agents):
    """The agent runs' trial outcomes per phase, by whether the daemon's
    fsync counters were attached."""
    for on in (True, False):
        runs = [r for r in agents if r[0].get("fsync_counters", True) == on]
        for j, (name, _, _) in enumerate(PHASES):
            outs = [o for r in runs for o in r[j]["outcomes"]]
            print(f"fsync counters {'on' if on else 'off'}, phase {name} ({len(runs)} runs): "
                  + ", ".join(f"{o} x{outs.count(o)}" for o in sorted(set(outs))))


def main():
    ap = argparse.ArgumentParser(description="Phase-change benchmark of redoctor agent (apply mode).")
    ap.add_argument("runs", nargs="?", type=int, default=3, metavar="AGENT_RUNS")
    ap.add_argument("--static-repeats", type=int, default=1, metavar="R")
    ap.add_argument("--json", metavar="OUT")
    ap.add_argument("--rescore", metavar="SAVED.json")
    ap.add_argument("--pause-file")
    ap.add_argument("--configs", metavar="NAMES",
                    help="comma-separated static configurations to run (default: all six); "
                         "fewer buys more repeats of those in the same time, and the best "
                         "static is then the best of these")
    ap.add_argument("--fsync-counters-ab", action="store_true",
                    help="alternate the agent runs with the daemon's fsync counters on and off "
                         "(sampling.fsync_counters); with --static-repeats 0 only agent runs, "
                         "and their trials' outcomes per phase by the setting")
    how = ap.add_mutually_exclusive_group()
    how.add_argument("--calibration", metavar="FILE")
    how.add_argument("--priors", action="store_true")
    a = ap.parse_args()
    if a.rescore:
        saved = json.load(open(a.rescore))
        if "statics" not in saved:  # agent runs only (--static-repeats 0)
            by_fsync(saved["agent_runs"])
            return
        neighbours(saved, score(saved["statics"], saved["agent_runs"]))
        return
    json_out, repeats, runs, priors = a.json, a.static_repeats, a.runs, a.priors
    chosen = list(CONFIGS) if not a.configs else a.configs.split(",")
    unknown = [n for n in chosen if n not in CONFIGS]
    if unknown:
        sys.exit(f"--configs: unknown {', '.join(unknown)} (known: {', '.join(CONFIGS)})")
    calibration = a.calibration and os.path.abspath(a.calibration)
    if calibration and not os.path.exists(calibration):
        sys.exit(f"--calibration {calibration}: no such file")
    for tool in ("sysbench", "mysql"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is not installed (apt-get install sysbench mariadb-client)")
    work = tempfile.mkdtemp(prefix="redoctor-phase.", dir="/var/tmp")
    if not priors and calibration is None:
        calibration = os.path.join(work, "calibration.json")
        print("calibrating this host (redoctor calibrate, ~3 min) ...", flush=True)
        quiet_cell(a, lambda: subprocess.run(
            [AGENT, "calibrate", "--workdir", work, "--out", calibration],
            check=True, stdout=subprocess.DEVNULL))
    engine, socket = serve(work)
    try:
        defaults = read_settings(socket)
        statics = {n: [] for n in chosen}
        agents = []
        order = []  # the runs in the order they ran
        queue = [n for _ in range(repeats) for n in chosen]
        per_agent = -(-len(queue) // runs)
        attempts = iter(range(1 << 30))  # a fresh agent state for every attempt

        def one_agent(fsync):
            return agent_run(socket, engine.pid, defaults, work, next(attempts), calibration, fsync)

        def one_static(n):
            apply(socket, defaults)
            apply(socket, CONFIGS[n])
            return [p[2] for p in two_phases(socket)]

        for i in range(runs):
            agents.append(quiet_cell(a, one_agent, not (a.fsync_counters_ab and i % 2)))
            order.append("agent")
            print(f"agent run {i + 1}: " + "; ".join(
                f"{p['phase']}: {p['held']} {p['tps']:.0f} TPS, {p['kept']} kept" for p in agents[-1]),
                flush=True)
            for n in queue[i * per_agent:(i + 1) * per_agent]:
                statics[n].append(quiet_cell(a, one_static, n))
                order.append(n)
                print(f"static {n}: " + ", ".join(f"{t:.0f}" for t in statics[n][-1]), flush=True)
    finally:
        engine.send_signal(signal.SIGTERM)
        engine.wait()
    if a.fsync_counters_ab:
        by_fsync(agents)
    if not queue:
        if json_out:
            with open(json_out, "w") as f:
                json.dump({"agent_runs": agents, "order": order}, f, indent=1)
        shutil.rmtree(work, ignore_errors=True)
        return
    report = score(statics, agents)
    report["order"] = order
    neighbours(report, report)
    if json_out:
        report["calibration"] = json.load(open(calibration)) if calibration else "priors"
        with open(json_out, "w") as f:
            json.dump(report, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
