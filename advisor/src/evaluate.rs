//! Evaluates a rule set against a summary and facts, resolves conflicts,
//! and builds the [`Diagnosis`].
//!
//! Conflict resolution (also in `rules/README.md`):
//! 1. rules with too little evidence (`min_seconds`, `min_commits`) or whose
//!    expressions fail to evaluate do not take part;
//! 2. among firing rules of one `group`, then among those for one `setting`,
//!    the winner is the highest `priority`, then the highest severity, then
//!    the highest confidence, then the smallest id; the others are listed as
//!    overridden by it;
//! 3. a winner whose value equals the current one is "already set";
//! 4. a rule with `requires` is kept only if every rule it requires became a
//!    recommendation.

use std::collections::HashMap;
use std::sync::Arc;

use cel_interpreter::{Context, Program, Value};
use redoctor_probes::Signals;

use crate::advice::*;
use crate::error::AdvisorError;
use crate::facts::{normalize, Facts};
use crate::rule::Rule;
use crate::ruleset::RuleSet;
use crate::summary::{summarize, Summary, SIGNAL_DOCS};

/// Below this much observed time no advice is given at all.
pub const MIN_OBSERVED_S: f64 = 1.0;
/// Below this CPU use (CPUs) and without commits the target counts as idle.
pub const IDLE_CPUS: f64 = 0.05;

pub const RESOLUTION: &str = "per group, then per setting: highest priority, then severity, then confidence, then smallest id wins; rules lacking evidence or failing to evaluate take no part; a winner equal to the current value is already set; `requires` keeps a rule only with its required rules";

/// A rule that fired, before resolution.
struct Fired<'a> {
    rule: &'a Rule,
    proposed: String,
    confidence: f64,
}

/// Diagnoses `windows` of process `pid` with `rules`.
pub fn diagnose(
    pid: u32,
    windows: Vec<Signals>,
    facts: Facts,
    rules: &RuleSet,
) -> Result<Diagnosis, AdvisorError> {
    if windows.is_empty() {
        return Err(AdvisorError::NoSignals);
    }
    let summary = summarize(&windows);
    let mut d = Diagnosis {
        schema: SCHEMA.into(),
        version: VERSION,
        verdict: Verdict {
            kind: VerdictKind::NoChange,
            text: String::new(),
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
            d.not_applied
                .push(not_applied(rule, None, "insufficient_evidence", reason));
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
            Err(e) => d.not_applied.push(not_applied(rule, None, "error", e)),
        }
    }
    let winners = resolve(fired, &mut d.not_applied);
    for w in winners {
        let current = d
            .facts
            .settings
            .get(&w.rule.setting)
            .cloned()
            .unwrap_or_default();
        if normalize(&current) == normalize(&w.proposed) {
            d.not_applied.push(not_applied(
                w.rule,
                Some(w.proposed.clone()),
                "already_set",
                format!("{} is already {}", w.rule.setting, current),
            ));
            continue;
        }
        d.recommendations
            .push(recommendation(&w, current, &d.summary, &d.facts));
    }
    drop_unmet_requires(&mut d, rules);
    d.verdict = if d.recommendations.is_empty() {
        Verdict {
            kind: VerdictKind::NoChange,
            text: format!(
                "no change advised: {} rules checked against {secs:.1} s of signals ({:.0} commits/s, {busy:.2} CPUs busy)",
                rules.rules.len(),
                cps
            ),
        }
    } else {
        let list: Vec<String> = d
            .recommendations
            .iter()
            .map(|r| format!("{} {} -> {}", r.setting, r.current, r.proposed))
            .collect();
        Verdict {
            kind: VerdictKind::Change,
            text: format!("change advised: {}", list.join(", ")),
        }
    };
    Ok(d)
}

fn insufficient(text: String) -> Verdict {
    Verdict {
        kind: VerdictKind::InsufficientEvidence,
        text: format!("insufficient evidence: {text}"),
    }
}

fn not_applied(rule: &Rule, proposed: Option<String>, status: &str, reason: String) -> NotApplied {
    NotApplied {
        rule: rule.id.clone(),
        setting: rule.setting.clone(),
        proposed,
        status: status.into(),
        reason,
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
        "engine".into(),
        Value::String(Arc::new(facts.engine.clone())),
    );
    f.insert("settings".into(), settings.into());
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

fn rank<'a>(f: &'a Fired) -> impl Ord + 'a {
    (
        f.rule.priority,
        f.rule.severity,
        (f.confidence * 1000.0) as i64,
        std::cmp::Reverse(f.rule.id.as_str()),
    )
}

fn resolve<'a>(mut fired: Vec<Fired<'a>>, out: &mut Vec<NotApplied>) -> Vec<Fired<'a>> {
    fired.sort_by(|a, b| rank(b).cmp(&rank(a)));
    let by_group = |f: &Fired| f.rule.group.as_ref().map(|g| format!("group '{g}'"));
    let by_setting = |f: &Fired| Some(format!("setting {}", f.rule.setting));
    let fired = pick(fired, by_group, out);
    pick(fired, by_setting, out)
}

/// Keeps the first (best-ranked) rule per key; the rest are overridden.
fn pick<'a>(
    sorted: Vec<Fired<'a>>,
    key: impl Fn(&Fired) -> Option<String>,
    out: &mut Vec<NotApplied>,
) -> Vec<Fired<'a>> {
    let mut kept: Vec<Fired<'a>> = Vec::new();
    for f in sorted {
        let k = key(&f);
        let winner = k
            .as_ref()
            .and_then(|k| kept.iter().find(|x| key(x).as_ref() == Some(k)));
        match (winner, &k) {
            (Some(w), Some(k)) => out.push(not_applied(
                f.rule,
                Some(f.proposed.clone()),
                "overridden",
                format!(
                    "{k}: rule '{}' wins (priority {} vs {}, then severity, confidence, id)",
                    w.rule.id, w.rule.priority, f.rule.priority
                ),
            )),
            _ => kept.push(f),
        }
    }
    kept
}

fn drop_unmet_requires(d: &mut Diagnosis, rules: &RuleSet) {
    loop {
        let ids: Vec<String> = d.recommendations.iter().map(|r| r.rule.clone()).collect();
        let unmet = d.recommendations.iter().position(|r| {
            rules
                .rules
                .iter()
                .find(|x| x.id == r.rule)
                .is_some_and(|x| x.requires.iter().any(|q| !ids.contains(q)))
        });
        let Some(i) = unmet else { return };
        let r = d.recommendations.remove(i);
        d.not_applied.push(NotApplied {
            rule: r.rule,
            setting: r.setting,
            proposed: Some(r.proposed),
            status: "requires".into(),
            reason: "a rule it requires did not become a recommendation".into(),
        });
    }
}

/// `signals.X`, `facts.X` and `t.X` names read by an expression, with values.
fn evidence(src: &str, summary: &Summary, facts: &Facts, rule: &Rule) -> Vec<EvidenceItem> {
    let mut ev = Vec::new();
    let reads = |name: &str| {
        src.match_indices(name).any(|(i, _)| {
            let before_ok = i == 0 || !is_ident(src.as_bytes()[i - 1]);
            let after = src.as_bytes().get(i + name.len());
            before_ok && after.is_none_or(|&c| !is_ident(c))
        })
    };
    for (k, _, _) in SIGNAL_DOCS {
        if reads(&format!("signals.{k}")) {
            let v = summary.get(*k).copied().unwrap_or(0.0);
            ev.push(item(format!("signals.{k}"), fmt_num(v)));
        }
    }
    let fact_vals = [
        ("cores", facts.cores.to_string()),
        ("binlog", facts.binlog.to_string()),
        ("engine", facts.engine.clone()),
    ];
    for (k, v) in fact_vals {
        if reads(&format!("facts.{k}")) {
            ev.push(item(format!("facts.{k}"), v));
        }
    }
    for (k, v) in &facts.settings {
        if reads(&format!("facts.settings.{k}")) {
            ev.push(item(format!("facts.settings.{k}"), v.clone()));
        }
    }
    for (k, v) in &rule.thresholds {
        if reads(&format!("t.{k}")) {
            ev.push(item(format!("t.{k}"), fmt_num(*v)));
        }
    }
    ev
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'.'
}

fn item(name: String, value: String) -> EvidenceItem {
    EvidenceItem { name, value }
}

/// A number with up to 3 significant decimals.
pub fn fmt_num(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

fn recommendation(w: &Fired, current: String, summary: &Summary, facts: &Facts) -> Recommendation {
    let r = w.rule;
    let src = format!("{} {}", r.condition_src, r.recommend_src);
    Recommendation {
        rule: r.id.clone(),
        severity: r.severity,
        priority: r.priority,
        setting: r.setting.clone(),
        current,
        proposed: w.proposed.clone(),
        confidence: w.confidence,
        condition: r.condition_src.clone(),
        evidence: evidence(&src, summary, facts, r),
        rationale: r.rationale.clone(),
        sources: r.sources.clone(),
        expected_effect: r.expected_effect.clone(),
        apply_engine: format!(
            "redoctor apply --socket SOCKET --set {}={} (SET GLOBAL over the server's socket; `redoctor revert` undoes it), or at start: redoctor-engine run --set {}={}",
            r.setting, w.proposed, r.setting, w.proposed
        ),
        apply_mysql: r.mysql.as_ref().map(|m| m.replace("{value}", &w.proposed)),
    }
}
