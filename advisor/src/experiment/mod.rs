//! Live verification of setting changes: one shared component for the
//! diagnosis's `--trial`, a daemon and a CI gate. It drives a [`Testbed`]
//! (a live server through its admin socket and the probes, or a simulation)
//! and decides from measured commits/s whether a candidate setting stays.
//! Design note: `advisor/EXPERIMENT.md`.
//!
//! # One trial ([`run_trial`])
//!
//! - **Paired windows, ABBA order.** Pair 1 measures baseline then
//!   candidate, pair 2 candidate then baseline, pair 3 baseline then
//!   candidate, and so on: settings switch only inside a pair, so a linear
//!   drift of the load adds the same bias to every pair with alternating
//!   sign and cancels. The testbed must be at the baseline when the trial
//!   starts; the first window is always a baseline window.
//! - **Warm-up.** After every settings switch one window of
//!   [`Plan::warmup`] is measured and discarded (kept in the record, marked
//!   `warmup`); a zero warm-up measures none.
//! - **Statistic.** Each pair gives `d_i = ln(candidate_i / baseline_i)`,
//!   clipped to their median ± ln 2 ([`clipped`]) so that one stalled
//!   window cannot outweigh the other pairs; the estimate is the ratio
//!   `exp(mean d)`.
//! - **Sequential test.** A look after each pair from [`Plan::min_pairs`]
//!   to [`Plan::max_pairs`]: a paired t-test on the `d_i` (Student t with
//!   n - 1 degrees of freedom). Rejection levels split `alpha`
//!   Haybittle–Peto style: each interim look at a strict
//!   [`Plan::interim_alpha`] (0.001 by default), the last look (the most
//!   pairs, or no time for another) at what the looks made left
//!   ([`Plan::final_alpha`], 0.043 after 7): the levels of the looks made
//!   sum to `alpha` whenever the trial stops, and the last look keeps nearly
//!   a fixed-length test's power. With that look's two-sided interval of
//!   mean d: above 0 stops "better" (candidate kept), below 0 stops "worse"
//!   (rolled back). Futility — the interval at `alpha / looks` inside
//!   `(-ln(1 + min_effect), ln(1 + min_effect))` — stops "no meaningful
//!   difference" (rolled back; stopping without rejecting spends no
//!   alpha). A candidate slower at one-sided [`Plan::harm`] (0.05) over
//!   the looks — each look at Pocock's constant level for the looks the
//!   budget plans ([`Plan::harm_level`]) — stops "likely slower"
//!   (inconclusive, rolled back: a slower setting need not run until the
//!   strict level calls it worse, and never being kept it spends no alpha
//!   either). Otherwise the trial goes on;
//!   after the last look it ends inconclusive (rolled back).
//! - **Floor guard.** Every measured candidate window is compared with the
//!   baseline's lowest measured window so far (at least half their
//!   median); below [`Plan::floor`] times that, the baseline is restored at
//!   once (a strike, [`TrialRecord::strikes`]) and the trial goes on: the
//!   next candidate window (after switching back) confirms or clears it.
//!   A second candidate window in a row below the floor aborts the trial
//!   ([`Outcome::AbortedFloor`]). A bad setting thus runs one window before
//!   it is undone, and at most two in a row; a load that stalls now and then
//!   on its own (lock waits, a disk hiccup) does not end a trial on one
//!   unlucky window. Warm-up windows are transients and not compared.
//! - **Stalled windows.** A pair with a window at 0 commits/s has no ratio
//!   and is left out ([`TrialRecord::void_pairs`]);
//!   [`ZERO_WINDOWS_TO_FAIL`] such windows in a row fail the trial (the
//!   load stopped).
//! - **Time.** The trial's clock is the sum of its windows' measured
//!   lengths ([`Sample::secs`]), so a simulation and a live server count
//!   alike; a pair is started only if its planned length
//!   ([`Plan::pair_time`]) fits the budget.
//! - **Restoring.** The baseline is restored whatever happens unless the
//!   outcome is [`Outcome::Kept`]; after a testbed error, best-effort
//!   ([`Outcome::Failed`], the error recorded).
//!
//! # Several candidates ([`search`])
//!
//! Candidates are tried one at a time, best predicted gain first, each
//! against the current baseline (a kept candidate becomes part of it). The
//! whole search is bounded by [`Plan::max_total`]. Each trial gets its
//! [`share`]: what is left, less `min_pairs` pairs for each candidate still
//! to try after it. The best predicted candidate keeps a full trial's
//! power, and candidates with no effect, which run to `max_pairs`, cannot
//! use up the budget before a later one has had a look that settles a
//! large effect. A candidate that cannot fit `min_pairs` pairs is skipped.

mod boundary;
mod carryover;
pub mod covariate;
mod design;
mod hac;
mod plan;
mod power;
mod search;
mod sequential;
mod switchback;
mod trial;

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use carryover::{carryover, design_for, stretched, switchback_for, CARRYOVER};
pub use covariate::Adjustment;
pub use design::{whole, Design, Switchback};
pub use hac::{hac_look, nw_lag};
pub use plan::Plan;
pub use power::{resolution, FullBudget, Resolution, POWER};
pub use search::{search, share, Candidate, SearchReport, Step, StepResult};
pub use sequential::{look, Decision, Look};
pub use trial::{clipped, Outcome, Side, TrialRecord, Window, MAX_LOG_RATIO, ZERO_WINDOWS_TO_FAIL};

/// Runs one trial within `budget` (see the module docs), in the plan's
/// design. The testbed must be at `baseline` on entry; on return it is at
/// `candidate` if the outcome is [`Outcome::Kept`], else at `baseline`
/// (best-effort after a failure). An invalid plan is a [`Outcome::Failed`]
/// record with the testbed untouched.
pub fn run_trial(
    tb: &mut dyn Testbed,
    baseline: &Settings,
    candidate: &Settings,
    plan: &Plan,
    budget: Duration,
) -> TrialRecord {
    match &plan.design {
        Design::Switchback(sb) => switchback::run(tb, baseline, candidate, plan, sb, budget),
        Design::Pairs => trial::run_pairs(tb, baseline, candidate, plan, budget),
    }
}

/// Setting name to value.
pub type Settings = BTreeMap<String, String>;

/// What an experiment drives: a live server (admin socket and probes) or a
/// simulation.
pub trait Testbed {
    /// The current values of `names` (every one, or an error).
    fn read(&mut self, names: &[String]) -> Result<Settings, ExperimentError>;
    /// Sets each of `settings` (`SET GLOBAL` on a server).
    fn apply(&mut self, settings: &Settings) -> Result<(), ExperimentError>;
    /// Measures one window of about `len`.
    fn measure(&mut self, len: Duration) -> Result<Sample, ExperimentError>;
}

/// One measured window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub commits_per_s: f64,
    /// The window's actual length.
    pub secs: f64,
    /// `ln` of a quantity that moves with the host's noise and not with
    /// the settings tried (the disks' mean write latency in µs over the
    /// window), when the testbed measures one; see [`covariate`].
    #[serde(default)]
    pub covariate: Option<f64>,
}

/// Why an experiment could not be run or went wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExperimentError {
    /// The testbed could not read current values.
    #[error("reading {names}: {cause}")]
    Read { names: String, cause: String },
    /// The testbed could not apply settings (some may have been applied).
    #[error("applying {settings}: {cause}")]
    Apply { settings: String, cause: String },
    /// A window could not be measured, or measured nothing usable.
    #[error("measuring a window: {cause}")]
    Measure { cause: String },
    /// A [`Plan`] field is out of range.
    #[error("invalid experiment plan: {field} = {value} (valid: {valid})")]
    Plan {
        field: &'static str,
        value: String,
        valid: &'static str,
    },
}

impl ExperimentError {
    pub fn read(names: &[String], cause: impl std::fmt::Display) -> Self {
        ExperimentError::Read {
            names: names.join(", "),
            cause: cause.to_string(),
        }
    }

    pub fn apply(settings: &Settings, cause: impl std::fmt::Display) -> Self {
        ExperimentError::Apply {
            settings: show(settings),
            cause: cause.to_string(),
        }
    }

    pub fn measure(cause: impl std::fmt::Display) -> Self {
        ExperimentError::Measure {
            cause: cause.to_string(),
        }
    }
}

/// `a=1, b=OFF`.
pub fn show(s: &Settings) -> String {
    s.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a live experiment did: one trial, or a search over several
/// candidates. The diagnosis's `trial` field (JSON: `kind` tells which).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Experiment {
    Trial(TrialRecord),
    Search(SearchReport),
}

impl Experiment {
    /// One sentence: the trial's reason, or the search's summary.
    pub fn reason(&self) -> String {
        match self {
            Experiment::Trial(t) => t.reason.clone(),
            Experiment::Search(s) => s.summary(),
        }
    }
}

/// Seconds as a `Duration` (saturating: a non-finite or huge count is
/// `Duration::MAX`).
pub(crate) fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX)
}

/// A ratio as a signed percentage change: 1.053 -> "+5.3%".
pub fn pct(ratio: f64) -> String {
    format!("{:+.1}%", (ratio - 1.0) * 100.0)
}
