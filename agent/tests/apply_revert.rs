//! `redoctor apply` / `revert` against a live bundled engine served over the
//! MySQL protocol (`redoctor-engine serve --socket S`): round trip, the
//! durability guard, a refused value leaving nothing changed, and
//! `--from-report`.

mod common;

use std::process::{Command, Output};

use common::Served;

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `apply` of two settings: redo log threads off, a cap of 4.
fn apply_two(s: &Served) -> Output {
    s.redoctor(&[
        "apply",
        "--set",
        "innodb_log_writer_threads=OFF",
        "--set",
        "innodb_thread_concurrency=4",
    ])
}

#[test]
fn apply_then_revert_restores_the_old_values() {
    let s = Served::start();
    assert_eq!(s.var("innodb_log_writer_threads"), "ON");
    let o = apply_two(&s);
    assert!(o.status.success(), "{}", err(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("innodb_log_writer_threads: ON -> OFF"),
        "{out}"
    );
    assert!(out.contains("innodb_thread_concurrency: 0 -> 4"), "{out}");
    assert_eq!(s.var("innodb_log_writer_threads"), "OFF");
    assert_eq!(s.var("innodb_thread_concurrency"), "4");
    assert_eq!(s.state_entries(), 2);
    // A second apply of the same setting keeps the first original value.
    let o = s.redoctor(&["apply", "--set", "innodb_thread_concurrency=8"]);
    assert!(o.status.success(), "{}", err(&o));
    let o = s.redoctor(&["revert"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(s.var("innodb_log_writer_threads"), "ON");
    assert_eq!(s.var("innodb_thread_concurrency"), "0");
    assert_eq!(s.state_entries(), 0);
    let o = s.redoctor(&["revert"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("nothing to revert"));
}

#[test]
fn durability_settings_need_the_flag() {
    let s = Served::start();
    let o = s.redoctor(&["apply", "--set", "innodb_flush_log_at_trx_commit=2"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("--allow-durability-changes"),
        "{}",
        err(&o)
    );
    assert_eq!(s.var("innodb_flush_log_at_trx_commit"), "1");
    let o = s.redoctor(&[
        "apply",
        "--allow-durability-changes",
        "--set",
        "innodb_flush_log_at_trx_commit=2",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(s.var("innodb_flush_log_at_trx_commit"), "2");
    assert!(s.redoctor(&["revert"]).status.success());
    assert_eq!(s.var("innodb_flush_log_at_trx_commit"), "1");
}

#[test]
fn a_refused_value_leaves_nothing_changed() {
    let s = Served::start();
    let o = s.redoctor(&[
        "apply",
        "--set",
        "innodb_log_writer_threads=OFF",
        "--set",
        "innodb_thread_concurrency=abc",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("nothing was left changed") && err(&o).contains("abc"),
        "{}",
        err(&o)
    );
    assert_eq!(s.var("innodb_log_writer_threads"), "ON");
    assert_eq!(s.state_entries(), 0);
    let o = s.redoctor(&["apply", "--set", "no_such_variable=1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("no_such_variable"), "{}", err(&o));
}

#[test]
fn from_report_applies_the_recommendations() {
    let s = Served::start();
    let report = s.dir.path().join("report.json");
    let mut d: serde_json::Value =
        serde_json::from_str(include_str!("data/report_redo_off.json")).unwrap();
    d["pid"] = 1.into();
    std::fs::write(&report, d.to_string()).unwrap();
    let o = s.redoctor(&["apply", "--from-report", report.to_str().unwrap()]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(s.var("innodb_log_writer_threads"), "OFF");
    std::fs::write(&report, "{\"schema\": \"other\"}").unwrap();
    let o = s.redoctor(&["apply", "--from-report", report.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("redoctor.diagnosis"), "{}", err(&o));
}

#[test]
fn no_server_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_redoctor"))
        .args(["revert", "--socket"])
        .arg(dir.path().join("none.sock"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("no server socket"), "{}", err(&o));
}

/// stdout a pipe whose reader has gone (`redoctor revert | head -0`):
/// every recorded setting is still restored and the state file emptied
/// (a panic at the first printed line left the others changed).
#[test]
fn a_closed_stdout_does_not_stop_a_revert_half_way() {
    let s = Served::start();
    let o = apply_two(&s);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(s.state_entries(), 2);
    // A pipe whose reader has gone.
    let (read, write) = std::io::pipe().unwrap();
    drop(read);
    let o = Command::new(env!("CARGO_BIN_EXE_redoctor"))
        .args(["revert", "--socket"])
        .arg(s.socket())
        .arg("--state")
        .arg(s.state())
        .stdout(write)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}: {}", o.status, err(&o));
    assert_eq!(s.var("innodb_log_writer_threads"), "ON");
    assert_eq!(s.var("innodb_thread_concurrency"), "0");
    assert_eq!(s.state_entries(), 0);
}
