//! `redoctor diagnose --socket S --trial` against a served engine under a
//! real client load: interleaved windows measured, the decision applied
//! (candidate kept and recorded, or the baseline restored).

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::Served;
use mysql::prelude::Queryable;

const ALWAYS_OFF: &str = r#"[[rule]]
id = "test-always-redo-off"
severity = "info"
setting = "innodb_log_writer_threads"
priority = 1000
condition = "true"
recommend = "'OFF'"
confidence = 0.5
min_seconds = 0.0
min_commits = 0
rationale = "test: always fires"
sources = ["test"]
expected_effect = "test"
"#;

#[test]
fn trial_measures_interleaved_windows_and_applies_its_decision() {
    if common::skip() {
        return;
    }
    let s = Served::start();
    let mut c = s.conn();
    c.query_drop("CREATE DATABASE IF NOT EXISTS sbtest").ok();
    c.query_drop(
        "CREATE TABLE sbtest1(id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL, \
         c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id))",
    )
    .unwrap();
    let rows: Vec<String> = (1..=200).map(|i| format!("({i}, 0, 'c', 'p')")).collect();
    c.query_drop(format!(
        "INSERT INTO sbtest1(id, k, c, pad) VALUES {}",
        rows.join(",")
    ))
    .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..6)
        .map(|n| {
            let mut c = s.conn();
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut i = n;
                while !stop.load(Ordering::Relaxed) {
                    c.query_drop(format!(
                        "UPDATE sbtest1 SET k = k + 1 WHERE id = {}",
                        i % 200 + 1
                    ))
                    .unwrap();
                    i += 7;
                }
            })
        })
        .collect();
    let rules = tempfile::tempdir().unwrap();
    std::fs::write(rules.path().join("t.toml"), ALWAYS_OFF).unwrap();
    let out = s.dir.path().join("report.json");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_redoctor"))
        .args([
            "diagnose",
            "--pid",
            &s.child.id().to_string(),
            "--duration",
            "1.5s",
            "--interval",
            "0.5s",
        ])
        .args([
            "--trial",
            "--trial-rounds",
            "3",
            "--format",
            "json",
            "--socket",
        ])
        .arg(s.socket())
        .arg("--state")
        .arg(s.state())
        .arg("--rules")
        .arg(rules.path())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    for t in clients {
        t.join().unwrap();
    }
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(
        v["facts"]["settings_source"]["innodb_thread_concurrency"], "stated",
        "read from the server"
    );
    let t = &v["trial"];
    assert_eq!(t["candidate_settings"]["innodb_log_writer_threads"], "OFF");
    assert_eq!(t["baseline_settings"]["innodb_log_writer_threads"], "ON");
    let (a, b) = (
        t["baseline"].as_array().unwrap(),
        t["candidate"].as_array().unwrap(),
    );
    assert_eq!((a.len(), b.len()), (3, 3));
    assert!(a.iter().chain(b).all(|x| x.as_f64().unwrap() > 0.0), "{t}");
    let kept = t["kept"].as_bool().unwrap();
    assert!(err.contains("trial: "), "{err}");
    if kept {
        assert_eq!(s.var("innodb_log_writer_threads"), "OFF");
        assert_eq!(s.state_entries(), 1);
    } else {
        assert_eq!(
            s.var("innodb_log_writer_threads"),
            "ON",
            "rolled back: {}",
            t["reason"]
        );
        assert!(!s.state().exists() || s.state_entries() == 0);
    }
}
