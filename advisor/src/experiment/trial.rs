//! One A/B trial of a candidate against the baseline (the procedure is in
//! the module docs of [`super`]).

use std::time::Duration;

use redoctor_stats::median;
use serde::{Deserialize, Serialize};

use super::covariate::Adjustment;
use super::power::{resolution, Resolution};
use super::sequential::{look, Decision, Look};
use super::Design;
use super::{pct, secs, ExperimentError, Plan, Settings, Testbed};

/// How far one pair's `ln(candidate / baseline)` may lie from the pairs'
/// median before it is clipped for the test: ln 2, a factor of two either
/// way. One stalled window (a lock convoy, a disk hiccup) cannot outweigh
/// the other pairs, and a uniform effect of any size is left whole.
pub const MAX_LOG_RATIO: f64 = std::f64::consts::LN_2;

/// `ds` clipped to their median ± [`MAX_LOG_RATIO`] (what the test sees).
pub fn clipped(ds: &[f64]) -> Vec<f64> {
    let Some(median) = median(ds) else {
        return vec![];
    };
    ds.iter()
        .map(|d| d.clamp(median - MAX_LOG_RATIO, median + MAX_LOG_RATIO))
        .collect()
}

/// Measured windows in a row at 0 commits/s that fail a trial: the load
/// stopped, or commits are not counted. Fewer are stalls of the load;
/// their pairs are left out.
pub const ZERO_WINDOWS_TO_FAIL: usize = 3;

/// How a trial ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Better beyond noise: the candidate stays applied.
    Kept,
    /// Worse beyond noise: the baseline was restored.
    RolledBackWorse,
    /// No decision (no meaningful difference, out of pairs or out of
    /// time; the reason says which): the baseline was restored.
    Inconclusive,
    /// Two candidate windows in a row fell below the floor (the baseline
    /// restored at once after each): aborted.
    AbortedFloor,
    /// The testbed failed (or the plan was invalid): baseline restored
    /// best-effort, the error recorded.
    Failed,
    /// Not started: the time budget cannot fit the windows a decision
    /// needs (the reason says how much it held). Nothing was applied, so
    /// the candidate is as untried as before.
    NotRun,
}

impl Outcome {
    pub fn kept(self) -> bool {
        self == Outcome::Kept
    }
}

/// Which settings a window ran with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Baseline,
    Candidate,
}

/// One measured window, in trial order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// The pair it belongs to (1-based).
    pub pair: usize,
    pub side: Side,
    /// True: the discarded window after a settings switch.
    pub warmup: bool,
    pub commits_per_s: f64,
    pub secs: f64,
    /// The testbed's covariate for the window ([`super::Sample::covariate`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covariate: Option<f64>,
}

/// Everything a trial measured and decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRecord {
    /// The test and its parameters, in one sentence.
    pub test: String,
    pub plan: Plan,
    /// The settings restored unless kept.
    pub baseline_settings: Settings,
    /// The settings tried.
    pub candidate_settings: Settings,
    /// Every window, warm-ups included.
    pub windows: Vec<Window>,
    /// Each complete pair's `ln(candidate / baseline)` (void pairs left
    /// out); the test sees them [`clipped`].
    pub log_ratios: Vec<f64>,
    /// Candidate windows below the floor: the first restores the baseline
    /// at once, the second in a row aborts the trial.
    #[serde(default)]
    pub strikes: usize,
    /// Pairs with a window at 0 commits/s (a stalled load): no ratio.
    #[serde(default)]
    pub void_pairs: usize,
    /// The test at each look.
    pub looks: Vec<Look>,
    /// The test on all pairs at the per-look level (None under 2 pairs).
    pub estimate: Option<Look>,
    pub outcome: Outcome,
    /// One sentence: why this outcome.
    pub reason: String,
    /// The testbed's error, for [`Outcome::Failed`].
    pub error: Option<String>,
    /// Sum of the windows' lengths.
    pub elapsed_s: f64,
    /// What its pairs could resolve (None under 3 pairs).
    #[serde(default)]
    pub resolving_power: Option<Box<Resolution>>,
    /// Switchback: each block's covariate difference (candidate − baseline
    /// mean), beside [`TrialRecord::log_ratios`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub covariate_diffs: Vec<Option<f64>>,
    /// Switchback: the covariate adjustment at the last look.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adjustment: Option<Box<Adjustment>>,
    /// Switchback with the adjustment used: the test on the raw blocks at
    /// the same level, for comparison.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unadjusted: Option<Box<Look>>,
}

impl TrialRecord {
    /// A record of a trial not yet run.
    pub(crate) fn empty(plan: &Plan, baseline: &Settings, candidate: &Settings) -> TrialRecord {
        TrialRecord {
            test: plan.describe(),
            plan: plan.clone(),
            baseline_settings: baseline.clone(),
            candidate_settings: candidate.clone(),
            windows: vec![],
            log_ratios: vec![],
            strikes: 0,
            void_pairs: 0,
            looks: vec![],
            estimate: None,
            outcome: Outcome::Failed,
            reason: String::new(),
            error: None,
            elapsed_s: 0.0,
            resolving_power: None,
            covariate_diffs: vec![],
            adjustment: None,
            unadjusted: None,
        }
    }

    /// What the trial's statistics count: `pairs` (paired windows) or
    /// `blocks` (switchback).
    pub fn unit(&self) -> &'static str {
        match self.plan.design {
            Design::Pairs => "pairs",
            Design::Switchback(_) => "blocks",
        }
    }

    /// Measured (not warm-up) windows of `side`.
    pub fn measured(&self, side: Side) -> impl Iterator<Item = &Window> {
        self.windows
            .iter()
            .filter(move |w| w.side == side && !w.warmup)
    }
}

/// Runs one trial of the paired design within `budget` (see the module
/// docs; [`super::run_trial`] chooses the design).
pub(super) fn run_pairs(
    tb: &mut dyn Testbed,
    baseline: &Settings,
    candidate: &Settings,
    plan: &Plan,
    budget: Duration,
) -> TrialRecord {
    let mut run = Run {
        tb,
        plan,
        rec: TrialRecord::empty(plan, baseline, candidate),
        at: Side::Baseline,
    };
    if let Err(e) = plan.validate() {
        run.rec.reason = format!("not run: {e}");
        run.rec.error = Some(e.to_string());
        return run.rec;
    }
    if !plan.fits(plan.min_time(), budget) {
        run.rec.outcome = Outcome::NotRun;
        run.rec.reason = format!(
            "not run: the time budget ({:.1}s) cannot fit the {} pairs a decision needs ({:.1}s)",
            budget.as_secs_f64(),
            plan.min_pairs,
            plan.min_time().as_secs_f64()
        );
        return run.rec;
    }
    let result = run.pairs(budget);
    let d = clipped(&run.rec.log_ratios);
    run.rec.estimate = look(&d, run.final_level());
    run.finish(result);
    run.rec.resolving_power = run.resolving_power(&d).map(Box::new);
    run.rec
}

impl Run<'_> {
    /// What the pairs run (`d`, clipped) could resolve, at the last look's
    /// level.
    fn resolving_power(&self, d: &[f64]) -> Option<Resolution> {
        let r = &self.rec;
        let alpha = r.looks.last().map_or(self.plan.alpha, |l| l.alpha);
        let pairs_run = r.windows.iter().map(|w| w.pair).max()?;
        resolution(d, alpha, r.elapsed_s / pairs_run as f64)
    }
}

struct Run<'a> {
    tb: &'a mut dyn Testbed,
    plan: &'a Plan,
    rec: TrialRecord,
    /// The settings the testbed is at.
    at: Side,
}

impl Run<'_> {
    fn settings(&self, side: Side) -> &Settings {
        match side {
            Side::Baseline => &self.rec.baseline_settings,
            Side::Candidate => &self.rec.candidate_settings,
        }
    }

    /// Measures pairs until a decision; Ok((outcome, reason)).
    fn pairs(&mut self, budget: Duration) -> Result<(Outcome, String), ExperimentError> {
        // Whether another pair fits after the windows measured so far.
        let plan = self.plan;
        let another_fits = |elapsed_s: f64| plan.fits(secs(elapsed_s) + plan.pair_time(), budget);
        // The last candidate window's floor breach, while unanswered by a
        // candidate window above the floor.
        let mut strike: Option<String> = None;
        // Measured windows in a row at 0 commits/s.
        let mut zeros = 0;
        let mut pair = 0;
        // The harm stop's level at each look, for the looks the budget
        // plans (one after each pair it fits, from `min_pairs` on).
        let planned = (1..=plan.max_pairs)
            .take_while(|k| plan.fits(plan.pair_time() * *k as u32, budget))
            .count();
        let harm_level = plan.harm_level(&(plan.min_pairs..=planned).collect::<Vec<_>>());
        while self.rec.log_ratios.len() < self.plan.max_pairs {
            pair += 1;
            let n = self.rec.log_ratios.len();
            if !another_fits(self.rec.elapsed_s) {
                return Ok((
                    Outcome::Inconclusive,
                    format!(
                        "inconclusive: the time budget ({:.1}s) cannot fit another pair after {n} pairs{}: rolled back",
                        budget.as_secs_f64(),
                        self.estimate_words()
                    ),
                ));
            }
            let order = if pair % 2 == 1 {
                [Side::Baseline, Side::Candidate]
            } else {
                [Side::Candidate, Side::Baseline]
            };
            let mut rate = [0.0; 2];
            for side in order {
                let r = self.window(pair, side)?;
                if !(r.is_finite() && r >= 0.0) {
                    return Err(ExperimentError::measure(format!(
                        "a {side} window measured {r} commits/s"
                    )));
                }
                zeros = if r == 0.0 { zeros + 1 } else { 0 };
                if zeros == ZERO_WINDOWS_TO_FAIL {
                    return Err(ExperimentError::measure(format!(
                        "{zeros} windows in a row at 0 commits/s: the load stopped or commits are not counted"
                    )));
                }
                if side == Side::Candidate {
                    match (self.below_floor(r), strike.take()) {
                        (Some(second), Some(first)) => {
                            self.rec.strikes += 1;
                            return Ok((
                                Outcome::AbortedFloor,
                                format!(
                                    "two candidate windows in a row ran below the floor ({first}; then {second}): aborted, baseline restored"
                                ),
                            ));
                        }
                        (Some(first), None) => {
                            // Restored at once; the next candidate window
                            // (after a switch back) confirms or clears it.
                            self.rec.strikes += 1;
                            self.switch(pair, Side::Baseline)?;
                            strike = Some(first);
                        }
                        (None, _) => {}
                    }
                }
                rate[side as usize] = r;
            }
            if rate.contains(&0.0) {
                // A stalled window has no ratio; the load stalling on its
                // own is not evidence either way (the time budget bounds
                // how many such pairs a trial can spend).
                self.rec.void_pairs += 1;
                continue;
            }
            self.rec.log_ratios.push((rate[1] / rate[0]).ln());
            let n = self.rec.log_ratios.len();
            if n < self.plan.min_pairs {
                continue;
            }
            // The last look: the most pairs, or no time for another.
            let last = n == self.plan.max_pairs || !another_fits(self.rec.elapsed_s);
            let interim = self.rec.looks.len();
            let alpha = if last {
                self.plan.final_alpha(interim)
            } else {
                self.plan.interim_alpha()
            };
            let ds = clipped(&self.rec.log_ratios);
            let l = look(&ds, alpha).expect("at least 2 finite log-ratios at a look");
            let futility =
                look(&ds, self.plan.look_alpha()).expect("at least 2 finite log-ratios at a look");
            let decision = match l.decide(self.plan.min_effect) {
                d @ (Decision::Better | Decision::Worse) => d,
                _ => match futility.decide(self.plan.min_effect) {
                    Decision::Futile => Decision::Futile,
                    _ => Decision::Continue,
                },
            };
            // Not worse at the look's level, but slower at the harm
            // stop's: it will not be kept, and each further pair runs it
            // again.
            let harm = (decision == Decision::Continue && harm_level > 0.0)
                .then(|| look(&ds, 2.0 * harm_level))
                .flatten()
                .filter(|h| h.ci_high < 1.0);
            self.rec.looks.push(l.clone());
            let est = interval(&l);
            if let Some(h) = harm {
                return Ok((
                    Outcome::Inconclusive,
                    format!(
                        "likely slower: {est} (upper bound {} at one-sided {harm_level:.4} a look, \
                         {:.2} over the looks), not yet worse at this look's level: stopped early, \
                         rolled back",
                        pct(h.ci_high),
                        self.plan.harm
                    ),
                ));
            }
            if let Some(end) = verdict(decision, &est, self.plan.min_effect) {
                return Ok(end);
            }
        }
        Ok((
            Outcome::Inconclusive,
            format!(
                "inconclusive after {} pairs (the most planned){}: rolled back",
                self.plan.max_pairs,
                self.estimate_words()
            ),
        ))
    }

    /// Applies `side`'s settings and measures the warm-up after the switch.
    fn switch(&mut self, pair: usize, side: Side) -> Result<(), ExperimentError> {
        let s = self.settings(side).clone();
        self.tb.apply(&s)?;
        self.at = side;
        if !self.plan.warmup.is_zero() {
            self.measure(pair, side, true)?;
        }
        Ok(())
    }

    /// Switches to `side` if needed (with a warm-up), then measures one
    /// window; its commits/s.
    fn window(&mut self, pair: usize, side: Side) -> Result<f64, ExperimentError> {
        if self.at != side {
            self.switch(pair, side)?;
        }
        self.measure(pair, side, false)
    }

    fn measure(&mut self, pair: usize, side: Side, warmup: bool) -> Result<f64, ExperimentError> {
        let len = if warmup {
            self.plan.warmup
        } else {
            self.plan.window
        };
        let s = self.tb.measure(len)?;
        self.rec.elapsed_s += s.secs;
        self.rec.windows.push(Window {
            pair,
            side,
            warmup,
            commits_per_s: s.commits_per_s,
            secs: s.secs,
            covariate: s.covariate,
        });
        Ok(s.commits_per_s)
    }

    /// How a candidate rate `r` breaches the floor, if it does: below
    /// `floor` × the baseline's reference, which is its lowest measured
    /// window (a candidate window is only alarming when it is worse than
    /// anything the baseline itself did: a load whose windows swing ±40%
    /// must not abort a better candidate on one low window), but at least
    /// half its median (one stalled baseline window must not disarm the
    /// guard).
    fn below_floor(&self, r: f64) -> Option<String> {
        let base: Vec<f64> = self
            .rec
            .measured(Side::Baseline)
            .map(|w| w.commits_per_s)
            .collect();
        let median = median(&base).expect("a baseline window precedes every candidate window");
        let lowest = base.iter().copied().fold(f64::INFINITY, f64::min);
        let reference = lowest.max(0.5 * median);
        (r < self.plan.floor * reference).then(|| {
            format!(
                "{r:.0} commits/s, below {:.2} × the baseline's lowest window {reference:.0} (median {median:.0})",
                self.plan.floor
            )
        })
    }

    /// The level the trial's estimate is stated at: the last look's.
    fn final_level(&self) -> f64 {
        self.rec
            .looks
            .last()
            .map_or(self.plan.final_alpha(0), |l| l.alpha)
    }

    fn estimate_words(&self) -> String {
        look(&clipped(&self.rec.log_ratios), self.final_level())
            .map(|l| format!("; {}", interval(&l)))
            .unwrap_or_default()
    }

    /// Sets the outcome and reason, restoring the baseline unless kept.
    fn finish(&mut self, result: Result<(Outcome, String), ExperimentError>) {
        finish(&mut *self.tb, &mut self.rec, &mut self.at, result)
    }
}

/// Ends a trial of either design: sets the outcome and reason and leaves
/// the testbed at the candidate if kept, else at the baseline; after an
/// error, restores the baseline best-effort and records the failure.
pub(super) fn finish(
    tb: &mut dyn Testbed,
    rec: &mut TrialRecord,
    at: &mut Side,
    result: Result<(Outcome, String), ExperimentError>,
) {
    let fail = |tb: &mut dyn Testbed, rec: &mut TrialRecord, e: ExperimentError| {
        let restored = tb.apply(&rec.baseline_settings.clone());
        rec.error = Some(e.to_string());
        rec.outcome = Outcome::Failed;
        rec.reason = match restored {
            Ok(()) => format!("the trial failed ({e}): baseline restored"),
            Err(r) => format!("the trial failed ({e}) and restoring the baseline failed too ({r})"),
        };
    };
    let (outcome, reason) = match result {
        Ok(x) => x,
        Err(e) => return fail(tb, rec, e),
    };
    let want = if outcome.kept() {
        Side::Candidate
    } else {
        Side::Baseline
    };
    if *at != want {
        let s = match want {
            Side::Baseline => rec.baseline_settings.clone(),
            Side::Candidate => rec.candidate_settings.clone(),
        };
        if let Err(e) = tb.apply(&s) {
            return fail(tb, rec, e);
        }
        *at = want;
    }
    rec.outcome = outcome;
    rec.reason = reason;
}

/// How a trial ends on a look's decision, with the line that says so
/// (`est`: the look's interval as [`interval`] prints it); `None` while
/// the trial goes on. Shared by the paired trial and the switchback.
pub(crate) fn verdict(decision: Decision, est: &str, min_effect: f64) -> Option<(Outcome, String)> {
    match decision {
        Decision::Better => Some((Outcome::Kept, format!("candidate faster: {est}: kept"))),
        Decision::Worse => Some((
            Outcome::RolledBackWorse,
            format!("candidate slower: {est}: rolled back"),
        )),
        Decision::Futile => Some((
            Outcome::Inconclusive,
            format!(
                "no meaningful difference: {est} lies within ±{:.1}%: rolled back",
                min_effect * 100.0
            ),
        )),
        Decision::Continue => None,
    }
}

/// "+5.3% (+2.1% to +8.6%, 99.4% interval) after 4 pairs, p = 0.0012".
pub(crate) fn interval(l: &Look) -> String {
    format!(
        "{} ({} to {}, {:.1}% interval) after {} pairs, p = {:.4}",
        pct(l.mean_ratio),
        pct(l.ci_low),
        pct(l.ci_high),
        (1.0 - l.alpha) * 100.0,
        l.n,
        l.p_value
    )
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Side::Baseline => "baseline",
            Side::Candidate => "candidate",
        })
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Outcome::Kept => "kept",
            Outcome::RolledBackWorse => "rolled back (worse)",
            Outcome::Inconclusive => "inconclusive (rolled back)",
            Outcome::AbortedFloor => "aborted below the floor (rolled back)",
            Outcome::Failed => "failed",
            Outcome::NotRun => "not run (the budget cannot fit a decision)",
        })
    }
}
