//! One grammar across the binaries: durations with units, on/off values,
//! the test helper hidden from `--help`.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_redoctor-engine");

#[test]
fn run_takes_durations_with_units() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(BIN)
        .args([
            "run",
            "--json",
            "--workload",
            "update_index",
            "--users",
            "2",
        ])
        .args([
            "--duration",
            "300ms",
            "--warmup",
            "0s",
            "--report-interval",
            "100ms",
        ])
        .args([
            "--tables",
            "1",
            "--table-size",
            "200",
            "--redo-threads",
            "off",
        ])
        .args(["--lock-wait-timeout", "2s", "--datadir"])
        .arg(dir.path().join("d"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let secs = v["measured_secs"].as_f64().unwrap();
    assert!((0.25..1.0).contains(&secs), "{v}");
    assert_eq!(v["redo_threads"], "RT0");

    let bad = Command::new(BIN)
        .args(["run", "--workload", "update_index", "--duration", "3x"])
        .arg("--datadir")
        .arg(dir.path().join("e"))
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("unknown unit") && err.contains("ms, s, m or h"),
        "{err}"
    );
}

#[test]
fn the_crash_test_helper_is_hidden_but_works() {
    let help = Command::new(BIN).arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains("run") && text.contains("serve") && text.contains("recover"));
    assert!(!text.contains("verify-acks"), "{text}");
    let o = Command::new(BIN)
        .args(["verify-acks", "--help"])
        .output()
        .unwrap();
    assert!(o.status.success());
}
