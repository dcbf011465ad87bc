#!/usr/bin/env bash
# The project's test command: README's quick start step 2, and what CI runs.
# Every crate's unit and integration tests, then the loom model checks of the
# concurrency gate, the redo log's wakeup event, link buffer and log buffer,
# and the transaction throttle (a separate build: loom replaces the atomics,
# locks, cells and futex words); then the project's own performance gate on
# the bundled engine's commit path against its committed baseline
# (agent/GATE.md: a regression or an error fails).
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
target/release/redoctor gate run --scenario tests/gate/engine-commit-path.toml \
    --baseline tests/gate/engine-commit-path.baseline.json
