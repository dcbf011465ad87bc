#!/usr/bin/env bash
# The project's test command: README's quick start step 2, and what CI runs.
# Every crate's unit and integration tests, then the loom model checks of the
# concurrency gate, the redo log's wakeup event, link buffer and log buffer,
# the transaction throttle, the replica's relay log and the buffer pool's
# paths without its mutex (a separate build: loom replaces the atomics,
# locks, cells and futex words); then the project's own performance gate on
# the bundled engine's commit path (agent/GATE.md: a regression or an error
# fails): this build against the reference build named in
# tests/gate/reference-commit, both run side by side, interleaved, on this
# machine, so its speed of the day cancels out; without that commit in the
# checkout's history, against the committed baseline file.
set -euo pipefail
cd "$(dirname "$0")/.."
# Every requirement must be met: a test that finds a server, a tool, root
# or a kernel feature missing fails naming it (redoctor_testkit). Set
# REDOCTOR_REQUIRE_ALL=0 on a machine without them to skip those tests.
export REDOCTOR_REQUIRE_ALL="${REDOCTOR_REQUIRE_ALL:-1}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# The per-syscall tracepoints (the probes' write and fsync hooks, the
# daemon's fsync counters) are found through tracefs, which a fresh host may
# not have mounted although its kernel has it. As root, mount it; otherwise
# say what the tests that need it will report.
if [[ ! -d /sys/kernel/tracing/events && ! -d /sys/kernel/debug/tracing/events ]]; then
    if [[ $(id -u) == 0 ]] && grep -qw tracefs /proc/filesystems; then
        echo "== tracefs was not mounted: mount -t tracefs tracefs /sys/kernel/tracing"
        mount -t tracefs tracefs /sys/kernel/tracing
    else
        echo "== tracefs is not mounted and cannot be mounted here (not root, or a kernel" \
            "without it): the per-syscall tracepoint tests will fail and say so" >&2
    fi
fi
# Build outputs: ./target, or where CARGO_TARGET_DIR says (.ci/run keeps a
# cache there between clean clones).
tgt=$(realpath -m "${CARGO_TARGET_DIR:-target}")
echo "== [${SECONDS}s] module import loops (tests/module_cycles.py)"
python3 tests/module_cycles.py
echo "== [${SECONDS}s] crate layers (tests/crate_layers.py)"
python3 tests/crate_layers.py
echo "== [${SECONDS}s] no test skips on its own (tests/silent_skips.py)"
python3 tests/silent_skips.py
echo "== [${SECONDS}s] cargo test --release --workspace --all-targets (tests/run_tests.py)"
# The test binaries cargo builds, run as cargo runs them, but for the
# order: the agent's (live trials, time and CPU budgets, servers under
# load) one at a time with the machine to themselves, then the others, whose
# checks do not depend on the host's speed, as many at a time as there are
# CPUs. Each binary's start and result lines carry the seconds since this
# script started, so a log shows where the time goes.
python3 tests/run_tests.py --target-dir "$tgt" --t0 "$(($(date +%s) - SECONDS))"
echo "== [${SECONDS}s] loom model checks (engine/src/tests/loom_*.rs)"
# Each model runs in a process of its own, as many at a time as there are
# CPUs. Loom maps a fresh stack for every thread of every execution it
# explores, so most of its time is the kernel's (mmap, mprotect, munmap),
# and the test threads of one process contend for its address space: on 2
# CPUs the models took 72 s as one process with 2 test threads, 54 s with
# one, 29 s as separate processes two at a time (tests/RESULTS.md).
loom_bin=$(RUSTFLAGS="--cfg loom" python3 tests/run_tests.py --target-dir "$tgt/loom" \
    --print-lib-test redoctor-engine)
loom_logs=$(mktemp -d)
mapfile -t models < <("$loom_bin" --list --format terse tests::loom_ | sed -n 's/: test$//p' | sort -r)
((${#models[@]} > 0)) || { echo "no loom models found in $loom_bin" >&2; exit 1; }
printf '%s\n' "${models[@]}" | xargs -P "$(nproc)" -I{} sh -c '
    if "$1" --exact "$2" --test-threads 1 >"$3/$2.log" 2>&1 &&
        grep -q "test result: ok. 1 passed" "$3/$2.log"; then
        echo "test $2 ... ok"
    else
        echo "test $2 ... FAILED"; cat "$3/$2.log"; exit 1
    fi' _ "$loom_bin" {} "$loom_logs"
echo "loom: ${#models[@]} models passed"
rm -rf "$loom_logs"
echo "== [${SECONDS}s] performance gate (tests/gate/engine-commit-path.toml)"
ref=$(grep -v '^#' tests/gate/reference-commit | head -1)
against=(--baseline tests/gate/engine-commit-path.baseline.json)
# The reference build is cached by commit and toolchain outside the clone
# (REDOCTOR_GATE_CACHE, default ~/.cache/redoctor/gate-ref): the same
# commit and compiler give the same engine, and building it costs minutes.
# An incremental build (CI's) differs in its code generation from a plain
# one, so the two are cached apart and compared only with their own kind.
inc=""
[[ ${CARGO_INCREMENTAL:-0} == 1 ]] && inc=-incremental
cache="${REDOCTOR_GATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/redoctor/gate-ref}/$ref-$(rustc -V | tr -c 'A-Za-z0-9.\n' _)$inc"
if [[ -x $cache/redoctor-engine ]] && git rev-parse -q --verify "$ref^{commit}" >/dev/null 2>&1; then
    echo "   against the reference build $ref, side by side (cached in $cache)"
    mkdir -p "$tgt"/gate-ref
    cp "$cache/redoctor-engine" "$tgt"/gate-ref/redoctor-engine
    against=(--against "$tgt"/gate-ref/redoctor-engine)
elif git rev-parse -q --verify "$ref^{commit}" >/dev/null 2>&1; then
    echo "   against the reference build $ref, side by side (building it)"
    refsrc=$(mktemp -d)
    trap 'git worktree remove --force "$refsrc" >/dev/null 2>&1 || rm -rf "$refsrc"' EXIT
    git worktree add -q --detach "$refsrc" "$ref"
    # Built in this target directory, as one of the reference's test
    # targets: the test build above resolved the dependencies' features
    # the same way (every member, dev-dependencies included), so whatever
    # the two trees' lock files share is reused instead of rebuilt (a
    # separate directory cost 200 s here). Cargo names a workspace crate's
    # outputs by a hash of its path relative to the workspace root, so when
    # the two trees' manifests and lock files agree the reference's crates
    # overwrite this tree's under the same names, and cargo would then take
    # them as fresh for this tree (its sources are older). So the reference
    # binary is set aside, and the workspace crates' fingerprints are
    # dropped so that this tree's crates are built again (below); the
    # dependencies stay built.
    # The incremental cache (CI's) is set aside meanwhile: the reference's
    # sources sit at another path, and would leave a cache this tree's next
    # build cannot reuse.
    rm -rf "$tgt"/release/incremental.head
    [[ -d $tgt/release/incremental ]] && mv "$tgt"/release/incremental "$tgt"/release/incremental.head
    (cd "$refsrc" && cargo test --release -q --workspace --no-run --test cli_grammar \
        --target-dir "$tgt")
    rm -rf "$tgt"/release/incremental
    [[ -d $tgt/release/incremental.head ]] && mv "$tgt"/release/incremental.head "$tgt"/release/incremental
    mkdir -p "$tgt"/gate-ref
    cp "$tgt"/release/redoctor-engine "$tgt"/gate-ref/redoctor-engine
    rm -rf "$tgt"/release/.fingerprint/redoctor*
    mkdir -p "$cache"
    cp "$tgt"/gate-ref/redoctor-engine "$cache/redoctor-engine.part"
    mv "$cache/redoctor-engine.part" "$cache/redoctor-engine"
    against=(--against "$tgt"/gate-ref/redoctor-engine)
else
    echo "   reference commit $ref is not in this checkout: against the committed baseline"
fi
cargo build --release -q -p redoctor-agent -p redoctor-engine-cli
if [[ ${against[0]} == --against ]] && cmp -s "$tgt"/release/redoctor-engine "${against[1]}"; then
    # The two builds' debug info names their own source directories, so
    # they differ even when the engine's code is the same: the same file
    # means the builds were mixed up (as before the fingerprints were dropped).
    echo "the reference build and this build are the same file: the two builds were mixed up in $tgt" >&2
    exit 1
fi
baseline=tests/gate/engine-commit-path.baseline.json
if [[ ${against[0]} == --against ]]; then
    # The committed baseline follows the reference: when the reference
    # commit moved, it is recorded again from the reference build (commit
    # the file; agent/tests/gate.rs checks that the two agree).
    recorded=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("source_commit", ""))' "$baseline")
    if [[ $recorded != "$ref" ]]; then
        echo "== the reference commit moved (${recorded:-none} -> $ref): recording $baseline from its build"
        "$tgt"/release/redoctor gate run --scenario tests/gate/engine-commit-path.toml \
            --bin "$tgt"/gate-ref/redoctor-engine --baseline "$baseline" --update-baseline \
            --source-commit "$ref"
    fi
fi
"$tgt"/release/redoctor gate run --scenario tests/gate/engine-commit-path.toml "${against[@]}"
echo "== [${SECONDS}s] performance gate against the committed baseline (counts per commit; a user's CI)"
# Three runs: the counts per commit it judges vary little between runs (the
# side-by-side gate above judges the times, with five of each).
"$tgt"/release/redoctor gate run --scenario tests/gate/engine-commit-path.toml --baseline "$baseline" --repeats 3
