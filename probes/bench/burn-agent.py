#!/usr/bin/env python3
"""A control for alternating.py: an "agent" that attaches nothing and only
takes CPU time away from the engine, to calibrate the bench.

Started and stopped like `redoctor probe` (it ignores the probe arguments
and prints one JSON line a second), it spins in user space until its CPU
time reaches PERCENT of one CPU's wall-clock time, in bursts of ~0.2 ms
with 1 ms sleeps between them, so its use is spread over the second much
as the probes' is. Its on/off figure says what that much CPU costs the
engine's TPS when nothing else changes: compare the probes' loss with the
CPU share the BPF run-time statistics give them.

  AGENTS="burn=probes/bench/burn-agent.py --percent 14,agent=target/release/redoctor" \\
    probes/bench/alternating.py 8 10

(--percent is of one CPU: 14 takes 7% of a 2-CPU machine.)
"""
import json
import signal
import sys
import time


def percent_arg(argv: list) -> float:
    if "--percent" not in argv:
        return 10.0
    i = argv.index("--percent")
    try:
        value = float(argv[i + 1])
    except (IndexError, ValueError):
        sys.exit("burn-agent: --percent needs a number (of one CPU, 0-100)")
    if not 0 <= value <= 100:
        sys.exit(f"burn-agent: --percent {value:g} is not within 0-100 (of one CPU)")
    return value


def main() -> None:
    share = percent_arg(sys.argv[1:]) / 100
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    wall0, cpu0 = time.monotonic(), time.process_time()
    last_wall, last_cpu = wall0, cpu0
    while True:
        now = time.monotonic()
        if time.process_time() - cpu0 < share * (now - wall0):
            burst_end = now + 0.0002
            while time.monotonic() < burst_end:
                pass
        else:
            time.sleep(0.001)
        if now - last_wall >= 1.0:
            cpu = time.process_time()
            used = 100 * (cpu - last_cpu) / (now - last_wall)
            print(json.dumps({"burn_agent": True, "cpu_percent_of_one": round(used, 2)}),
                  flush=True)
            last_wall, last_cpu = now, cpu


if __name__ == "__main__":
    main()
