//! Every report format: JSON parsed back, HTML and its SVGs well-formed,
//! Markdown tables consistent, text verdict first.

mod common;

use common::{shipped_rules, windows, Shape};
use redoctor_advisor::report::{self, Format};
use redoctor_advisor::{diagnose, summarize, Diagnosis, Facts, RuleSet};

fn diagnosis() -> Diagnosis {
    let rules = RuleSet::load(&[shipped_rules()]).unwrap();
    let w = windows(
        3,
        Shape {
            binlog_bytes: 1 << 20,
            ..Shape::default()
        },
    );
    let facts = Facts::infer("redoctor-engine", &summarize(&w), &[]);
    let mut d = diagnose(4242, w, facts, &rules).unwrap();
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
    assert_eq!(v["version"], 1);
    assert_eq!(v["verdict"]["kind"], "change");
    assert_eq!(v["recommendations"][0]["proposed"], "OFF");
    let other = text.replace("\"version\": 1", "\"version\": 99");
    assert!(Diagnosis::from_json(&other)
        .unwrap_err()
        .contains("version"));
    assert!(Diagnosis::from_json("{\"schema\":\"x\"}")
        .unwrap_err()
        .contains("schema"));
}

#[test]
fn text_puts_the_verdict_first() {
    let t = report::render(&diagnosis(), Format::Text).unwrap();
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
