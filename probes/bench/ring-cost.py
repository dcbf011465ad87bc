#!/usr/bin/env python3
"""What the io_uring hooks cost per request on a real server: MariaDB, whose
page writes and doublewrite batches go through a ring (liburing), under
`sysbench oltp_read_write`, probed by `redoctor probe --profile mariadb
--json --cost-every 1`; the kernel's run-time statistics of each BPF
program (`probe_cost`) over every window give the ring programs' runs and
ns per run, set against the data-file requests the probes counted.

The cleaner is made to write all the while (innodb_max_dirty_pages_pct=0,
innodb_io_capacity=2000), so the rings carry a few hundred page writes a
second. What the BPF statistics leave out is the tracepoints' dispatch (a
few tens of ns per event where a program is attached); the requests' rate
bounds it.

Usage: probes/bench/ring-cost.py [WINDOWS] [THREADS]
       (defaults 20 one-second windows, 16 sysbench threads; root, a
        release build of redoctor, mariadb-server and sysbench installed)
"""
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
AGENT = os.environ.get("AGENT", os.path.join(ROOT, "target/release/redoctor"))
RING = ("ring_submit", "ring_file_get", "ring_complete")


def server_bench():
    """The MariaDB helpers of server-alternating.py (one way to start it)."""
    spec = importlib.util.spec_from_file_location("server_alternating",
                                                  os.path.join(HERE, "server-alternating.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    windows = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    if not os.access(AGENT, os.X_OK):
        sys.exit(f"{AGENT} not found: cargo build --release --bin redoctor")
    sa = server_bench()
    d = tempfile.mkdtemp(prefix="redoctor-ring.")
    server = load = None
    try:
        server = sa.start_mariadb(d)
        sock = os.path.join(d, "m.sock")
        subprocess.run([sa.which("mariadb", "mysql"), f"--socket={sock}", "-uroot", "-e",
                        "SET GLOBAL innodb_max_dirty_pages_pct = 0, "
                        "GLOBAL innodb_io_capacity = 2000"], check=True)
        load = subprocess.Popen(sa.sysbench(server, "run", threads, windows + 15),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(5)
        out = subprocess.run([AGENT, "probe", "--pid", str(server.pid), "--profile", "mariadb",
                              "--json", "--cost-every", "1", "--interval", "1s",
                              "--duration", f"{windows}s"],
                             check=True, capture_output=True, text=True).stdout
    finally:
        if load:
            load.kill()
            load.wait()
        if server:
            server.stop()
        shutil.rmtree(d, ignore_errors=True)
    report([json.loads(line) for line in out.splitlines() if line.strip()])


def report(ws: list) -> None:
    # The first window's statistics start at the attach: left out.
    ws = [w for w in ws[1:] if w.get("probe_cost")]
    if not ws:
        sys.exit("no window with probe_cost")
    secs = sum(w["window_ns"] for w in ws) / 1e9
    runs, ns = {}, {}
    for w in ws:
        for c in w["probe_cost"]:
            runs[c["program"]] = runs.get(c["program"], 0) + c["runs"]
            ns[c["program"]] = ns.get(c["program"], 0) + c["run_ns"]
    data = [w["io"].get("data", {}) for w in ws]
    writes = sum(x.get("write_calls", 0) for x in data)
    reads = sum(x.get("read_calls", 0) for x in data)
    per_window = [sum(c["run_ns"] for c in w["probe_cost"] if c["program"] in RING)
                  / max(1, x.get("write_calls", 0) + x.get("read_calls", 0))
                  for w, x in zip(ws, data)]
    print(f"{len(ws)} windows, {secs:.1f} s: data-file requests {writes / secs:.0f} writes/s, "
          f"{reads / secs:.0f} reads/s")
    print(f"{'program':<16} {'runs/s':>10} {'ns/run':>8} {'CPU ‰ of one':>13}")
    total = sum(ns.values())
    for p in sorted(ns, key=ns.get, reverse=True):
        if p in RING or ns[p] >= 0.01 * total:
            print(f"{p:<16} {runs[p] / secs:>10.0f} {ns[p] / max(runs[p], 1):>8.0f} "
                  f"{ns[p] / secs / 1e6:>13.3f}")
    ring_ns = sum(ns.get(p, 0) for p in RING)
    requests = writes + reads
    print(f"ring programs: {ring_ns / secs / 1e6:.3f} ‰ of one CPU, "
          f"{ring_ns / max(requests, 1):.0f} ns per data-file request "
          f"(windows: median {statistics.median(per_window):.0f}, "
          f"range {min(per_window):.0f}-{max(per_window):.0f}); "
          f"all programs {total / secs / 1e6:.1f} ‰")


if __name__ == "__main__":
    main()
