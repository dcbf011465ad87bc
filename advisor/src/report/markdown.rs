//! Markdown for pasting into tickets: the text report's content as headings,
//! lists and pipe tables.

use std::fmt::Write;

use super::tables::tables;
use super::trial::blocks;
use crate::advice::Diagnosis;

/// Escapes a table cell.
pub fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// A pipe table of already formatted cells, then a blank line.
fn pipe_table(o: &mut String, header: &[&str], rows: impl Iterator<Item = Vec<String>>) {
    let _ = writeln!(o, "| {} |", header.join(" | "));
    let _ = writeln!(o, "|{}", "---|".repeat(header.len()));
    for r in rows {
        let _ = writeln!(o, "| {} |", r.join(" | "));
    }
    o.push('\n');
}

pub fn markdown(d: &Diagnosis) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# redoctor diagnosis of pid {}\n", d.pid);
    let _ = writeln!(o, "**Verdict:** {}\n", d.verdict.text);
    let _ = writeln!(
        o,
        "{} ({} cores, binlog {}), {} rules, {} window(s).\n",
        d.facts.engine,
        d.facts.cores,
        if d.facts.binlog { "ON" } else { "OFF" },
        d.rules_evaluated,
        d.windows.len()
    );
    if !d.recommendations.is_empty() {
        let _ = writeln!(o, "## Recommendations\n");
    }
    for r in &d.recommendations {
        let _ = writeln!(
            o,
            "### `{}`: {} → {}\n\n- rule `{}`, {:?}, confidence {:.2}\n- why: {}\n- expected: {}\n- sources: {}\n{}",
            r.setting,
            r.current,
            r.proposed,
            r.rule,
            r.severity,
            r.confidence,
            r.rationale,
            r.expected_effect,
            r.sources.join("; "),
            super::apply_lines(d, r)
                .into_iter()
                .map(|(label, line, code)| if code {
                    format!("- {label}: `{line}`\n")
                } else {
                    format!("- {label}: {line}\n")
                })
                .collect::<String>()
        );
        let _ = writeln!(o, "Condition: `{}`\n", r.condition);
        pipe_table(
            &mut o,
            &["evidence", "value"],
            r.evidence
                .iter()
                .map(|e| vec![format!("`{}`", e.name), cell(&e.value)]),
        );
    }
    for b in d.trial.iter().flat_map(blocks) {
        let _ = writeln!(o, "## {}\n", b.heading);
        for (k, v) in &b.lines {
            let _ = writeln!(o, "- {k}: {v}");
        }
        o.push('\n');
        if let Some(t) = &b.windows {
            pipe_table(
                &mut o,
                &t.header,
                t.rows.iter().map(|r| r.iter().map(|c| cell(c)).collect()),
            );
        }
    }
    if !d.not_applied.is_empty() {
        let _ = writeln!(o, "## Not applied\n");
        pipe_table(
            &mut o,
            &["rule", "setting", "status", "reason"],
            d.not_applied.iter().map(|n| {
                vec![
                    format!("`{}`", n.rule),
                    n.setting.clone(),
                    n.status.to_string(),
                    cell(&n.reason),
                ]
            }),
        );
    }
    for t in tables(d) {
        let _ = writeln!(o, "## {}\n", t.title);
        pipe_table(
            &mut o,
            &t.header,
            t.rows.iter().map(|r| r.iter().map(|c| cell(c)).collect()),
        );
    }
    o
}
