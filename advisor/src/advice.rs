//! The diagnosis: verdict, recommendations with their evidence, and what
//! did not become a recommendation (and why). Serialised as the JSON report
//! (schema `redoctor.diagnosis`, version [`VERSION`]; see `advisor/SCHEMA.md`).

use std::collections::BTreeMap;

use redoctor_probes_common::Signals;
use serde::{Deserialize, Serialize};

use crate::facts::Facts;
use crate::rule::Severity;
use crate::summary::Summary;

pub const SCHEMA: &str = "redoctor.diagnosis";
/// Bump on any incompatible change of [`Diagnosis`]. 2: `trial` became an
/// [`Experiment`](crate::experiment::Experiment).
pub const VERSION: u32 = 2;

/// Overall outcome, first thing a reader sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// At least one setting should change.
    Change,
    /// Enough evidence, nothing to change.
    NoChange,
    /// Too little observed (idle, too short): no advice given.
    InsufficientEvidence,
}

/// What a verdict rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Too little was observed to say anything.
    #[default]
    Evidence,
    /// The what-if model's predictions (no trial was run).
    Model,
    /// A live trial's measurement (it overrides the model).
    Trial,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub kind: VerdictKind,
    /// One sentence for humans.
    pub text: String,
    /// What the verdict follows.
    #[serde(default)]
    pub basis: Basis,
}

/// A candidate's predicted effect, as a recommendation carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PredictedEffect {
    /// The whole configuration predicted (`RT0+cap4`, ...).
    pub candidate: String,
    /// Observed commits/s in the current configuration.
    pub current_commits_per_s: f64,
    /// Expected commits/s after the change and its 95% interval: the
    /// model's prediction shrunk toward the prior (`crate::decision`).
    pub commits_per_s: f64,
    pub low: f64,
    pub high: f64,
    /// Probability that the change is slower than the current configuration.
    #[serde(default)]
    pub p_worse: Option<f64>,
}

/// One signal, fact or threshold the rule's condition read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceItem {
    /// `signals.NAME`, `facts.NAME` or `t.NAME` (a threshold).
    pub name: String,
    /// Value as the rule saw it.
    pub value: String,
}

/// A setting to change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    pub rule: String,
    pub severity: Severity,
    pub priority: i64,
    pub setting: String,
    pub current: String,
    pub proposed: String,
    /// 0..1: the rule's base confidence scaled by how much evidence there is.
    pub confidence: f64,
    /// The rule's condition, as written.
    pub condition: String,
    /// Values of every signal, fact and threshold the condition reads.
    pub evidence: Vec<EvidenceItem>,
    pub rationale: String,
    pub sources: Vec<String>,
    pub expected_effect: String,
    /// How to apply on the bundled engine.
    pub apply_engine: String,
    /// How to apply on MySQL 8, or None when MySQL has no such setting.
    pub apply_mysql: Option<String>,
    /// How to apply on PostgreSQL, or None when it has no such setting.
    #[serde(default)]
    pub apply_postgresql: Option<String>,
    /// Other rules that proposed the same value (their reasons apply too).
    #[serde(default)]
    pub supporting_rules: Vec<String>,
    /// What the model predicts for the configuration this change belongs to.
    #[serde(default)]
    pub predicted: Option<PredictedEffect>,
    /// A live trial kept it: measured better beyond noise.
    #[serde(default)]
    pub verified: bool,
}

/// Why a rule's proposal did not become a recommendation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Version 1 reports: another rule won the conflict for this setting.
    Overridden,
    /// The setting already has the proposed value.
    AlreadySet,
    /// Too little observed for this rule (`min_seconds`, `min_commits`).
    InsufficientEvidence,
    /// Its expressions failed to evaluate.
    Error,
    /// A rule it requires did not become a recommendation.
    Requires,
    /// The model predicts a gain, but its interval includes no change.
    WithinError,
    /// The model predicts no gain or a loss.
    PredictedWorse,
    /// Another candidate is predicted better.
    Outranked,
    /// The model does not cover this setting: only a live trial can judge it.
    NotModelled,
    /// A live trial measured it no better (worse, inconclusive or aborted) and rolled it back.
    TrialRejected,
    /// The setting is static: it needs a server restart, so it is neither
    /// applied live nor tried (the rule has `restart = true`).
    NeedsRestart,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = serde_json::to_value(self).expect("a status serialises");
        f.write_str(v.as_str().unwrap_or("?"))
    }
}

/// A rule that fired but did not become a recommendation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotApplied {
    pub rule: String,
    pub setting: String,
    /// What it would have set (None when it could not be evaluated).
    pub proposed: Option<String>,
    pub status: Status,
    pub reason: String,
    /// A static setting's change: its expected effect from the measured
    /// restart priors (None: not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart: Option<crate::decision::restart::RestartEstimate>,
    /// A durability change (proposed only with consent): the reason ends
    /// with what it risks, and the verdict says so beside it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub risks_durability: bool,
}

/// The whole diagnosis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    pub schema: String,
    pub version: u32,
    pub verdict: Verdict,
    pub pid: u32,
    pub facts: Facts,
    /// The rules' vocabulary: every `signals.*` value.
    pub summary: Summary,
    pub recommendations: Vec<Recommendation>,
    pub not_applied: Vec<NotApplied>,
    /// Rules evaluated (after disabling).
    pub rules_evaluated: usize,
    pub rules_disabled: Vec<String>,
    /// Conflict resolution used (documented in rules/README.md).
    pub resolution: String,
    /// The raw windows the summary was computed from.
    pub windows: Vec<Signals>,
    /// The what-if model's inputs and predictions for every candidate.
    #[serde(default)]
    pub model: Option<ModelReport>,
    /// A live trial (or search) of the recommendations, when one was run.
    pub trial: Option<crate::experiment::Experiment>,
}

/// What the model saw and predicted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelReport {
    /// Where its constants come from (this host's calibration, or priors).
    pub source: String,
    pub calibrated: bool,
    /// Its error on held-out points (log scale).
    pub sigma: f64,
    /// The widest error an interval was drawn with (log scale): `sigma`,
    /// the observed rate's noise and the extrapolation beyond the
    /// calibrated range (each prediction carries its own).
    #[serde(default)]
    pub sigma_used: f64,
    /// Where the observation lies outside the calibrated range (each
    /// widens the intervals).
    #[serde(default)]
    pub outside: Vec<crate::model::Outside>,
    /// The observation as the model reads it (None: no prediction possible, see `note`).
    pub inputs: Option<crate::model::Inputs>,
    /// The current configuration as the model sees it.
    pub current: Option<crate::model::Estimate>,
    /// Every candidate, best first.
    pub predictions: Vec<crate::model::Prediction>,
    /// The candidate advised (highest expected utility above the bar), if any.
    pub chosen: Option<String>,
    /// Why predictions are missing or limited, when they are.
    pub note: Option<String>,
    /// How each candidate was judged: prior, posterior, risk, utility.
    #[serde(default)]
    pub decision: Option<crate::decision::Decision>,
    /// Every candidate predicted for a host of another CPU count
    /// (`diagnose --what-if-cpus N`).
    #[serde(default)]
    pub what_if: Option<WhatIfAdvice>,
}

/// The model's predictions for a host of another CPU count, with what the
/// decision rule would advise there (the priors of the regime there).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhatIfAdvice {
    #[serde(flatten)]
    pub host: crate::model::WhatIfHost,
    #[serde(default)]
    pub decision: Option<crate::decision::Decision>,
}

impl Diagnosis {
    /// `name -> proposed` of every recommendation.
    pub fn proposed_settings(&self) -> BTreeMap<String, String> {
        self.recommendations
            .iter()
            .map(|r| (r.setting.clone(), r.proposed.clone()))
            .collect()
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a diagnosis always serialises")
    }

    /// Parses a JSON report, refusing other schemas and versions. A
    /// version 1 report is read without its `trial` (an older shape).
    pub fn from_json(text: &str) -> Result<Diagnosis, String> {
        let mut v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        if v.get("schema").and_then(|s| s.as_str()) != Some(SCHEMA) {
            return Err(format!("not a {SCHEMA} report (field `schema`)"));
        }
        let ver = v.get("version").and_then(|s| s.as_u64());
        if ver == Some(1) {
            v["trial"] = serde_json::Value::Null;
            v["version"] = VERSION.into();
        } else if ver != Some(u64::from(VERSION)) {
            return Err(format!(
                "report version {ver:?} is not the supported {VERSION} (or 1)"
            ));
        }
        serde_json::from_value(v).map_err(|e| format!("malformed report: {e}"))
    }
}
