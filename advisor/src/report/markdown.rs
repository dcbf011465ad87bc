//! Markdown for pasting into tickets: the text report's content as headings,
//! lists and pipe tables.

use std::fmt::Write;

use super::tables::tables;
use crate::advice::Diagnosis;

/// Escapes a table cell.
pub fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
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
            "### `{}`: {} → {}\n\n- rule `{}`, {:?}, confidence {:.2}\n- why: {}\n- expected: {}\n- sources: {}\n- bundled engine: `{}`\n- MySQL 8: {}\n",
            r.setting,
            r.current,
            r.proposed,
            r.rule,
            r.severity,
            r.confidence,
            r.rationale,
            r.expected_effect,
            r.sources.join("; "),
            r.apply_engine,
            r.apply_mysql.as_ref().map_or("no MySQL 8 equivalent".to_string(), |m| format!("`{m}`"))
        );
        let _ = writeln!(
            o,
            "Condition: `{}`\n\n| evidence | value |\n|---|---|",
            r.condition
        );
        for e in &r.evidence {
            let _ = writeln!(o, "| `{}` | {} |", e.name, cell(&e.value));
        }
        o.push('\n');
    }
    if let Some(t) = &d.trial {
        let _ = writeln!(o, "## Trial\n\n{}\n\n- baseline commits/s: {:?}\n- candidate commits/s: {:?}\n- test: {}\n", t.reason, t.baseline, t.candidate, t.test);
    }
    if !d.not_applied.is_empty() {
        let _ = writeln!(
            o,
            "## Not applied\n\n| rule | setting | status | reason |\n|---|---|---|---|"
        );
        for n in &d.not_applied {
            let _ = writeln!(
                o,
                "| `{}` | {} | {} | {} |",
                n.rule,
                n.setting,
                n.status,
                cell(&n.reason)
            );
        }
        o.push('\n');
    }
    for t in tables(d) {
        let _ = writeln!(o, "## {}\n", t.title);
        let _ = writeln!(o, "| {} |", t.header.join(" | "));
        let _ = writeln!(o, "|{}", "---|".repeat(t.header.len()));
        for r in &t.rows {
            let cells: Vec<String> = r.iter().map(|c| cell(c)).collect();
            let _ = writeln!(o, "| {} |", cells.join(" | "));
        }
        o.push('\n');
    }
    o
}
