#!/usr/bin/env python3
"""Overhead of `redoctor probe` on a real server, probes on and off in turn
within one sysbench run (the method of `probes/bench/alternating.py`, with a
real server and sysbench in place of the bundled engine).

SERVER=mariadb (default): a MariaDB (mariadbd from `mariadb-server`) on a
private datadir and socket, networking off, probed with `--profile
mariadb` (one process). SERVER=postgresql: a PostgreSQL 15 cluster
(initdb as the `postgres` user, a private socket directory, no TCP),
probed from its postmaster with `--profile postgresql`, which follows
every process of the cluster (backends forked by sysbench's connections
included) and keys their I/O by file. Never the system's service.

It prepares sysbench's tables and runs `sysbench oltp_read_write` with
THREADS threads (default 16) and `--report-interval 1` for the whole
bench. It then attaches `redoctor probe` for PHASE seconds and detaches it
for PHASE seconds, PHASES times (A B A B ...). Each 1-second sysbench
report (stamped with the wall clock when it arrives) is "on" when it lies
inside an attached phase (from ON_AFTER s after the agent started, default
0.7) and "off" when it lies outside every attached phase (from 0.3 s after
the agent exited); reports that straddle a change are dropped. "paired" is
the mean (and standard error) of each attached phase's TPS over the
detached phases just before and after it: the figure to trust.

PROBE_ARGS adds arguments to every `redoctor probe` (the floor controls of
probes/README.md: `--empty-programs` attaches every hook with programs that
return at once; `--empty-programs --no-syscalls` leaves the syscall hooks
out too), so the cost of dispatch alone can be told from the programs'.

Usage: [SERVER=mariadb|postgresql] [PROBE_ARGS=...] probes/bench/server-alternating.py [PHASE_SECONDS] [PHASES]
       (defaults 5 s, 6 phases; root, a release build of redoctor,
        the server's package and sysbench installed; THREADS=16)
"""
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
AGENT = os.environ.get("AGENT", os.path.join(ROOT, "target/release/redoctor"))
ON_AFTER_MS = 1000 * float(os.environ.get("ON_AFTER", "0.7"))
THREADS = os.environ.get("THREADS", "16")
SERVER = os.environ.get("SERVER", "mariadb")
PROBE_ARGS = os.environ.get("PROBE_ARGS", "").split()
PG_BIN = "/usr/lib/postgresql/15/bin"


def which(*names):
    for n in names:
        for d in os.environ.get("PATH", "").split(":") + ["/usr/sbin", "/usr/bin"]:
            p = os.path.join(d, n)
            if os.access(p, os.X_OK):
                return p
    sys.exit(f"{names[0]} not found: apt-get install mariadb-server postgresql sysbench")


def main() -> None:
    phase = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    phases = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    if SERVER not in ("mariadb", "postgresql"):
        sys.exit(f"SERVER={SERVER}: mariadb or postgresql")
    d = tempfile.mkdtemp(prefix="redoctor-server.")
    server = None
    try:
        server = start_mariadb(d) if SERVER == "mariadb" else start_postgres(d)
        bench(d, server, phase, phases)
    finally:
        if server:
            server.stop()
        shutil.rmtree(d, ignore_errors=True)


class Server:
    """A started server: its pid, the sysbench options that reach it, and how it stops."""

    def __init__(self, pid, sysbench_opts, stop):
        self.pid, self.sysbench_opts, self.stop = pid, sysbench_opts, stop


def start_mariadb(d: str) -> Server:
    data, sock = os.path.join(d, "data"), os.path.join(d, "m.sock")
    subprocess.run([which("mariadb-install-db", "mysql_install_db"), "--no-defaults",
                    f"--datadir={data}", "--auth-root-authentication-method=normal",
                    "--user=root", "--skip-test-db"], check=True, capture_output=True)
    proc = subprocess.Popen([which("mariadbd", "mysqld"), "--no-defaults", f"--datadir={data}",
                             f"--socket={sock}", f"--pid-file={d}/m.pid",
                             f"--log-error={d}/error.log", "--skip-networking", "--user=root"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        if os.path.exists(sock) and subprocess.run(
                [which("mariadb", "mysql"), f"--socket={sock}", "-uroot", "-e",
                 "CREATE DATABASE IF NOT EXISTS sbtest"], capture_output=True).returncode == 0:
            break
        time.sleep(0.1)
    else:
        sys.exit(f"mariadbd did not start: {open(d + '/error.log').read()}")

    def stop():
        proc.send_signal(signal.SIGTERM)
        proc.wait()
    server = Server(proc.pid, [f"--mysql-socket={sock}", "--mysql-user=root",
                               "--db-driver=mysql"], stop)
    subprocess.run(sysbench(server, "prepare", 4, 0), check=True, capture_output=True)
    return server


def start_postgres(d: str) -> Server:
    if not os.access(os.path.join(PG_BIN, "initdb"), os.X_OK):
        sys.exit(f"{PG_BIN}/initdb not found: apt-get install postgresql")
    data, sock = os.path.join(d, "data"), os.path.join(d, "sock")
    os.makedirs(sock)
    for p in (d, sock):
        shutil.chown(p, "postgres", "postgres")
    as_pg = ["runuser", "-u", "postgres", "--"]
    subprocess.run(as_pg + [f"{PG_BIN}/initdb", "-D", data, "-U", "postgres", "-A", "trust",
                            "--no-sync"], check=True, capture_output=True)
    subprocess.run(as_pg + [f"{PG_BIN}/pg_ctl", "-D", data, "-o",
                            f"-k {sock} -c listen_addresses=''", "-l", f"{d}/server.log",
                            "-w", "-t", "30", "start"],
                   check=True, capture_output=True, stdin=subprocess.DEVNULL)
    with open(os.path.join(data, "postmaster.pid")) as f:
        pid = int(f.readline())
    subprocess.run([f"{PG_BIN}/psql", "-h", sock, "-U", "postgres", "-XAtq", "-c",
                    "CREATE DATABASE sbtest"], check=True, capture_output=True)

    def stop():
        subprocess.run(as_pg + [f"{PG_BIN}/pg_ctl", "-D", data, "-m", "immediate", "-w",
                                "stop"], capture_output=True)
    server = Server(pid, [f"--pgsql-host={sock}", "--pgsql-user=postgres", "--pgsql-db=sbtest",
                          "--db-driver=pgsql"], stop)
    subprocess.run(sysbench(server, "prepare", 4, 0), check=True, capture_output=True)
    return server


def sysbench(server: Server, cmd: str, threads, secs) -> list:
    return [which("sysbench"), "oltp_read_write", *server.sysbench_opts, "--tables=4",
            "--table-size=10000", f"--threads={threads}", f"--time={secs}",
            "--report-interval=1", cmd]


def bench(d: str, server: Server, phase: float, phases: int) -> None:
    duration = int((2 * phase + 2) * phases + phase + 10)
    load = subprocess.Popen(sysbench(server, "run", THREADS, duration),
                            stdout=subprocess.PIPE, text=True, bufsize=1)
    reports = []  # (end wall ms, tps)
    pat = re.compile(r"^\[ *(\d+)s \].* tps: ([0-9.]+)")

    def read():
        for line in load.stdout:
            m = pat.match(line)
            if m:
                reports.append((time.time() * 1000, float(m.group(2))))
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(3)  # warm-up
    spans = []
    for _ in range(phases):
        time.sleep(phase)
        started = time.time() * 1000
        with open(os.path.join(d, "agent.out"), "w") as out, \
                open(os.path.join(d, "agent.err"), "w") as err:
            agent = subprocess.Popen([AGENT, "probe", "--pid", str(server.pid), "--profile",
                                      SERVER, "--interval", "1s", "--json", *PROBE_ARGS],
                                     stdout=out, stderr=err)
        time.sleep(phase)
        if agent.poll() is not None:
            sys.exit(f"the agent exited during its phase:\n{open(d + '/agent.err').read()}")
        agent.send_signal(signal.SIGTERM)
        agent.wait()
        if os.path.getsize(os.path.join(d, "agent.out")) == 0:
            sys.exit("the agent closed no window in its phase")
        spans.append((started, time.time() * 1000))
    time.sleep(phase)
    load.send_signal(signal.SIGTERM)
    load.wait()
    reader.join(timeout=5)
    on = [[] for _ in spans]
    off = [[] for _ in range(len(spans) + 1)]
    for end, tps in reports:
        start = end - 1000
        for j, (s, e) in enumerate(spans):
            if start >= s + ON_AFTER_MS and end <= e:
                on[j].append(tps)
        if all(end <= s or start >= e + 300 for s, e in spans):
            off[sum(1 for s, _ in spans if start >= s)].append(tps)
    ons = [t for o in on for t in o]
    offs = [t for o in off for t in o]
    if len(ons) < 2 or len(offs) < 2:
        sys.exit("too few whole intervals on or off: use longer phases")
    ratios = [statistics.mean(on[j]) / statistics.mean(off[j] + off[j + 1])
              for j in range(len(spans)) if on[j] and off[j] + off[j + 1]]
    se = statistics.stdev(ratios) / len(ratios) ** 0.5 if len(ratios) > 1 else float("nan")
    print(f"## {SERVER}, sysbench oltp_read_write {THREADS} threads, probes on and off every "
          f"{phase:g} s ({phases} phases){'; probe ' + ' '.join(PROBE_ARGS) if PROBE_ARGS else ''}")
    print(f"TPS off ({len(offs)} s): mean {statistics.mean(offs):.0f}, stdev {statistics.stdev(offs):.0f}")
    print(f"TPS on ({len(ons)} s): mean {statistics.mean(ons):.0f}, stdev {statistics.stdev(ons):.0f}")
    print("per phase on/off: " + ", ".join(f"{100 * r:.1f}%" for r in ratios))
    print(f"on/off: mean {100 * statistics.mean(ons) / statistics.mean(offs):.1f}%, "
          f"paired {100 * statistics.mean(ratios):.1f}% +- {100 * se:.1f}  (target >= 97%)")


if __name__ == "__main__":
    main()
