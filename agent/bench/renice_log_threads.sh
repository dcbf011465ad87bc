#!/bin/bash
# Holds the log threads (log_*) of every running `redoctor-engine serve`
# at nice -10 (or $1), re-applied every half second so a server started
# later is caught too; stop it with kill. For telling a CPU-share cause of
# a switch's ramp from others (agent/bench/RESULTS.md, 2026-12-06):
#   agent/bench/renice_log_threads.sh & RL=$!; agent/bench/gate_window_carryover.py ...; kill $RL
nice=${1:--10}
while true; do
  for p in $(pgrep -f "redoctor-engine serve"); do
    for t in /proc/$p/task/*; do
      case "$(cat "$t/comm" 2>/dev/null)" in
        log_*) renice -n "$nice" -p "${t##*/}" >/dev/null 2>&1 ;;
      esac
    done
  done
  sleep 0.5
done
