#!/usr/bin/env python3
"""The device's floor for one durable committer: how long one 4 KiB log write
made durable takes on DISK_DIR, by each way a redo log can make it durable.

A single-threaded client that waits for every commit to be durable cannot
commit faster than 1 / (the time of one durable write): no server, however
fast its own code, beats this on the same disk. The bench prints, per method,
the median, p95 and mean time of one durable 4 KiB write and the commits/s
it allows one committer (1 / mean), so the single-thread cells of
`vs_peers.sh` can be read against it.

Methods (each on a preallocated file, overwritten in place as a circular
redo log is, then appended as a growing log is):
  pwrite + fdatasync        what the engine, MariaDB and PostgreSQL do by default
  O_DSYNC pwrite            one syscall; the kernel flushes before returning
  O_DIRECT|O_DSYNC pwrite   no page cache; a write then a cache flush (FUA when
                            the device has it)
  O_DIRECT pwrite, no sync  NOT durable with a volatile write cache: shown as
                            the cost of the write alone (the rest is the flush)

Usage: engine/bench/fsync_floor.py [WRITES per method, default 4000]
Environment: DISK_DIR [/var/tmp]; REPEATS [3] rounds, methods interleaved.
"""
import mmap
import os
import statistics
import sys
import tempfile
import time

BLOCK = 4096
FILE_BLOCKS = 16384  # 64 MiB: larger than one round, so overwrites stay in place


def device_facts(path: str) -> str:
    dev = os.stat(path).st_dev
    major, minor = os.major(dev), os.minor(dev)
    base = f"/sys/dev/block/{major}:{minor}"
    name = os.path.basename(os.path.realpath(base))
    queue = f"/sys/block/{name}/queue"
    if not os.path.isdir(queue):  # a partition: its disk's queue
        queue = os.path.join(os.path.dirname(os.path.realpath(base)), "queue")
    facts = []
    for f in ("write_cache", "fua", "rotational"):
        try:
            with open(os.path.join(queue, f)) as fh:
                facts.append(f"{f}={fh.read().strip()}")
        except OSError:
            pass
    return f"device {name} ({', '.join(facts) or 'queue facts unavailable'})"


def one(path: str, flags: int, sync: bool, n: int, append: bool) -> list:
    buf = mmap.mmap(-1, BLOCK)
    buf.write(b"r" * BLOCK)
    fd = os.open(path, os.O_WRONLY | flags)
    try:
        if append:
            os.ftruncate(fd, 0)
            os.fsync(fd)
        times = []
        for i in range(n):
            off = i * BLOCK if append else (i % FILE_BLOCKS) * BLOCK
            t = time.perf_counter_ns()
            os.pwrite(fd, buf, off)
            if sync:
                os.fdatasync(fd)
            times.append((time.perf_counter_ns() - t) / 1000)
        return times
    finally:
        os.close(fd)


def prefill(path: str) -> None:
    with open(path, "wb") as f:
        chunk = b"\0" * (1 << 20)
        for _ in range(FILE_BLOCKS * BLOCK // len(chunk)):
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
    repeats = int(os.environ.get("REPEATS", "3"))
    disk = os.environ.get("DISK_DIR", "/var/tmp")
    methods = [
        ("pwrite + fdatasync", 0, True),
        ("O_DSYNC pwrite", os.O_DSYNC, False),
        ("O_DIRECT|O_DSYNC pwrite", os.O_DIRECT | os.O_DSYNC, False),
        ("O_DIRECT pwrite, no sync (not durable)", os.O_DIRECT, False),
    ]
    results = {}
    with tempfile.TemporaryDirectory(dir=disk, prefix="fsync_floor.") as d:
        path = os.path.join(d, "log")
        for _ in range(repeats):
            for append in (False, True):
                for name, flags, sync in methods:
                    if not append:
                        prefill(path)
                    key = (name, "append" if append else "overwrite")
                    results.setdefault(key, []).extend(one(path, flags, sync, n, append))
    print(f"## One durable 4 KiB write on {disk}: {device_facts(disk)}, "
          f"{repeats} x {n} writes per method, interleaved")
    print()
    print("| method | file | median µs | p95 µs | mean µs | one committer's ceiling (commits/s) |")
    print("|---|---|---|---|---|---|")
    for (name, kind), t in results.items():
        t.sort()
        mean = statistics.mean(t)
        p95 = t[int(0.95 * (len(t) - 1))]
        print(f"| {name} | {kind} | {statistics.median(t):.1f} | {p95:.1f} | {mean:.1f} | "
              f"{1e6 / mean:.0f} |")


if __name__ == "__main__":
    main()
