#!/usr/bin/env python3
"""Measure the advice-quality evaluation's data set (advisor/bench/README.md).

    measure.py PLAN.toml DATA.jsonl [--resume] [--only SUBSTRING ...]
               [--engine PATH] [--redoctor PATH] [--sealed] [--pause-file PATH]
    measure.py PLAN.toml DATA.jsonl --reobserve FROM.jsonl [--resume]

For every scenario of the plan (slices of workloads x users x cores x binlog x
flush x storage), in a shuffled order:
- every configuration of the plan runs `repeats` times as a fresh
  `redoctor-engine run --json` process on a fresh data directory (the
  configurations in a new shuffled order each repeat, so drift hits all);
- the scenario is observed through the probes once in RT1 and once in RT0
  (`redoctor diagnose --demo --format json --model-priors`): the summary,
  facts and per-window commit rates are kept, so the advisor can diagnose
  the scenario offline with any model.
One JSON line per finished scenario is appended to DATA.jsonl (an interrupted
run resumes with --resume). `--reobserve FROM.jsonl` keeps FROM's cells and
measures the observations again (after a change to what diagnose observes).
`--sealed` prints progress only, never a scenario's result: for a frozen
evaluation set that must not be looked at before it is scored once.
`--twins-interleaved`: scenarios that differ only in their CPUs are measured
together, each repeat of one followed by the same repeat of the other, so a
what-if's twins (advisor/bench/README.md) are compared in one host state.
`--pause-file PATH`: while PATH exists (another job is using the CPUs), no
cell starts; a cell during which PATH appeared, or PATH's companion log
`PATH.log` grew, is measured again (the helper `eval/busy.sh CMD` creates
both around CMD).
Before measuring, every scenario's workload and settings are checked with
the engine's `run --check-settings`: a plan the engine refuses exits at
once, naming the scenario, instead of failing every cell for hours.
Needs root (the probes).
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib


def scenarios(plan):
    out = []
    for sl in plan["slice"]:
        for w in sl["workloads"]:
            for u in sl["users"]:
                for c in sl["cores"]:
                    for b in sl["binlog"]:
                        for f in sl["flush"]:
                            s = {
                                "slice": sl["name"],
                                "workload": w,
                                "users": u,
                                "cores": c,
                                "binlog": b,
                                "flush": f,
                                "storage": sl["storage"],
                            }
                            if "warehouses" in sl:
                                s["warehouses"] = sl["warehouses"]
                            if sl.get("access", "uniform") != "uniform":
                                s["access"] = sl["access"]
                            out.append(s)
    return out


def key(s):
    """The scenario's name. TPCC-lite with several warehouses is its own
    scenario (`tpcc-4w/...`) but stays in the tpcc workload family."""
    w = s["workload"]
    if s.get("warehouses", 1) != 1:
        w += f"-{s['warehouses']}w"
    if s.get("access"):
        w += "@" + s["access"]
    return "{w}/{users}u/{cores}c/{b}/flush{flush}/{storage}".format(
        w=w, b="binlog" if s["binlog"] else "nobinlog", **s
    )


def workload_args(plan, s):
    """The engine's (and `diagnose --demo`'s) workload arguments for
    scenario `s`: a name in the plan's [mixes] runs its statement mix."""
    w = plan.get("mixes", {}).get(s["workload"], s["workload"])
    args = ["--workload", w]
    if s.get("warehouses", 1) != 1:
        args += ["--warehouses", str(s["warehouses"])]
    if s.get("access"):
        args += ["--access", s["access"]]
    return args


def axis_settings(s):
    return [
        ("log_bin", "ON" if s["binlog"] else "OFF"),
        ("innodb_flush_log_at_trx_commit", str(s["flush"])),
    ]


def done_keys(out, resume, tool):
    """Keys already in OUT (resuming), or exit if OUT exists without --resume."""
    if not os.path.exists(out):
        return set()
    if not resume:
        sys.exit(f"{tool}: {out} exists: pass --resume to continue it, or another path")
    with open(out) as f:
        return {json.loads(l)["key"] for l in f if l.strip()}


def busy_mark(pause_file):
    """What tells a cell it overlapped another job: (PATH exists, log size)."""
    if not pause_file:
        return (False, 0)
    try:
        size = os.path.getsize(pause_file + ".log")
    except OSError:
        size = 0
    return (os.path.exists(pause_file), size)


def quiet_cell(args, fn, *a):
    """Runs fn(*a) while no other job holds the pause file; measures again
    (up to 20 times) when one started during it."""
    for _ in range(20):
        while args.pause_file and os.path.exists(args.pause_file):
            time.sleep(1)
        before = busy_mark(args.pause_file)
        r = fn(*a)
        after = busy_mark(args.pause_file)
        if not after[0] and after[1] == before[1]:
            return r
        print("  (another job ran during a cell: measured again)", flush=True)
    return r


def run_cell(args, plan, s, settings, workdir):
    d = tempfile.mkdtemp(prefix="redoctor-eval-", dir=workdir)
    try:
        cmd = [
            args.engine,
            "run",
            "--datadir",
            os.path.join(d, "data"),
            *workload_args(plan, s),
            "--users",
            str(s["users"]),
            "--cpus",
            str(s["cores"]),
            "--duration",
            str(plan["run"]["duration_s"]),
            "--warmup",
            str(plan["run"]["warmup_s"]),
            "--json",
        ]
        for k, v in axis_settings(s) + list(settings.items()):
            cmd += ["--set", f"{k}={v}"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            return {"error": p.stderr.strip()[-500:]}
        line = [l for l in p.stdout.splitlines() if l.startswith("{")][-1]
        r = json.loads(line)
        return {
            "tps": r["tps"],
            "p95_us": r.get("latency_us", {}).get("p95_us"),
            "errors": r.get("errors"),
        }
    except (subprocess.TimeoutExpired, IndexError, json.JSONDecodeError) as e:
        return {"error": str(e)}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def observe(args, plan, s, settings, workdir):
    cmd = [
        args.redoctor,
        "diagnose",
        "--demo",
        "--model-priors",
        "--format",
        "json",
        "--workdir",
        workdir,
        *workload_args(plan, s),
        "--users",
        str(s["users"]),
        "--cpus",
        str(s["cores"]),
        "--duration",
        f"{plan['run']['observe_s']}s",
    ]
    for k, v in axis_settings(s) + list(settings.items()):
        cmd += ["--engine-set", f"{k}={v}"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        return {"error": p.stderr.strip()[-500:]}
    d = json.loads(p.stdout)
    rates = []
    for w in d["windows"]:
        c = w["engine"].get("commits")
        if c is not None and w["window_ns"] > 0:
            rates.append(c / (w["window_ns"] / 1e9))
    return {"summary": d["summary"], "facts": d["facts"], "window_rates": rates}


def preflight(args, plan, todo):
    """Every scenario's workload and settings as the engine will take them
    (`run --check-settings`), before hours of measuring: a name the engine
    does not know (a statement mix missing from the plan's [mixes]) would
    otherwise fail every cell of its scenarios."""
    seen = set()
    for s in todo:
        wa = workload_args(plan, s)
        for name, settings in plan["configurations"].items():
            sets = axis_settings(s) + list(settings.items())
            k = (tuple(wa), tuple(sets))
            if k in seen:
                continue
            seen.add(k)
            d = tempfile.mkdtemp(prefix="redoctor-eval-check-")
            try:
                cmd = [args.engine, "run", "--check-settings", "--datadir", os.path.join(d, "data"), *wa]
                for kk, v in sets:
                    cmd += ["--set", f"{kk}={v}"]
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            finally:
                shutil.rmtree(d, ignore_errors=True)
            if p.returncode != 0:
                sys.exit(
                    f"measure.py: scenario {key(s)} ({name}) is refused by {args.engine}: "
                    f"{p.stderr.strip()[-400:]}\nfix the plan (a statement mix needs its [mixes] entry) and run again"
                )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("plan")
    ap.add_argument("out")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--engine", default="target/release/redoctor-engine")
    ap.add_argument("--redoctor", default="target/release/redoctor")
    ap.add_argument("--reobserve")
    ap.add_argument("--sealed", action="store_true")
    ap.add_argument("--pause-file")
    ap.add_argument("--twins-interleaved", action="store_true",
                    help="measure the scenarios that differ only in their CPUs together, "
                         "their repeats alternating (the what-if's twins in one host state)")
    args = ap.parse_args()
    with open(args.plan, "rb") as f:
        plan = tomllib.load(f)
    configs = plan["configurations"]
    todo = scenarios(plan)
    if args.only:
        todo = [s for s in todo if any(o in key(s) for o in args.only)]
    done = done_keys(args.out, args.resume, "measure.py")
    rng = random.Random(plan["run"].get("seed", 1))
    rng.shuffle(todo)
    todo = [s for s in todo if key(s) not in done]
    preflight(args, plan, todo)
    started = time.time()
    if args.reobserve:
        with open(args.reobserve) as f:
            old = [json.loads(l) for l in f if l.strip()]
        old = [r for r in old if r["key"] not in done and (not args.only or any(o in r["key"] for o in args.only))]
        for n, rec in enumerate(old, 1):
            s = {k: rec[k] for k in ["slice", "workload", "users", "cores", "binlog", "flush", "storage", "warehouses", "access"] if k in rec}
            workdir = plan["storage"][s["storage"]]
            rec["observations"] = {
                name: observe(args, plan, s, configs[name], workdir) for name in ["RT1", "RT0"]
            }
            rec["reobserved_unix_s"] = int(time.time())
            with open(args.out, "a") as f:
                f.write(json.dumps(rec) + "\n")
            print(f"[{n}/{len(old)}] {rec['key']} reobserved", flush=True)
        return
    groups = twin_groups(todo) if args.twins_interleaved else [[s] for s in todo]
    n = 0
    for group in groups:
        t0 = time.time()
        cells = {key(s): {name: [] for name in configs} for s in group}
        for _ in range(plan["run"]["repeats"]):
            for s in group:
                workdir = plan["storage"][s["storage"]]
                order = list(configs)
                rng.shuffle(order)
                for name in order:
                    cells[key(s)][name].append(
                        quiet_cell(args, run_cell, args, plan, s, configs[name], workdir))
        for s in group:
            n += 1
            report(args, plan, configs, s, cells[key(s)], n, len(todo), started, t0)


def twin_groups(todo):
    """The scenarios that differ only in their CPUs, together, in the
    order the first of each appears."""
    groups = {}
    for s in todo:
        groups.setdefault(key(dict(s, cores=0)), []).append(s)
    return list(groups.values())


def report(args, plan, configs, s, cells, n, total, started, t0):
    """Observes the scenario, appends its record, prints the progress."""
    workdir = plan["storage"][s["storage"]]
    obs = {}
    for name in ["RT1", "RT0"]:
        obs[name] = quiet_cell(args, observe, args, plan, s, configs[name], workdir)
    rec = dict(s, key=key(s), cells=cells, observations=obs, unix_s=int(time.time()))
    with open(args.out, "a") as f:
        f.write(json.dumps(rec) + "\n")
    errs = sum(1 for v in cells.values() for c in v if "error" in c)
    if args.sealed:
        print(f"[{n}/{total}] done, errors {errs}", flush=True)
        return
    med = {}
    for name, v in cells.items():
        t = sorted(c["tps"] for c in v if "tps" in c)
        med[name] = t[len(t) // 2] if t else float("nan")
    best = max(med, key=lambda k: med[k] if med[k] == med[k] else -1)
    oerr = [k for k, o in obs.items() if "error" in o]
    el = time.time() - started
    print(
        f"[{n}/{total}] {key(s)}: best {best} {med[best]:.0f} "
        f"(RT1 {med.get('RT1', 0):.0f}, RT0 {med.get('RT0', 0):.0f}) "
        f"{time.time() - t0:.0f}s, errors {errs}{' obs-errors ' + ','.join(oerr) if oerr else ''}; "
        f"eta {el / n * (total - n) / 60:.0f} min",
        flush=True,
    )

if __name__ == "__main__":
    main()
