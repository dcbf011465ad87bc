//! `redoctor diagnose`, run as the real binary: the demo end to end (engine
//! started, probed, diagnosed, cleaned up), an idle target, and the error
//! paths. The tests that load BPF need root (CI runs as root) and are
//! skipped only when the kernel lacks BPF or BTF.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{engine, skip, text};

fn redoctor() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_redoctor"));
    c.env("REDOCTOR_ENGINE", engine());
    c
}

/// The demo's temporary directory, from its stderr line `... in DIR`.
fn demo_dir(stderr: &str) -> PathBuf {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("redoctor: demo:"))
        .expect(stderr);
    PathBuf::from(line.rsplit_once(" in ").unwrap().1)
}

/// `redoctor diagnose --demo --duration 3s ARGS --out OUT`, and its stderr.
fn demo(args: &[&str], out: &Path) -> (Output, String) {
    let o = redoctor()
        .args(["diagnose", "--demo", "--duration", "3s"])
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    let (_, err) = text(&o);
    (o, err)
}

#[test]
fn demo_end_to_end_json() {
    if skip() {
        return;
    }
    let out = tempfile::NamedTempFile::new().unwrap();
    let (o, err) = demo(&["--format", "json"], out.path());
    assert_eq!(o.status.code(), Some(0), "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path()).unwrap()).unwrap();
    assert_eq!(v["schema"], "redoctor.diagnosis");
    assert_eq!(v["version"], 1);
    assert!(
        v["summary"]["window_s"].as_f64().unwrap() >= 2.8,
        "{}",
        v["summary"]
    );
    assert!(
        v["summary"]["commits"].as_f64().unwrap() > 0.0,
        "{}",
        v["summary"]
    );
    assert_eq!(v["summary"]["user_threads"], 64.0);
    assert_eq!(v["facts"]["settings"]["innodb_log_writer_threads"], "ON");
    assert_ne!(
        v["verdict"]["kind"], "insufficient_evidence",
        "{}",
        v["verdict"]
    );
    assert!(err.contains("report written to"), "{err}");
    // The engine is gone with its directory.
    let pid = v["pid"].as_u64().unwrap();
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "demo engine still running"
    );
}

#[test]
fn demo_with_binlog_advises_redo_threads_off_in_html() {
    if skip() {
        return;
    }
    let out = tempfile::NamedTempFile::new().unwrap();
    let (o, err) = demo(
        &[
            "--users",
            "16",
            "--engine-set",
            "log_bin=ON",
            "--format",
            "html",
        ],
        out.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{err}");
    let html = std::fs::read_to_string(out.path()).unwrap();
    let doc = roxmltree::Document::parse(html.trim_start_matches("<!DOCTYPE html>\n"))
        .expect("well-formed HTML");
    assert_eq!(
        doc.descendants().filter(|n| n.has_tag_name("svg")).count(),
        4
    );
    let verdict = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("verdict"))
        .and_then(|n| n.text())
        .unwrap()
        .to_string();
    assert!(
        verdict.contains("innodb_log_writer_threads ON -> OFF"),
        "{verdict}\n{err}"
    );
    let dir = demo_dir(&err);
    assert!(dir.starts_with(std::env::temp_dir()), "{dir:?}");
    assert!(
        !dir.exists(),
        "the demo's temporary directory {dir:?} was removed"
    );
}

#[test]
fn idle_target_is_insufficient_evidence() {
    if skip() {
        return;
    }
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let o = redoctor()
        .args([
            "diagnose",
            "--pid",
            &sleeper.id().to_string(),
            "--duration",
            "1.5s",
        ])
        .output()
        .unwrap();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        out.starts_with("VERDICT: insufficient evidence: the process was idle"),
        "{out}"
    );
}

#[test]
fn unknown_rule_to_disable_is_named() {
    let o = redoctor()
        .args(["diagnose", "--pid", "1", "--disable", "no-such-rule"])
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot disable rule 'no-such-rule'"), "{err}");
}

#[test]
fn malformed_user_rule_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mine.toml"),
        "[[rule]]\nid = \"x\"\nseverity = \"loud\"\n",
    )
    .unwrap();
    let o = redoctor()
        .args(["diagnose", "--pid", "1", "--rules"])
        .arg(dir.path())
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("mine.toml:3:") && err.contains("loud"),
        "{err}"
    );
}

#[test]
fn bad_setting_and_missing_pid() {
    let o = redoctor()
        .args([
            "diagnose",
            "--pid",
            "1",
            "--setting",
            "innodb_thread_concurrency",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("is not NAME=VALUE"));
    let o = redoctor()
        .args(["diagnose", "--pid", "2147483600", "--duration", "1s"])
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("2147483600"), "{err}");
}
