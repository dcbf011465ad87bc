//! `redoctor diagnose --socket S --trial` against a served engine under a
//! real client load: ABBA-interleaved windows measured, the decision
//! applied (candidate kept and recorded, or the baseline restored).

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
            "--trial-design",
            "pairs",
            "--trial-rounds",
            "3",
            "--model-priors",
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
    assert_eq!(t["kind"], "trial", "one recommendation: one trial; {err}");
    assert_eq!(t["candidate_settings"]["innodb_log_writer_threads"], "OFF");
    assert_eq!(t["baseline_settings"]["innodb_log_writer_threads"], "ON");
    let windows = t["windows"].as_array().unwrap();
    assert!(
        windows
            .iter()
            .all(|w| w["commits_per_s"].as_f64().unwrap() > 0.0),
        "{t}"
    );
    // Measured windows interleave in ABBA order: B C | C B | B C.
    let sides: Vec<&str> = windows
        .iter()
        .filter(|w| w["warmup"] == false)
        .map(|w| w["side"].as_str().unwrap())
        .collect();
    let abba = [
        "baseline",
        "candidate",
        "candidate",
        "baseline",
        "baseline",
        "candidate",
    ];
    let outcome = t["outcome"].as_str().unwrap();
    if outcome == "aborted_floor" {
        assert_eq!(sides.last(), Some(&"candidate"), "{t}");
        assert!(abba.starts_with(&sides), "{sides:?}");
    } else {
        assert_eq!(sides, abba, "--trial-rounds 3: three pairs; {t}");
        assert_eq!(t["log_ratios"].as_array().unwrap().len(), 3);
        assert_eq!(t["looks"].as_array().unwrap().len(), 1, "{t}");
    }
    // One warm-up after each switch, restores after a floor strike
    // included: a window is a warm-up exactly when the settings changed
    // since the window before it.
    for (i, w) in windows.iter().enumerate().skip(1) {
        let switched = w["side"] != windows[i - 1]["side"];
        assert_eq!(w["warmup"] == true, switched, "window {i}: {t}");
    }
    assert_eq!(windows[0]["warmup"], false, "{t}");
    assert_ne!(outcome, "failed", "{}", t["reason"]);
    let kept = outcome == "kept";
    assert!(err.contains("trial: "), "{err}");
    verdict_follows_trial(&v, kept);
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

/// The bundled engine's redo mode has a short, known carryover, so by
/// default its trial is a switchback: periods of 600 ms (a 300-ms guard,
/// the measured carryover) in blocks of four
/// (ABBA or BAAB), a guard exactly after each switch, one log-ratio per
/// block, the decision applied; `--candidate` names the candidate, and one
/// equal to the current setting is an A/A run that keeps nothing.
#[test]
fn switchback_trial_alternates_in_blocks_and_a_named_candidate_runs() {
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
    let run = |candidate: &str, out: &std::path::Path, extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_redoctor"))
            .args(["diagnose", "--pid", &s.child.id().to_string()])
            .args(["--duration", "1s", "--model-priors", "--format", "json"])
            .args(["--trial", "--trial-max", "24s", "--candidate", candidate])
            .arg("--socket")
            .arg(s.socket())
            .arg("--state")
            .arg(s.state())
            .arg("--out")
            .arg(out)
            .args(extra)
            .output()
            .unwrap()
    };
    let out = s.dir.path().join("report.json");
    let o = run("innodb_log_writer_threads=OFF", &out, &[]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let t = &v["trial"];
    assert_eq!(t["kind"], "trial", "{t}");
    assert_eq!(t["plan"]["design"]["kind"], "switchback", "{}", t["plan"]);
    assert!(
        t["test"].as_str().unwrap().starts_with("switchback"),
        "{}",
        t["test"]
    );
    assert_ne!(t["outcome"], "failed", "{}", t["reason"]);
    let windows = t["windows"].as_array().unwrap();
    // Four measured periods per block, a guard exactly at each switch.
    let blocks = t["log_ratios"].as_array().unwrap().len();
    let measured = windows.iter().filter(|w| w["warmup"] == false).count();
    let strikes = t["strikes"].as_u64().unwrap() as usize;
    assert!(
        blocks >= 1 && measured >= 4 * blocks && measured <= 4 * blocks + 4 + strikes,
        "{t}"
    );
    for (i, w) in windows.iter().enumerate().skip(1) {
        let switched = w["side"] != windows[i - 1]["side"];
        assert_eq!(w["warmup"] == true, switched, "window {i}: {t}");
    }
    // Strikes that are not consecutive each cost one switch back; two in a
    // row abort. So a trial that ran on has at most one per block (plus the
    // unfinished one), an aborted one has its two.
    if t["outcome"] == "aborted_floor" {
        assert!(strikes >= 2, "{t}");
    } else {
        assert!(strikes <= blocks + 1, "{t}");
    }
    // The data sit on a disk and commits flush it: every measured period
    // carries the disks' write latency, and the record says what the
    // adjustment by it would do (recorded, not decided on: the default).
    assert!(
        windows
            .iter()
            .filter(|w| w["warmup"] == false)
            .all(|w| w["covariate"].as_f64().is_some_and(f64::is_finite)),
        "a measured period without the disks' write latency: {t}"
    );
    let a = &t["adjustment"];
    let why = a["why"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("recorded") || why.starts_with("not used"),
        "{t}"
    );
    assert_eq!(a["used"], false, "{t}");
    assert!(t["unadjusted"].is_null(), "{t}");
    assert_eq!(
        why.starts_with("recorded"),
        a["adjusted"].is_object(),
        "the adjusted test is recorded whenever the covariate qualified: {t}"
    );
    assert_eq!(a["blocks"].as_u64(), Some(blocks as u64), "{t}");
    assert_eq!(t["plan"]["design"]["guard_s"], 0.3, "{}", t["plan"]);
    // The budget holds the planned blocks; a strike's switch back to the
    // baseline adds one guard period (0.3 s) beyond them (the floor guard
    // restores the baseline at once, whatever the plan).
    let over = 0.5 + 0.35 * strikes as f64;
    assert!(t["elapsed_s"].as_f64().unwrap() <= 24.0 + over, "{t}");
    let kept = t["outcome"] == "kept";
    // The verdict follows the trial of the named candidate.
    assert_eq!(v["verdict"]["basis"], "trial", "{}", v["verdict"]);
    assert_eq!(
        v["verdict"]["kind"],
        if kept { "change" } else { "no_change" },
        "{}",
        v["verdict"]
    );
    assert_eq!(
        s.var("innodb_log_writer_threads"),
        if kept { "OFF" } else { "ON" }
    );
    if kept {
        c.query_drop("SET GLOBAL innodb_log_writer_threads = ON")
            .unwrap();
    }
    // A/A: the setting against itself keeps nothing and changes nothing.
    // As a fixed-horizon trial (one look): it runs its whole budget, and
    // its estimate is not one of an early stop.
    let out = s.dir.path().join("aa.json");
    let o = run(
        "innodb_log_writer_threads=ON",
        &out,
        &["--trial-looks", "1"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let t = &v["trial"];
    assert_ne!(t["outcome"], "failed", "{}", t["reason"]);
    assert_eq!(t["plan"]["design"]["looks"], 1, "{}", t["plan"]);
    // Every block the 24-s budget holds (blocks of four periods).
    let period = t["plan"]["design"]["period_s"].as_f64().unwrap();
    let blocks = t["log_ratios"].as_array().unwrap().len();
    assert_eq!(blocks, (24.0 / (4.0 * period)).floor() as usize, "{t}");
    assert_eq!(t["looks"].as_array().unwrap().len(), 1, "{t}");
    assert!(
        !t["reason"].as_str().unwrap().contains("stopped early"),
        "{t}"
    );
    assert_eq!(s.var("innodb_log_writer_threads"), "ON");
    stop.store(true, Ordering::Relaxed);
    for t in clients {
        t.join().unwrap();
    }
}

/// The report's verdict and recommendations follow what the trial measured.
fn verdict_follows_trial(v: &serde_json::Value, kept: bool) {
    let verdict = &v["verdict"];
    assert_eq!(verdict["basis"], "trial", "{verdict}");
    let text = verdict["text"].as_str().unwrap();
    if kept {
        assert_eq!(verdict["kind"], "change", "{verdict}");
        assert!(text.starts_with("change verified live and kept"), "{text}");
        let recs = v["recommendations"].as_array().unwrap();
        assert!(
            !recs.is_empty() && recs.iter().all(|r| r["verified"] == true),
            "{recs:?}"
        );
    } else {
        assert_eq!(verdict["kind"], "no_change", "{verdict}");
        assert!(!text.contains("change advised"), "{text}");
        assert!(v["recommendations"].as_array().unwrap().is_empty());
        let rejected = v["not_applied"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["status"] == "trial_rejected");
        assert!(rejected, "{}", v["not_applied"]);
    }
}

fn sysbench(socket: &std::path::Path, cmd: &str, threads: u32, secs: u32) -> std::process::Child {
    std::process::Command::new("sysbench")
        .args([
            "--db-driver=mysql",
            "--mysql-user=root",
            "--tables=2",
            "--table-size=2000",
            &format!("--threads={threads}"),
            &format!("--time={secs}"),
            "--rand-type=uniform",
        ])
        .arg(format!("--mysql-socket={}", socket.display()))
        .args(["oltp_update_index", cmd])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// `diagnose --trial` against `serve` under stock sysbench (oltp_update_index,
/// 64 threads), with the redo mode's change forced by `ALWAYS_OFF` (the
/// shipped rules may add a cap or a throttle, and then the trial is a
/// search): a trial runs and tries RT0, and whatever it measures, the
/// verdict and the server's settings follow it.
#[test]
fn trial_under_sysbench_verdict_follows_the_measurement() {
    if common::skip() {
        return;
    }
    if redoctor_testkit::skip_if_missing(
        "sysbench",
        redoctor_testkit::tool_missing("sysbench", "apt-get install sysbench; .ci/run does this"),
    ) {
        return;
    }
    let s = Served::start();
    let prep = sysbench(&s.socket(), "prepare", 1, 0)
        .wait_with_output()
        .unwrap();
    assert!(
        prep.status.success(),
        "{}",
        String::from_utf8_lossy(&prep.stderr)
    );
    let rules = tempfile::tempdir().unwrap();
    std::fs::write(rules.path().join("t.toml"), ALWAYS_OFF).unwrap();
    // Outlasts the diagnosis: 3 s observed, then at most 40 s of trial
    // (up to four candidates of at least 3 pairs of 3 s each).
    let mut load = sysbench(&s.socket(), "run", 64, 90);
    let out = s.dir.path().join("report.json");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_redoctor"))
        .args(["diagnose", "--pid", &s.child.id().to_string()])
        .args(["--duration", "3s", "--model-priors", "--trial"])
        .args([
            "--trial-window",
            "1s",
            "--trial-max",
            "40s",
            "--format",
            "json",
        ])
        .arg("--socket")
        .arg(s.socket())
        .arg("--state")
        .arg(s.state())
        .arg("--rules")
        .arg(rules.path())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let _ = load.kill();
    let _ = load.wait();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    // The rule always proposes RT0 and the priors' interval is too wide to
    // rule it out, so a trial must have run.
    let t = &v["trial"];
    let (trials, before, after): (Vec<&serde_json::Value>, _, _) = match t["kind"].as_str() {
        Some("trial") => {
            let after = if t["outcome"] == "kept" {
                &t["candidate_settings"]
            } else {
                &t["baseline_settings"]
            };
            (vec![t], &t["baseline_settings"], after)
        }
        Some("search") => (
            t["steps"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|s| s["result"].get("tried"))
                .collect(),
            &t["start_settings"],
            &t["final_settings"],
        ),
        _ => panic!(
            "no trial ran; model: {}; verdict: {}; {err}",
            v["model"], v["verdict"]
        ),
    };
    assert!(
        trials
            .iter()
            .any(|t| t["candidate_settings"]["innodb_log_writer_threads"] == "OFF"),
        "RT0 was not tried: {t}"
    );
    for t in &trials {
        assert_ne!(t["outcome"], "failed", "{}", t["reason"]);
        eprintln!(
            "trial under sysbench: {}: {}: {}",
            t["candidate_settings"], t["outcome"], t["reason"]
        );
    }
    let kept = trials.iter().any(|t| t["outcome"] == "kept");
    verdict_follows_trial(&v, kept);
    // The server is left as the trial decided, and each kept change is
    // recorded for `redoctor revert`.
    let rt0_kept = trials.iter().any(|t| {
        t["outcome"] == "kept" && t["candidate_settings"]["innodb_log_writer_threads"] == "OFF"
    });
    assert_eq!(
        after["innodb_log_writer_threads"],
        if rt0_kept { "OFF" } else { "ON" },
        "{t}"
    );
    assert_eq!(
        s.var("innodb_log_writer_threads"),
        after["innodb_log_writer_threads"].as_str().unwrap(),
        "{t}"
    );
    let changed = after
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, x)| before[k.as_str()] != **x)
        .count();
    assert_eq!(changed > 0, kept, "{t}");
    if kept {
        assert_eq!(s.state_entries(), changed, "{t}");
    } else {
        assert!(!s.state().exists() || s.state_entries() == 0);
    }
}
