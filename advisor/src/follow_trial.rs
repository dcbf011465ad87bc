//! The verdict follows the measurement: after a live trial (or search) the
//! diagnosis's verdict and recommendations are rewritten from what the
//! trial measured, whatever the model predicted. A change is advised only
//! if a trial kept it (better beyond noise); a candidate the trial measured
//! worse, could not tell apart, or aborted is filed as `trial_rejected`
//! with the trial's reason. A trial that measured nothing (its budget could
//! not fit a decision) leaves the model's advice as it was, unverified.

use crate::advice::{Basis, Diagnosis, NotApplied, Status, Verdict, VerdictKind};
use crate::evaluate::rule_recommendation;
use crate::experiment::{pct, Experiment, Outcome, Settings, StepResult, TrialRecord};
use crate::ruleset::RuleSet;

/// The trials an experiment ran, in order (a trial its budget could not
/// fit ran nothing).
fn trials(exp: &Experiment) -> Vec<&TrialRecord> {
    let all = match exp {
        Experiment::Trial(t) => vec![t],
        Experiment::Search(s) => s
            .steps
            .iter()
            .filter_map(|st| match &st.result {
                StepResult::Tried(t) => Some(t.as_ref()),
                StepResult::Skipped(_) => None,
            })
            .collect(),
    };
    all.into_iter()
        .filter(|t| t.outcome != Outcome::NotRun)
        .collect()
}

/// `+12.0% [+5.1%, +19.3%] over 6 pairs`.
fn estimate(t: &TrialRecord) -> String {
    match &t.estimate {
        Some(l) => format!(
            "{} [{}, {}] over {} {}",
            pct(l.mean_ratio),
            pct(l.ci_low),
            pct(l.ci_high),
            l.n,
            t.unit()
        ),
        None => "no estimate".into(),
    }
}

fn describe(t: &TrialRecord) -> String {
    let what = crate::experiment::show(&t.candidate_settings);
    let outcome = match t.outcome {
        Outcome::Kept => "better, kept",
        Outcome::RolledBackWorse => "worse, rolled back",
        Outcome::Inconclusive => "inconclusive, rolled back",
        Outcome::AbortedFloor => "below the floor, aborted and rolled back",
        Outcome::Failed => "failed, rolled back",
        Outcome::NotRun => "not run: the time budget cannot fit a decision",
    };
    format!("{what}: {} ({outcome})", estimate(t))
}

/// Rewrites `d`'s verdict and recommendations from `exp` and stores it.
pub fn follow_trial(d: &mut Diagnosis, exp: Experiment, rules: &RuleSet) {
    let ts = trials(&exp);
    if ts.is_empty() {
        // Nothing measured: the model's advice stands as it was,
        // unverified, and the verdict says why no trial ran.
        d.verdict.text = format!(
            "{} (the live trial tried nothing: {})",
            d.verdict.text,
            exp.reason()
        );
        d.trial = Some(exp);
        return;
    }
    let mut kept = Settings::new();
    for t in ts.iter().filter(|t| t.outcome.kept()) {
        kept.extend(t.candidate_settings.clone());
    }
    // Recommendations the trial did not keep go to not_applied.
    let (stay, gone): (Vec<_>, Vec<_>) = std::mem::take(&mut d.recommendations)
        .into_iter()
        .partition(|r| kept.get(&r.setting) == Some(&r.proposed));
    for r in gone {
        let t = ts
            .iter()
            .find(|t| t.candidate_settings.get(&r.setting) == Some(&r.proposed));
        d.not_applied.push(NotApplied {
            rule: r.rule,
            setting: r.setting,
            proposed: Some(r.proposed),
            status: Status::TrialRejected,
            reason: t.map_or("the trial did not try it (time budget)".into(), |t| {
                format!("live trial: {}", describe(t))
            }),
            restart: None,
            risks_durability: false,
        });
    }
    d.recommendations = stay;
    for r in &mut d.recommendations {
        r.verified = true;
    }
    // Kept changes the model had not advised become recommendations too.
    for (setting, value) in &kept {
        if d.recommendations.iter().any(|r| &r.setting == setting) {
            continue;
        }
        let from = d
            .not_applied
            .iter()
            .position(|n| &n.setting == setting && n.proposed.as_deref() == Some(value.as_str()));
        let rule = from.and_then(|i| rules.rules.iter().find(|r| r.id == d.not_applied[i].rule));
        if let (Some(i), Some(rule)) = (from, rule) {
            d.not_applied.remove(i);
            let current = d.facts.settings.get(setting).cloned().unwrap_or_default();
            let mut r =
                rule_recommendation(rule, value, rule.confidence, current, &d.summary, &d.facts);
            r.verified = true;
            d.recommendations.push(r);
        }
    }
    // Proposals the trial tried and rejected, still filed under the model's status.
    for n in &mut d.not_applied {
        let Some(v) = &n.proposed else { continue };
        if let Some(t) = ts
            .iter()
            .find(|t| !t.outcome.kept() && t.candidate_settings.get(&n.setting) == Some(v))
        {
            n.status = Status::TrialRejected;
            n.reason = format!("live trial: {}", describe(t));
        }
    }
    d.verdict = if !kept.is_empty() {
        let list: Vec<String> = d
            .recommendations
            .iter()
            .map(|r| format!("{} {} -> {}", r.setting, r.current, r.proposed))
            .collect();
        let t = ts
            .iter()
            .filter(|t| t.outcome.kept())
            .map(|t| estimate(t))
            .collect::<Vec<_>>();
        Verdict {
            kind: VerdictKind::Change,
            text: format!(
                "change verified live and kept: {} (trial: {})",
                list.join(", "),
                t.join("; ")
            ),
            basis: Basis::Trial,
        }
    } else {
        let t: Vec<String> = ts.iter().map(|t| describe(t)).collect();
        Verdict {
            kind: VerdictKind::NoChange,
            text: format!(
                "no change: the live trial kept nothing and restored the current settings ({})",
                t.join("; ")
            ),
            basis: Basis::Trial,
        }
    };
    d.trial = Some(exp);
}
