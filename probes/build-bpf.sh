#!/usr/bin/env bash
# Rebuilds the committed prebuilt BPF object (used by build.rs when clang is
# absent) and records the hash of the sources it was built from.
#   probes/build-bpf.sh          rebuild prebuilt/redoctor.bpf.o + SOURCE_SHA256
#   probes/build-bpf.sh --check  exit 1 when the prebuilt object is stale
set -euo pipefail
cd "$(dirname "$0")"
hash=$(cat src/bpf/redoctor.bpf.c src/bpf/kernel_types.h | sha256sum | cut -d' ' -f1)
if [[ "${1:-}" == "--check" ]]; then
    recorded=$(cat prebuilt/SOURCE_SHA256 2>/dev/null || echo none)
    if [[ "$hash" != "$recorded" ]]; then
        echo "probes/prebuilt/redoctor.bpf.o is stale: sources hash $hash, object built from $recorded;" \
             "run probes/build-bpf.sh and commit probes/prebuilt/" >&2
        exit 1
    fi
    echo "prebuilt BPF object matches its sources ($hash)"
    exit 0
fi
CLANG=${CLANG:-clang-19}
STRIP=${LLVM_STRIP:-llvm-strip-19}
mkdir -p prebuilt
"$CLANG" -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_x86 -Wall -ffile-prefix-map="$PWD"=. -I src/bpf -c src/bpf/redoctor.bpf.c -o prebuilt/redoctor.bpf.o
"$STRIP" -g prebuilt/redoctor.bpf.o
echo "$hash" > prebuilt/SOURCE_SHA256
echo "rebuilt prebuilt/redoctor.bpf.o from sources $hash"
