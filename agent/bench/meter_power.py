#!/usr/bin/env python3
"""What a live trial resolves at a load: known slowdowns injected into the
bundled engine's commit path (`redoctor_debug_commit_spin_ns`, a CPU spin
after each durable commit) and tried with `redoctor diagnose --trial
--candidate`, as an operator would.

1. **True effects.** For each spin, long interleaved static phases on one
   running engine: spin 0 and spin X alternate every PHASE seconds (the
   first 2 s of each discarded), PHASES phases a side, commits counted by
   `Com_commit`: the ratio and its 95% interval (Welch on the phases' logs).
   At 4 users 20-s phases drift by several percent, so 5 a side resolve
   only about ±9%: too coarse to size a 3% slowdown. `--fast-truth SECS`
   adds a fixed-horizon switchback trial of SECS seconds per spin, before
   the trials and again after them (`diagnose --trial --trial-looks 1`:
   one look, so it runs its whole budget and no early stop biases its
   estimate; the default switchback periods in ABBA blocks, a HAC interval). It shares the
   meter's design, so the static phases stay as the independent check.
2. **Trials.** TRIALS trials of each spin (and of spin 0 against itself:
   A/A), each `redoctor diagnose --pid P --socket S --trial --candidate
   redoctor_debug_commit_spin_ns=X --trial-max BUDGET` on the same engine,
   the order shuffled. Detection: the trial rolled the slowdown back as
   slower (worse, or likely slower); A/A: any decision is a false one.

One JSON line per phase and per trial goes to OUT; the summary is printed.

`--pause-file PATH` (as `advisor/bench/eval/measure.py`): while PATH
exists another job uses the CPUs, so the engine is stopped (SIGSTOP) and
nothing is measured; a phase pair or trial that overlapped such a job
(PATH.log grew) is measured again.

With `--serve-threads N` the load is `redoctor-engine serve` under sysbench
oltp_update_index with N threads (the issue's 4-user load) instead of
`redoctor-engine run`'s own users; the trials attach to `serve`.

Usage: agent/bench/meter_power.py OUT [--users 64] [--workload update_index]
       [--serve-threads N]
       [--spins 300,1000 (empty: A/A only)] [--trials 20] [--aa 40] [--budget 60]
       [--phases 5 (0: the trials' pooled unadjusted estimate stands for the truth)] [--phase 20]
       [--fast-truth SECS] [--design auto] [--workdir /var/tmp]
       [--covariate (redoctor diagnose --trial-covariate)]
       [--pause-file /tmp/redoctor-busy]
       (root; release builds of redoctor and redoctor-engine)
"""
import argparse
import contextlib
import ctypes
import json
import math
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "advisor", "bench", "eval"))
from measure import busy_mark  # noqa: E402  (the pause-file protocol's one reader)
ENGINE = os.path.join(ROOT, "target/release/redoctor-engine")
REDOCTOR = os.path.join(ROOT, "target/release/redoctor")
KNOB = "redoctor_debug_commit_spin_ns"


def mysql(socket, q):
    return subprocess.run(
        ["mariadb", "-uroot", "-S", socket, "-N", "-B", "-e", q],
        capture_output=True, text=True, check=True,
    ).stdout


def commits(socket):
    return int(mysql(socket, "SHOW GLOBAL STATUS LIKE 'Com_commit'").split()[1])


def start_engine(d, workload, users, extra=()):
    """A `redoctor-engine run` of `workload` at `users` users with its data
    and admin socket in `d`, settled: (process, socket)."""
    sock = os.path.join(d, "admin.sock")
    p = subprocess.Popen(
        [ENGINE, "run", "--datadir", os.path.join(d, "data"), "--admin-socket", sock,
         "--workload", workload, "--users", str(users), "--warmup", "0",
         "--duration", "100000", *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=dies_with_us(),
    )
    answering(p, sock, "the engine did not start its admin socket")
    time.sleep(3)  # the load settles
    return p, sock


def dies_with_us():
    """A `preexec_fn` that has the kernel kill the child when this script
    dies, however it dies (a signal, a closed pipe): a load left running
    would sit beside every later measurement on the host."""
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    return lambda: libc.prctl(pr_set_pdeathsig, signal.SIGKILL)


def answering(p, sock, failure):
    """Waits (up to 60 s) until the server `p` answers on `sock`; otherwise
    stops it and exits with `failure`."""
    for _ in range(600):
        if os.path.exists(sock):
            try:
                commits(sock)
                return
            except subprocess.CalledProcessError:
                pass
        time.sleep(0.1)
    p.kill()
    sys.exit(failure)


def start_serve(d, threads):
    """`redoctor-engine serve` under sysbench oltp_update_index with
    `threads` threads (sysbench's default 10,000-row table, run far beyond
    the bench), settled: (server process, socket, sysbench process)."""
    sock = os.path.join(d, "serve.sock")
    p = subprocess.Popen([ENGINE, "serve", "--datadir", os.path.join(d, "data"), "--socket", sock],
                         stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "serve.err"), "w"),
                         preexec_fn=dies_with_us())
    answering(p, sock, "redoctor-engine serve did not answer on its socket")
    base = ["sysbench", "--db-driver=mysql", f"--mysql-socket={sock}", "--mysql-user=root",
            "--mysql-db=sbtest", "oltp_update_index"]
    subprocess.run(base + ["prepare"], capture_output=True, check=True)
    sb = subprocess.Popen(base + [f"--threads={threads}", "--time=0", "run"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          preexec_fn=dies_with_us())
    time.sleep(5)  # the load settles
    return p, sock, sb


def start(args, d):
    """The load: a `redoctor-engine run` (its own users) or, with
    `--serve-threads N`, `serve` under sysbench. (engine process, admin
    socket, sysbench process or None)."""
    if args.serve_threads:
        return start_serve(d, args.serve_threads)
    return (*start_engine(d, args.workload, args.users), None)


def add_load_args(ap):
    """The load's options, as `start` and `running` read them."""
    ap.add_argument("--users", type=int, default=64)
    ap.add_argument("--serve-threads", type=int, default=0,
                    help="`redoctor-engine serve` under sysbench oltp_update_index "
                         "with this many threads instead of `run --users`")
    ap.add_argument("--workload", default="update_index")
    ap.add_argument("--workdir", default="/var/tmp")


def load_label(args):
    """The load in words, as the raw files record it."""
    return (f"serve, {args.serve_threads} threads" if args.serve_threads
            else f"{args.workload}, {args.users} users")


@contextlib.contextmanager
def running(args, sql=()):
    """The load of `args` in a fresh directory under `--workdir`, each of
    `sql` run on it once it has settled, stopped on leaving: (engine
    process, admin socket, the directory)."""
    d = tempfile.mkdtemp(dir=args.workdir)
    proc, sock, sb = start(args, d)
    try:
        for stmt in sql:
            mysql(sock, stmt)
        yield proc, sock, d
    finally:
        if sb:
            sb.kill()
        proc.kill()


def phase(sock, spin, secs):
    mysql(sock, f"SET GLOBAL {KNOB} = {spin}")
    time.sleep(2)
    c0, t0 = commits(sock), time.monotonic()
    time.sleep(secs - 2)
    c1, t1 = commits(sock), time.monotonic()
    return (c1 - c0) / (t1 - t0)


def fast_truth(pid, sock, spin, secs):
    """A fixed-horizon switchback trial of `spin` (one look: it runs all
    `secs`, no early stop biases it): the trial's summary, whose interval
    is at the one look's level, 0.05 two-sided."""
    t, failed = diagnose_trial(pid, sock, f"{KNOB}={spin}", secs,
                               ["--trial-design", "switchback", "--trial-looks", "1"])
    mysql(sock, f"SET GLOBAL {KNOB} = 0")  # whatever it decided
    if failed:
        sys.exit(f"the fixed-horizon trial failed: {failed}")
    return trial_summary(t)


def unbusy(args, proc, fn, *a):
    """fn(*a) measured while no other job held the CPUs."""
    while True:
        if args.pause_file and os.path.exists(args.pause_file):
            os.kill(proc.pid, signal.SIGSTOP)
            while os.path.exists(args.pause_file):
                time.sleep(1)
            os.kill(proc.pid, signal.SIGCONT)
            time.sleep(3)  # the load settles again
        before = busy_mark(args.pause_file)
        r = fn(*a)
        after = busy_mark(args.pause_file)
        if before == after and not before[0]:
            return r
        print("  overlapped another job: measured again", flush=True)


def welch_ci(a, b):
    """95% interval of exp(mean ln b - mean ln a), Welch's t (normal
    quantile for the df, good enough at 5+ a side)."""
    la, lb = [math.log(x) for x in a], [math.log(x) for x in b]
    d = statistics.mean(lb) - statistics.mean(la)
    se = math.sqrt(statistics.variance(la) / len(la) + statistics.variance(lb) / len(lb))
    # Welch-Satterthwaite df, t quantile by a Cornish-Fisher step.
    va, vb = statistics.variance(la) / len(la), statistics.variance(lb) / len(lb)
    df = (va + vb) ** 2 / (va**2 / (len(la) - 1) + vb**2 / (len(lb) - 1))
    z = 1.959964
    t = z + (z**3 + z) / (4 * df)
    return math.exp(d), math.exp(d - t * se), math.exp(d + t * se)


def diagnose_trial(pid, sock, candidate, budget, extra=()):
    """One `redoctor diagnose --trial --candidate CANDIDATE` as an operator
    would run it: (the report's `trial` object, None), or (None, why the
    run failed)."""
    out = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
    cmd = [REDOCTOR, "diagnose", "--pid", str(pid), "--socket", sock, "--duration", "1s",
           "--model-priors", "--format", "json", "--out", out, "--trial",
           "--trial-max", f"{budget}s", "--candidate", candidate,
           "--state", out + ".state", *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip()[-400:]
    t = json.load(open(out))["trial"]
    os.unlink(out)
    return t, None


def trial_summary(t):
    """What a bench keeps of a report's `trial` object."""
    est = t.get("estimate") or {}
    return {
        "outcome": t["outcome"], "reason": t["reason"], "elapsed_s": t["elapsed_s"],
        "estimate": est.get("mean_ratio"), "ci": [est.get("ci_low"), est.get("ci_high")],
        "resolution": (t.get("resolving_power") or {}).get("detectable"),
        # What the whole budget would resolve (set after an early stop).
        "full_resolution": ((t.get("resolving_power") or {}).get("full_budget") or {}).get("detectable"),
    }


def trial(args, pid, sock, spin):
    extra = ["--trial-design", args.design] + (["--trial-covariate"] if args.covariate else [])
    t, failed = diagnose_trial(pid, sock, f"{KNOB}={spin}", args.budget, extra)
    if failed:
        return {"error": failed}
    # The blocks' (pairs') log ratios and the looks' levels too, so that
    # an analysis can be re-run on them offline (another lag, another
    # boundary) without running the trials again.
    return dict(trial_summary(t), units=len(t["log_ratios"]),
                adjustment=t.get("adjustment"), unadjusted=t.get("unadjusted"),
                log_ratios=t["log_ratios"], looks=[l.get("n") for l in t.get("looks", [])],
                period_s=(t.get("plan", {}).get("design") or {}).get("period_s"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    add_load_args(ap)
    ap.add_argument("--spins", default="300,1000")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--aa", type=int, default=40)
    ap.add_argument("--budget", type=int, default=60)
    ap.add_argument("--phases", type=int, default=5)
    ap.add_argument("--phase", type=float, default=20.0)
    ap.add_argument("--fast-truth", type=int, default=0,
                    help="seconds of a fixed-horizon switchback trial per spin, before and after the trials")
    ap.add_argument("--design", default="auto")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pause-file")
    ap.add_argument("--covariate", action="store_true",
                    help="decide on the blocks adjusted by the disks' write latency")
    args = ap.parse_args()
    spins = [int(s) for s in args.spins.split(",") if s]  # "" : A/A only
    rng = random.Random(args.seed)
    out = open(args.out, "a")
    with tempfile.TemporaryDirectory(dir=args.workdir) as d:
        proc, sock, load = start(args, d)
        try:
            truth = {}
            for spin in spins if args.phases > 0 else []:
                base, cand = [], []
                for _ in range(args.phases):
                    b, c = unbusy(args, proc, lambda: (phase(sock, 0, args.phase),
                                                       phase(sock, spin, args.phase)))
                    base.append(b)
                    cand.append(c)
                mysql(sock, f"SET GLOBAL {KNOB} = 0")
                r, lo, hi = welch_ci(base, cand)
                truth[spin] = (r, lo, hi)
                rec = {"kind": "truth", "spin_ns": spin, "base": base, "cand": cand,
                       "ratio": r, "ci": [lo, hi]}
                out.write(json.dumps(rec) + "\n")
                out.flush()
                print(f"spin {spin} ns: true ratio {r:.4f} [{lo:.4f}, {hi:.4f}]", flush=True)
            def fast(when):
                for spin in spins if args.fast_truth > 0 else []:
                    t = unbusy(args, proc, fast_truth, proc.pid, sock, spin, args.fast_truth)
                    rec = {"kind": "truth_fast", "when": when, "spin_ns": spin, "trial": t,
                           "ratio": t["estimate"], "ci": t["ci"]}
                    out.write(json.dumps(rec) + "\n")
                    out.flush()
                    print(f"spin {spin} ns, fixed-horizon trial {when}: ratio {t['estimate']:.4f} "
                          f"[{t['ci'][0]:.4f}, {t['ci'][1]:.4f}]", flush=True)
            fast("before")
            jobs = [s for s in spins for _ in range(args.trials)] + [0] * args.aa
            rng.shuffle(jobs)
            results = {s: [] for s in [0] + spins}
            for n, spin in enumerate(jobs, 1):
                r = unbusy(args, proc, trial, args, proc.pid, sock, spin)
                r.update({"kind": "trial", "spin_ns": spin, "design": args.design})
                out.write(json.dumps(r) + "\n")
                out.flush()
                results[spin].append(r)
                print(f"[{n}/{len(jobs)}] spin {spin}: {r.get('outcome')} {r.get('estimate')}", flush=True)
            fast("after")
        finally:
            for q in (load, proc):
                if q is not None:
                    q.kill()
                    q.wait()
    print()
    for spin, rs in results.items():
        ok = [r for r in rs if "outcome" in r]
        if spin == 0:
            false = sum(1 for r in ok if r["outcome"] in ("kept", "rolled_back_worse"))
            ests = [abs(r["estimate"] - 1) for r in ok if r.get("estimate")]
            raw = [abs(((r["unadjusted"] or {}).get("mean_ratio") or r["estimate"]) - 1)
                   for r in ok if r.get("estimate")]
            print(f"A/A: {len(ok)} trials, {false} decided ({false / max(len(ok), 1):.1%}), "
                  f"median |estimate| {statistics.median(ests) if ests else float('nan'):.2%} "
                  f"(unadjusted {statistics.median(raw) if raw else float('nan'):.2%})")
        used = sum(1 for r in ok if (r.get("adjustment") or {}).get("used"))
        print(f"  covariate adjustment used in {used} of {len(ok)}")
        if spin == 0:
            continue
        det = sum(1 for r in ok if r["outcome"] == "rolled_back_worse" or r["reason"].startswith("likely slower"))
        kept = sum(1 for r in ok if r["outcome"] == "kept")
        # Without static phases the truth is the trials' pooled
        # unadjusted estimate (biased away from no change by early stops).
        if spin in truth:
            r0 = truth[spin][0]
        else:
            raw = [(r["unadjusted"] or {}).get("mean_ratio") or r["estimate"] for r in ok
                   if r.get("estimate")]
            r0 = math.exp(statistics.mean(math.log(x) for x in raw)) if raw else float("nan")
        inside = sum(1 for r in ok if r["ci"][0] and r["ci"][0] <= r0 <= r["ci"][1])
        res = [r["resolution"] for r in ok if r.get("resolution")]
        print(f"spin {spin} ns (true {r0 - 1:+.1%}): detected {det} of {len(ok)} ({det / max(len(ok), 1):.0%}), "
              f"kept {kept}; the interval held the true ratio {inside} times; "
              f"stated resolution median {statistics.median(res) if res else float('nan'):.1%}")


if __name__ == "__main__":
    main()
