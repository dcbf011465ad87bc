#!/bin/sh
# A control for alternating.py: started and stopped like `redoctor probe`
# (it ignores the probe arguments), it attaches empty programs to the two
# scheduler raw tracepoints the probes use, and runs no agent loop: no map
# or /proc reads. Its figure is what tracepoint dispatch on every context
# switch and wakeup of the machine costs by itself; compare it with
# `redoctor probe --empty-programs --no-syscalls`, which adds the agent.
#   AGENTS="null=probes/bench/null-agent.sh,dispatch=probes/bench/dispatch-agent.sh,\
#   floor-nosys=target/release/redoctor --empty-programs --no-syscalls" \
#     probes/bench/alternating.py 8 10
# Needs clang-19 and libbpf-dev (.ci/run installs them); builds once into
# target/bench-dispatch. `dispatch-agent.sh --build` only builds (CI runs it
# so the control does not rot).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out="$here/../../target/bench-dispatch"
src="$here/dispatch"
mkdir -p "$out"
if [ ! -x "$out/loader" ] || [ "$src/loader.c" -nt "$out/loader" ] \
	|| [ ! -f "$out/empty.bpf.o" ] || [ "$src/empty.bpf.c" -nt "$out/empty.bpf.o" ]; then
	command -v clang-19 >/dev/null 2>&1 || {
		echo "dispatch-agent: clang-19 is missing (apt-get install clang-19 libbpf-dev)" >&2
		exit 1
	}
	clang-19 -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_x86 -Wall -Werror -I "$here/../src/bpf" \
		-c "$src/empty.bpf.c" -o "$out/empty.bpf.o.tmp"
	clang-19 -O2 -Wall -Werror "$src/loader.c" -lbpf -o "$out/loader.tmp"
	mv "$out/empty.bpf.o.tmp" "$out/empty.bpf.o"
	mv "$out/loader.tmp" "$out/loader"
fi
[ "${1:-}" = "--build" ] && exit 0
exec "$out/loader" "$out/empty.bpf.o"
