#!/usr/bin/env python3
"""Offline replay of `diagnose --trial`'s search over the oracle's cells.

    search_sim.py collect PLAN.toml FOLDS_DIR PREDICTIONS.jsonl [--only SUBSTRING ...]
    search_sim.py simulate GT.jsonl[,GT2.jsonl] PREDICTIONS.jsonl [--sd 0.10,0.15] [--reps 100]
                  [--per-scenario] [--budget 60] [--max-pairs 10]

`collect` runs `redoctor diagnose --demo` (no trial) on every scenario of the
plan with the calibration that left the scenario's workload out, and keeps
the model's predictions (what the live search starts from). Needs root.

`simulate` replays the search strategies below on those predictions, with
each candidate trial drawn from the oracle: per pair, ln(candidate/baseline)
~ Normal(ln of the oracle's median ratio, sd), decided by the same
sequential test as `advisor/src/experiment` (3..10 pairs of 3 s, interim
alpha 0.001, the last look at what is left of 0.05, futility ±3% at
0.05/8). It prints, per strategy, the geometric mean of the kept
configuration's oracle rate over the oracle's best, the minimum, and the
count below 98%, overall and per workload family. The oracle's ratios are
taken as the truth: a live trial also sees the host drift, which this
cannot. It compares search designs, not the advisor's absolute score.

Strategies (each trial's time within the 60 s search):
  first-come     single knobs, best predicted first; each trial gets what
                 is left (the search before c99b7b9)
  shares         single knobs; an even share of what is left among the
                 candidates still to try
  reserve        single knobs; what is left less min_pairs pairs for each
                 candidate still to try after it
  combo          the model's best combination first (when predicted
                 strictly better than every single knob), then single
                 knobs; first come
  combo+shares   the same with even shares (c99b7b9)
  combo+reserve  the same with the reserve (the search since 003a47f)
  combo2+reserve the same, and the model's second combination after the
                 first (when it holds another knob and is predicted better
                 than every single knob), resetting what the first changed
                 and tried only once the first is kept: a head-to-head of
                 the two (the search since this strategy was added). Until
                 then it is not counted in the reserve.
  +subsets       the same, and once the first combination is kept, each
                 single knob it holds on its own (the others reset), tried
                 against it: does every part of the combination pay?
                 (read_write_plus at 1024 users kept RT0 with the cap where
                 RT1 with the cap was 1.19x it). Not adopted: within
                 +-0.4 points of combo2+reserve on every set of 2026-11-28.
  combo2+screen  the candidates of combo2+reserve, screened then extended
                 (not adopted, bench/RESULTS.md "(nineteenth)"): each gets MIN_PAIRS pairs
                 first, best predicted first (kept there only at the
                 interim level); then the one whose screen measured best
                 (above no change) continues its test with the time left,
                 then the next. A kept candidate is the new baseline and
                 the others are screened again.
  +prior         the same, the extension ordered by the posterior mean of
                 the log gain: the model's prediction (sd from its 95%
                 interval) updated with the screen's pairs.
  oracle-first   one candidate, the oracle's best configuration: a perfect
                 ranking, so what is lost is the trial's power alone.

The oracle has no cap + throttle cell; a configuration with both is scored
with the cap's cell. So stacking the cap on a kept throttle reads the same
as replacing it, and this replay cannot show what the head-to-head is for:
live, the cap on top of RT0 with the throttle read +7% where the same
hour's cells had RT0 with the cap 1.36x RT0 with the throttle.

Every trial also stops early for harm, as the live one does since a8185a8:
at a look whose one-sided upper bound at 0.05 lies below no change, the
candidate is rolled back.
"""

import argparse
import json
import math
import os
import random
import statistics as st
import subprocess
import sys
import tomllib
from typing import NamedTuple

WORTH_TRYING = 1.03
START = (True, 0, 0)  # RT1, no cap, no throttle
PAIR_S, MIN_PAIRS, MAX_PAIRS, BUDGET = 3.0, 3, 10, 60.0
ALPHA, INTERIM = 0.05, 0.001
BAND = math.log(1.03)
HARM = 0.05


def collect(args):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from measure import axis_settings, key, scenarios, workload_args

    plan = tomllib.load(open(args.plan, "rb"))
    done = set()
    if os.path.exists(args.out):
        done = {json.loads(l)["key"] for l in open(args.out)}
    for s in scenarios(plan):
        k = key(s)
        if k in done or (args.only and not any(o in k for o in args.only)):
            continue
        cmd = [args.redoctor, "diagnose", "--demo", "--format", "json",
               "--calibration", os.path.join(args.folds, f"{s['workload']}.json"),
               "--workdir", plan["storage"][s["storage"]], *workload_args(plan, s),
               "--users", str(s["users"]), "--cpus", str(s["cores"]),
               "--duration", f"{plan['run']['observe_s']}s"]
        for n, v in axis_settings(s):
            cmd += ["--engine-set", f"{n}={v}"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            sys.exit(f"search_sim.py: diagnose failed on {k}: {p.stderr.strip()[-400:]}")
        m = json.loads(p.stdout).get("model") or {}
        preds = [{kk: q[kk] for kk in ("config", "ratio", "ratio_low", "ratio_high")}
                 for q in m.get("predictions", [])]
        with open(args.out, "a") as f:
            f.write(json.dumps({"key": k, "predictions": preds}) + "\n")
        print(k, flush=True)


# --- the sequential test -------------------------------------------------

def _pdf(x, v):
    return math.gamma((v + 1) / 2) / (math.sqrt(v * math.pi) * math.gamma(v / 2)) * (1 + x * x / v) ** (-(v + 1) / 2)


def _upper_tail(x, v, n=2000):
    h = x / n
    s = _pdf(0, v) + _pdf(x, v) + sum((4 if i % 2 else 2) * _pdf(i * h, v) for i in range(1, n))
    return 0.5 - s * h / 3


_TC = {}


def t_critical(alpha, df):
    """Two-sided Student t quantile (bisection on Simpson's rule)."""
    if (alpha, df) not in _TC:
        lo, hi = 0.0, 1000.0
        for _ in range(50):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if _upper_tail(mid, df) > alpha / 2 else (lo, mid)
        _TC[(alpha, df)] = (lo + hi) / 2
    return _TC[(alpha, df)]


class Trial:
    """One candidate's sequential test; `run` may stop at a pause and be
    resumed with more time (the screen strategies)."""

    def __init__(self, ratio, sd, rng):
        self.mu, self.sd, self.rng = math.log(ratio), sd, rng
        self.ds, self.t, self.looks = [], 0.0, 0

    def mean(self):
        return st.mean(self.ds)

    def run(self, budget, pause_at=None):
        """'kept', 'worse', 'no' or (with pause_at pairs) 'paused'; `t` is
        the seconds spent so far, within `budget` in all."""
        while len(self.ds) < MAX_PAIRS:
            if self.t + PAIR_S > budget:
                return "no"
            self.t += PAIR_S
            self.ds.append(self.rng.gauss(self.mu, self.sd))
            n = len(self.ds)
            if n < MIN_PAIRS:
                continue
            pause = pause_at is not None and n >= pause_at
            last = not pause and (n == MAX_PAIRS or self.t + PAIR_S > budget)
            alpha = max(ALPHA - self.looks * INTERIM, INTERIM) if last else INTERIM
            self.looks += 1
            m, se = st.mean(self.ds), st.stdev(self.ds) / math.sqrt(n)
            h = t_critical(alpha, n - 1) * se
            if m - h > 0:
                return "kept"
            if m + h < 0:
                return "worse"
            if m + t_critical(2 * HARM, n - 1) * se < 0:
                return "no"
            hf = t_critical(ALPHA / (MAX_PAIRS - MIN_PAIRS + 1), n - 1) * se  # every look's level
            if m - hf > -BAND and m + hf < BAND:
                return "no"
            if pause:
                return "paused"
        return "no"


def trial(ratio, sd, budget, rng):
    """'kept', 'worse' or 'no' and the seconds it took."""
    tr = Trial(ratio, sd, rng)
    return tr.run(budget), tr.t


# --- the search ------------------------------------------------------------

def config(p):
    c = p["config"]
    return (c["redo_threads"], 1 if c["cap"] else 0, 1 if c["throttle"] else 0)


def changes(c):
    return {i: c[i] for i in range(3) if c[i] != START[i]}


def label(c):
    s = "RT1" if c[0] else "RT0"
    return s + ("+cap4" if c[1] else "") + ("+throttle16" if c[2] else "")


def rate(oracle, c):
    # The oracle has no cap + throttle cell: take the cap's.
    return oracle.get(label(c), oracle[label((c[0], c[1], 0))])


def candidates(preds, combo, second=False, subsets=False):
    worth = sorted((p for p in preds if p["ratio_high"] >= WORTH_TRYING), key=lambda p: -p["ratio"])
    singles, seen = [], set()
    for p in worth:
        ch = changes(config(p))
        if len(ch) == 1 and next(iter(ch)) not in seen and len(seen) < 3:
            seen.add(next(iter(ch)))
            ch["prior"] = prior(p)
            singles.append((p["ratio"], ch))
    out = []
    if combo:
        best_single = max((r for r, _ in singles), default=-math.inf)
        combos = [p for p in worth if len(changes(config(p))) > 1]
        if combos and combos[0]["ratio"] > best_single:
            first = changes(config(combos[0]))
            out.append((combos[0]["ratio"], dict(first, prior=prior(combos[0]))))
            if second:
                other = next((p for p in combos[1:] if set(changes(config(p))) != set(first)), None)
                if other is not None and other["ratio"] > best_single:
                    ch = changes(config(other))
                    ch.update({j: START[j] for j in first if j not in ch})
                    ch["requires"] = first
                    ch["prior"] = prior(other)
                    out.append((other["ratio"], ch))
            if subsets:
                for r, single in singles:
                    (j, v), = ((j, v) for j, v in single.items() if KNOB(j))
                    if first.get(j) == v:
                        ch = {i: START[i] for i in first}
                        ch[j] = v
                        ch["requires"] = first
                        ch["prior"] = single["prior"]
                        out.append((r, ch))
    out += singles
    out.sort(key=lambda x: -x[0])  # stable: the combination first among equals
    return [ch for _, ch in out]


def prior(p):
    """The model's log gain and its sd (the interval is ±1.96 sd)."""
    return (math.log(p["ratio"]), math.log(p["ratio_high"] / p["ratio_low"]) / (2 * 1.96))


def KNOB(j):
    """Whether a candidate dict's key is a knob (not "requires" or "prior")."""
    return isinstance(j, int)


def applies(c, cur):
    """Whether candidate `c` would be tried from `cur`: its requirement
    holds and it changes something."""
    need = c.get("requires", {})
    return all(cur[j] == v for j, v in need.items()) and any(
        cur[j] != v for j, v in c.items() if KNOB(j))


def search(oracle, cands, sd, rng, shares, reserve=False):
    cur, t = START, 0.0
    for i, ch in enumerate(cands):
        if not applies(ch, cur):
            continue
        new = tuple(ch.get(j, cur[j]) for j in range(3))
        left = BUDGET - t
        if new == cur or left < MIN_PAIRS * PAIR_S:
            continue
        budget = left
        if shares:
            to_try = sum(1 for c in cands[i:] if applies(c, cur))
            if reserve:
                budget = max(left - (to_try - 1) * MIN_PAIRS * PAIR_S, MIN_PAIRS * PAIR_S)
            else:
                budget = min(max(left / to_try, MIN_PAIRS * PAIR_S), left)
        outcome, secs = trial(rate(oracle, new) / rate(oracle, cur), sd, budget, rng)
        t += secs
        if outcome == "kept":
            cur = new
    return cur


def posterior(tr, prior_):
    """The posterior mean of the log gain: the model's (mu, sd) updated with
    the screen's pairs."""
    mu, psd = prior_
    se2 = max(st.variance(tr.ds), 1e-6) / len(tr.ds)
    w = 1 / psd ** 2 if psd > 0 else 0.0
    return (w * mu + tr.mean() / se2) / (w + 1 / se2)


def screen_search(oracle, cands, sd, rng, use_prior=False):
    """Screen, then extend: every candidate first gets MIN_PAIRS pairs
    against the current baseline, best predicted first (stopping there
    only at the interim level, for harm or for futility); then the one
    whose screen measured best (above no change) continues its test with
    the time left, then the next. A kept candidate changes the baseline:
    the others' screens are stale and they are screened again."""
    cur, t = START, 0.0

    def target(c):
        return tuple(c.get(j, cur[j]) for j in range(3))

    done = set()  # candidates settled against the current baseline
    while True:
        paused = {}
        kept = False
        for i, ch in enumerate(cands):
            if i in done or not applies(ch, cur):
                continue
            if BUDGET - t < MIN_PAIRS * PAIR_S:
                break
            new = target(ch)
            tr = Trial(rate(oracle, new) / rate(oracle, cur), sd, rng)
            out = tr.run(BUDGET - t, pause_at=MIN_PAIRS)
            t += tr.t
            if out == "kept":
                cur, kept, done = new, True, set()
                break
            if out == "paused":
                paused[i] = tr
            else:
                done.add(i)
        if kept:
            continue
        score = {i: posterior(tr, cands[i]["prior"]) if use_prior else tr.mean()
                 for i, tr in paused.items()}
        for i in sorted(paused, key=lambda i: -score[i]):
            tr = paused[i]
            if score[i] <= 0 or BUDGET - t < PAIR_S:
                break
            t0 = tr.t
            out = tr.run(tr.t + (BUDGET - t))
            t += tr.t - t0
            done.add(i)
            if out == "kept":
                cur, kept, done = target(cands[i]), True, set()
                break
        if not kept or BUDGET - t < MIN_PAIRS * PAIR_S:
            return cur


class Strategy(NamedTuple):
    combo: bool = False  # the model's best combination first
    shares: bool = False  # a share of what is left per trial
    reserve: bool = False  # the share: what is left less the later ones' min_pairs
    second: bool = False  # the second combination, head-to-head
    subsets: bool = False  # each knob of a kept combination against it
    screen: bool = False  # screen, then extend (screen_search)
    prior: bool = False  # screen_search: the extension by the posterior
    oracle: bool = False  # one candidate, the oracle's best


COMBO2 = dict(combo=True, shares=True, reserve=True, second=True)
STRATEGIES = {"first-come": Strategy(),
              "shares": Strategy(shares=True),
              "reserve": Strategy(shares=True, reserve=True),
              "combo": Strategy(combo=True),
              "combo+shares": Strategy(combo=True, shares=True),
              "combo+reserve": Strategy(combo=True, shares=True, reserve=True),
              "combo2+reserve": Strategy(**COMBO2),
              "+subsets": Strategy(**COMBO2, subsets=True),
              "combo2+screen": Strategy(**COMBO2, screen=True),
              "+prior": Strategy(**COMBO2, screen=True, prior=True),
              "oracle-first": Strategy(oracle=True)}


def oracle_first(oracle):
    """One candidate: the oracle's best configuration (a perfect ranking),
    what no prediction can beat; its score is the trial's power alone."""
    configs = [(r, c, t) for r in (True, False) for c in (0, 1) for t in (0, 1)]
    best = max((c for c in configs if label(c) in oracle), key=lambda c: oracle[label(c)])
    ch = changes(best)
    return [ch] if ch else []


def simulate(args):
    global BUDGET, MAX_PAIRS
    BUDGET, MAX_PAIRS = args.budget, args.max_pairs
    oracle = {}
    for f in args.gt.split(","):
        for l in open(f):
            r = json.loads(l)
            oracle[r["key"]] = {c: st.median(x["tps"] for x in v) for c, v in r["cells"].items()}
    preds = {json.loads(l)["key"]: json.loads(l)["predictions"] for l in open(args.predictions)}
    keys = sorted(k for k in preds if k in oracle)
    for sd in map(float, args.sd.split(",")):
        print(f"per-pair log sd {sd}, {len(keys)} scenarios, {args.reps} searches each")
        per = {}
        for name, g in STRATEGIES.items():
            for k in keys:
                rng = random.Random(f"{k}/{sd}")  # the same draws for every strategy
                if g.oracle:
                    cands = oracle_first(oracle[k])
                else:
                    cands = candidates(preds[k], g.combo, g.second, g.subsets)
                best = max(oracle[k].values())
                if g.screen:
                    run = lambda: screen_search(oracle[k], cands, sd, rng, g.prior)  # noqa: E731
                else:
                    run = lambda: search(oracle[k], cands, sd, rng, g.shares, g.reserve)  # noqa: E731
                got = [rate(oracle[k], run()) / best for _ in range(args.reps)]
                per.setdefault(name, {})[k] = st.mean(got)
            v = per[name]
            geo = math.exp(st.mean(math.log(x) for x in v.values()))
            fams = {}
            for k, x in v.items():
                fams.setdefault(k.split("/")[0], []).append(x)
            famtxt = " ".join(f"{f} {100 * math.exp(st.mean(map(math.log, xs))):.1f}" for f, xs in fams.items())
            print(f"  {name:13s} geomean {100 * geo:.1f}%  min {100 * min(v.values()):.0f}%  "
                  f"below 98%: {sum(x < 0.98 for x in v.values())}  | {famtxt}")
        if args.per_scenario:
            print("  " + "scenario".ljust(48) + " ".join(n.rjust(13) for n in STRATEGIES))
            for k in keys:
                print("  " + k.ljust(48) + " ".join(f"{100 * per[n][k]:12.0f}%" for n in STRATEGIES))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("plan")
    c.add_argument("folds")
    c.add_argument("out")
    c.add_argument("--only", action="append", default=[])
    c.add_argument("--redoctor", default="target/release/redoctor")
    s = sub.add_parser("simulate")
    s.add_argument("gt")
    s.add_argument("predictions")
    s.add_argument("--sd", default="0.10,0.15")
    s.add_argument("--reps", type=int, default=100)
    s.add_argument("--per-scenario", action="store_true")
    s.add_argument("--budget", type=float, default=BUDGET, help="seconds of a search (60)")
    s.add_argument("--max-pairs", type=int, default=MAX_PAIRS, help="pairs of a trial at most (10)")
    args = ap.parse_args()
    collect(args) if args.cmd == "collect" else simulate(args)


if __name__ == "__main__":
    main()
