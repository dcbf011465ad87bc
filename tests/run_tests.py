#!/usr/bin/env python3
"""Runs the workspace's test binaries (`cargo test --release --workspace
--all-targets`, built once), with the ones that measure performance alone
and the rest two (the CPU count) at a time.

The agent's tests drive live trials, the daemon's CPU and time budgets and
real servers under load: their verdicts follow what this host measures, so
each of those binaries runs with the machine to itself, as `cargo test`
runs every binary (but four whose checks hold no timed verdict:
`SHARED_OK`). The other crates' tests check counts, contents and
crash recovery, which do not depend on how fast the host is; many of them
wait on child processes (engines, servers, bpftrace), so on 2 CPUs they
leave a CPU idle most of the time (tests/RESULTS.md). Those run as many at
a time as there are CPUs, the longest first (by the durations the last run
recorded beside the build outputs).

Each binary runs as `cargo test` runs it: from its package's directory,
with no arguments. Its output is printed whole when it ends, between its
start and result lines, each stamped with the seconds since the script
that called this one started (`--t0`). Every binary runs even after one
failed; the exit status is 1 if any failed, naming them.

Usage: run_tests.py --target-dir DIR [--t0 UNIX_SECONDS]
"""

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import threading
import time

# Packages whose tests run alone (see above).
ALONE = {"redoctor-agent"}
# Of those, the binaries whose checks hold no timed verdict (error paths,
# options, file contents, a unit's capabilities, settings applied and
# restored): they run with the others.
SHARED_OK = {
    ("redoctor-agent", "bin", "redoctor"),
    ("redoctor-agent", "test", "probe_cli"),
    ("redoctor-agent", "test", "systemd_unit"),
    ("redoctor-agent", "test", "apply_revert"),
}


def build(target_dir, select=("--workspace", "--all-targets")):
    """Builds the test binaries `select` names (every one by default);
    returns them as dicts (package, name, kind, src, exe, cwd), in cargo's
    order."""
    cmd = ["cargo", "test", "--release", *select, "--no-run",
           "--message-format=json-render-diagnostics"]
    env = dict(os.environ, CARGO_TARGET_DIR=target_dir)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    out = []
    for line in p.stdout:
        m = json.loads(line)
        if m.get("reason") != "compiler-artifact" or not m.get("executable"):
            continue
        if not m["profile"]["test"]:
            continue
        t = m["target"]
        pkg = m["package_id"]
        name = pkg_name(pkg)
        out.append({
            "package": name,
            "name": t["name"],
            "kind": t["kind"][0],
            "src": os.path.relpath(t["src_path"], os.path.dirname(m["manifest_path"])),
            "exe": m["executable"],
            "cwd": os.path.dirname(m["manifest_path"]),
        })
    if p.wait() != 0:
        sys.exit(f"cargo test --no-run failed (exit {p.returncode})")
    return out


def pkg_name(package_id):
    """The package name in a cargo package id (`path+file:///..#name@0.1.0`,
    or `path+file:///.../name#0.1.0`)."""
    frag = package_id.split("#", 1)[1] if "#" in package_id else package_id
    if "@" in frag:
        return frag.split("@", 1)[0]
    return package_id.split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]


def label(b):
    kind = "unittests " if b["kind"] in ("lib", "bin", "example") else ""
    return f"{kind}{b['src']} ({b['exe']})"


class Log:
    """Prints whole blocks, stamped with seconds since t0."""

    def __init__(self, t0):
        self.t0 = t0
        self.lock = threading.Lock()

    def stamp(self):
        return f"[{int(time.time() - self.t0)}s]"

    def block(self, start_stamp, b, output, code, stage):
        with self.lock:
            print(f"{start_stamp}      Running {label(b)} [{stage}]")
            for line in output.splitlines():
                if line.startswith("test result"):
                    print(f"{self.stamp()} {line}")
                else:
                    print(line)
            if code != 0:
                print(f"{self.stamp()} {b['package']} {b['src']}: exit {code}")
            print(flush=True)


def run_one(b, log, stage):
    start = log.stamp()
    began = time.time()
    env = dict(os.environ, CARGO_MANIFEST_DIR=b["cwd"], CARGO_PKG_NAME=b["package"])
    p = subprocess.run([b["exe"]], cwd=b["cwd"], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, errors="replace")
    log.block(start, b, p.stdout, p.returncode, stage)
    passed = sum(int(n) for n in re.findall(r"^test result: \w+\. (\d+) passed", p.stdout, re.M))
    # A binary with its own harness (no libtest) prints only its checks.
    if not re.search(r"^test result:", p.stdout, re.M):
        passed = len(re.findall(r"^test \S+ \.\.\. ok", p.stdout, re.M))
    return p.returncode, passed, time.time() - began


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target-dir", required=True)
    ap.add_argument("--t0", type=float, default=time.time())
    ap.add_argument("--print-lib-test", metavar="PACKAGE",
                    help="only build PACKAGE's library tests and print that binary's path "
                         "(tests/run.sh's loom step)")
    a = ap.parse_args()
    if a.print_lib_test:
        exes = [b["exe"] for b in build(a.target_dir, ("-p", a.print_lib_test, "--lib"))]
        if len(exes) != 1:
            sys.exit(f"expected one library test binary of {a.print_lib_test}, got {exes}")
        print(exes[0])
        return
    log = Log(a.t0)
    binaries = build(a.target_dir)
    times_file = os.path.join(a.target_dir, "redoctor-test-times.json")
    try:
        last = json.load(open(times_file))
    except (OSError, ValueError):
        last = {}
    key = lambda b: f"{b['package']}/{b['kind']}/{b['name']}"
    results = {}
    lock = threading.Lock()

    def run(b, stage):
        code, passed, secs = run_one(b, log, stage)
        with lock:
            results[key(b)] = (code, passed, secs)

    runs_alone = lambda b: (b["package"] in ALONE
                            and (b["package"], b["kind"], b["name"]) not in SHARED_OK)
    alone = [b for b in binaries if runs_alone(b)]
    shared = [b for b in binaries if not runs_alone(b)]
    print(f"{log.stamp()} {len(binaries)} test binaries: {len(alone)} alone "
          f"({', '.join(sorted(ALONE))}), then {len(shared)} "
          f"{os.cpu_count()} at a time", flush=True)
    for b in alone:
        run(b, "alone")
    longest_first = sorted(shared, key=lambda b: -last.get(key(b), 0.0))
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        list(pool.map(lambda b: run(b, "shared"), longest_first))

    tmp = times_file + ".part"
    with open(tmp, "w") as f:
        json.dump({k: round(s, 1) for k, (_, _, s) in results.items()}, f, indent=0, sort_keys=True)
    os.replace(tmp, times_file)
    failed = sorted(k for k, (c, _, _) in results.items() if c != 0)
    total = sum(p for _, p, _ in results.values())
    print(f"{log.stamp()} {len(results)} test binaries, {total} tests passed", flush=True)
    if failed:
        print(f"{len(failed)} test binaries failed: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
