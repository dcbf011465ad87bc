#!/usr/bin/env bash
# The project's test command: README's quick start step 2, and what CI runs.
# Every crate's unit and integration tests, then the loom model checks of the
# concurrency gate, the redo log's wakeup event, link buffer and log buffer,
# and the transaction throttle (a separate build: loom replaces the atomics,
# locks, cells and futex words); then the project's own performance gate on
# the bundled engine's commit path (agent/GATE.md: a regression or an error
# fails): this build against the reference build named in
# tests/gate/reference-commit, both run side by side, interleaved, on this
# machine, so its speed of the day cancels out; without that commit in the
# checkout's history, against the committed baseline file.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
echo "== cargo test --release --workspace --all-targets"
cargo test --release --workspace --all-targets
echo "== loom model checks (engine/src/tests/loom_*.rs)"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
    cargo test --release -p redoctor-engine --lib tests::loom_
echo "== performance gate (tests/gate/engine-commit-path.toml)"
cargo build --release -q -p redoctor-agent -p redoctor-engine-cli
ref=$(grep -v '^#' tests/gate/reference-commit | head -1)
if git rev-parse -q --verify "$ref^{commit}" >/dev/null 2>&1; then
    echo "   against the reference build $ref, side by side"
    refsrc=$(mktemp -d)
    trap 'git worktree remove --force "$refsrc" >/dev/null 2>&1 || rm -rf "$refsrc"' EXIT
    git worktree add -q --detach "$refsrc" "$ref"
    # Its own target directory: a shared one would let the two trees'
    # same-named crates overwrite each other's artifacts.
    # No debug info: the code is the same, the build a minute shorter.
    root=$PWD
    (cd "$refsrc" && CARGO_PROFILE_RELEASE_DEBUG=false cargo build --release -q \
        -p redoctor-engine-cli --bin redoctor-engine --target-dir "$root/target/gate-ref")
    target/release/redoctor gate run --scenario tests/gate/engine-commit-path.toml \
        --against target/gate-ref/release/redoctor-engine
else
    echo "   reference commit $ref is not in this checkout: against the committed baseline"
    target/release/redoctor gate run --scenario tests/gate/engine-commit-path.toml \
        --baseline tests/gate/engine-commit-path.baseline.json
fi
