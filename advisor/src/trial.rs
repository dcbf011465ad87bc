//! `--trial`: the decision of an interleaved A/B trial. Windows alternate
//! baseline, candidate, baseline, ... (so drift hits both sides); the
//! candidate is kept only when its commits/s are higher than the baseline's
//! beyond noise by Welch's two-sample t-test (two-sided, [`ALPHA`]),
//! otherwise it is rolled back.

use std::collections::BTreeMap;

use redoctor_engine::sweep::stats::{median, welch_p_value};
use serde::{Deserialize, Serialize};

pub const ALPHA: f64 = 0.05;
pub const TEST: &str =
    "Welch's two-sample t-test (two-sided, alpha 0.05) on commits/s of interleaved windows";

/// Measurements and outcome of a trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialReport {
    pub test: String,
    /// The candidate settings tried.
    pub candidate_settings: BTreeMap<String, String>,
    /// The settings restored on rollback.
    pub baseline_settings: BTreeMap<String, String>,
    /// Commits/s of each baseline window, in order.
    pub baseline: Vec<f64>,
    /// Commits/s of each candidate window, in order.
    pub candidate: Vec<f64>,
    pub baseline_median: f64,
    pub candidate_median: f64,
    pub p_value: Option<f64>,
    /// True: the candidate stays applied; false: rolled back.
    pub kept: bool,
    pub reason: String,
}

/// Decides from the windows' commits/s.
pub fn decide(
    baseline_settings: BTreeMap<String, String>,
    candidate_settings: BTreeMap<String, String>,
    baseline: Vec<f64>,
    candidate: Vec<f64>,
) -> TrialReport {
    let bm = median(&baseline).unwrap_or(0.0);
    let cm = median(&candidate).unwrap_or(0.0);
    let p = welch_p_value(&baseline, &candidate);
    let (kept, reason) = match p {
        None => (
            false,
            "too few windows for the test (needs >= 2 per side): rolled back".to_string(),
        ),
        Some(p) if p < ALPHA && cm > bm => (
            true,
            format!("candidate faster ({cm:.0} vs {bm:.0} commits/s, p = {p:.4} < {ALPHA}): kept"),
        ),
        Some(p) if p < ALPHA => (
            false,
            format!("candidate slower ({cm:.0} vs {bm:.0} commits/s, p = {p:.4}): rolled back"),
        ),
        Some(p) => (
            false,
            format!("no difference beyond noise ({cm:.0} vs {bm:.0} commits/s, p = {p:.4} >= {ALPHA}): rolled back"),
        ),
    };
    TrialReport {
        test: TEST.into(),
        candidate_settings,
        baseline_settings,
        baseline,
        candidate,
        baseline_median: bm,
        candidate_median: cm,
        p_value: p,
        kept,
        reason,
    }
}
