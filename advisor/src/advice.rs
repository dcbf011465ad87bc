//! The diagnosis: verdict, recommendations with their evidence, and what
//! did not become a recommendation (and why). Serialised as the JSON report
//! (schema `redoctor.diagnosis`, version [`VERSION`]; see `advisor/SCHEMA.md`).

use std::collections::BTreeMap;

use redoctor_probes::Signals;
use serde::{Deserialize, Serialize};

use crate::facts::Facts;
use crate::rule::Severity;
use crate::summary::Summary;

pub const SCHEMA: &str = "redoctor.diagnosis";
/// Bump on any incompatible change of [`Diagnosis`].
pub const VERSION: u32 = 1;

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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub kind: VerdictKind,
    /// One sentence for humans.
    pub text: String,
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
}

/// A rule that fired but did not become a recommendation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotApplied {
    pub rule: String,
    pub setting: String,
    /// What it would have set (None when it could not be evaluated).
    pub proposed: Option<String>,
    /// `overridden`, `already_set`, `insufficient_evidence`, `error`, `requires`.
    pub status: String,
    pub reason: String,
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
    /// A live A/B trial of the recommendations, when one was run.
    pub trial: Option<crate::trial::TrialReport>,
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

    /// Parses a JSON report, refusing other schemas and versions.
    pub fn from_json(text: &str) -> Result<Diagnosis, String> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        if v.get("schema").and_then(|s| s.as_str()) != Some(SCHEMA) {
            return Err(format!("not a {SCHEMA} report (field `schema`)"));
        }
        let ver = v.get("version").and_then(|s| s.as_u64());
        if ver != Some(u64::from(VERSION)) {
            return Err(format!(
                "report version {ver:?} is not the supported {VERSION}"
            ));
        }
        serde_json::from_value(v).map_err(|e| format!("malformed report: {e}"))
    }
}
