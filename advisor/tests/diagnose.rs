//! Evaluation of the shipped rules on constructed windows: firing, evidence,
//! conflict resolution, `requires`, insufficient evidence, evaluation errors.

mod common;

use common::{shipped_rules, windows, Shape};
use redoctor_advisor::advice::NotApplied;
use redoctor_advisor::{diagnose, summarize, Diagnosis, Facts, RuleSet, VerdictKind};

fn run(shape: Shape, n: usize, stated: &[(&str, &str)], disable: &[&str]) -> Diagnosis {
    let mut rules = RuleSet::load(&[shipped_rules()]).unwrap();
    for id in disable {
        rules.disable(id).unwrap();
    }
    let w = windows(n, shape);
    let stated: Vec<(String, String)> = stated
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let facts = Facts::infer("redoctor-engine", &summarize(&w), &stated);
    diagnose(4242, w, facts, &rules).unwrap()
}

fn status<'a>(d: &'a Diagnosis, rule: &str) -> Option<&'a NotApplied> {
    d.not_applied.iter().find(|n| n.rule == rule)
}

#[test]
fn binlog_on_few_cores_turns_redo_threads_off_and_wins_the_group() {
    let d = run(
        Shape {
            binlog_bytes: 1 << 20,
            ..Shape::default()
        },
        3,
        &[],
        &[],
    );
    assert_eq!(d.verdict.kind, VerdictKind::Change, "{}", d.verdict.text);
    assert!(d.facts.binlog);
    let r = &d.recommendations[0];
    assert_eq!(r.rule, "redo-off-binlog-few-cores");
    assert_eq!((r.current.as_str(), r.proposed.as_str()), ("ON", "OFF"));
    let names: Vec<&str> = r.evidence.iter().map(|e| e.name.as_str()).collect();
    assert!(
        names.contains(&"facts.binlog") && names.contains(&"t.max_cores"),
        "{names:?}"
    );
    assert_eq!(
        r.apply_mysql.as_deref(),
        Some("SET GLOBAL innodb_log_writer_threads = OFF;")
    );
    // The small-group rule also fired (5 commits per fsync, 4 wakeups per commit) and lost.
    let lost = status(&d, "redo-off-handoff-small-groups").expect("fired");
    assert_eq!(lost.status, "overridden");
    assert!(
        lost.reason.contains("redo-off-binlog-few-cores"),
        "{}",
        lost.reason
    );
    assert!(r.confidence > 0.0 && r.confidence <= 0.8);
}

#[test]
fn already_off_is_already_set_not_advised() {
    let d = run(
        Shape {
            binlog_bytes: 1 << 20,
            log_threads: 0,
            ..Shape::default()
        },
        3,
        &[],
        &[],
    );
    assert_eq!(d.verdict.kind, VerdictKind::NoChange, "{}", d.verdict.text);
    assert_eq!(
        status(&d, "redo-off-binlog-few-cores").unwrap().status,
        "already_set"
    );
}

#[test]
fn fast_fsync_turns_redo_threads_off() {
    let d = run(
        Shape {
            fsync_bucket_hi_ns: 8192,
            commit_path_wakeups: 0,
            ..Shape::default()
        },
        3,
        &[],
        &[],
    );
    assert_eq!(d.recommendations.len(), 1, "{:?}", d.not_applied);
    assert_eq!(d.recommendations[0].rule, "redo-off-fast-fsync");
}

#[test]
fn write_intensive_binlog_off_with_headroom_turns_redo_threads_on() {
    let shape = Shape {
        log_threads: 0,
        commits: 40_000,
        redo_fsyncs: 1_000,
        cpus_busy: 1.2,
        runnable: 1.4,
        users: 64,
        commit_path_wakeups: 40_000,
        ..Shape::default()
    };
    let d = run(shape, 4, &[], &[]);
    let r = &d.recommendations[0];
    assert_eq!(
        (r.rule.as_str(), r.proposed.as_str()),
        ("redo-on-write-intensive-headroom", "ON")
    );
    // The same load with binlog ON: the binlog rule (priority 90) says OFF, already set.
    let d = run(
        Shape {
            binlog_bytes: 1 << 20,
            ..shape
        },
        4,
        &[],
        &[],
    );
    assert!(d.recommendations.is_empty(), "{:?}", d.recommendations);
}

fn collapse() -> Shape {
    Shape {
        log_threads: 0,
        users: 512,
        commits: 8_000,
        cpus_busy: 1.9,
        runnable: 40.0,
        user_futex_share: 0.8,
        commit_path_wakeups: 8_000,
        redo_fsyncs: 400,
        ..Shape::default()
    }
}

#[test]
fn cap_beats_throttle_in_the_admission_group() {
    let d = run(collapse(), 3, &[], &[]);
    let advised: Vec<(&str, &str)> = d
        .recommendations
        .iter()
        .map(|r| (r.setting.as_str(), r.proposed.as_str()))
        .collect();
    assert!(
        advised.contains(&("innodb_thread_concurrency", "4")),
        "{advised:?}"
    );
    assert!(
        advised.contains(&("innodb_admission_policy", "fifo")),
        "{advised:?}"
    );
    let t = status(&d, "throttle-trx-sys").unwrap();
    assert_eq!(t.status, "overridden");
    assert!(t.reason.contains("group 'admission'"), "{}", t.reason);
}

#[test]
fn disabling_the_cap_leaves_the_throttle_and_drops_what_required_it() {
    let d = run(collapse(), 3, &[], &["cap-oversubscribed"]);
    assert!(d.rules_disabled.contains(&"cap-oversubscribed".to_string()));
    let advised: Vec<(&str, &str)> = d
        .recommendations
        .iter()
        .map(|r| (r.setting.as_str(), r.proposed.as_str()))
        .collect();
    assert_eq!(advised, vec![("innodb_max_active_transactions", "16")]);
    assert_eq!(status(&d, "cap-fifo-admission").unwrap().status, "requires");
}

#[test]
fn stated_settings_are_respected() {
    let d = run(collapse(), 3, &[("innodb_thread_concurrency", "8")], &[]);
    assert!(d
        .recommendations
        .iter()
        .all(|r| r.setting != "innodb_thread_concurrency"));
    assert_eq!(
        d.facts.settings_source["innodb_thread_concurrency"],
        "stated"
    );
}

#[test]
fn too_short_is_insufficient_evidence() {
    let d = run(
        Shape {
            secs: 0.4,
            ..Shape::default()
        },
        1,
        &[],
        &[],
    );
    assert_eq!(d.verdict.kind, VerdictKind::InsufficientEvidence);
    assert!(
        d.verdict.text.contains("observed only"),
        "{}",
        d.verdict.text
    );
    assert!(d.recommendations.is_empty());
}

#[test]
fn idle_is_insufficient_evidence() {
    let idle = Shape {
        commits: 0,
        cpus_busy: 0.001,
        runnable: 0.001,
        redo_fsyncs: 0,
        commit_path_wakeups: 0,
        ..Shape::default()
    };
    let d = run(idle, 5, &[], &[]);
    assert_eq!(d.verdict.kind, VerdictKind::InsufficientEvidence);
    assert!(d.verdict.text.contains("idle"), "{}", d.verdict.text);
}

#[test]
fn per_rule_minimum_evidence() {
    // 1.5 s: enough to look, too short for rules that need 2 s.
    let d = run(
        Shape {
            binlog_bytes: 1 << 20,
            secs: 1.5,
            ..Shape::default()
        },
        1,
        &[],
        &[],
    );
    assert!(d.recommendations.is_empty());
    let s = status(&d, "redo-off-binlog-few-cores").unwrap();
    assert_eq!(s.status, "insufficient_evidence");
    assert!(s.reason.contains("min_seconds"), "{}", s.reason);
}

#[test]
fn a_rule_that_fails_to_evaluate_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.toml"),
        r#"[[rule]]
id = "reads-a-missing-signal"
severity = "info"
setting = "innodb_thread_concurrency"
priority = 1
condition = "signals.no_such_signal > 1.0"
recommend = "1"
confidence = 0.5
min_seconds = 0.0
min_commits = 0
rationale = "test"
sources = ["test"]
expected_effect = "test"
"#,
    )
    .unwrap();
    let rules = RuleSet::load(&[dir.path().to_path_buf()]).unwrap();
    let w = windows(2, Shape::default());
    let facts = Facts::infer("redoctor-engine", &summarize(&w), &[]);
    let d = diagnose(1, w, facts, &rules).unwrap();
    let s = status(&d, "reads-a-missing-signal").unwrap();
    assert_eq!(s.status, "error");
    assert!(s.reason.contains("no_such_signal"), "{}", s.reason);
}

#[test]
fn summary_sums_windows() {
    let w = windows(4, Shape::default());
    let s = summarize(&w);
    assert_eq!(s["window_s"], 4.0);
    assert_eq!(s["commits"], 20_000.0);
    assert_eq!(s["commits_per_s"], 5_000.0);
    assert_eq!(s["commits_per_fsync"], 5.0);
    assert_eq!(s["commit_path_wakeups_per_commit"], 4.0);
    assert_eq!(s["redo_fsync_p50_us"], 131.072);
    assert_eq!(s["tps_trend"], 1.0);
}
