#!/usr/bin/env bash
# The project's test command: README's quick start step 2, and what CI runs.
# Every crate's unit and integration tests, then the loom model check of the
# concurrency gate (a separate build: loom replaces the atomics and locks).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
echo "== cargo test --release --workspace --all-targets"
cargo test --release --workspace --all-targets
echo "== loom model check of the concurrency gate (engine/tests/loom_gate.rs)"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
    cargo test --release -p redoctor-engine --test loom_gate
