//! The terminal report a person reads in one screen: the verdict, the
//! chosen change with its expected gain, interval and risk, the three
//! signals that decided it, and the command to apply or to trial it. The
//! full report (every rule, evidence, table) is `--verbose` ([`super::text`])
//! and the other formats.

use std::fmt::Write;

use crate::advice::{Basis, Diagnosis, VerdictKind};
use crate::decision::Assessment;
use crate::num::fmt_num;

fn pct(x: f64) -> String {
    format!("{:+.0}%", x * 100.0)
}

/// One candidate in a phrase: `+18% [+6%, +31%], P(worse) 1%`.
fn effect(a: &Assessment) -> String {
    format!(
        "{} commits/s [{}, {}], P(worse) {:.0}%",
        pct(a.gain),
        pct(a.low),
        pct(a.high),
        a.p_worse * 100.0
    )
}

/// Where the expectation comes from: the model's and the prior's shares.
fn basis(a: &Assessment) -> String {
    match &a.prior {
        Some(p) => format!(
            "model {:.0}% (its error here {:.2} log), prior {:.0}% ({} scenarios in regime {})",
            a.model_weight * 100.0,
            a.model_sigma,
            (1.0 - a.model_weight) * 100.0,
            p.n,
            if p.regime == "*" {
                "any (pooled)"
            } else {
                p.regime.as_str()
            }
        ),
        None => format!("model alone (error {:.2} log; no prior)", a.model_sigma),
    }
}

/// The signals that decided: those the proposing rule read, then the
/// regime's own (users per CPU, the commit path, lock waits).
fn deciding(d: &Diagnosis) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let push = |out: &mut Vec<(String, String)>, k: &str, v: String| {
        if out.len() < 3 && !out.iter().any(|(x, _)| x == k) {
            out.push((k.to_string(), v));
        }
    };
    for r in &d.recommendations {
        for e in r.evidence.iter().filter(|e| e.name.starts_with("signals.")) {
            push(
                &mut out,
                e.name.trim_start_matches("signals."),
                e.value.clone(),
            );
        }
    }
    for k in [
        "user_threads_per_core",
        "redo_fsync_mean_us",
        "lock_waits_per_commit",
        "commit_path_wakeups_per_commit",
    ] {
        if let Some(v) = d.summary.get(k) {
            push(&mut out, k, fmt_num(*v));
        }
    }
    out
}

pub fn brief(d: &Diagnosis) -> String {
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
    super::text::warnings(&mut o, d);
    let decision = d.model.as_ref().and_then(|m| m.decision.as_ref());
    let chosen = d
        .model
        .as_ref()
        .and_then(|m| m.chosen.as_deref())
        .and_then(|c| {
            decision.and_then(|dec| dec.assessments.iter().find(|a| a.config.to_string() == c))
        });
    if d.verdict.kind == VerdictKind::Change {
        let list: Vec<String> = d
            .recommendations
            .iter()
            .map(|r| format!("{} {} -> {}", r.setting, r.current, r.proposed))
            .collect();
        let _ = writeln!(o, "\nCHANGE: {}", list.join(", "));
        if let (Some(a), Some(dec)) = (chosen, decision) {
            let _ = writeln!(o, "   expected: {}", effect(a));
            let _ = writeln!(
                o,
                "   from:     {}; a loss weighed {}x a gain",
                basis(a),
                dec.loss_asymmetry
            );
        }
    } else if let Some(a) = decision.and_then(|dec| dec.assessments.first()) {
        let _ = writeln!(o, "\nBEST CANDIDATE (not advised): {}", a.config);
        let _ = writeln!(o, "   expected: {}", effect(a));
        let _ = writeln!(o, "   from:     {}", basis(a));
    }
    if d.verdict.basis == Basis::Trial {
        if let Some(t) = &d.trial {
            let _ = writeln!(o, "   trial:    {}", t.reason());
        }
    }
    if let Some(w) = d.model.as_ref().and_then(|m| m.what_if.as_ref()) {
        let _ = writeln!(
            o,
            "\nWHAT IF {} CPUs (observed on {}; vs the rate observed here, 95% interval):",
            w.host.cores, w.host.observed_cores
        );
        for p in &w.host.predictions {
            let _ = writeln!(
                o,
                "   {:<22} {} [{}, {}]",
                p.config.to_string(),
                pct(p.ratio - 1.0),
                pct(p.ratio_low - 1.0),
                pct(p.ratio_high - 1.0)
            );
        }
        if let Some(dec) = &w.decision {
            let _ = writeln!(
                o,
                "   there, from {}: {}",
                d.model
                    .as_ref()
                    .and_then(|m| m.inputs.as_ref())
                    .map_or("the current configuration".into(), |i| i.config.to_string()),
                match dec.chosen.and_then(|c| dec.of(&c)) {
                    Some(a) => format!("advise {} ({})", a.config, effect(a)),
                    None => "no change advised".into(),
                }
            );
        }
    }
    let sig = deciding(d);
    if !sig.is_empty() {
        let _ = writeln!(o, "\nSIGNALS that decided:");
        for (k, v) in sig {
            let _ = writeln!(o, "   {k:<34} {v}");
        }
    }
    let mut next = Vec::new();
    if let Some(r) = d.recommendations.first() {
        for (label, line, _) in super::apply_lines(d, r) {
            next.push(format!("{label}: {line}"));
        }
    }
    if d.verdict.basis != Basis::Trial && d.verdict.kind != VerdictKind::InsufficientEvidence {
        next.push(
            "trial it live first: redoctor diagnose --pid PID --socket SOCKET --trial (keeps a change only if measured better)"
                .into(),
        );
    }
    if !next.is_empty() {
        let _ = writeln!(o, "\nNEXT:");
        for n in next {
            let _ = writeln!(o, "   {n}");
        }
    }
    let _ = writeln!(
        o,
        "\n(--verbose: every rule, the evidence, the model's inputs and the signal tables)"
    );
    o
}
