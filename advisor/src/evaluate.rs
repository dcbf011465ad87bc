//! Evaluates a rule set against a summary and facts, has the what-if model
//! rank what the rules propose, and builds the [`Diagnosis`].
//!
//! The rules say which settings are worth considering and why; the model
//! (`crate::model`) predicts each candidate configuration's commits/s from
//! what was observed; advice is given only where the predicted gain's
//! interval lies above zero. In order:
//! 1. rules with too little evidence (`min_seconds`, `min_commits`) or whose
//!    expressions fail to evaluate take no part;
//! 2. a proposal equal to the current value is "already set"; a rule with
//!    `requires` joins the proposal of the rule it requires (a cap and its
//!    FIFO policy are one knob), or drops out when that rule did not fire;
//! 3. candidates: each proposed knob alone, and each redo-mode knob with
//!    each admission knob; the model predicts them all;
//! 4. the best candidate whose interval lies above the current rate is
//!    advised; every other proposal is listed with the model's reason.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use cel_interpreter::{Context, Program, Value};
use redoctor_probes_common::Signals;

use crate::advice::*;
use crate::decision::{decide, restart, Assessment, Priors};
use crate::error::AdvisorError;
use crate::facts::{normalize, Facts, ReadUnit, UNIT_SETTINGS};
use crate::model::config::{CAP, POLICY, REDO_THREADS, THROTTLE};
use crate::model::{Config, Inputs, Model, Settings};
use crate::num::fmt_num;
use crate::rule::{Rule, RuleBasis};
use crate::ruleset::RuleSet;
use crate::summary::{summarize, Summary};

/// Below this much observed time no advice is given at all.
pub const MIN_OBSERVED_S: f64 = 1.0;
/// Below this CPU use (CPUs) and without commits the target counts as idle.
pub const IDLE_CPUS: f64 = 0.05;
/// A candidate whose interval reaches this far above the current rate is
/// worth a live trial even when the model cannot call it.
pub const WORTH_TRYING: f64 = 1.03;

pub const RESOLUTION: &str = "rules propose, the model ranks: every proposal of a rule with enough evidence is a candidate (alone, and redo mode combined with a cap or throttle); the candidate with the highest predicted commits/s whose 95% interval lies above the observed rate is advised; a proposal equal to the current value is already set; `requires` joins a proposal to the one it requires";

/// A rule that fired, before the model ranks its proposal.
struct Fired<'a> {
    rule: &'a Rule,
    proposed: String,
    confidence: f64,
}

/// Proposals that change settings together (a rule's, plus those that require it).
struct Knob<'a> {
    changes: Settings,
    /// Per setting, the rules proposing it, best-ranked first.
    rules: BTreeMap<String, Vec<&'a Fired<'a>>>,
}

impl Knob<'_> {
    fn modelled(&self) -> bool {
        self.changes
            .keys()
            .all(|k| [REDO_THREADS, CAP, THROTTLE, POLICY].contains(&k.as_str()))
    }
    fn is_redo(&self) -> bool {
        self.changes.contains_key(REDO_THREADS)
    }
}

/// Diagnoses `windows` of process `pid` with `rules`, ranking their
/// proposals with `model`.
pub fn diagnose(
    pid: u32,
    windows: Vec<Signals>,
    facts: Facts,
    rules: &RuleSet,
    model: &Model,
) -> Result<Diagnosis, AdvisorError> {
    if windows.is_empty() {
        return Err(AdvisorError::NoSignals);
    }
    let summary = summarize(&windows);
    let rates = crate::model::inputs::window_rates(&windows);
    diagnose_summary(pid, summary, rates, windows, facts, rules, model)
}

/// [`diagnose`] from a summary already computed (and the windows' commit
/// rates): what an offline evaluation replays. `windows` may be empty; they
/// only feed the report's charts.
pub fn diagnose_summary(
    pid: u32,
    summary: Summary,
    window_rates: Vec<f64>,
    windows: Vec<Signals>,
    facts: Facts,
    rules: &RuleSet,
    model: &Model,
) -> Result<Diagnosis, AdvisorError> {
    let mut d = Diagnosis {
        schema: SCHEMA.into(),
        version: VERSION,
        verdict: Verdict {
            kind: VerdictKind::NoChange,
            text: String::new(),
            basis: Basis::Evidence,
        },
        pid,
        facts,
        summary,
        recommendations: vec![],
        not_applied: vec![],
        rules_evaluated: rules.rules.len(),
        rules_disabled: rules.disabled.clone(),
        resolution: RESOLUTION.into(),
        windows,
        model: None,
        trial: None,
    };
    let g = |k: &str| d.summary.get(k).copied().unwrap_or(0.0);
    let (secs, commits, busy, cps) = (
        g("window_s"),
        g("commits"),
        g("cpus_busy"),
        g("commits_per_s"),
    );
    if secs < MIN_OBSERVED_S {
        d.verdict = insufficient(format!(
            "observed only {secs:.2} s; observe at least {MIN_OBSERVED_S} s (e.g. --duration 10s)"
        ));
        return Ok(d);
    }
    if commits == 0.0 && busy < IDLE_CPUS {
        d.verdict = insufficient(format!(
            "the process was idle ({busy:.3} CPUs busy, no commits in {secs:.1} s): diagnose it under its usual load"
        ));
        return Ok(d);
    }
    let mut fired = Vec::new();
    for rule in &rules.rules {
        if let Some(reason) = lacks_evidence(rule, secs, commits) {
            d.not_applied.push(not_applied(
                rule,
                None,
                Status::InsufficientEvidence,
                reason,
            ));
            continue;
        }
        match evaluate(rule, &d.summary, &d.facts) {
            Ok(None) => {}
            Ok(Some(proposed)) => {
                let confidence = confidence(rule, secs, commits);
                fired.push(Fired {
                    rule,
                    proposed,
                    confidence,
                });
            }
            Err(e) => d
                .not_applied
                .push(not_applied(rule, None, Status::Error, e)),
        }
    }
    fired.sort_by(|a, b| rank(b).cmp(&rank(a)));
    let fired: Vec<Fired> = fired
        .into_iter()
        .filter(|f| {
            let current = d
                .facts
                .settings
                .get(&f.rule.setting)
                .cloned()
                .unwrap_or_default();
            let same = normalize(&current) == normalize(&f.proposed);
            if same {
                d.not_applied.push(not_applied(
                    f.rule,
                    Some(f.proposed.clone()),
                    Status::AlreadySet,
                    format!("{} is already {current}", f.rule.setting),
                ));
            }
            !same
        })
        .collect();
    // A static setting is reported, never a candidate: no live change or
    // trial can judge it.
    let (restart, fired): (Vec<Fired>, Vec<Fired>) =
        fired.into_iter().partition(|f| f.rule.restart);
    let users = d.summary.get("user_threads").copied().unwrap_or(0.0);
    for f in &restart {
        let current = d
            .facts
            .settings
            .get(&f.rule.setting)
            .cloned()
            .unwrap_or_default();
        let estimate = restart::find(
            &rules.priors.restart,
            &f.rule.setting,
            &current,
            &f.proposed,
            users,
        )
        .map(|p| p.estimate(rules.priors.loss_asymmetry, rules.priors.min_utility));
        let expected = match &estimate {
            Some(e) => format!(
                "expected {} ({}..{} for a new scenario; {} measured, {}): {}",
                pct(1.0 + e.gain),
                pct(1.0 + e.low),
                pct(1.0 + e.high),
                e.n,
                e.regime,
                if e.worth_it {
                    "worth a restart"
                } else {
                    "not worth a restart: the measured loss risk outweighs the gain"
                }
            ),
            None => "expected gain not measured (no restart prior for this change): a restart \
                     with the change, measured, would settle it"
                .to_string(),
        };
        // A durability change says what it risks (the rule's rationale).
        let risk = match f.rule.risks_durability() {
            true => format!(
                "; a durability change, proposed because durability changes are allowed: {}",
                f.rule.rationale
            ),
            false => String::new(),
        };
        let mut n = not_applied(
            f.rule,
            Some(f.proposed.clone()),
            Status::NeedsRestart,
            format!(
                "{} is static: it needs a restart (set {}={} in the server's option file, then restart; now {current}); not applied live, not tried; {expected}{risk}",
                f.rule.setting, f.rule.setting, f.proposed
            ),
        );
        n.restart = estimate;
        n.risks_durability = f.rule.risks_durability();
        d.not_applied.push(n);
    }
    let knobs = knobs(&fired, &mut d.not_applied);
    let inputs = Inputs::from_summary(&d.summary, &d.facts, window_rates);
    rank_with_model(&mut d, &knobs, inputs, model, &rules.priors);
    d.verdict = verdict(&d, rules.rules.len(), secs, cps, busy, knobs.is_empty());
    Ok(d)
}

/// The what-if for a host of `cores` CPUs: each redo mode alone, with the
/// cap and with the throttle the rules would propose there (a cap of
/// `max(2·cores, 4)`, a throttle of `max(8·cores, 16)`), and the current
/// configuration, predicted by `model` under the observed load. Recorded
/// in the diagnosis' model report (`what_if`), with what the decision rule
/// would advise there (`priors`); None when the model has no prediction
/// for this observation (no commits counted, an engine without redo
/// threads).
pub fn what_if(d: &mut Diagnosis, model: &Model, priors: &Priors, cores: u32) -> Option<()> {
    if !d.facts.settings.contains_key(REDO_THREADS) {
        return None;
    }
    let rates = crate::model::inputs::window_rates(&d.windows);
    let inputs = Inputs::from_summary(&d.summary, &d.facts, rates).ok()?;
    let cap = (2 * cores).max(4);
    let throttle = (8 * cores).max(16);
    let configs: Vec<Config> = [true, false]
        .into_iter()
        .flat_map(|on| {
            [(0, 0), (cap, 0), (0, throttle)].map(|(cap, throttle)| Config {
                redo_threads: on,
                cap,
                throttle,
            })
        })
        .collect();
    let host = model.what_if(&inputs, &configs, cores);
    let decision = Some(crate::decision::what_if(model, &inputs, &host, priors));
    d.model.as_mut()?.what_if = Some(crate::advice::WhatIfAdvice { host, decision });
    Some(())
}

fn rank<'a>(f: &'a Fired) -> impl Ord + 'a {
    (
        f.rule.priority,
        f.rule.severity,
        (f.confidence * 1000.0) as i64,
        std::cmp::Reverse(f.rule.id.as_str()),
    )
}

/// Groups proposals into knobs: one per distinct (setting, value) of rules
/// without `requires`; a rule with `requires` joins every knob of a rule it
/// requires, or is dropped when none fired.
fn knobs<'a>(fired: &'a [Fired<'a>], out: &mut Vec<NotApplied>) -> Vec<Knob<'a>> {
    let mut knobs: Vec<Knob> = Vec::new();
    for f in fired.iter().filter(|f| f.rule.requires.is_empty()) {
        let pos = knobs.iter().position(|k| {
            k.changes.len() == 1 && k.changes.get(&f.rule.setting) == Some(&f.proposed)
        });
        match pos {
            Some(i) => knobs[i]
                .rules
                .get_mut(&f.rule.setting)
                .expect("a knob holds its own setting")
                .push(f),
            None => knobs.push(Knob {
                changes: Settings::from([(f.rule.setting.clone(), f.proposed.clone())]),
                rules: BTreeMap::from([(f.rule.setting.clone(), vec![f])]),
            }),
        }
    }
    for f in fired.iter().filter(|f| !f.rule.requires.is_empty()) {
        let mut joined = false;
        for k in knobs.iter_mut() {
            let has = k
                .rules
                .values()
                .flatten()
                .any(|r| f.rule.requires.contains(&r.rule.id));
            if has {
                k.changes.insert(f.rule.setting.clone(), f.proposed.clone());
                k.rules.entry(f.rule.setting.clone()).or_default().push(f);
                joined = true;
            }
        }
        if !joined {
            out.push(not_applied(
                f.rule,
                Some(f.proposed.clone()),
                Status::Requires,
                format!(
                    "it joins the proposal of {}, which did not fire",
                    f.rule.requires.join(", ")
                ),
            ));
        }
    }
    knobs
}

fn pct(r: f64) -> String {
    format!("{:+.0}%", (r - 1.0) * 100.0)
}

/// An assessment in one phrase: `RT0 +18% [+6%, +31%], P(worse) 1%`.
pub fn assess(a: &Assessment) -> String {
    format!(
        "{} {} [{}, {}], P(worse) {:.0}%",
        a.config,
        pct(1.0 + a.gain),
        pct(1.0 + a.low),
        pct(1.0 + a.high),
        a.p_worse * 100.0
    )
}

/// Predicts every candidate the knobs make, advises the best one beyond
/// the model's error, and files every other proposal with its reason.
fn rank_with_model(
    d: &mut Diagnosis,
    knobs: &[Knob],
    inputs: Result<Inputs, crate::model::ModelError>,
    model: &Model,
    priors: &Priors,
) {
    let mut report = ModelReport {
        source: model.source.clone(),
        calibrated: model.calibrated,
        sigma: model.sigma,
        sigma_used: model.sigma,
        outside: vec![],
        inputs: None,
        current: None,
        predictions: vec![],
        chosen: None,
        note: None,
        decision: None,
        what_if: None,
    };
    let (modelled, unmodelled): (Vec<&Knob>, Vec<&Knob>) = knobs.iter().partition(|k| k.modelled());
    for k in &unmodelled {
        // Knobs of evidence-based rules are advised as they stand: the
        // model has nothing to say about them.
        if k.rules
            .values()
            .flatten()
            .all(|f| f.rule.basis == RuleBasis::Evidence)
        {
            for (setting, rules) in &k.rules {
                let current = d.facts.settings.get(setting).cloned().unwrap_or_default();
                let mut r = recommendation(rules[0], current, &d.summary, &d.facts);
                r.supporting_rules = rules[1..].iter().map(|f| f.rule.id.clone()).collect();
                d.recommendations.push(r);
            }
            continue;
        }
        for (setting, rules) in &k.rules {
            let r = rules[0];
            d.not_applied.push(not_applied(
                r.rule,
                Some(r.proposed.clone()),
                Status::NotModelled,
                format!(
                    "the model does not cover {setting}: only a live trial (--trial) can judge it"
                ),
            ));
        }
    }
    if !d.facts.settings.contains_key(REDO_THREADS) {
        // The model's mechanics are the redo modes (and the cap and
        // throttle around them): a server without that setting (MariaDB)
        // gets no prediction; only a live trial judges its proposals.
        report.note = Some(format!(
            "the what-if model covers engines with switchable dedicated redo log threads (the bundled engine, MySQL 8); this {} server has none: its proposals are judged only by a live trial (--trial)",
            d.facts.engine
        ));
        for k in &modelled {
            file_knob(
                d,
                k,
                Status::NotModelled,
                "no prediction on this engine".into(),
            );
        }
        d.model = Some(report);
        return;
    }
    let inputs = match inputs {
        Ok(i) => i,
        Err(e) => {
            report.note = Some(format!("no predictions: {e}"));
            for k in &modelled {
                file_knob(
                    d,
                    k,
                    Status::NotModelled,
                    format!("no prediction possible: {e}"),
                );
            }
            d.model = Some(report);
            return;
        }
    };
    let base = inputs.config;
    // Candidate configurations and the knobs that make each.
    let mut candidates: Vec<(Config, Vec<usize>)> = Vec::new();
    let mut add = |c: Config, ks: Vec<usize>| {
        if c != base && !candidates.iter().any(|(x, _)| *x == c) {
            candidates.push((c, ks));
        }
    };
    for (i, k) in modelled.iter().enumerate() {
        add(base.with(&k.changes), vec![i]);
    }
    for (i, a) in modelled.iter().enumerate().filter(|(_, k)| k.is_redo()) {
        for (j, b) in modelled.iter().enumerate().filter(|(_, k)| !k.is_redo()) {
            let mut both = a.changes.clone();
            both.extend(b.changes.clone());
            add(base.with(&both), vec![i, j]);
        }
    }
    let configs: Vec<Config> = candidates.iter().map(|(c, _)| *c).collect();
    let predictions = model.predict(&inputs, &configs, &d.facts.settings);
    let decision = decide(model, &inputs, &predictions, priors);
    let chosen = decision
        .chosen
        .and_then(|c| predictions.iter().find(|p| p.config == c).cloned());
    let knobs_of = |c: &Config| -> Vec<usize> {
        candidates
            .iter()
            .find(|(x, _)| x == c)
            .map(|(_, ks)| ks.clone())
            .unwrap_or_default()
    };
    let chosen_knobs = chosen
        .as_ref()
        .map(|p| knobs_of(&p.config))
        .unwrap_or_default();
    if let Some(p) = &chosen {
        let a = decision
            .of(&p.config)
            .expect("the chosen candidate was assessed");
        let effect = PredictedEffect {
            candidate: p.config.to_string(),
            current_commits_per_s: inputs.commits_per_s,
            commits_per_s: inputs.commits_per_s * (1.0 + a.gain),
            low: inputs.commits_per_s * (1.0 + a.low),
            high: inputs.commits_per_s * (1.0 + a.high),
            p_worse: Some(a.p_worse),
        };
        for &i in &chosen_knobs {
            for (setting, rules) in &modelled[i].rules {
                let current = d.facts.settings.get(setting).cloned().unwrap_or_default();
                let mut r = recommendation(rules[0], current, &d.summary, &d.facts);
                r.supporting_rules = rules[1..].iter().map(|f| f.rule.id.clone()).collect();
                r.predicted = Some(effect.clone());
                d.recommendations.push(r);
            }
        }
    }
    // Every other proposal: why the decision rule did not advise it.
    let extrapolated = !model.outside(&inputs).is_empty();
    let chosen_a = chosen.as_ref().and_then(|p| decision.of(&p.config));
    for (i, k) in modelled.iter().enumerate() {
        if chosen_knobs.contains(&i) {
            continue;
        }
        let alone = base.with(&k.changes);
        let a = decision.of(&alone);
        let (status, reason) = match (a, chosen_a) {
            (None, _) => (Status::PredictedWorse, "no prediction".to_string()),
            (Some(a), Some(c)) if a.utility > decision.min_utility => (
                Status::Outranked,
                format!("expected {}, but {} is better", assess(a), assess(c)),
            ),
            (Some(a), _) if a.log_ratio <= 0.0 => (
                Status::PredictedWorse,
                format!(
                    "expected {} over the observed {:.0} commits/s{}",
                    assess(a),
                    inputs.commits_per_s,
                    if extrapolated && a.high >= WORTH_TRYING - 1.0 {
                        "; the load is outside the calibrated range, so the interval reaches a gain: a live trial (--trial) would settle it"
                    } else {
                        ""
                    }
                ),
            ),
            (Some(a), _) => (
                Status::WithinError,
                format!(
                    "expected {}: the chance of a loss, weighed {}x a gain, outweighs the gain{}",
                    assess(a),
                    decision.loss_asymmetry,
                    if a.high >= WORTH_TRYING - 1.0 {
                        "; a live trial (--trial) would settle it"
                    } else {
                        ""
                    }
                ),
            ),
        };
        file_knob(d, k, status, reason);
    }
    report.sigma_used = predictions
        .iter()
        .map(|p| p.sigma)
        .fold(model.sigma, f64::max);
    report.outside = model.outside(&inputs);
    report.inputs = Some(inputs.clone());
    report.current = Some(model.current(&inputs));
    report.chosen = chosen.map(|p| p.config.to_string());
    report.predictions = predictions;
    report.decision = Some(decision);
    d.model = Some(report);
}

fn file_knob(d: &mut Diagnosis, k: &Knob, status: Status, reason: String) {
    for rules in k.rules.values() {
        for f in rules {
            d.not_applied.push(not_applied(
                f.rule,
                Some(f.proposed.clone()),
                status,
                reason.clone(),
            ));
        }
    }
}

fn verdict(
    d: &Diagnosis,
    n_rules: usize,
    secs: f64,
    cps: f64,
    busy: f64,
    no_proposals: bool,
) -> Verdict {
    let observed = format!("{secs:.1} s of signals ({cps:.0} commits/s, {busy:.2} CPUs busy)");
    if !d.recommendations.is_empty() {
        let mut list: Vec<String> = d
            .recommendations
            .iter()
            .map(|r| format!("{} {} -> {}", r.setting, r.current, r.proposed))
            .collect();
        list.dedup();
        let m = d.model.as_ref();
        let a = m.and_then(|m| {
            m.decision.as_ref().and_then(|dec| {
                dec.assessments
                    .iter()
                    .find(|a| Some(a.config.to_string()) == m.chosen)
            })
        });
        if a.is_none() {
            return Verdict {
                kind: VerdictKind::Change,
                text: format!(
                    "change advised: {} (on the evidence of {observed}; the what-if model does not cover these settings: a live trial (--trial) measures the gain){}",
                    list.join(", "),
                    restart_clause(d)
                ),
                basis: Basis::Evidence,
            };
        }
        return Verdict {
            kind: VerdictKind::Change,
            text: format!(
                "change advised: {} (expected {} over the observed {cps:.0} commits/s){}",
                list.join(", "),
                a.map_or("?".into(), assess),
                restart_clause(d)
            ),
            basis: Basis::Model,
        };
    }
    let text = if no_proposals {
        format!(
            "no change advised: {n_rules} rules checked against {observed}; none proposes a live change"
        )
    } else {
        let best = d
            .model
            .as_ref()
            .and_then(|m| m.decision.as_ref())
            .and_then(|dec| dec.assessments.first());
        match best {
            Some(a) if a.gain > 0.0 && a.high >= WORTH_TRYING - 1.0 => format!(
                "no change advised: the best candidate, {}, risks a loss that outweighs its gain; a live trial (--trial) would settle it ({observed})",
                assess(a)
            ),
            Some(a) => format!(
                "no change advised: no candidate is expected to beat the current configuration (best: {}; {observed})",
                assess(a)
            ),
            None => format!(
                "no change advised: the proposals could not be predicted ({}; {observed})",
                d.model.as_ref().and_then(|m| m.note.clone()).unwrap_or_default()
            ),
        }
    };
    let text = format!("{text}{}", restart_clause(d));
    Verdict {
        kind: VerdictKind::NoChange,
        text,
        basis: Basis::Model,
    }
}

/// A users' doublewrite wait share at which the verdict names the
/// doublewrite buffer as a bottleneck (`dblwr-files-design`'s threshold).
const DBLWR_BOTTLENECK: f64 = 0.05;

/// The verdict's clause on static settings the rules proposed: worth a
/// restart (measured gain), not measured, or measured not to pay.
fn restart_clause(d: &Diagnosis) -> String {
    let (mut worth, mut unmeasured, mut not_worth) = (vec![], vec![], vec![]);
    for n in d
        .not_applied
        .iter()
        .filter(|n| n.status == Status::NeedsRestart)
    {
        let what = format!(
            "{}={} ({}{}",
            n.setting,
            n.proposed.as_deref().unwrap_or("?"),
            n.rule,
            if n.risks_durability {
                ", a durability risk: see its reason"
            } else {
                ""
            }
        );
        match &n.restart {
            Some(e) if e.worth_it => worth.push((
                e.utility,
                format!("{what}, expected {})", pct(1.0 + e.gain)),
            )),
            Some(e) => not_worth.push(format!(
                "{what}, expected {}, {}..{})",
                pct(1.0 + e.gain),
                pct(1.0 + e.low),
                pct(1.0 + e.high)
            )),
            None => unmeasured.push(format!("{what}, gain not measured)")),
        }
    }
    // The most useful first: the restart the diagnosis would make.
    worth.sort_by(|a, b| b.0.total_cmp(&a.0));
    let worth: Vec<String> = worth.into_iter().map(|(_, w)| w).collect();
    let mut out = String::new();
    // The doublewrite buffer as the bottleneck, named (seed 002).
    let dblwr = d.summary.get("dblwr_wait_share").copied().unwrap_or(0.0);
    if dblwr >= DBLWR_BOTTLENECK {
        out.push_str(&format!(
            "; the users spend {:.0}% of their time queued on the doublewrite buffer (dblwr.* named locks)",
            dblwr * 100.0
        ));
    }
    for (list, head) in [
        (
            worth,
            "worth a restart (static, not applied live; best first)",
        ),
        (unmeasured, "may be worth a restart (static; not measured)"),
        (not_worth, "proposed but measured not to pay a restart"),
    ] {
        if !list.is_empty() {
            out.push_str(&format!("; {head}: {}", list.join(", ")));
        }
    }
    out
}

fn insufficient(text: String) -> Verdict {
    Verdict {
        kind: VerdictKind::InsufficientEvidence,
        text: format!("insufficient evidence: {text}"),
        basis: Basis::Evidence,
    }
}

fn not_applied(
    rule: &Rule,
    proposed: Option<String>,
    status: Status,
    reason: String,
) -> NotApplied {
    NotApplied {
        rule: rule.id.clone(),
        setting: rule.setting.clone(),
        proposed,
        status,
        reason,
        restart: None,
        risks_durability: false,
    }
}

fn lacks_evidence(rule: &Rule, secs: f64, commits: f64) -> Option<String> {
    if secs < rule.min_seconds {
        return Some(format!(
            "observed {secs:.1} s < min_seconds {}",
            rule.min_seconds
        ));
    }
    if commits < rule.min_commits as f64 {
        return Some(format!(
            "{commits:.0} commits < min_commits {}",
            rule.min_commits
        ));
    }
    None
}

/// Base confidence scaled by evidence: full at twice the minimum evidence,
/// half at the minimum.
fn confidence(rule: &Rule, secs: f64, commits: f64) -> f64 {
    let f = |have: f64, min: f64| {
        if min <= 0.0 {
            1.0
        } else {
            (have / (2.0 * min)).clamp(0.5, 1.0)
        }
    };
    let c = rule.confidence * f(secs, rule.min_seconds) * f(commits, rule.min_commits as f64);
    (c * 100.0).round() / 100.0
}

fn context(summary: &Summary, facts: &Facts, rule: &Rule) -> Context<'static> {
    let mut ctx = Context::default();
    let signals: HashMap<String, Value> = summary
        .iter()
        .map(|(k, v)| (k.clone(), Value::Float(*v)))
        .collect();
    ctx.add_variable_from_value("signals", signals);
    let settings: HashMap<String, Value> = facts
        .settings
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(Arc::new(v.clone()))))
        .collect();
    let mut f: HashMap<String, Value> = HashMap::new();
    f.insert("cores".into(), Value::Int(i64::from(facts.cores)));
    f.insert("binlog".into(), Value::Bool(facts.binlog));
    f.insert(
        "allow_durability".into(),
        Value::Bool(facts.allow_durability),
    );
    f.insert(
        "engine".into(),
        Value::String(Arc::new(facts.engine.clone())),
    );
    f.insert("settings".into(), settings.into());
    for (name, read) in UNIT_SETTINGS {
        let numbers: HashMap<String, Value> = facts
            .settings
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), Value::Float(read(v)?))))
            .collect();
        f.insert((*name).into(), numbers.into());
    }
    let counters: HashMap<String, Value> = facts
        .counters
        .iter()
        .map(|(k, v)| (k.clone(), Value::Float(*v)))
        .collect();
    f.insert("counters".into(), counters.into());
    ctx.add_variable_from_value("facts", f);
    let t: HashMap<String, Value> = rule
        .thresholds
        .iter()
        .map(|(k, v)| (k.clone(), Value::Float(*v)))
        .collect();
    ctx.add_variable_from_value("t", t);
    ctx
}

fn run(p: &Program, ctx: &Context, what: &str) -> Result<Value, String> {
    p.execute(ctx)
        .map_err(|e| format!("{what} failed to evaluate: {e}"))
}

/// `Ok(Some(value))` when the rule fires.
fn evaluate(rule: &Rule, summary: &Summary, facts: &Facts) -> Result<Option<String>, String> {
    let ctx = context(summary, facts, rule);
    match run(&rule.condition, &ctx, "condition")? {
        Value::Bool(false) => Ok(None),
        Value::Bool(true) => {
            let v = run(&rule.recommend, &ctx, "recommend")?;
            setting_value(&v).map(Some)
        }
        other => Err(format!("condition gave {other:?}, not a bool")),
    }
}

/// A CEL value as a setting value (`ON`/`OFF`, integer, or string).
fn setting_value(v: &Value) -> Result<String, String> {
    Ok(match v {
        Value::Bool(b) => if *b { "ON" } else { "OFF" }.into(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Float(f) if f.is_finite() && *f >= 0.0 => format!("{}", f.round() as u64),
        Value::String(s) => normalize(s),
        other => return Err(format!("recommend gave {other:?}, not a setting value")),
    })
}

/// `settings_ms.NAME` and the like: the setting's name and how it reads
/// as a number.
fn unit_setting(path: &str) -> Option<(&str, ReadUnit)> {
    let (root, name) = path.split_once('.')?;
    UNIT_SETTINGS
        .iter()
        .find(|(r, _)| *r == root)
        .map(|(_, read)| (name, *read))
}

/// The value of every path the rule reads (`Rule::reads`), as the rule saw it.
fn evidence(summary: &Summary, facts: &Facts, rule: &Rule) -> Vec<EvidenceItem> {
    rule.reads
        .iter()
        .map(|path| {
            let (root, rest) = path.split_once('.').unwrap_or((path.as_str(), ""));
            let value = match root {
                "signals" => summary.get(rest).map(|v| fmt_num(*v)),
                "t" => rule.thresholds.get(rest).map(|v| fmt_num(*v)),
                _ => match rest {
                    "cores" => Some(facts.cores.to_string()),
                    "binlog" => Some(facts.binlog.to_string()),
                    "allow_durability" => Some(facts.allow_durability.to_string()),
                    "engine" => Some(facts.engine.clone()),
                    _ if rest.starts_with("counters.") => rest
                        .strip_prefix("counters.")
                        .and_then(|k| facts.counters.get(k))
                        .map(|v| fmt_num(*v)),
                    _ => match unit_setting(rest) {
                        Some((k, read)) => facts.settings.get(k).and_then(|v| read(v)).map(fmt_num),
                        None => rest
                            .strip_prefix("settings.")
                            .and_then(|k| facts.settings.get(k).cloned()),
                    },
                },
            };
            item(path.clone(), value.unwrap_or_else(|| "(absent)".into()))
        })
        .collect()
}

fn item(name: String, value: String) -> EvidenceItem {
    EvidenceItem { name, value }
}

fn recommendation(w: &Fired, current: String, summary: &Summary, facts: &Facts) -> Recommendation {
    rule_recommendation(w.rule, &w.proposed, w.confidence, current, summary, facts)
}

/// A recommendation of `r`'s proposal, with its evidence.
pub(crate) fn rule_recommendation(
    r: &Rule,
    proposed: &str,
    confidence: f64,
    current: String,
    summary: &Summary,
    facts: &Facts,
) -> Recommendation {
    let w = Fired {
        rule: r,
        proposed: proposed.to_string(),
        confidence,
    };
    Recommendation {
        rule: r.id.clone(),
        severity: r.severity,
        priority: r.priority,
        setting: r.setting.clone(),
        current,
        proposed: w.proposed.clone(),
        confidence: w.confidence,
        condition: r.condition_src.clone(),
        evidence: evidence(summary, facts, r),
        rationale: r.rationale.clone(),
        sources: r.sources.clone(),
        expected_effect: r.expected_effect.clone(),
        apply_engine: if facts.engine == "postgresql" {
            format!(
                "redoctor apply --socket SOCKET_DIR --set {}={} (ALTER SYSTEM SET and pg_reload_conf() over the server's socket; `redoctor revert` undoes it)",
                r.setting, w.proposed
            )
        } else if facts.engine == "redoctor-engine" {
            format!(
                "redoctor apply --socket SOCKET --set {}={} (SET GLOBAL over the server's socket; `redoctor revert` undoes it), or at start: redoctor-engine run --set {}={}",
                r.setting, w.proposed, r.setting, w.proposed
            )
        } else {
            format!(
                "redoctor apply --socket SOCKET --set {}={} (SET GLOBAL over the {} server's socket; `redoctor revert` undoes it)",
                r.setting, w.proposed, facts.engine
            )
        },
        apply_mysql: r.mysql.as_ref().map(|m| m.replace("{value}", &w.proposed)),
        apply_postgresql: r
            .postgresql
            .as_ref()
            .map(|m| m.replace("{value}", &w.proposed)),
        supporting_rules: vec![],
        predicted: None,
        verified: false,
    }
}
