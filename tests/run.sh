#!/usr/bin/env bash
# The project's test command: README's quick start step 2, and what CI runs.
# Every crate's unit and integration tests, then the loom model checks of the
# concurrency gate and of the redo log's wakeup event (a separate build: loom
# replaces the atomics, locks and futex words).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
echo "== cargo test --release --workspace --all-targets"
cargo test --release --workspace --all-targets
echo "== loom model checks (engine/tests/loom_gate.rs, engine/tests/loom_event.rs)"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
    cargo test --release -p redoctor-engine --test loom_gate --test loom_event
