//! Every report format: JSON parsed back, HTML and its SVGs well-formed,
//! Markdown tables consistent, text verdict first.

mod common;
mod sim;

use common::{shipped_rules, windows, Shape};
use redoctor_advisor::experiment::{run_trial, search, Candidate, Experiment, Plan};
use redoctor_advisor::report::{self, Format};
use redoctor_advisor::{diagnose, summarize, Diagnosis, Facts, RuleSet};

fn diagnosis() -> Diagnosis {
    let rules = RuleSet::load(&[shipped_rules()]).unwrap();
    let w = windows(
        3,
        Shape {
            binlog_bytes: 1 << 20,
            ..common::small_groups()
        },
    );
    let facts = Facts::infer("redoctor-engine", &summarize(&w), &[]);
    let mut d = diagnose(4242, w, facts, &rules, &common::confident_model()).unwrap();
    // Text that needs escaping everywhere.
    d.recommendations[0].rationale.push_str(" <a & b> | \"q\"");
    d
}

#[test]
fn json_round_trips_and_is_versioned() {
    let d = diagnosis();
    let text = report::render(&d, Format::Json).unwrap();
    let back = Diagnosis::from_json(&text).unwrap();
    assert_eq!(back, d);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schema"], "redoctor.diagnosis");
    assert_eq!(v["version"], 2);
    assert_eq!(v["verdict"]["kind"], "change");
    assert_eq!(v["recommendations"][0]["proposed"], "OFF");
    let other = text.replace("\"version\": 2", "\"version\": 99");
    assert!(Diagnosis::from_json(&other)
        .unwrap_err()
        .contains("version"));
    assert!(Diagnosis::from_json("{\"schema\":\"x\"}")
        .unwrap_err()
        .contains("schema"));
}

#[test]
fn text_puts_the_verdict_first() {
    let t = report::render_with(&diagnosis(), Format::Text, true).unwrap();
    assert!(
        t.starts_with("VERDICT: change advised: innodb_log_writer_threads ON -> OFF"),
        "{t}"
    );
    let rec = t.find("1. innodb_log_writer_threads: ON -> OFF").unwrap();
    let sig = t.find("Signals (all windows)").unwrap();
    assert!(rec < sig);
    assert!(t.contains("facts.binlog"));
    assert!(t.contains("SET GLOBAL innodb_log_writer_threads = OFF;"));
}

#[test]
fn markdown_tables_are_consistent() {
    let m = report::render(&diagnosis(), Format::Markdown).unwrap();
    assert!(m.contains("**Verdict:** change advised"));
    // Every table row has as many unescaped pipes as its table's header.
    let mut width = None;
    for line in m.lines() {
        if !line.starts_with('|') {
            width = None;
            continue;
        }
        let pipes = line.replace("\\|", "").matches('|').count();
        match width {
            None => width = Some(pipes),
            Some(w) => assert_eq!(w, pipes, "{line}"),
        }
    }
}

#[test]
fn html_and_its_svg_charts_are_well_formed() {
    let d = diagnosis();
    let h = report::render(&d, Format::Html).unwrap();
    let body = h.trim_start_matches("<!DOCTYPE html>\n");
    let doc = roxmltree::Document::parse(body).expect("HTML is well-formed");
    let svgs: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("svg"))
        .collect();
    assert_eq!(svgs.len(), 4, "timeline, wakeup heatmap, two histograms");
    let texts: String = doc.descendants().filter_map(|n| n.text()).collect();
    assert!(texts.contains("Wakeups by role"));
    assert!(texts.contains("<a & b>"), "escaped text reads back");
    for svg in [
        report::timeline_svg(&d).unwrap(),
        report::wakeup_heatmap_svg(&d).unwrap(),
        report::runq_latency_svg(&d).unwrap(),
        report::fsync_latency_svg(&d).unwrap(),
    ] {
        let doc = roxmltree::Document::parse(&svg).expect("SVG is well-formed");
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        assert!(doc.descendants().any(|n| n.has_tag_name("rect")));
    }
}

#[test]
fn format_names() {
    assert_eq!("md".parse::<Format>().unwrap(), Format::Markdown);
    assert!("pdf"
        .parse::<Format>()
        .unwrap_err()
        .contains("text, json, md or html"));
}

/// A diagnosis with a trial (from a simulated testbed) and one with a search.
fn with_trials() -> [Diagnosis; 2] {
    let (b, c) = (sim::s(&[("x", "ON")]), sim::s(&[("x", "OFF")]));
    let mut tb = sim::Sim::new(&[(b.clone(), 1000.0), (c.clone(), 1300.0)], 0.02, 1);
    let plan = Plan::default();
    let t = run_trial(&mut tb, &b, &c, &plan, plan.max_total);
    let mut one = diagnosis();
    one.trial = Some(Experiment::Trial(t));
    let mut tb = sim::Sim::new(&[(b, 1000.0), (c.clone(), 1300.0)], 0.02, 2);
    let cands = vec![Candidate::new("x <off>", c, 0.3)];
    let mut two = diagnosis();
    two.trial = Some(Experiment::Search(search(&mut tb, cands, &plan)));
    [one, two]
}

#[test]
fn the_trial_is_shown_in_every_format() {
    let [one, two] = with_trials();
    let t = report::render_with(&one, Format::Text, true).unwrap();
    assert!(t.contains("\nTRIAL\n"), "{t}");
    assert!(t.contains("   outcome: kept"), "{t}");
    assert!(t.contains("   reason: candidate faster: +"), "{t}");
    assert!(t.contains("   estimate: candidate/baseline 1."), "{t}");
    assert!(t.contains("99.9% interval"), "{t}");
    assert!(t.contains("   resolution: 4 pairs resolve ±"), "{t}");
    assert!(t.contains("settings: x ON -> OFF"), "{t}");
    assert!(t.contains("warm-up (discarded)"), "{t}");
    let m = report::render(&one, Format::Markdown).unwrap();
    assert!(
        m.contains("## Trial\n") && m.contains("| pair | side | window | commits/s | seconds |"),
        "{m}"
    );
    let s = report::render_with(&two, Format::Text, true).unwrap();
    assert!(
        s.contains("TRIAL SEARCH") && s.contains("CANDIDATE 1: X <OFF>"),
        "{s}"
    );
    assert!(s.contains("kept: x <off> (x=OFF)"), "{s}");
    for d in [&one, &two] {
        let h = report::render(d, Format::Html).unwrap();
        let doc = roxmltree::Document::parse(h.trim_start_matches("<!DOCTYPE html>\n"))
            .expect("HTML is well-formed");
        let texts: String = doc.descendants().filter_map(|n| n.text()).collect();
        assert!(texts.contains("outcome: kept") && texts.contains("warm-up (discarded)"));
        let back = Diagnosis::from_json(&report::render(d, Format::Json).unwrap()).unwrap();
        assert_eq!(&back, d);
    }
    assert!(report::render(&two, Format::Html)
        .unwrap()
        .contains("x &lt;off&gt;"));
}

#[test]
fn a_version_1_report_is_read_without_its_trial() {
    let mut v: serde_json::Value =
        serde_json::from_str(&report::render(&diagnosis(), Format::Json).unwrap()).unwrap();
    v["version"] = 1.into();
    v["trial"] = serde_json::json!({"baseline": [1.0], "candidate": [2.0], "kept": false});
    let d = Diagnosis::from_json(&v.to_string()).unwrap();
    assert_eq!(d.trial, None);
    assert_eq!(d.recommendations, diagnosis().recommendations);
}

/// Every format tells how to apply a recommendation on the server that was
/// diagnosed: the bundled engine's and MySQL 8's commands, MariaDB's, or
/// PostgreSQL's ALTER SYSTEM, never another server's.
#[test]
fn apply_lines_name_the_diagnosed_server() {
    let mut d = diagnosis();
    assert!(!d.recommendations.is_empty());
    let all = |d: &Diagnosis| {
        [Format::Text, Format::Markdown, Format::Html].map(|f| report::render(d, f).unwrap())
    };
    for out in all(&d) {
        assert!(out.contains("apply (bundled engine)"), "{out}");
        assert!(out.contains("apply (MySQL 8)"), "{out}");
    }
    d.facts.engine = "mariadb".into();
    for out in all(&d) {
        assert!(out.contains("apply (MariaDB)"), "{out}");
        assert!(
            !out.contains("apply (bundled engine)") && !out.contains("apply (MySQL 8)"),
            "{out}"
        );
    }
    d.facts.engine = "postgresql".into();
    for r in &mut d.recommendations {
        r.apply_postgresql = Some(format!(
            "ALTER SYSTEM SET {} = '{}';",
            r.setting, r.proposed
        ));
    }
    for out in all(&d) {
        assert!(out.contains("ALTER SYSTEM SET"), "{out}");
        assert!(
            !out.contains("apply (bundled engine)") && !out.contains("apply (MySQL 8)"),
            "{out}"
        );
    }
}

/// The default text report fits one screen: the verdict, the change with
/// its expected gain, interval and risk, the signals that decided it and
/// what to run next; `--verbose` has everything.
#[test]
fn the_text_report_fits_one_screen() {
    let d = diagnosis();
    let t = report::render(&d, Format::Text).unwrap();
    assert!(t.lines().count() <= 25, "{} lines:\n{t}", t.lines().count());
    assert!(t.starts_with("VERDICT: change advised"), "{t}");
    assert!(
        t.contains("CHANGE: innodb_log_writer_threads ON -> OFF"),
        "{t}"
    );
    assert!(
        t.contains("   expected: +") && t.contains("P(worse)"),
        "{t}"
    );
    assert!(t.contains("SIGNALS that decided:"), "{t}");
    assert!(t.contains("redoctor apply --socket"), "{t}");
    assert!(t.contains("--trial"), "{t}");
    let v = report::render_with(&d, Format::Text, true).unwrap();
    assert!(v.lines().count() > 2 * t.lines().count());
    assert!(v.contains("Decision: each candidate"), "{v}");
}
