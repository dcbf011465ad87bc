//! The live trial (or search) as report content shared by the text,
//! Markdown and HTML reports: per trial a heading, labelled lines (outcome,
//! reason, estimate with its interval, looks, test) and the windows table.

use super::tables::Table;
use crate::experiment::{show, Experiment, SearchReport, StepResult, TrialRecord};
use crate::num::fmt_num;

/// One block of the trial section.
pub struct Block {
    pub heading: String,
    /// (label, text) lines.
    pub lines: Vec<(&'static str, String)>,
    /// The trial's windows, in order (None for a summary or a skipped step).
    pub windows: Option<Table>,
}

/// The blocks of `e`: one for a trial; a summary then one per step for a search.
pub fn blocks(e: &Experiment) -> Vec<Block> {
    match e {
        Experiment::Trial(t) => vec![trial("Trial".into(), t)],
        Experiment::Search(s) => search(s),
    }
}

fn search(s: &SearchReport) -> Vec<Block> {
    let mut lines = vec![("result", s.summary())];
    lines.push(("before", show(&s.start_settings)));
    lines.push(("after", show(&s.final_settings)));
    lines.push(("budget", format!("{:.1}s", s.plan.max_total.as_secs_f64())));
    let mut out = vec![Block {
        heading: "Trial search".into(),
        lines,
        windows: None,
    }];
    for (i, step) in s.steps.iter().enumerate() {
        let heading = format!("Candidate {}: {}", i + 1, step.label);
        out.push(match &step.result {
            StepResult::Tried(t) => trial(heading, t),
            StepResult::Skipped(why) => Block {
                heading,
                lines: vec![("settings", show(&step.settings)), ("skipped", why.clone())],
                windows: None,
            },
        });
    }
    out
}

fn trial(heading: String, t: &TrialRecord) -> Block {
    let change = t
        .candidate_settings
        .iter()
        .map(|(k, v)| {
            let from = t.baseline_settings.get(k).map_or("?", String::as_str);
            format!("{k} {from} -> {v}")
        })
        .collect::<Vec<_>>()
        .join(", ");
    let mut lines = vec![
        ("settings", change),
        ("outcome", t.outcome.to_string()),
        ("reason", t.reason.clone()),
        (
            "estimate",
            t.estimate.as_ref().map_or_else(
                || format!("none (fewer than 2 {})", t.unit()),
                |l| {
                    format!(
                        "candidate/baseline {:.3} ({:.3} to {:.3}, {:.1}% interval, {} {})",
                        l.mean_ratio,
                        l.ci_low,
                        l.ci_high,
                        (1.0 - l.alpha) * 100.0,
                        l.n,
                        t.unit()
                    )
                },
            ),
        ),
    ];
    if !t.looks.is_empty() {
        let looks = t.looks.iter().map(|l| {
            format!(
                "n={} {:.3} [{:.3}, {:.3}] p={:.4}",
                l.n, l.mean_ratio, l.ci_low, l.ci_high, l.p_value
            )
        });
        lines.push(("looks", looks.collect::<Vec<_>>().join("; ")));
    }
    if let Some(a) = &t.adjustment {
        let raw = t.unadjusted.as_ref().map_or(String::new(), |l| {
            format!(
                "; unadjusted {:.3} ({:.3} to {:.3})",
                l.mean_ratio, l.ci_low, l.ci_high
            )
        });
        lines.push(("covariate", format!("{}: {}{raw}", a.covariate, a.why)));
    }
    if let Some(r) = &t.resolving_power {
        lines.push(("resolution", r.summary_in(t.unit())));
    }
    if let Some(e) = &t.error {
        lines.push(("error", e.clone()));
    }
    lines.push(("elapsed", format!("{:.1}s", t.elapsed_s)));
    lines.push(("test", t.test.clone()));
    let rows = t
        .windows
        .iter()
        .map(|w| {
            vec![
                w.pair.to_string(),
                w.side.to_string(),
                if w.warmup && t.unit() == "blocks" {
                    "guard (discarded)"
                } else if w.warmup {
                    "warm-up (discarded)"
                } else {
                    "measured"
                }
                .to_string(),
                fmt_num(w.commits_per_s.round()),
                format!("{:.2}", w.secs),
            ]
        })
        .collect();
    Block {
        heading,
        lines,
        windows: Some(Table {
            title: "Trial windows",
            header: vec![
                if t.unit() == "blocks" {
                    "block"
                } else {
                    "pair"
                },
                "side",
                "window",
                "commits/s",
                "seconds",
            ],
            rows,
        }),
    }
}
