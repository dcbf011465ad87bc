#!/usr/bin/env python3
"""Offline: how well a switchback's long-run standard error holds on A/A
blocks, by lag rule. For each A/A trial's blocks (log ratios, no effect),
non-overlapping segments of N blocks (a look's count): z = mean / SE with
the experiment's AR(1)-prewhitened Newey-West SE (hac.rs, ported), the
lag counted in blocks (nw_lag) or at least SPAN seconds of blocks. An
exact SE gives z an RMS near 1 (a little below: the fixed-b widening).

Usage: agent/bench/hac_lag.py RUN.jsonl... (trials with `log_ratios`:
`meter_periods.py`'s, or `meter_power.py`'s since 2026-12-05)"""
import json, math, sys, statistics as st

def nw_lag(n):
    l = math.floor(4.0 * (n / 100.0) ** (2.0 / 9.0))
    return min(max(l, 1), max(n - 2, 1))

def fixed_b(b):
    return (1.96 + 2.9694 * b + 0.4160 * b * b - 0.5324 * b ** 3) / 1.96

def se(d, lag):
    n = len(d); m = sum(d) / n; c = [x - m for x in d]
    plain = sum(x * x for x in c) / (n - 1)
    num = sum(c[t] * c[t - 1] for t in range(1, n)); den = sum(x * x for x in c)
    rho = max(-0.9, min(0.9, (n * num / den + 1.0) / max(n - 3.0, 1.0))) if den > 0 else 0.0
    e = [c[t] - rho * c[t - 1] for t in range(1, n)]; ne = len(e)
    g = lambda l: sum(e[t] * e[t - l] for t in range(l, ne)) / ne
    lr = g(0)
    for l in range(1, min(lag, ne - 1) + 1):
        lr += 2.0 * (1.0 - l / (lag + 1.0)) * g(l)
    v = max(max(lr, 0.0) / (1.0 - rho) ** 2 * ne / (ne - 1.0), 0.1 * plain)
    v *= fixed_b((lag + 1.0) / n) ** 2
    return math.sqrt(v / n), m

trials = []
for f in sys.argv[1:]:
    for l in open(f):
        r = json.loads(l)
        if r.get("log_ratios") and (r.get("spin_ns", 0) == 0):
            trials.append((r["log_ratios"], r.get("period_s") or 0.05))
print(f"{len(trials)} A/A trials")
for n in (60, 120, 300):
    for span in (0, 1, 2, 4):
        zs = []
        for d, period in trials:
            block = 4 * float(period)
            for i in range(0, len(d) - n + 1, n):
                seg = d[i:i + n]
                lag = nw_lag(n) if span == 0 else max(nw_lag(n), math.ceil(span / block))
                s, m = se(seg, lag)
                zs.append(m / s)
        if zs:
            rms = math.sqrt(sum(z * z for z in zs) / len(zs))
            over = sum(abs(z) > 1.96 for z in zs) / len(zs)
            print(f"n={n:3d} lag {'blocks' if span == 0 else f'>= {span} s':>8}: {len(zs):4d} segments, z RMS {rms:.3f}, |z|>1.96 {over:.3f}")
