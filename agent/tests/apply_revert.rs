//! `redoctor apply` / `revert` against a live bundled engine served over the
//! MySQL protocol (`redoctor-engine serve --socket S`): round trip, the
//! durability guard, a refused value leaving nothing changed, and
//! `--from-report`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};

fn engine() -> PathBuf {
    let me = Path::new(env!("CARGO_BIN_EXE_redoctor"));
    let p = me.with_file_name("redoctor-engine");
    if !p.is_file() {
        let mut b = Command::new(env!("CARGO"));
        b.args(["build", "-p", "redoctor-engine", "--bin", "redoctor-engine"]);
        if me.components().any(|c| c.as_os_str() == "release") {
            b.arg("--release");
        }
        assert!(
            b.status().unwrap().success(),
            "building redoctor-engine failed"
        );
    }
    p
}

/// A served engine in a temporary directory, killed on drop.
struct Served {
    child: Child,
    dir: tempfile::TempDir,
}

impl Served {
    fn start() -> Served {
        let dir = tempfile::tempdir().unwrap();
        let child = Command::new(engine())
            .arg("serve")
            .arg("--datadir")
            .arg(dir.path().join("data"))
            .arg("--socket")
            .arg(dir.path().join("s.sock"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let s = Served { child, dir };
        let t = Instant::now();
        while !s.socket().exists() {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        s
    }
    fn socket(&self) -> PathBuf {
        self.dir.path().join("s.sock")
    }
    fn state(&self) -> PathBuf {
        self.dir.path().join("state.json")
    }
    fn var(&self, name: &str) -> String {
        let opts = OptsBuilder::new()
            .socket(Some(self.socket().to_str().unwrap().to_string()))
            .user(Some("root"));
        let mut c = Conn::new(opts).unwrap();
        let rows: Vec<(String, String)> = c
            .query(format!("SHOW GLOBAL VARIABLES LIKE '{name}'"))
            .unwrap();
        rows.into_iter().next().unwrap().1
    }
    fn redoctor(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_redoctor"))
            .args(args)
            .arg("--socket")
            .arg(self.socket())
            .arg("--state")
            .arg(self.state())
            .output()
            .unwrap()
    }
    fn state_entries(&self) -> usize {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(self.state()).unwrap()).unwrap();
        v["entries"].as_array().unwrap().len()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn apply_then_revert_restores_the_old_values() {
    let s = Served::start();
    assert_eq!(s.var("innodb_log_writer_threads"), "ON");
    let o = s.redoctor(&[
        "apply",
        "--set",
        "innodb_log_writer_threads=OFF",
        "--set",
        "innodb_thread_concurrency=4",
    ]);
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
