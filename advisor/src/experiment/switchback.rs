//! A switchback trial: the setting alternates between baseline and
//! candidate in short periods on the one server, and the analysis respects
//! that neighbouring periods share their noise (Bojinov, Simchi-Levi and
//! Zhao, "Design and Analysis of Switchback Experiments", 2020).
//!
//! - **Periods and guard.** Each period applies its side's settings (when
//!   they differ from the last period's), discards a guard while the switch
//!   settles (the knob's carryover), and measures the rest. The period is
//!   set by the knob's carryover, not by a second of warm-up: the bundled
//!   engine switches its redo mode in microseconds and its spin gate reads
//!   the CPU every 50 ms.
//! - **Blocks.** Periods come in blocks of four, ABBA or BAAB, the order
//!   drawn per block from a seeded generator: a linear drift cancels inside
//!   every block, and no periodic load can lock onto a fixed pattern. A
//!   block's statistic is `d = mean ln(candidate) − mean ln(baseline)` over
//!   its periods, clipped like a pair's (median ± ln 2), so a stalled
//!   period counts at the clip bound instead of being dropped.
//! - **Analysis.** The blocks' `d` are serially correlated where the noise
//!   is correlated over seconds: the test's standard error is a long-run
//!   one (an AR(1) prewhitened Newey–West, Bartlett kernel, lag
//!   `⌊4 (n/100)^{2/9}⌋`, at least 1), with Student t on `n − 1` degrees of
//!   freedom ([`super::hac_look`]).
//! - **Covariate.** When the testbed measures the disks' write latency
//!   beside each period's rate, the blocks' adjustment by it (CUPED,
//!   [`super::covariate`]) is fitted and recorded; the test sees the
//!   adjusted blocks only when the design's `covariate` is on and the
//!   latency is balanced between the sides and explains enough of the
//!   spread (the record then keeps the unadjusted test beside).
//! - **Looks.** The most blocks follow from the time budget; the test looks
//!   [`Switchback::looks`] times at evenly spaced block counts (the first
//!   not before [`Switchback::min_blocks`]), rejecting Haybittle–Peto style
//!   as the paired design does (`super::Plan`). An estimate after an early
//!   stop is biased away from no change (a trial stops early when its
//!   blocks happened to run high); the record says so.
//! - **Floor guard.** It judges spans of [`FLOOR_SPAN`] or more, whatever
//!   the period: the candidate's rate over its last `k` measured periods
//!   (`k` the periods a span needs: one at 250 ms, five at 50 ms) against
//!   the baseline's spans of `k` periods, the last [`FLOOR_WINDOW`] of
//!   them. A candidate span below `floor` × the baseline's lowest span (at
//!   least half their median) restores the baseline at once; a second span
//!   in a row aborts. Judged per 40-ms period, one 100-ms stall of the
//!   disk made two strikes in a row: 5 of 11 A/A trials at the demo load
//!   aborted. Each switch back costs one guard period beyond the blocks the
//!   budget planned (the trial may run that much past `--trial-max`).

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use redoctor_stats::{mean, median};

use super::covariate::{adjust, qualify};
use super::hac::{full_budget, hac_look, hac_resolution, nw_lag};
use super::sequential::Decision;
use super::trial::{clipped, interval, verdict, Outcome, Side, TrialRecord, Window};
use super::{pct, ExperimentError, Plan, Settings, Switchback, Testbed};

/// Baseline spans the floor guard looks back over.
pub const FLOOR_WINDOW: usize = 24;

/// The shortest span the floor guard judges: a 250-ms period's measured
/// part, so that a period of 250 ms or more is judged alone.
pub const FLOOR_SPAN: Duration = Duration::from_millis(200);

/// A block's covariate difference: the candidate periods' mean less the
/// baseline periods' (None when a period lacks it).
fn side_difference(covs: &[Vec<Option<f64>>; 2]) -> Option<f64> {
    let side = |v: &Vec<Option<f64>>| -> Option<f64> {
        let v: Option<Vec<f64>> = v.iter().copied().collect();
        v.filter(|v| !v.is_empty()).map(|v| mean(&v))
    };
    Some(side(&covs[1])? - side(&covs[0])?)
}

/// Runs a switchback trial of `candidate` against `baseline` within
/// `budget` (see the module docs). The testbed must be at `baseline`.
pub fn run(
    tb: &mut dyn Testbed,
    baseline: &Settings,
    candidate: &Settings,
    plan: &Plan,
    sb: &Switchback,
    budget: Duration,
) -> TrialRecord {
    let mut rec = TrialRecord::empty(plan, baseline, candidate);
    if let Err(e) = plan.validate().and_then(|_| sb.validate()) {
        rec.reason = format!("not run: {e}");
        rec.error = Some(e.to_string());
        return rec;
    }
    // The slack every time bound allows (`Plan::fits`): a search starts a
    // candidate whose decision fits within it, so the trial must run it.
    let max_blocks = sb.max_blocks(budget + plan.slack());
    let looks = sb.look_at(max_blocks);
    if looks.is_empty() {
        rec.outcome = Outcome::NotRun;
        rec.reason = format!(
            "not run: the time budget ({:.1}s) cannot fit the {} blocks of {:.2}s a decision needs",
            budget.as_secs_f64(),
            sb.min_blocks,
            sb.block_time().as_secs_f64()
        );
        return rec;
    }
    let mut run = Run {
        tb,
        plan,
        sb,
        rec,
        at: Side::Baseline,
        rng: SmallRng::seed_from_u64(sb.seed),
        unjudged: 0,
    };
    let result = run.blocks(max_blocks, &looks);
    let raw = clipped(&run.rec.log_ratios);
    let level = run.rec.looks.last().map_or(plan.alpha, |l| l.alpha);
    let test = |d: &[f64]| hac_look(d, level, nw_lag(d.len()));
    let (adjusted, mut adj) = qualify(&raw, &run.rec.covariate_diffs);
    // Both tests when the covariate qualified: the one decided on is the
    // estimate, the other sits beside it.
    adj.adjusted = adjusted.as_deref().and_then(test);
    let d = match adjusted {
        Some(a) if adj.decide(sb.covariate) => {
            run.rec.unadjusted = test(&raw).map(Box::new);
            a
        }
        _ => raw.clone(),
    };
    run.rec.estimate = test(&d);
    run.rec.adjustment = (!raw.is_empty()).then(|| Box::new(adj));
    run.finish(result);
    let blocks = run.rec.log_ratios.len();
    if blocks > 0 {
        let mut r = hac_resolution(&d, level, run.rec.elapsed_s / blocks as f64);
        if let Some(r) = r.as_mut().filter(|_| blocks < max_blocks) {
            let last = run.final_level(looks.len() - 1, looks.len());
            r.full_budget = full_budget(r, max_blocks, last);
        }
        run.rec.resolving_power = r.map(Box::new);
    }
    run.rec
}

struct Run<'a> {
    tb: &'a mut dyn Testbed,
    plan: &'a Plan,
    sb: &'a Switchback,
    rec: TrialRecord,
    at: Side,
    rng: SmallRng,
    /// Candidate periods measured since the floor guard last judged.
    unjudged: usize,
}

impl Run<'_> {
    fn settings(&self, side: Side) -> Settings {
        match side {
            Side::Baseline => self.rec.baseline_settings.clone(),
            Side::Candidate => self.rec.candidate_settings.clone(),
        }
    }

    /// An interim look's level (Haybittle–Peto): a strict
    /// `min(alpha / 50, alpha / (2 (looks − 1)))`.
    fn strict(&self, looks: usize) -> f64 {
        let a = self.plan.alpha;
        if looks <= 1 {
            a
        } else {
            (a / 50.0).min(a / (2.0 * (looks - 1) as f64))
        }
    }

    /// The last look's level after `interim` interim looks: what they left.
    fn final_level(&self, interim: usize, looks: usize) -> f64 {
        (self.plan.alpha - interim as f64 * self.strict(looks)).max(self.strict(looks))
    }

    fn blocks(
        &mut self,
        max_blocks: usize,
        looks: &[usize],
    ) -> Result<(Outcome, String), ExperimentError> {
        let mut strike: Option<String> = None;
        let mut zeros = 0;
        let mut interim = 0;
        // The harm stop's level at each look (Pocock's, over the looks).
        let harm_level = self.plan.harm_level(looks);
        for block in 1..=max_blocks {
            let order = if self.rng.gen_bool(0.5) {
                [
                    Side::Baseline,
                    Side::Candidate,
                    Side::Candidate,
                    Side::Baseline,
                ]
            } else {
                [
                    Side::Candidate,
                    Side::Baseline,
                    Side::Baseline,
                    Side::Candidate,
                ]
            };
            let mut logs: [Vec<f64>; 2] = [vec![], vec![]];
            let mut covs: [Vec<Option<f64>>; 2] = [vec![], vec![]];
            for side in order {
                let (r, cov) = self.period(block, side)?;
                covs[side as usize].push(cov);
                if !(r.is_finite() && r >= 0.0) {
                    return Err(ExperimentError::measure(format!(
                        "a {side} period measured {r} commits/s"
                    )));
                }
                zeros = if r == 0.0 { zeros + 1 } else { 0 };
                if zeros == 3 * 4 {
                    return Err(ExperimentError::measure(format!(
                        "{zeros} periods in a row at 0 commits/s: the load stopped or commits are not counted"
                    )));
                }
                if side == Side::Candidate && self.judge_now() {
                    match (self.below_floor(), strike.take()) {
                        (Some(second), Some(first)) => {
                            self.rec.strikes += 1;
                            return Ok((
                                Outcome::AbortedFloor,
                                format!(
                                    "two candidate periods in a row ran below the floor ({first}; then {second}): aborted, baseline restored"
                                ),
                            ));
                        }
                        (Some(first), None) => {
                            self.rec.strikes += 1;
                            self.switch(block, Side::Baseline)?;
                            strike = Some(first);
                        }
                        (None, _) => {}
                    }
                }
                // A stalled period scores at the clip bound (below).
                logs[side as usize].push(r.max(1e-9).ln());
            }
            if logs.iter().any(|l| l.iter().any(|x| *x < -20.0)) {
                self.rec.void_pairs += 1;
            }
            self.rec.log_ratios.push(mean(&logs[1]) - mean(&logs[0]));
            self.rec.covariate_diffs.push(side_difference(&covs));
            let n = self.rec.log_ratios.len();
            let Some(at) = looks.iter().position(|&k| k == n) else {
                continue;
            };
            let last = at + 1 == looks.len();
            let alpha = if last {
                self.final_level(interim, looks.len())
            } else {
                self.strict(looks.len())
            };
            let ds = clipped(&self.rec.log_ratios);
            let ds = if self.sb.covariate {
                adjust(&ds, &self.rec.covariate_diffs, true).0
            } else {
                ds
            };
            let lag = nw_lag(n);
            let l = hac_look(&ds, alpha, lag).expect("at least 3 finite blocks at a look");
            let futility = hac_look(&ds, self.plan.alpha / looks.len() as f64, lag)
                .expect("at least 3 finite blocks at a look");
            let decision = match l.decide(self.plan.min_effect) {
                d @ (Decision::Better | Decision::Worse) => d,
                _ => match futility.decide(self.plan.min_effect) {
                    Decision::Futile => Decision::Futile,
                    _ => Decision::Continue,
                },
            };
            let harm = (decision == Decision::Continue && harm_level > 0.0)
                .then(|| hac_look(&ds, 2.0 * harm_level, lag))
                .flatten()
                .filter(|h| h.ci_high < 1.0);
            self.rec.looks.push(l.clone());
            if !last {
                interim += 1;
            }
            let early = if last {
                ""
            } else {
                " (stopped early: biased away from no change)"
            };
            let est = format!("{}{early}", interval(&l).replace("pairs", "blocks"));
            if let Some(h) = harm {
                return Ok((
                    Outcome::Inconclusive,
                    format!(
                        "likely slower: {est} (upper bound {} at one-sided {harm_level:.4} a look, {:.2} over the looks): stopped, rolled back",
                        pct(h.ci_high),
                        self.plan.harm
                    ),
                ));
            }
            if let Some(end) = verdict(decision, &est, self.plan.min_effect) {
                return Ok(end);
            }
            if last {
                return Ok((
                    Outcome::Inconclusive,
                    format!(
                        "inconclusive after {n} blocks (the budget's most): {est}: rolled back"
                    ),
                ));
            }
        }
        Ok((
            Outcome::Inconclusive,
            format!("inconclusive: the budget held {max_blocks} blocks: rolled back"),
        ))
    }

    /// Applies `side`'s settings and measures the guard after the switch
    /// (recorded, discarded).
    fn switch(&mut self, block: usize, side: Side) -> Result<(), ExperimentError> {
        let s = self.settings(side);
        self.tb.apply(&s)?;
        self.at = side;
        if !self.sb.guard.is_zero() {
            self.measure(block, side, true, self.sb.guard)?;
        }
        Ok(())
    }

    /// One period of `side`: the switch and its guard (when the side
    /// changes), then the measured part; its commits/s.
    fn period(&mut self, block: usize, side: Side) -> Result<(f64, Option<f64>), ExperimentError> {
        let mut left = self.sb.period;
        if self.at != side {
            self.switch(block, side)?;
            left = left.saturating_sub(self.sb.guard);
        }
        self.measure(block, side, false, left)
    }

    fn measure(
        &mut self,
        block: usize,
        side: Side,
        guard: bool,
        len: Duration,
    ) -> Result<(f64, Option<f64>), ExperimentError> {
        let s = self.tb.measure(len)?;
        self.rec.elapsed_s += s.secs;
        self.rec.windows.push(Window {
            pair: block,
            side,
            warmup: guard,
            commits_per_s: s.commits_per_s,
            secs: s.secs,
            covariate: s.covariate,
        });
        Ok((s.commits_per_s, s.covariate.filter(|c| c.is_finite())))
    }

    /// Measured periods a floor span holds: enough for [`FLOOR_SPAN`].
    fn span_periods(&self) -> usize {
        let measured = self.sb.period.saturating_sub(self.sb.guard / 2);
        (FLOOR_SPAN.as_secs_f64() / measured.as_secs_f64().max(1e-3))
            .ceil()
            .max(1.0) as usize
    }

    /// Counts a candidate period; whether a span of them is complete.
    fn judge_now(&mut self) -> bool {
        self.unjudged += 1;
        if self.unjudged < self.span_periods() {
            return false;
        }
        self.unjudged = 0;
        true
    }

    /// The floor on a rolling window: the candidate's last span against
    /// `floor` × the lowest of the baseline's last [`FLOOR_WINDOW`] spans,
    /// at least half their median.
    fn below_floor(&self) -> Option<String> {
        let k = self.span_periods();
        let span = |ws: &[&Window]| {
            let secs: f64 = ws.iter().map(|w| w.secs).sum();
            ws.iter().map(|w| w.commits_per_s * w.secs).sum::<f64>() / secs.max(1e-9)
        };
        // The newest first: only the windows the spans need are read.
        let newest = |side: Side, n: usize| -> Vec<&Window> {
            self.rec
                .windows
                .iter()
                .rev()
                .filter(|w| w.side == side && !w.warmup)
                .take(n)
                .collect()
        };
        let r = span(&newest(Side::Candidate, k));
        // Whole spans from the newest back.
        let recent: Vec<f64> = newest(Side::Baseline, k * FLOOR_WINDOW)
            .chunks_exact(k)
            .map(span)
            .collect();
        let median = median(&recent)?;
        let lowest = recent.iter().copied().fold(f64::INFINITY, f64::min);
        let reference = lowest.max(0.5 * median);
        let over = if k == 1 {
            String::new()
        } else {
            format!(" over its last {k} periods")
        };
        (self.plan.floor > 0.0 && r < self.plan.floor * reference).then(|| {
            format!(
                "{r:.0} commits/s{over}, below {:.2} × the baseline's lowest recent span {reference:.0} (median {median:.0})",
                self.plan.floor
            )
        })
    }

    fn finish(&mut self, result: Result<(Outcome, String), ExperimentError>) {
        super::trial::finish(&mut *self.tb, &mut self.rec, &mut self.at, result)
    }
}
