//! `redoctor gate run` end to end on the bundled engine (root: the probes):
//! a recorded baseline; the two injected regressions (one more notifier
//! hop per commit, a sleep on the commit path) each fail the gate with
//! exit 1 on the metrics they move; bad inputs exit 2 and overwrite nothing.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_redoctor");

fn scenario(dir: &Path, name: &str, extra: &str) -> PathBuf {
    let p = dir.join(format!("{name}.toml"));
    std::fs::write(
        &p,
        format!(
            r#"name = "gate-test"
repeats = 4
warmup = "500ms"
duration = "1500ms"
[engine]
workload = "update_index"
users = 8
cpus = 2
tables = 1
table_size = 2000
settings = {{ innodb_log_writer_threads = "ON"{extra} }}
"#
        ),
    )
    .unwrap();
    p
}

fn gate(args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("gate")
        .arg("run")
        .args(args)
        .env("REDOCTOR_ENGINE", common::engine())
        .output()
        .unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn injected_regressions_fail_the_gate() {
    if common::skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let base = scenario(dir.path(), "base", "");
    let baseline = dir.path().join("baseline.json");
    let o = gate(&[
        "--scenario",
        s(&base),
        "--baseline",
        s(&baseline),
        "--update-baseline",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let b: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&baseline).unwrap()).unwrap();
    assert_eq!(b["schema"], "redoctor.gate.baseline");
    assert_eq!(b["runs"].as_array().unwrap().len(), 4);

    // The extra hop judged through the Markdown summary (its chart beside
    // it), the sleep through JUnit: each fails on the metric it moves.
    let hop = scenario(
        dir.path(),
        "hop",
        ", redoctor_debug_commit_extra_hop = \"ON\"",
    );
    let md = dir.path().join("summary.md");
    let o = gate(&[
        "--scenario",
        s(&hop),
        "--baseline",
        s(&baseline),
        "--format",
        "md",
        "--out",
        s(&md),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "hop: {err}");
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains("| metric |"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("| `wakeups_per_commit:") && l.ends_with("| **REGRESSION** |")),
        "hop: no wakeups_per_commit regression\n{text}\n{err}"
    );
    assert!(std::fs::read_to_string(dir.path().join("summary.md.svg"))
        .unwrap()
        .contains("<svg"));

    let sleep = scenario(
        dir.path(),
        "sleep",
        ", redoctor_debug_commit_sleep_us = \"200\"",
    );
    let junit = dir.path().join("sleep.xml");
    let o = gate(&[
        "--scenario",
        s(&sleep),
        "--baseline",
        s(&baseline),
        "--format",
        "junit",
        "--out",
        s(&junit),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "sleep: {err}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let failed: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .filter_map(|n| n.parent()?.attribute("name"))
        .collect();
    assert!(
        failed
            .iter()
            .any(|f| f.starts_with("voluntary_switches_per_commit")),
        "sleep: failures {failed:?}\n{err}"
    );
}

#[test]
fn bad_inputs_exit_2_and_overwrite_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let base = scenario(dir.path(), "base", "");
    let baseline = dir.path().join("baseline.json");

    // Malformed scenario.
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "name = \"x\"\nrepeats = \"many\"\n").unwrap();
    let o = gate(&[
        "--scenario",
        s(&bad),
        "--baseline",
        s(&baseline),
        "--update-baseline",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("malformed"));
    assert!(!baseline.exists(), "nothing written");

    // A baseline of another schema version, left as it was.
    let old = "{\"schema\": \"redoctor.gate.baseline\", \"version\": 7, \"runs\": []}";
    std::fs::write(&baseline, old).unwrap();
    let out = dir.path().join("out.json");
    let o = gate(&[
        "--scenario",
        s(&base),
        "--baseline",
        s(&baseline),
        "--out",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("version 7 is not supported"), "{err}");
    assert_eq!(std::fs::read_to_string(&baseline).unwrap(), old);
    assert!(!out.exists());

    // Neither a baseline nor another build.
    let o = gate(&["--scenario", s(&base)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--against"));

    // A command that dies at once, and a pid that never appears.
    let dies = dir.path().join("dies.toml");
    std::fs::write(
        &dies,
        "name = \"d\"\n[command]\nrun = \"sh -c 'echo boom >&2; exit 3'\"\n",
    )
    .unwrap();
    let o = gate(&["--scenario", s(&dies), "--against", "/bin/true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("boom"));
    let never = dir.path().join("never.toml");
    std::fs::write(
        &never,
        "name = \"n\"\n[command]\npid = { pidfile = \"/nonexistent/x.pid\" }\nready_timeout = \"300ms\"\n",
    )
    .unwrap();
    let o = gate(&["--scenario", s(&never), "--against", "/bin/true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("did not appear"));
}

/// The committed baseline was recorded from the build the repository's own
/// gate names as its reference (`tests/run.sh` records it again when the
/// reference moves), so a user's CI that keeps the stored baseline judges
/// against the same build the side-by-side gate does.
#[test]
fn the_committed_baseline_follows_the_reference_commit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let reference = std::fs::read_to_string(root.join("tests/gate/reference-commit")).unwrap();
    let reference = reference
        .lines()
        .find(|l| !l.starts_with('#') && !l.trim().is_empty())
        .unwrap()
        .trim();
    let b: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("tests/gate/engine-commit-path.baseline.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        b["source_commit"], reference,
        "tests/gate/engine-commit-path.baseline.json was not recorded from the reference \
         commit: run bash tests/run.sh (it records it again) and commit the file"
    );
}
