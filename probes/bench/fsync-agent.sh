#!/bin/sh
# An agent for alternating.py: started and stopped like `redoctor probe`
# (it takes the pid from `--pid` and ignores the rest), it keeps only the
# fsync counters attached (`probes/examples/fsync_counters.rs`), as the
# daemon does between its sampled windows. Its on/off figure is what
# keeping them attached costs:
#   AGENTS="null=probes/bench/null-agent.sh,fsync=probes/bench/fsync-agent.sh" \
#     probes/bench/alternating.py 4 30
# Needs `cargo build --release -p redoctor-probes --examples`.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
pid=
while [ $# -gt 0 ]; do
	if [ "$1" = --pid ]; then pid=$2; shift; fi
	shift
done
[ -n "$pid" ] || { echo "fsync-agent: no --pid given" >&2; exit 2; }
exec "$here/../../target/release/examples/fsync_counters" "$pid"
