//! The engine's failpoints in the `redoctor-engine` binary, on real files:
//! `FAILPOINTS=...` makes `redoctor-engine run` (insert workload,
//! `--ack-file`) fail in the middle of the run, then `verify-acks` (with the
//! failpoints off) recovers the data directory and checks every insert the
//! run acknowledged.
//!
//! - An fdatasync error (redo log, binlog) or ENOSPC (redo log, binlog,
//!   checkpoint) stops the run: it exits with status 1 and an error naming
//!   the file, the errno and (for ENOSPC) the fix; nothing acknowledged is
//!   lost.
//! - A torn write followed by SIGKILL (`redo::write::short=return(kill)`,
//!   `binlog::write::short=return(kill)`): recovery drops the torn tail and
//!   `redoctor-engine recover` says how many bytes; nothing acknowledged is
//!   lost, and a second run on the recovered directory loses nothing either.
//! - A torn data page write followed by SIGKILL (`page::write::short`,
//!   tables on pages): restored from the doublewrite buffer (ON), or named
//!   and refused (OFF).

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_redoctor-engine");
const EIO: &str = "Input/output error (os error 5)";
const ENOSPC: &str = "No space left on device (os error 28)";
const LOG_FLAGS: [&str; 4] = ["--log-file-mb", "8", "--log-buffer-mb", "0.5"];

/// `redoctor-engine run` of the insert workload with `failpoints` set.
fn run(datadir: &Path, acks: &Path, failpoints: Option<&str>, extra: &[&str]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.env_remove("FAILPOINTS");
    if let Some(fp) = failpoints {
        cmd.env("FAILPOINTS", fp);
    }
    cmd.args([
        "run",
        "--workload",
        "insert",
        "--users",
        "8",
        "--warmup",
        "0",
    ])
    .args([
        "--flush-at-commit",
        "1",
        "--tables",
        "2",
        "--table-size",
        "100",
    ])
    .args(LOG_FLAGS)
    .args(extra)
    .arg("--ack-file")
    .arg(acks)
    .arg("--datadir")
    .arg(datadir)
    .stdin(Stdio::null())
    .output()
    .expect("run redoctor-engine run")
}

fn ack_lines(path: &Path) -> usize {
    fs::read(path).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
}

/// `verify-acks` over `acks` (failpoints off); asserts it succeeds and
/// found every one of the acknowledged inserts.
fn verify(datadir: &Path, acks: &[PathBuf]) {
    let mut cmd = Command::new(BIN);
    cmd.env_remove("FAILPOINTS")
        .arg("verify-acks")
        .arg("--datadir")
        .arg(datadir)
        .args(LOG_FLAGS);
    for a in acks {
        cmd.arg("--acks").arg(a);
    }
    let out = cmd.stdin(Stdio::null()).output().expect("run verify-acks");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "acknowledged inserts lost ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let acked: usize = acks.iter().map(|a| ack_lines(a)).sum();
    assert!(
        acked > 0,
        "the run acknowledged nothing: nothing was checked"
    );
    assert!(
        stdout.contains(&format!("present {acked}  missing 0")),
        "verify-acks did not see the {acked} acknowledgements:\n{stdout}"
    );
}

struct Stop {
    failpoints: &'static str,
    extra: &'static [&'static str],
    /// (operation, file in the data directory, errno text).
    cause: (&'static str, &'static str, &'static str),
}

/// Each I/O error stops the run with a clear error and a non-zero exit;
/// recovery afterwards keeps every acknowledged insert.
#[test]
fn io_errors_stop_the_run_and_lose_no_acknowledged_commit() {
    let log_bin: &[&str] = &["--set", "log_bin=ON"];
    let cases = [
        Stop {
            failpoints: "redo::fsync::eio=200*off->return",
            extra: &["--redo-threads", "on"],
            cause: ("fdatasync of", "redo.log", EIO),
        },
        Stop {
            failpoints: "redo::fsync::eio=200*off->return",
            extra: &["--redo-threads", "off"],
            cause: ("fdatasync of", "redo.log", EIO),
        },
        Stop {
            failpoints: "binlog::fsync::eio=200*off->return",
            extra: log_bin,
            cause: ("fdatasync of", "binlog.000001", EIO),
        },
        Stop {
            failpoints: "redo::write::enospc=200*off->return",
            extra: &[],
            cause: ("write to", "redo.log", ENOSPC),
        },
        Stop {
            failpoints: "binlog::write::enospc=200*off->return",
            extra: log_bin,
            cause: ("write to", "binlog.000001", ENOSPC),
        },
        // The creation of the directory and the load write the first two
        // images; the third comes from the background thread once the log
        // is 5 % full.
        Stop {
            failpoints: "checkpoint::write::enospc=2*off->return",
            extra: &["--checkpoint-fill-pct", "5"],
            cause: ("write to", "checkpoint.tmp", ENOSPC),
        },
    ];
    let root = tempfile::tempdir().unwrap();
    for (i, case) in cases.iter().enumerate() {
        let datadir = root.path().join(format!("data{i}"));
        let acks = root.path().join(format!("acks{i}"));
        let mut extra = vec!["--duration", "20"];
        extra.extend_from_slice(case.extra);
        let out = run(&datadir, &acks, Some(case.failpoints), &extra);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let what = format!("{} {:?}", case.failpoints, case.extra);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{what}: {}\n{stderr}",
            out.status
        );
        let (op, file, errno) = case.cause;
        let cause = format!("{op} {}/{file} failed: {errno}", datadir.display());
        let last = stderr.lines().last().unwrap_or("");
        assert!(
            last.starts_with("error: the run stopped early") && last.contains(&cause),
            "{what}: the last line does not say `{cause}`:\n{stderr}"
        );
        assert!(
            last.contains("the engine stopped accepting commits (fail-stop)"),
            "{what}: {last}"
        );
        if errno == ENOSPC {
            let fix = format!(
                "Free space on the file system that holds {}",
                datadir.display()
            );
            assert!(last.contains(&fix), "{what}: no fix in {last}");
        }
        verify(&datadir, &[acks]);
        println!(
            "{what}: {} acks verified; {last}",
            ack_lines(&root.path().join(format!("acks{i}")))
        );
    }
}

/// `recover`'s summary of the redo and binlog tails.
fn recover_summary(datadir: &Path) -> String {
    let out = Command::new(BIN)
        .env_remove("FAILPOINTS")
        .arg("recover")
        .arg("--datadir")
        .arg(datadir)
        .args(LOG_FLAGS)
        .output()
        .expect("run redoctor-engine recover");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "recover failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The number in "... dropped N bytes ..." on the line starting with
/// `prefix` (0 when the line says nothing was dropped); None without the line.
fn dropped(summary: &str, prefix: &str) -> Option<u64> {
    let line = summary.lines().find(|l| l.starts_with(prefix))?;
    let Some(at) = line.find("dropped") else {
        return Some(0);
    };
    line[at..].split_whitespace().find_map(|w| w.parse().ok())
}

/// A torn write, then SIGKILL: recovery drops the torn tail and says so;
/// nothing acknowledged is lost, and a second run on the directory (which
/// writes over the dropped tail) loses nothing either. A tear that happens
/// to fall between two records drops nothing, so each case gets up to
/// three tries to see a non-empty torn tail (each try is fully checked).
#[test]
fn torn_write_then_sigkill_is_dropped_at_recovery() {
    let cases: [(&str, &[&str], &str); 2] = [
        ("redo::write::short=100*off->return(kill)", &[], "redo log:"),
        (
            "binlog::write::short=100*off->return(kill)",
            &["--set", "log_bin=ON"],
            "binlog:",
        ),
    ];
    let root = tempfile::tempdir().unwrap();
    for (failpoints, extra, line) in cases {
        let mut torn = false;
        for attempt in 0..3 {
            let dir = root.path().join(format!("{}-{attempt}", &line[..4]));
            let (datadir, acks1, acks2) = (dir.join("data"), dir.join("acks1"), dir.join("acks2"));
            fs::create_dir_all(&dir).unwrap();
            let mut args = vec!["--duration", "20"];
            args.extend_from_slice(extra);
            let out = run(&datadir, &acks1, Some(failpoints), &args);
            assert_eq!(
                out.status.signal(),
                Some(libc::SIGKILL),
                "{failpoints}: the run was not killed by its failpoint ({}):\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            let summary = recover_summary(&datadir);
            let n = dropped(&summary, line).unwrap_or_else(|| {
                panic!("{failpoints}: no `{line} ... dropped N bytes` in\n{summary}")
            });
            println!("{failpoints} try {attempt}: {summary}");
            verify(&datadir, std::slice::from_ref(&acks1));
            // A second life, without failpoints, then both lives' acks.
            let mut args = vec!["--duration", "1"];
            args.extend_from_slice(extra);
            let out = run(&datadir, &acks2, None, &args);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            verify(&datadir, &[acks1, acks2]);
            if n > 0 {
                torn = true;
                break;
            }
        }
        assert!(torn, "{failpoints}: three tears, none left a torn tail");
    }
}

/// Tables on pages in a pool of 16 pages of 4 KiB (the data outgrows it
/// within the first second), doublewrite `mode` and `design`.
fn page_settings(mode: &str, design: &str) -> Vec<String> {
    [
        "innodb_buffer_pool_size=65536".to_string(),
        "innodb_page_size=4096".into(),
        "innodb_lru_scan_depth=100".into(),
        format!("innodb_doublewrite={mode}"),
        format!("innodb_doublewrite_design={design}"),
    ]
    .into_iter()
    .flat_map(|s| ["--set".to_string(), s])
    .collect()
}

/// `recover` or `verify-acks` with `settings`, failpoints off.
fn open_with(sub: &str, datadir: &Path, settings: &[String], acks: Option<&Path>) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.env_remove("FAILPOINTS")
        .arg(sub)
        .arg("--datadir")
        .arg(datadir)
        .args(LOG_FLAGS)
        .args(settings);
    if let Some(a) = acks {
        cmd.arg("--acks").arg(a);
    }
    cmd.stdin(Stdio::null())
        .output()
        .expect("run redoctor-engine")
}

/// A data page's write torn, then SIGKILL (the power cut the doublewrite
/// buffer is for), in both designs: with doublewrite ON recovery restores
/// the torn page from its copy and keeps every acknowledged insert; with it
/// OFF the engine refuses to open the directory, naming the torn page,
/// rather than read it.
#[test]
fn a_torn_page_write_is_restored_or_refused_by_name() {
    let root = tempfile::tempdir().unwrap();
    for (mode, design) in [("ON", "legacy"), ("ON", "files"), ("OFF", "files")] {
        let dir = root.path().join(format!("{mode}-{design}"));
        let (datadir, acks) = (dir.join("data"), dir.join("acks"));
        fs::create_dir_all(&dir).unwrap();
        let settings = page_settings(mode, design);
        let mut args: Vec<&str> = vec!["--duration", "20"];
        args.extend(settings.iter().map(String::as_str));
        let out = run(
            &datadir,
            &acks,
            Some("page::write::short=300*off->return(kill)"),
            &args,
        );
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGKILL),
            "{mode}/{design}: the run was not killed by its torn page write ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let rec = open_with("recover", &datadir, &settings, None);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&rec.stdout),
            String::from_utf8_lossy(&rec.stderr),
        );
        if mode == "OFF" {
            assert!(
                !rec.status.success()
                    && stderr.contains("fail their checksum")
                    && stderr.contains("[space "),
                "doublewrite OFF: recovery did not refuse the torn page by name ({}):\n{stdout}\n{stderr}",
                rec.status
            );
            continue;
        }
        assert!(
            rec.status.success(),
            "{mode}/{design}: recover failed:\n{stdout}\n{stderr}"
        );
        let restored: usize = stdout
            .lines()
            .find_map(|l| {
                let rest = l.strip_prefix("doublewrite buffer: ")?;
                let at = rest.find("checked, ")?;
                rest[at + 9..].split_whitespace().next()?.parse().ok()
            })
            .unwrap_or_else(|| panic!("{mode}/{design}: no doublewrite line in\n{stdout}"));
        assert!(
            restored >= 1,
            "{mode}/{design}: no torn page restored:\n{stdout}"
        );
        let v = open_with("verify-acks", &datadir, &settings, Some(&acks));
        let vout = String::from_utf8_lossy(&v.stdout);
        assert!(
            v.status.success() && vout.contains("missing 0") && ack_lines(&acks) > 0,
            "{mode}/{design}: acknowledged inserts lost ({}):\n{vout}\n{}",
            v.status,
            String::from_utf8_lossy(&v.stderr)
        );
    }
}

/// Failpoint switches are checked: an unknown name or a bad action is an
/// error before anything runs, not a silently ignored point.
#[test]
fn bad_failpoint_switches_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let datadir = root.path().join("data");
    for (env, flag, want) in [
        (
            Some("redo::fsync::eoi=return"),
            None,
            "unknown failpoint `redo::fsync::eoi`",
        ),
        (
            Some("redo::fsync::eio=retrun"),
            None,
            "redo::fsync::eio=retrun",
        ),
        (None, Some("binlog::write::enospc"), "is not NAME=ACTIONS"),
    ] {
        let mut cmd = Command::new(BIN);
        cmd.env_remove("FAILPOINTS");
        if let Some(e) = env {
            cmd.env("FAILPOINTS", e);
        }
        if let Some(f) = flag {
            cmd.arg("--failpoint").arg(f);
        }
        let out = cmd
            .args(["recover", "--datadir"])
            .arg(&datadir)
            .output()
            .expect("run redoctor-engine");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(want), "want `{want}` in:\n{stderr}");
        assert!(!datadir.exists(), "something ran despite the bad switch");
    }
}

/// The hidden `--failpoint` flag works like the variable.
#[test]
fn failpoint_flag_switches_a_point_on() {
    let root = tempfile::tempdir().unwrap();
    let datadir = root.path().join("data");
    let acks = root.path().join("acks");
    let mut cmd = Command::new(BIN);
    let out = cmd
        .env_remove("FAILPOINTS")
        .args(["--failpoint", "redo::fsync::eio=100*off->return", "run"])
        .args([
            "--workload",
            "insert",
            "--users",
            "4",
            "--warmup",
            "0",
            "--duration",
            "20",
        ])
        .args(["--tables", "1", "--table-size", "100"])
        .args(LOG_FLAGS)
        .arg("--ack-file")
        .arg(&acks)
        .arg("--datadir")
        .arg(&datadir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("failpoint on: redo::fsync::eio=100*off->return"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "fdatasync of {}/redo.log failed: {EIO}",
            datadir.display()
        )),
        "{stderr}"
    );
    verify(&datadir, &[acks]);
}
