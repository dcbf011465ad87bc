//! The gate's outputs: text, JSON, JUnit XML (one testcase per metric) and
//! Markdown (a table for `$GITHUB_STEP_SUMMARY`) with a small SVG chart.

use std::fmt::Write as _;

use plotters::prelude::*;
use serde::Serialize;

use super::compare::{Comparison, MetricResult, Verdict};
use super::GateError;

/// Everything an output needs: the comparison and where its sides came from.
#[derive(Debug, Clone, Serialize)]
pub struct GateReport {
    pub scenario: String,
    /// "baseline file FILE" or "binary BIN (run side by side)".
    pub baseline_from: String,
    pub new_from: String,
    pub baseline_runs: usize,
    pub new_runs: usize,
    pub comparison: Comparison,
    /// 0 pass, 1 regression.
    pub exit_code: i32,
}

fn num(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if x.abs() >= 1000.0 => format!("{x:.0}"),
        Some(x) if x.abs() >= 10.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.3}"),
    }
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |p| format!("{p:+.1}%"))
}

fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Regression => "REGRESSION",
        Verdict::Improvement => "improvement",
        Verdict::Pass => "pass",
        Verdict::NotCompared => "not compared",
        Verdict::HostDependent => "not judged",
    }
}

fn p(v: Option<f64>) -> String {
    v.map_or("-".into(), |p| format!("{p:.3}"))
}

fn headline(r: &GateReport) -> String {
    if r.comparison.regressions > 0 {
        format!(
            "FAIL: {} regression(s) in scenario {}",
            r.comparison.regressions, r.scenario
        )
    } else {
        format!("PASS: no regression in scenario {}", r.scenario)
    }
}

pub fn text(r: &GateReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", headline(r));
    let _ = writeln!(
        s,
        "baseline: {} ({} runs); new: {} ({} runs)",
        r.baseline_from, r.baseline_runs, r.new_from, r.new_runs
    );
    let _ = writeln!(
        s,
        "{:<44} {:>12} {:>12} {:>9} {:>8}  {:<12} threshold",
        "metric", "baseline", "new", "change", "p", "verdict"
    );
    for m in &r.comparison.metrics {
        let _ = writeln!(
            s,
            "{:<44} {:>12} {:>12} {:>9} {:>8}  {:<12} {}",
            m.name,
            num(m.baseline_median),
            num(m.new_median),
            pct(m.change_pct),
            p(m.p_worse),
            verdict(m.verdict),
            threshold(m)
        );
    }
    if r.comparison
        .metrics
        .iter()
        .any(|m| m.verdict == Verdict::HostDependent)
    {
        let _ = writeln!(
            s,
            "host-dependent metrics (time, rates, what follows the group-commit size) are shown, \
             not judged, against a stored baseline: run the baseline's build side by side \
             (--against OTHER_BIN) or pass --judge-host-metrics"
        );
    }
    s
}

fn threshold(m: &MetricResult) -> String {
    format!(
        "worse by >= {}% and >= {} {}, p < {}",
        m.threshold.pct, m.threshold.min_abs, m.unit, m.threshold.alpha
    )
}

pub fn json(r: &GateReport) -> Result<String, GateError> {
    serde_json::to_string_pretty(r).map_err(|e| GateError::Io {
        doing: "serialising the report".into(),
        source: std::io::Error::other(e),
    })
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// JUnit XML: one testsuite, one testcase per metric; a regression is a
/// failure, a metric not compared is skipped.
pub fn junit(r: &GateReport) -> String {
    let failures = r.comparison.regressions;
    let skipped = r
        .comparison
        .metrics
        .iter()
        .filter(|m| matches!(m.verdict, Verdict::NotCompared | Verdict::HostDependent))
        .count();
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        s,
        "<testsuites name=\"redoctor gate\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\">",
        r.comparison.metrics.len()
    );
    let _ = writeln!(
        s,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\">",
        xml_escape(&r.scenario),
        r.comparison.metrics.len()
    );
    for m in &r.comparison.metrics {
        let _ = write!(
            s,
            "    <testcase classname=\"redoctor.gate.{}\" name=\"{}\"",
            xml_escape(&r.scenario),
            xml_escape(&m.name)
        );
        let detail = format!(
            "baseline median {} {u}, new median {} {u} ({}), one-sided Mann-Whitney p = {}; threshold: {}",
            num(m.baseline_median),
            num(m.new_median),
            pct(m.change_pct),
            p(m.p_worse),
            threshold(m),
            u = m.unit
        );
        match m.verdict {
            Verdict::Regression => {
                let _ = writeln!(
                    s,
                    ">\n      <failure message=\"{} regressed\">{}</failure>\n    </testcase>",
                    xml_escape(&m.name),
                    xml_escape(&detail)
                );
            }
            Verdict::NotCompared => {
                let _ = writeln!(
                    s,
                    ">\n      <skipped message=\"fewer than 2 runs on a side\"/>\n    </testcase>"
                );
            }
            Verdict::HostDependent => {
                let _ = writeln!(
                    s,
                    ">\n      <skipped message=\"moves with the host: judged side by side (--against) or with --judge-host-metrics\">{}</skipped>\n    </testcase>",
                    xml_escape(&detail)
                );
            }
            _ => {
                let _ = writeln!(
                    s,
                    ">\n      <system-out>{}</system-out>\n    </testcase>",
                    xml_escape(&detail)
                );
            }
        }
    }
    s.push_str("  </testsuite>\n</testsuites>\n");
    s
}

/// Markdown for a CI summary; `chart` names the SVG written beside it.
pub fn markdown(r: &GateReport, chart: Option<&str>) -> String {
    let mut s = String::new();
    let icon = if r.comparison.regressions > 0 {
        "❌"
    } else {
        "✅"
    };
    let _ = writeln!(s, "### {icon} redoctor gate: {}\n", headline(r));
    let _ = writeln!(
        s,
        "Baseline: {} ({} runs). New: {} ({} runs).\n",
        r.baseline_from, r.baseline_runs, r.new_from, r.new_runs
    );
    s.push_str("| metric | baseline (median) | new (median) | change | p (worse) | verdict |\n");
    s.push_str("|---|---|---|---|---|---|\n");
    for m in &r.comparison.metrics {
        let v = match m.verdict {
            Verdict::Regression => "**REGRESSION**",
            other => verdict(other),
        };
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} | {} | {v} |",
            m.name,
            num(m.baseline_median),
            num(m.new_median),
            pct(m.change_pct),
            p(m.p_worse)
        );
    }
    if let Some(c) = chart {
        let _ = writeln!(s, "\n![change per metric]({c})");
    }
    s
}

/// A small bar chart of each compared metric's change in percent (red:
/// regression, green: improvement, grey: neither).
pub fn svg_chart(r: &GateReport) -> Result<String, GateError> {
    let rows: Vec<&MetricResult> = r
        .comparison
        .metrics
        .iter()
        .filter(|m| m.change_pct.is_some())
        .collect();
    let mut svg = String::new();
    {
        let height = 40 + 22 * rows.len().max(1) as u32;
        let root = SVGBackend::with_string(&mut svg, (720, height)).into_drawing_area();
        let err = |e: String| GateError::Chart(e);
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let lim = rows
            .iter()
            .filter_map(|m| m.change_pct)
            .fold(10.0f64, |a, b| a.max(b.abs()))
            .min(500.0);
        let mut chart = ChartBuilder::on(&root)
            .caption("change of the median, %", ("sans-serif", 14))
            .margin(6)
            .x_label_area_size(20)
            .y_label_area_size(300)
            .build_cartesian_2d(-lim..lim, 0..rows.len().max(1))
            .map_err(|e| err(e.to_string()))?;
        let names: Vec<String> = rows.iter().map(|m| m.name.clone()).collect();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(rows.len().max(1))
            .y_label_formatter(&|i| names.get(*i).cloned().unwrap_or_default())
            .draw()
            .map_err(|e| err(e.to_string()))?;
        chart
            .draw_series(rows.iter().enumerate().map(|(i, m)| {
                let v = m.change_pct.unwrap_or(0.0).clamp(-lim, lim);
                let color = match m.verdict {
                    Verdict::Regression => RED,
                    Verdict::Improvement => GREEN,
                    _ => RGBColor(150, 150, 150),
                };
                Rectangle::new([(0.0, i), (v, i + 1)], color.filled())
            }))
            .map_err(|e| err(e.to_string()))?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    Ok(svg)
}
