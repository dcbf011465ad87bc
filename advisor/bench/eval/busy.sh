#!/usr/bin/env bash
# Runs CMD while telling a measurement (measure.py --pause-file) to hold its
# cells: creates PAUSE (default /tmp/redoctor-busy) and appends to PAUSE.log,
# so a cell that overlapped CMD is measured again.
#   busy.sh CMD ARGS...        (REDOCTOR_PAUSE_FILE=PATH to choose the file)
set -u
pause=${REDOCTOR_PAUSE_FILE:-/tmp/redoctor-busy}
echo "start $$ $(date +%s) $*" >>"$pause.log"
touch "$pause"
"$@"
rc=$?
echo "end $$ $(date +%s)" >>"$pause.log"
# Others may hold it too: remove it only when no other busy.sh runs.
if ! pgrep -f "eval/busy.sh" | grep -vq "^$$\$"; then rm -f "$pause"; fi
exit $rc
