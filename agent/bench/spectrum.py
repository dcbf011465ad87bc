#!/usr/bin/env python3
"""The host's noise spectrum and each knob's carryover, measured with
`redoctor meter` (the meter's own reads of the commit counter), for the
loads a trial meets:

- `engine-disk`, `engine-tmpfs`: `redoctor-engine run` (update_index,
  USERS users, the demo's load) with its data on disk, on tmpfs;
- `serve-4`, `serve-64`: `redoctor-engine serve` under sysbench
  oltp_update_index with 4 and 64 threads (data on disk);
- `mariadb-64`: MariaDB (private datadir, flush at commit) under the same
  sysbench load.

Each gets a spectrum of DURATION seconds. The engine on disk also gets
the carryover of the knobs a trial switches (redo threads ON<->OFF, the
concurrency cap 0<->4, the throttle 0<->16), and MariaDB of
innodb_thread_concurrency 0<->4, each alternating every 2 s for CARRY
seconds.

One JSON line per measurement is appended to OUT.jsonl (the meter's
report and what was measured); OUT.md gets the tables and OUT.svg the
Allan deviation against the window length, of every line in OUT.jsonl.

Usage: agent/bench/spectrum.py OUT [--duration 60] [--carry 40]
       [--users 64] [--only NAME,...]   (root; release builds of redoctor
       and redoctor-engine; sysbench, mariadb-server and the mariadb
       client installed)
"""
import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENGINE = os.path.join(ROOT, "target/release/redoctor-engine")
REDOCTOR = os.path.join(ROOT, "target/release/redoctor")
SB = ["--tables=4", "--table-size=10000", "oltp_update_index"]


def sql(socket, stmt):
    out = subprocess.run(["mariadb", "-S", socket, "-uroot", "-N", "-B", "-e", stmt],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"mariadb client: {stmt}: {out.stderr.strip()}")
    return out.stdout


def wait_for(socket, what, proc, secs=120):
    for _ in range(secs * 10):
        if proc.poll() is not None:
            sys.exit(f"{what} exited with {proc.returncode} before its socket answered")
        if os.path.exists(socket):
            try:
                sql(socket, "SELECT 1")
                return
            except RuntimeError:
                pass
        time.sleep(0.1)
    proc.kill()
    sys.exit(f"{what}: no answer on {socket} within {secs} s")


def meter(socket, secs, counter, knob=None, values=None):
    cmd = [REDOCTOR, "meter", "--socket", socket, "--duration", f"{secs}s", "--json",
           "--counter", counter]
    if knob:
        cmd += ["--knob", knob, "--values", ",".join(values), "--every", "2s"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"redoctor meter: {out.stderr.strip()}")
    return json.loads(out.stdout)


class Server:
    """A server under load, stopped on exit."""

    def __init__(self, name, work):
        self.name, self.work, self.procs = name, work, []
        self.socket = os.path.join(work, f"{name}.sock")
        # The engine counts every commit, autocommits too, in Com_commit;
        # MariaDB counts only explicit COMMITs there (sysbench's
        # oltp_update_index sends none), its engine commits in Handler_commit.
        self.counter = "Com_commit"

    def spawn(self, cmd, **kw):
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                             stderr=open(os.path.join(self.work, f"{self.name}.err"), "a"), **kw)
        self.procs.append(p)
        return p

    def sysbench(self, threads, secs):
        base = ["sysbench", "--db-driver=mysql", f"--mysql-socket={self.socket}",
                "--mysql-user=root", "--mysql-db=sbtest"]
        subprocess.run(base + SB + ["prepare"], capture_output=True, check=True)
        self.spawn(base + [f"--threads={threads}", f"--time={secs}"] + SB + ["run"])
        time.sleep(5)

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()


def engine_run(work, users, tmpfs):
    d = tempfile.mkdtemp(dir="/dev/shm" if tmpfs else work)
    s = Server("engine-tmpfs" if tmpfs else "engine-disk", work)
    p = s.spawn([ENGINE, "run", "--datadir", os.path.join(d, "data"), "--admin-socket", s.socket,
                 "--workload", "update_index", "--users", str(users), "--warmup", "0",
                 "--duration", "100000"])
    wait_for(s.socket, "redoctor-engine run", p)
    time.sleep(3)
    s.cleanup = d
    return s


def engine_serve(work, threads, secs):
    s = Server(f"serve-{threads}", work)
    p = s.spawn([ENGINE, "serve", "--datadir", os.path.join(work, f"serve-{threads}-data"),
                 "--socket", s.socket])
    wait_for(s.socket, "redoctor-engine serve", p)
    s.sysbench(threads, secs)
    return s


def mariadb(work, threads, secs):
    s = Server(f"mariadb-{threads}", work)
    s.counter = "Handler_commit"
    data = os.path.join(work, "mariadb-data")
    subprocess.run(["mariadb-install-db", "--no-defaults", "--user=root", f"--datadir={data}",
                    "--auth-root-authentication-method=normal", "--skip-test-db"],
                   capture_output=True, check=True)
    p = s.spawn(["mariadbd", "--no-defaults", "--user=root", f"--datadir={data}",
                 f"--socket={s.socket}", "--skip-networking",
                 f"--pid-file={work}/mariadb.pid", "--innodb-flush-log-at-trx-commit=1",
                 "--innodb-buffer-pool-size=512M", "--max-connections=300", "--skip-log-bin"])
    wait_for(s.socket, "mariadbd", p)
    sql(s.socket, "CREATE DATABASE IF NOT EXISTS sbtest")
    s.sysbench(threads, secs)
    return s


def svg(results, path):
    """Allan deviation (relative) against the window length, log-log."""
    w, h, m = 640, 400, 60
    xs = [b["window_s"] for r in results for b in r["report"]["spectrum"]]
    ys = [b["allan"] for r in results for b in r["report"]["spectrum"] if (b["allan"] or 0) > 0]
    if not xs or not ys:
        return
    lx0, lx1 = math.log10(min(xs)), math.log10(max(xs))
    ly0, ly1 = math.log10(min(ys)), math.log10(max(ys))
    px = lambda x: m + (math.log10(x) - lx0) / max(lx1 - lx0, 1e-9) * (w - 2 * m)
    py = lambda y: h - m - (math.log10(y) - ly0) / max(ly1 - ly0, 1e-9) * (h - 2 * m)
    colours = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<line x1="{m}" y1="{h - m}" x2="{w - m}" y2="{h - m}" stroke="black"/>',
           f'<line x1="{m}" y1="{m}" x2="{m}" y2="{h - m}" stroke="black"/>',
           f'<text x="{w / 2}" y="{h - 20}" text-anchor="middle">window (s, log)</text>',
           f'<text x="15" y="{h / 2}" transform="rotate(-90 15 {h / 2})" text-anchor="middle">Allan deviation / mean (log)</text>']
    for e in range(math.floor(lx0), math.ceil(lx1) + 1):
        x = 10 ** e
        if lx0 - 1e-9 <= e <= lx1 + 1e-9:
            out.append(f'<text x="{px(x):.0f}" y="{h - m + 15}" text-anchor="middle">{x:g}</text>')
    for e in range(math.floor(ly0), math.ceil(ly1) + 1):
        y = 10 ** e
        if ly0 - 1e-9 <= e <= ly1 + 1e-9:
            out.append(f'<text x="{m - 5}" y="{py(y):.0f}" text-anchor="end">{y:g}</text>')
    for i, r in enumerate(results):
        pts = [(px(b["window_s"]), py(b["allan"])) for b in r["report"]["spectrum"] if (b["allan"] or 0) > 0]
        c = colours[i % len(colours)]
        out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                   % (c, " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)))
        out.append(f'<text x="{w - m - 110}" y="{m + 15 * i}" fill="{c}">{r["name"]}</text>')
    out.append("</svg>")
    open(path, "w").write("\n".join(out))


def tables(results):
    lines = []
    spectra = [r for r in results if r["kind"] == "spectrum"]
    if spectra:
        wins = sorted({b["window_s"] for r in spectra for b in r["report"]["spectrum"]})
        pick = [x for x in wins if any(abs(x - t) / t < 0.3 for t in (0.05, 0.25, 1, 2, 5))]
        lines.append("| load | mean commits/s | counter read p50/p99 (µs) | "
                     + " | ".join(f"pair sd at {x:g} s" for x in pick) + " |")
        lines.append("|---|---|---|" + "---|" * len(pick))
        for r in spectra:
            rep = r["report"]
            by = {b["window_s"]: b for b in rep["spectrum"]}
            mean = rep["spectrum"][0]["mean"] if rep["spectrum"] else float("nan")
            cells = [f'{by[x]["pair_sd"]:.3f}' if x in by and by[x]["pair_sd"] is not None else "" for x in pick]
            lines.append(f'| {r["name"]} | {mean:.0f} | {rep["read_cost_p50_us"]:.0f} / '
                         f'{rep["read_cost_p99_us"]:.0f} | ' + " | ".join(cells) + " |")
    carries = [(r, c) for r in results if r["kind"] == "carryover" for c in r["report"]["carryover"]]
    if carries:
        lines.append("")
        lines.append("| load | knob | to | switches | steady-state noise | settles within (s) |")
        lines.append("|---|---|---|---|---|---|")
        for r, c in carries:
            lines.append(f'| {r["name"]} | {c["knob"]} | {c["to"]} | {c["switches"]} | '
                         f'{c["noise"]:.3f} | {c["settles_s"]:.3f} |')
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--duration", type=int, default=60)
    ap.add_argument("--carry", type=int, default=40)
    ap.add_argument("--users", type=int, default=64)
    ap.add_argument("--only", default="engine-disk,engine-tmpfs,serve-4,serve-64,mariadb-64")
    a = ap.parse_args()
    only = a.only.split(",")
    for tool in ("sysbench", "mariadb", "mariadbd", "mariadb-install-db"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is not installed (apt-get install sysbench mariadb-server mariadb-client)")
    for b in (ENGINE, REDOCTOR):
        if not os.access(b, os.X_OK):
            sys.exit(f"{b} is missing: cargo build --release")
    work = tempfile.mkdtemp(prefix="redoctor-spectrum.", dir="/var/tmp")
    results = []
    secs = a.duration + 4 * a.carry + 60
    plans = {
        "engine-disk": (lambda: engine_run(work, a.users, False),
                        [("innodb_log_writer_threads", ["ON", "OFF"]),
                         ("innodb_thread_concurrency", ["0", "4"]),
                         ("innodb_max_active_transactions", ["0", "16"])]),
        "engine-tmpfs": (lambda: engine_run(work, a.users, True), []),
        "serve-4": (lambda: engine_serve(work, 4, secs), []),
        "serve-64": (lambda: engine_serve(work, 64, secs), []),
        "mariadb-64": (lambda: mariadb(work, 64, secs), []),
    }
    with open(a.out + ".jsonl", "a") as log:
        for name in only:
            start, knobs = plans[name]
            s = start()
            try:
                print(f"{name}: spectrum, {a.duration} s", flush=True)
                r = {"name": name, "kind": "spectrum", "unix_s": int(time.time()),
                     "counter": s.counter, "report": meter(s.socket, a.duration, s.counter)}
                results.append(r)
                log.write(json.dumps(r) + "\n")
                for knob, values in knobs:
                    print(f"{name}: carryover of {knob} {values}, {a.carry} s", flush=True)
                    r = {"name": name, "kind": "carryover", "unix_s": int(time.time()),
                         "counter": s.counter, "report": meter(s.socket, a.carry, s.counter, knob, values)}
                    results.append(r)
                    log.write(json.dumps(r) + "\n")
                    log.flush()
            finally:
                s.stop()
                if getattr(s, "cleanup", None):
                    shutil.rmtree(s.cleanup, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    # Every measurement in OUT.jsonl (earlier runs with --only included).
    results = [json.loads(line) for line in open(a.out + ".jsonl")]
    md = tables(results)
    open(a.out + ".md", "w").write(md + "\n")
    svg([r for r in results if r["kind"] == "spectrum"], a.out + ".svg")
    print(md)


if __name__ == "__main__":
    main()
