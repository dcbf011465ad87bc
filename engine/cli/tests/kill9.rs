//! Process-level crash test: `SIGKILL` the engine in the middle of an insert
//! workload, then check that every commit it acknowledged survived recovery.
//!
//! Each trial runs `redoctor-engine run --workload insert --ack-file A` with
//! `--flush-at-commit 1` (redo log threads alternating on and off), waits until
//! it has acknowledged commits, kills it with `SIGKILL` at a random moment
//! 0.3–1.5 s later, and runs `redoctor-engine verify-acks`, which recovers the
//! datadir and checks each acknowledged `(table, id)`. Every second trial
//! reuses the previous trial's datadir (checking the acks of both runs), so a
//! log that was recovered, written to and crashed again must recover too;
//! half of those reuses also skip the clean shutdown after the previous
//! verification (`--no-shutdown`), so the earlier recovery's log is replayed
//! again.
//!
//! Environment: `KILL9_TRIALS` (default 20), `KILL9_SEED` (default: random,
//! printed), `KILL9_KEEP=1` keeps the directories for inspection.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use redoctor_testkit::KillOnDrop;

const BIN: &str = env!("CARGO_BIN_EXE_redoctor-engine");
/// How long a child may take to open, prepare and acknowledge its first commit.
const FIRST_ACK_TIMEOUT: Duration = Duration::from_secs(30);
/// A small circular log, so checkpoints and wrap-around happen during a trial.
const LOG_FILE_MB: &str = "4";
/// The engine wants the log file's capacity (its size less the header) to
/// hold at least 4 log buffers.
const LOG_BUFFER_MB: &str = "0.5";

/// Kills the child on drop, so a failing assertion leaves no process behind.
struct Running {
    child: KillOnDrop,
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn read_or_empty(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_default()
}

fn ack_lines(path: &Path) -> usize {
    fs::read(path).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
}

/// Starts the insert workload on `datadir`, appending acks to `acks`.
fn start_run(datadir: &Path, acks: &Path, redo_threads: &str, logs: &Path, seed: u64) -> Running {
    let flags = [
        ("--workload", "insert"),
        ("--users", "8"),
        ("--duration", "30"),
        ("--warmup", "0"),
        ("--flush-at-commit", "1"),
        ("--redo-threads", redo_threads),
        ("--tables", "2"),
        ("--table-size", "1000"),
        ("--log-file-mb", LOG_FILE_MB),
        ("--log-buffer-mb", LOG_BUFFER_MB),
    ];
    let mut cmd = Command::new(BIN);
    cmd.arg("run");
    for (flag, value) in flags {
        cmd.arg(flag).arg(value);
    }
    let child = cmd
        .arg("--seed")
        .arg(seed.to_string())
        .arg("--ack-file")
        .arg(acks)
        .arg("--datadir")
        .arg(datadir)
        .stdin(Stdio::null())
        .stdout(File::create(logs.with_extension("out")).expect("create stdout log"))
        .stderr(File::create(logs.with_extension("err")).expect("create stderr log"))
        .spawn()
        .expect("spawn redoctor-engine run");
    Running {
        child: KillOnDrop(child),
    }
}

/// Waits until `acks` holds at least one line; panics if the child exits first.
fn wait_for_first_ack(run: &mut Running, acks: &Path, logs: &Path) {
    let deadline = Instant::now() + FIRST_ACK_TIMEOUT;
    loop {
        if ack_lines(acks) > 0 {
            return;
        }
        if let Some(status) = run.child.try_wait().expect("try_wait") {
            panic!(
                "redoctor-engine run exited ({status}) before acknowledging a commit; stderr:\n{}",
                read_or_empty(&logs.with_extension("err"))
            );
        }
        assert!(
            Instant::now() < deadline,
            "no commit acknowledged within {FIRST_ACK_TIMEOUT:?}; stderr:\n{}",
            read_or_empty(&logs.with_extension("err"))
        );
        thread::sleep(Duration::from_millis(2));
    }
}

fn verify(datadir: &Path, acks: &[PathBuf], no_shutdown: bool) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.arg("verify-acks").arg("--datadir").arg(datadir);
    cmd.args([
        "--log-file-mb",
        LOG_FILE_MB,
        "--log-buffer-mb",
        LOG_BUFFER_MB,
    ]);
    for a in acks {
        cmd.arg("--acks").arg(a);
    }
    if no_shutdown {
        cmd.arg("--no-shutdown");
    }
    cmd.stdin(Stdio::null())
        .output()
        .expect("run redoctor-engine verify-acks")
}

#[test]
fn acknowledged_commits_survive_sigkill() {
    let trials: usize = env_or("KILL9_TRIALS", 20);
    let seed: u64 = env_or("KILL9_SEED", rand::random());
    println!("kill9: {trials} trials, KILL9_SEED={seed}");
    let mut rng = SmallRng::seed_from_u64(seed);
    let root = tempfile::Builder::new()
        .prefix("redoctor-kill9-")
        .tempdir()
        .expect("create a temporary directory");
    let started = Instant::now();

    let mut datadir = PathBuf::new();
    // Ack files of every run on the current datadir.
    let mut chain: Vec<PathBuf> = Vec::new();
    let mut total_acked = 0;
    for trial in 0..trials {
        let reuse = trial % 2 == 1;
        if !reuse {
            datadir = root.path().join(format!("data{trial}"));
            chain.clear();
        }
        // Alternates within fresh trials and within reusing trials alike.
        let redo_threads = if (trial + trial / 2) % 2 == 0 {
            "on"
        } else {
            "off"
        };
        let acks = root.path().join(format!("acks{trial}"));
        let logs = root.path().join(format!("run{trial}"));

        let mut run = start_run(&datadir, &acks, redo_threads, &logs, rng.gen());
        wait_for_first_ack(&mut run, &acks, &logs);
        let delay = Duration::from_millis(rng.gen_range(300..=1500));
        thread::sleep(delay);
        if let Some(status) = run.child.try_wait().expect("try_wait") {
            panic!(
                "trial {trial}: redoctor-engine run exited ({status}) before it was killed; stderr:\n{}",
                read_or_empty(&logs.with_extension("err"))
            );
        }
        run.child.kill().expect("SIGKILL the engine");
        run.child.wait().expect("reap the engine");
        drop(run);

        let acked = ack_lines(&acks);
        total_acked += acked;
        assert!(acked > 0, "trial {trial}: no acknowledged commit");
        chain.push(acks);

        // The next trial reuses this datadir: every other time, leave it unshut.
        let next_reuses = trial + 1 < trials && (trial + 1) % 2 == 1;
        let no_shutdown = next_reuses && (trial / 2) % 2 == 0;
        let out = verify(&datadir, &chain, no_shutdown);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        println!(
            "trial {trial:>2}: redo threads {redo_threads:<3} {} killed {:>4} ms after the first ack, {acked:>6} acked; \
             verify{}: {}",
            if reuse { "reused datadir," } else { "fresh datadir, " },
            delay.as_millis(),
            if no_shutdown { " (no shutdown)" } else { "" },
            stdout.lines().nth(1).unwrap_or("").trim()
        );
        assert!(
            out.status.success(),
            "trial {trial} (seed {seed}): acknowledged commits lost or recovery failed ({}).\n\
             verify stdout:\n{stdout}\nverify stderr:\n{stderr}\nrun stderr:\n{}",
            out.status,
            read_or_empty(&logs.with_extension("err"))
        );
    }
    println!(
        "kill9: {trials} trials, {total_acked} acknowledged commits checked, {:.1} s",
        started.elapsed().as_secs_f64()
    );
    if std::env::var_os("KILL9_KEEP").is_some() {
        println!("kept {}", root.keep().display());
    }
}
