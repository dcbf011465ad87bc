//! Rule files: the shipped set loads; malformed files fail with file, line
//! and reason; user directories override by id; disabling by id.

mod common;

use std::fs;

use redoctor_advisor::{AdvisorError, RuleSet};

fn load_one(text: &str) -> Result<RuleSet, AdvisorError> {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("r.toml"), text).unwrap();
    RuleSet::load(&[dir.path().to_path_buf()])
}

const GOOD: &str = r#"
[[rule]]
id = "x"
severity = "info"
setting = "innodb_log_writer_threads"
priority = 1
condition = "signals.cpu_share > t.a"
recommend = "'OFF'"
thresholds = { a = 0.5 }
confidence = 0.5
min_seconds = 1.0
min_commits = 0
rationale = "test"
sources = ["test"]
expected_effect = "test"
"#;

fn line_and_reason(text: &str) -> (usize, String) {
    match load_one(text) {
        Err(AdvisorError::RuleFile { file, line, reason }) => {
            assert!(file.ends_with("r.toml"), "{file:?}");
            (line, reason)
        }
        other => panic!("expected a rule file error, got {other:?}"),
    }
}

#[test]
fn shipped_rules_load_and_cite_sources() {
    let set = RuleSet::load(&[common::shipped_rules()]).unwrap();
    assert!(set.rules.len() >= 7, "{}", set.rules.len());
    for r in &set.rules {
        assert!(!r.sources.is_empty(), "{}", r.id);
        assert!(r.origin.contains(".toml:"), "{}", r.origin);
    }
    for id in [
        "redo-off-binlog-serial-flush",
        "redo-on-write-intensive",
        "redo-on-rt0-convoy",
        "cap-oversubscribed",
        "throttle-trx-sys",
    ] {
        assert!(set.rules.iter().any(|r| r.id == id), "{id}");
    }
}

#[test]
fn good_rule_loads() {
    let set = load_one(GOOD).unwrap();
    assert_eq!(set.rules[0].id, "x");
    assert_eq!(set.rules[0].origin.rsplit(':').next(), Some("2"));
}

#[test]
fn toml_syntax_error_names_the_line() {
    let bad = GOOD.replace("priority = 1", "priority = = 1");
    let (line, reason) = line_and_reason(&bad);
    assert_eq!(line, 6, "{reason}");
}

#[test]
fn missing_field_is_named() {
    let bad = GOOD.replace("setting = \"innodb_log_writer_threads\"\n", "");
    let (line, reason) = line_and_reason(&bad);
    assert!(reason.contains("setting"), "{reason}");
    assert!(line >= 2, "{line}");
}

#[test]
fn unknown_field_is_named() {
    let bad = GOOD.replace("priority = 1", "priority = 1\nprioritty = 2");
    let (line, reason) = line_and_reason(&bad);
    assert!(reason.contains("prioritty"), "{reason}");
    assert_eq!(line, 7);
}

#[test]
fn bad_cel_names_rule_and_line() {
    let bad = GOOD.replace("signals.cpu_share > t.a", "signals.cpu_share > > (");
    let (line, reason) = line_and_reason(&bad);
    assert_eq!(line, 7, "{reason}");
    assert!(
        reason.contains("rule 'x'") && reason.contains("condition"),
        "{reason}"
    );
}

#[test]
fn confidence_out_of_range() {
    let bad = GOOD.replace("confidence = 0.5", "confidence = 1.5");
    let (line, reason) = line_and_reason(&bad);
    assert_eq!(line, 10);
    assert!(reason.contains("confidence"), "{reason}");
}

#[test]
fn duplicate_id_in_one_dir() {
    let (line, reason) = line_and_reason(&format!("{GOOD}\n{GOOD}"));
    assert!(reason.contains("already defined"), "{reason}");
    assert!(line > 16, "{line}");
}

#[test]
fn user_dir_overrides_and_disable() {
    let user = tempfile::tempdir().unwrap();
    let text = GOOD.replace("id = \"x\"", "id = \"redo-off-binlog-serial-flush\"");
    fs::write(user.path().join("mine.toml"), text).unwrap();
    let mut set = RuleSet::load(&[common::shipped_rules(), user.path().to_path_buf()]).unwrap();
    let r = set
        .rules
        .iter()
        .find(|r| r.id == "redo-off-binlog-serial-flush")
        .unwrap();
    assert_eq!(r.priority, 1, "the user's rule replaced the shipped one");
    let n = set.rules.len();
    set.disable("cap-oversubscribed").unwrap();
    assert_eq!(set.rules.len(), n - 1);
    assert!(matches!(
        set.disable("no-such-rule"),
        Err(AdvisorError::UnknownRule(_))
    ));
}

#[test]
fn missing_dir_is_an_io_error() {
    let err = RuleSet::load(&["/nonexistent-rules-dir".into()]).unwrap_err();
    assert!(err.to_string().contains("nonexistent-rules-dir"), "{err}");
}

#[test]
fn built_in_copy_matches_the_rules_directory() {
    let shipped = RuleSet::shipped_and(&[]).unwrap();
    let from_dir = RuleSet::load(&[common::shipped_rules()]).unwrap();
    let ids = |s: &RuleSet| {
        let mut v: Vec<String> = s.rules.iter().map(|r| r.id.clone()).collect();
        v.sort();
        v
    };
    assert_eq!(
        ids(&shipped),
        ids(&from_dir),
        "every file of rules/ is listed in ruleset::SHIPPED"
    );
    let files = std::fs::read_dir(common::shipped_rules())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "toml")
        })
        .count();
    assert_eq!(files, redoctor_advisor::SHIPPED.len());
}

#[test]
fn every_signal_the_shipped_rules_read_is_documented() {
    let set = RuleSet::load(&[common::shipped_rules()]).unwrap();
    let documented: Vec<&str> = redoctor_advisor::SIGNALS.iter().map(|d| d.name).collect();
    for r in &set.rules {
        assert!(!r.reads.is_empty(), "{}", r.id);
        for path in r.reads.iter().filter_map(|p| p.strip_prefix("signals.")) {
            assert!(documented.contains(&path), "{}: signals.{path}", r.id);
        }
        for path in r.reads.iter().filter_map(|p| p.strip_prefix("t.")) {
            assert!(r.thresholds.contains_key(path), "{}: t.{path}", r.id);
        }
    }
}
