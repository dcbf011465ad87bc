//! The terminal report: verdict first, then recommendations with their
//! evidence, then what did not apply, then the signal tables.

use std::fmt::Write;

use super::tables::{tables, Table};
use super::trial::blocks;
use crate::advice::Diagnosis;

pub fn text(d: &Diagnosis) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "VERDICT: {}", d.verdict.text);
    let _ = writeln!(
        o,
        "pid {} ({}), {} cores, binlog {}; {} rules, {} window(s)",
        d.pid,
        d.facts.engine,
        d.facts.cores,
        if d.facts.binlog { "ON" } else { "OFF" },
        d.rules_evaluated,
        d.windows.len()
    );
    if let Some(w) = d.windows.last() {
        let _ = writeln!(o, "profile: {}", w.profile);
        if !w.processes.is_empty() {
            // Roles by process title, largest first.
            let mut by_role: std::collections::BTreeMap<String, Vec<&str>> = Default::default();
            for p in &w.processes {
                let kind = p
                    .title
                    .strip_prefix("postgres: ")
                    .map_or("postmaster", |t| {
                        if t.contains('[') || t.contains('(') {
                            "backend"
                        } else {
                            t
                        }
                    });
                by_role.entry(p.role.to_string()).or_default().push(kind);
            }
            let parts: Vec<String> = by_role
                .into_iter()
                .map(|(role, mut kinds)| {
                    let n = kinds.len();
                    kinds.sort_unstable();
                    kinds.dedup();
                    format!("{role} {n} ({})", kinds.join(", "))
                })
                .collect();
            let _ = writeln!(
                o,
                "processes: {} at the end: {}",
                w.processes.len(),
                parts.join("; ")
            );
        }
    }
    warnings(&mut o, d);
    if !d.facts.settings.is_empty() {
        let s: Vec<String> = d
            .facts
            .settings
            .iter()
            .map(|(k, v)| {
                let src = d.facts.settings_source.get(k).map_or("", String::as_str);
                format!("{k}={v} ({src})")
            })
            .collect();
        let _ = writeln!(o, "settings: {}", s.join(", "));
    }
    if !d.facts.counters.is_empty() {
        let c: Vec<String> = d
            .facts
            .counters
            .iter()
            .map(|(k, v)| format!("{k}={}", crate::num::fmt_num(*v)))
            .collect();
        let _ = writeln!(o, "server counters: {}", c.join(", "));
    }
    for (i, r) in d.recommendations.iter().enumerate() {
        let _ = writeln!(
            o,
            "\n{}. {}: {} -> {}   [{:?}, confidence {:.2}, rule {}]",
            i + 1,
            r.setting,
            r.current,
            r.proposed,
            r.severity,
            r.confidence,
            r.rule
        );
        let _ = writeln!(o, "   why: {}", r.rationale);
        let _ = writeln!(o, "   fired: {}", r.condition);
        for e in &r.evidence {
            let _ = writeln!(o, "     {:<44} = {}", e.name, e.value);
        }
        let _ = writeln!(o, "   expected: {}", r.expected_effect);
        let _ = writeln!(o, "   sources: {}", r.sources.join("; "));
        for (label, line, _) in super::apply_lines(d, r) {
            let _ = writeln!(o, "   {label}: {line}");
        }
    }
    for b in d.trial.iter().flat_map(blocks) {
        let _ = writeln!(o, "\n{}", b.heading.to_uppercase());
        for (k, v) in &b.lines {
            let _ = writeln!(o, "   {k}: {v}");
        }
        if let Some(t) = &b.windows {
            table(&mut o, t);
        }
    }
    if !d.not_applied.is_empty() {
        let _ = writeln!(o, "\nNot applied:");
        for n in &d.not_applied {
            let _ = writeln!(
                o,
                "   {} ({}): {}: {}",
                n.rule, n.setting, n.status, n.reason
            );
        }
    }
    for t in tables(d) {
        o.push('\n');
        table(&mut o, &t);
    }
    o
}

/// What limits the observation, in every text report: probes that could
/// not attach (DEGRADED MODE) and events the probe maps dropped (LOST).
pub(super) fn warnings(o: &mut String, d: &Diagnosis) {
    if let Some(w) = d.windows.last() {
        for u in w.unavailable.iter().filter(|u| u.what == "usdt") {
            let _ = writeln!(o, "DEGRADED MODE: {}", u.why);
        }
    }
    let lost: u64 = d.windows.iter().map(|w| w.events_lost).sum();
    if lost > 0 {
        let _ = writeln!(
            o,
            "LOST: {lost} probe events were not recorded (a probe map was full); \
             the wakeup and per-thread signals undercount by that many"
        );
    }
}

fn table(o: &mut String, t: &Table) {
    let _ = writeln!(o, "{}", t.title);
    let mut w: Vec<usize> = t.header.iter().map(|h| h.len()).collect();
    for r in &t.rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.len());
        }
    }
    let line = |cells: Vec<&str>| {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{:<width$}", c, width = w[i]))
            .collect::<Vec<_>>()
            .join("  ")
    };
    let _ = writeln!(o, "  {}", line(t.header.clone()).trim_end());
    for r in &t.rows {
        let _ = writeln!(
            o,
            "  {}",
            line(r.iter().map(|s| s.as_str()).collect()).trim_end()
        );
    }
}
