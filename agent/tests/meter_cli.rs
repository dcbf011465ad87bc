//! `redoctor meter --socket S` against a served engine under load: the
//! noise spectrum from windows of a tick up, a knob's carryover into each
//! of its two values, the knob restored; bad input named.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::Served;
use mysql::prelude::Queryable;

#[test]
fn meter_reports_the_spectrum_and_a_knobs_carryover_and_restores_it() {
    let s = Served::start();
    let mut c = s.conn();
    c.query_drop("CREATE DATABASE IF NOT EXISTS sbtest").ok();
    c.query_drop("CREATE TABLE sbtest1(id INTEGER NOT NULL, k INTEGER NOT NULL, PRIMARY KEY (id))")
        .unwrap();
    let rows: Vec<String> = (1..=100).map(|i| format!("({i}, 0)")).collect();
    c.query_drop(format!(
        "INSERT INTO sbtest1(id, k) VALUES {}",
        rows.join(",")
    ))
    .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|n| {
            let mut c = s.conn();
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut i = n;
                while !stop.load(Ordering::Relaxed) {
                    c.query_drop(format!(
                        "UPDATE sbtest1 SET k = k + 1 WHERE id = {}",
                        i % 100 + 1
                    ))
                    .unwrap();
                    i += 7;
                }
            })
        })
        .collect();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_redoctor"))
        .args(["meter", "--socket"])
        .arg(s.socket())
        .args(["--duration", "3s", "--tick", "20ms", "--json"])
        .args(["--knob", "innodb_log_writer_threads", "--values", "OFF,ON"])
        .args(["--every", "500ms"])
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    for t in clients {
        t.join().unwrap();
    }
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let spec = v["spectrum"].as_array().unwrap();
    assert!(spec.len() >= 3, "{v}");
    assert!((spec[0]["window_s"].as_f64().unwrap() - 0.02).abs() < 1e-9);
    assert!(
        spec.iter().all(|b| b["mean"].as_f64().unwrap() > 0.0),
        "{v}"
    );
    assert!(v["read_cost_p50_us"].as_f64().unwrap() > 0.0);
    let carry = v["carryover"].as_array().unwrap();
    assert_eq!(carry.len(), 2, "{v}");
    for c in carry {
        assert!(c["switches"].as_u64().unwrap() >= 2, "{c}");
        let settles = c["settles_s"].as_f64().unwrap();
        assert!((0.0..=0.25).contains(&settles), "{c}");
    }
    assert_eq!(s.var("innodb_log_writer_threads"), "ON", "restored");
}

#[test]
fn meter_refuses_a_missing_socket_and_an_unknown_counter() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_redoctor"))
        .args([
            "meter",
            "--socket",
            "/nonexistent/s.sock",
            "--duration",
            "1s",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("/nonexistent/s.sock"), "{err}");
    let s = Served::start();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_redoctor"))
        .args(["meter", "--socket"])
        .arg(s.socket())
        .args(["--counter", "No_such_counter", "--duration", "1s"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("No_such_counter") && err.contains("--counter"),
        "{err}"
    );
}
