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
        // The analysis the trial did not decide on, beside the one it did.
        let (label, other) = if a.used {
            ("unadjusted", t.unadjusted.as_deref())
        } else {
            ("adjusted", a.adjusted.as_ref())
        };
        let other = other.map_or(String::new(), |l| {
            format!(
                "; {label} {:.3} ({:.3} to {:.3})",
                l.mean_ratio, l.ci_low, l.ci_high
            )
        });
        lines.push(("covariate", format!("{}: {}{other}", a.covariate, a.why)));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Adjustment, Look, Plan, Settings};

    fn look(r: f64) -> Look {
        Look {
            n: 60,
            mean_ratio: r,
            ci_low: r - 0.01,
            ci_high: r + 0.01,
            p_value: 0.5,
            alpha: 0.05,
        }
    }

    fn line(t: &TrialRecord) -> String {
        let b = trial("Trial".into(), t);
        let (_, text) = b.lines.iter().find(|(l, _)| *l == "covariate").unwrap();
        text.clone()
    }

    /// The covariate line shows the analysis the trial did not decide on.
    #[test]
    fn the_covariate_line_shows_the_other_analysis() {
        let mut t = TrialRecord::empty(&Plan::default(), &Settings::new(), &Settings::new());
        let mut a = Adjustment {
            covariate: "the disks' mean write latency per period".into(),
            blocks: 60,
            slope: -0.8,
            r2: 0.5,
            balance: Some(look(1.0)),
            used: false,
            adjusted: Some(look(0.990)),
            why: "recorded, not used".into(),
        };
        t.adjustment = Some(Box::new(a.clone()));
        assert!(
            line(&t).contains("adjusted 0.990 (0.980 to 1.000)"),
            "{}",
            line(&t)
        );
        a.used = true;
        a.why = "used".into();
        t.adjustment = Some(Box::new(a));
        t.unadjusted = Some(Box::new(look(1.020)));
        assert!(
            line(&t).contains("unadjusted 1.020 (1.010 to 1.030)"),
            "{}",
            line(&t)
        );
    }
}
