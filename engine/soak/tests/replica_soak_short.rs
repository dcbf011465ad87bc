//! The short form of the replica soak, part of the project's test command:
//! a few replica trials (each kills the replica 1-3 times while it applies,
//! then checks it against the source after catch-up), with a new master
//! seed every run (printed). Environment: `SOAK_SEED`, `REPLICA_SOAK_TRIALS`
//! (default 3). Needs `redoctor-engine` beside `redoctor-soak` (the
//! workspace's test command builds both).

use std::path::PathBuf;
use std::process::Command;

const SOAK: &str = env!("CARGO_BIN_EXE_redoctor-soak");

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn replica_kill9_trials_lose_nothing_and_apply_nothing_twice() {
    let engine = PathBuf::from(SOAK).with_file_name("redoctor-engine");
    assert!(
        engine.is_file(),
        "{} is missing: build it with `cargo build --release -p redoctor-engine-cli`",
        engine.display()
    );
    let seed: u64 = env_or("SOAK_SEED", rand::random());
    let trials: usize = env_or("REPLICA_SOAK_TRIALS", 3);
    let dir = tempfile::Builder::new()
        .prefix("rsoak-")
        .tempdir()
        .expect("a temporary directory");
    let out = Command::new(SOAK)
        .args(["replica", "--trials", &trials.to_string()])
        .args([
            "--seed",
            &seed.to_string(),
            "--max-kill-ms",
            "600",
            "--json",
        ])
        .arg("--engine")
        .arg(&engine)
        .arg("--dir")
        .arg(dir.path())
        .output()
        .expect("run redoctor-soak replica");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stderr}");
    let summary: serde_json::Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("no JSON summary ({e}); stdout:\n{stdout}\nstderr:\n{stderr}"));
    if summary["failed"].as_u64() != Some(0) || !out.status.success() {
        let kept = dir.keep();
        panic!(
            "replica soak failed (SOAK_SEED={seed}; kept under {}):\n{}",
            kept.display(),
            serde_json::to_string_pretty(&summary["failures"]).unwrap()
        );
    }
    assert_eq!(summary["passed"].as_u64(), Some(trials as u64), "{summary}");
    assert!(
        summary["kills"].as_u64().unwrap() >= trials as u64,
        "every trial kills its replica at least once while it applies: {summary}"
    );
    assert!(
        summary["source_transactions"].as_u64().unwrap() > 0,
        "{summary}"
    );
}

#[test]
fn a_missing_engine_binary_is_named_with_the_fix() {
    let out = Command::new(SOAK)
        .args([
            "replica",
            "--trials",
            "1",
            "--engine",
            "/nonexistent/redoctor-engine",
        ])
        .output()
        .expect("run redoctor-soak replica");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/nonexistent/redoctor-engine") && err.contains("cargo build"),
        "{err}"
    );
}
