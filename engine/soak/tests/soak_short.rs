//! The short form of the crash soak, part of the project's test command:
//! 40 trials (20 data directories, each crashed twice) across the whole
//! matrix, each checked against its expected state. A new master seed
//! every run (printed), so each run covers new trials; a failing trial
//! prints its seed and the command that replays it.
//!
//! Environment: `SOAK_SEED` (master seed; default random), `SOAK_TRIALS`
//! (default 40). Needs `redoctor-engine` beside `redoctor-soak` (the
//! workspace's test command builds both).

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

const SOAK: &str = env!("CARGO_BIN_EXE_redoctor-soak");

fn engine_beside() -> PathBuf {
    let p = PathBuf::from(SOAK).with_file_name("redoctor-engine");
    assert!(
        p.is_file(),
        "{} is missing: build it with `cargo build --release -p redoctor-engine-cli` \
         (the workspace test command builds it)",
        p.display()
    );
    p
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs `redoctor-soak` with `extra` flags; panics (keeping the failing
/// trials' directories) unless every trial passed. Returns the summary.
fn soak(trials: usize, seed: u64, extra: &[&str]) -> serde_json::Value {
    let engine = engine_beside();
    let dir = tempfile::Builder::new()
        .prefix("redoctor-soak-test-")
        .tempdir()
        .expect("create a temporary directory");
    let out = Command::new(SOAK)
        .args(["--trials", &trials.to_string(), "--seed", &seed.to_string()])
        .args(extra)
        .arg("--json")
        .arg("--engine")
        .arg(&engine)
        .arg("--dir")
        .arg(dir.path())
        .output()
        .expect("run redoctor-soak");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stderr}");
    let summary: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!("redoctor-soak printed no JSON summary ({e}); stdout:\n{stdout}\nstderr:\n{stderr}")
    });
    let failed = summary["failed"].as_u64().unwrap();
    if failed > 0 || !out.status.success() {
        // Keep the failing trials' directories for inspection.
        let kept = dir.keep();
        panic!(
            "{failed} soak trial(s) failed (SOAK_SEED={seed}; directories kept under {}):\n{}",
            kept.display(),
            serde_json::to_string_pretty(&summary["failures"]).unwrap()
        );
    }
    assert_eq!(summary["trials"].as_u64(), Some(trials as u64));
    assert_eq!(summary["passed"].as_u64(), Some(trials as u64));
    // Every trial waits for an acknowledged commit before the kill (a
    // torn page write may come earlier: counted apart).
    assert_eq!(summary["no_evidence"].as_u64(), Some(0), "{summary}");
    // Every trial recovers and is checked, except those that tore a page
    // with doublewrite OFF: their recovery must refuse the directory.
    assert_eq!(
        summary["recoveries"].as_u64().unwrap() + summary["torn_refused"].as_u64().unwrap(),
        trials as u64,
        "{summary}"
    );
    summary
}

#[test]
fn forty_crash_trials_lose_nothing_acknowledged() {
    let trials: usize = env_or("SOAK_TRIALS", 40);
    let seed: u64 = env_or("SOAK_SEED", rand::random());
    println!("soak: {trials} trials, SOAK_SEED={seed}");
    let started = Instant::now();
    let summary = soak(trials, seed, &[]);
    let acked = summary["acknowledged_commits_checked"].as_u64().unwrap();
    assert!(acked >= trials as u64, "{summary}");
    println!(
        "soak: {trials} trials passed, {acked} acknowledged commits checked, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// Trials on pages (a pool of 16-64 pages of 4 KiB), each tearing a data
/// page's write and killing the engine there: recovery restores every torn
/// page from the doublewrite buffer and loses no acknowledged commit.
#[test]
fn torn_page_writes_are_restored_and_lose_nothing() {
    let trials: usize = env_or("SOAK_TORN_TRIALS", 12);
    let seed: u64 = env_or("SOAK_SEED", rand::random());
    println!("soak: {trials} torn-page trials, SOAK_SEED={seed}");
    let summary = soak(
        trials,
        seed,
        &["--pages", "always", "--tear", "always", "--max-users", "32"],
    );
    let torn = summary["torn_restored"].as_u64().unwrap();
    let pages = summary["pages_restored"].as_u64().unwrap();
    let on_pages = summary["on_pages"].as_u64().unwrap();
    let off = summary["doublewrite_off"].as_u64().unwrap();
    assert!(
        torn * 2 >= on_pages - off,
        "fewer than half the trials on pages with doublewrite ON tore a page: {summary}"
    );
    assert!(pages >= torn, "{summary}");
    println!("soak: {torn} torn trials restored {pages} pages");
}

#[test]
fn bad_inputs_name_the_cause_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-engine");
    let out = Command::new(SOAK)
        .args(["--trials", "1", "--engine"])
        .arg(&missing)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("does not exist")
            && err.contains("cargo build --release -p redoctor-engine-cli"),
        "{err}"
    );

    let file = dir.path().join("a-file");
    std::fs::write(&file, b"").unwrap();
    let out = Command::new(SOAK)
        .args(["--trials", "1", "--engine"])
        .arg(engine_beside())
        .arg("--dir")
        .arg(file.join("sub"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("pass a directory you can write to"), "{err}");

    // Not an engine at all.
    let out = Command::new(SOAK)
        .args(["--trials", "1", "--engine", "/bin/true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--journal"), "{err}");
}
