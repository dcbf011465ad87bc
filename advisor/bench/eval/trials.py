#!/usr/bin/env python3
"""Live `--trial` runs for the advice-quality evaluation (advisor/bench/README.md).

    trials.py PLAN.toml FOLDS_DIR TRIALS.jsonl [--resume] [--only SUBSTRING ...]
              [--redoctor PATH] [--trial-max 60s] [--trial-floor 0.7]
              [--raw DIR]

For every scenario of the plan: `redoctor diagnose --demo --trial` starting
from the engine's default configuration (RT1, no cap, no throttle), with the
model calibration fitted WITHOUT the scenario's workload family
(FOLDS_DIR/<workload>.json, written by `advice_eval folds`). The configuration
the server is left in (what the trial kept) is recorded with the verdict and
the time the diagnosis took; `advice_eval score DATA --trials TRIALS.jsonl`
scores it against the oracle. `--raw DIR` also keeps each diagnosis's whole
JSON (every trial window), e.g. to replay floor-guard rules over trials run
with `--trial-floor 0` (`guard_replay.py`). Needs root (the probes).
"""

import argparse
import json
import os
import subprocess
import sys
import time
import tomllib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure import axis_settings, done_keys, key, scenarios, workload_args  # noqa: E402


def label(settings):
    """RT0+cap4+throttle16 from the final settings."""
    s = "RT1" if settings.get("innodb_log_writer_threads", "ON").upper() != "OFF" else "RT0"
    cap = int(settings.get("innodb_thread_concurrency", "0") or 0)
    thr = int(settings.get("innodb_max_active_transactions", "0") or 0)
    if cap:
        s += f"+cap{cap}"
    if thr:
        s += f"+throttle{thr}"
    return s


def final_settings(d):
    """The knobs' values after the diagnosis (its trial applied or rolled back)."""
    s = {
        k: d["facts"]["settings"].get(k, v)
        for k, v in [
            ("innodb_log_writer_threads", "ON"),
            ("innodb_thread_concurrency", "0"),
            ("innodb_max_active_transactions", "0"),
        ]
    }
    t = d.get("trial")
    if not t:
        return s
    if t["kind"] == "trial":
        if t["outcome"] == "kept":
            s.update(t["candidate_settings"])
    else:
        s.update(t["final_settings"])
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("plan")
    ap.add_argument("folds")
    ap.add_argument("out")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--redoctor", default="target/release/redoctor")
    ap.add_argument("--trial-max", default="60s")
    ap.add_argument("--trial-floor", default="0.7")
    ap.add_argument("--raw", default=None)
    args = ap.parse_args()
    with open(args.plan, "rb") as f:
        plan = tomllib.load(f)
    todo = scenarios(plan)
    if args.only:
        todo = [s for s in todo if any(o in key(s) for o in args.only)]
    done = done_keys(args.out, args.resume, "trials.py")
    todo = [s for s in todo if key(s) not in done]
    for n, s in enumerate(todo, 1):
        cal = os.path.join(args.folds, f"{s['workload']}.json")
        cmd = [
            args.redoctor,
            "diagnose",
            "--demo",
            "--calibration",
            cal,
            "--trial",
            "--trial-max",
            args.trial_max,
            "--trial-floor",
            args.trial_floor,
            "--format",
            "json",
            "--workdir",
            plan["storage"][s["storage"]],
            *workload_args(plan, s),
            "--users",
            str(s["users"]),
            "--cpus",
            str(s["cores"]),
            "--duration",
            f"{plan['run']['observe_s']}s",
        ]
        for k, v in axis_settings(s):
            cmd += ["--engine-set", f"{k}={v}"]
        t0 = time.time()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        secs = time.time() - t0
        if p.returncode != 0:
            rec = {"key": key(s), "error": p.stderr.strip()[-500:], "seconds": secs}
        else:
            d = json.loads(p.stdout)
            if args.raw:
                os.makedirs(args.raw, exist_ok=True)
                with open(os.path.join(args.raw, key(s).replace("/", "_") + ".json"), "w") as f:
                    f.write(p.stdout)
            rec = {
                "key": key(s),
                "final_config": label(final_settings(d)),
                "verdict": d["verdict"]["kind"] + "/" + d["verdict"]["basis"],
                "verdict_text": d["verdict"]["text"],
                "model_choice": (d.get("model") or {}).get("chosen"),
                "trial_s": (d.get("trial") or {}).get("elapsed_s", 0.0),
                "seconds": secs,
            }
        with open(args.out, "a") as f:
            f.write(json.dumps(rec) + "\n")
        print(f"[{n}/{len(todo)}] {key(s)}: {rec.get('final_config', rec.get('error'))} ({secs:.0f}s)", flush=True)


if __name__ == "__main__":
    main()
