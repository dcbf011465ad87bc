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
//!   the CPU every 200 ms.
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
//!   freedom ([`hac_look`]).
//! - **Looks.** The most blocks follow from the time budget; the test looks
//!   [`Switchback::looks`] times at evenly spaced block counts (the first
//!   not before [`Switchback::min_blocks`]), rejecting Haybittle–Peto style
//!   as the paired design does (`super::Plan`). An estimate after an early
//!   stop is biased away from no change (a trial stops early when its
//!   blocks happened to run high); the record says so.
//! - **Floor guard.** A candidate period below `floor` × the baseline's
//!   lowest period among its last [`FLOOR_WINDOW`] (at least half their
//!   median) restores the baseline at once; a second in a row aborts. Each
//!   such switch back costs one guard period beyond the blocks the budget
//!   planned (the trial may run that much past `--trial-max`).

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use redoctor_stats::{mean, median, student_t_critical, student_t_two_sided};

use super::power::Resolution;
use super::sequential::{Decision, Look};
use super::trial::{clipped, interval, Outcome, Side, TrialRecord, Window};
use super::{pct, ExperimentError, Plan, Settings, Switchback, Testbed};

/// Baseline periods the floor guard looks back over.
pub const FLOOR_WINDOW: usize = 24;

/// Newey–West lag for `n` blocks: `⌊4 (n/100)^{2/9}⌋`, at least 1, less than `n`.
pub fn nw_lag(n: usize) -> usize {
    let l = (4.0 * (n as f64 / 100.0).powf(2.0 / 9.0)).floor() as usize;
    l.max(1).min(n.saturating_sub(2).max(1))
}

/// The t-test of mean `d` = 0 at level `alpha` with a serial-correlation
/// robust standard error, Student t on `n − 1` degrees of freedom; None
/// with fewer than 3 values or a non-finite one. The long-run variance is
/// Newey and West's (Bartlett weights up to `lag`) on the residuals of an
/// AR(1) fit, recoloured by `1 / (1 − ρ)²` (Andrews and Monahan's
/// prewhitening: Newey–West alone, with a lag a few dozen blocks allow,
/// misses most of a strong correlation). `lag = 0` is the plain t-test
/// that takes the blocks as independent (for comparison).
pub fn hac_look(d: &[f64], alpha: f64, lag: usize) -> Option<Look> {
    let n = d.len();
    if n < 3 || d.iter().any(|x| !x.is_finite()) || !(alpha > 0.0 && alpha < 1.0) {
        return None;
    }
    let nf = n as f64;
    let m = mean(d);
    let c: Vec<f64> = d.iter().map(|x| x - m).collect();
    let plain = c.iter().map(|x| x * x).sum::<f64>() / (nf - 1.0);
    let v = if lag == 0 {
        plain
    } else {
        let num: f64 = (1..n).map(|t| c[t] * c[t - 1]).sum();
        let den: f64 = c.iter().map(|x| x * x).sum();
        let rho = if den > 0.0 {
            (num / den).clamp(-0.9, 0.9)
        } else {
            0.0
        };
        let e: Vec<f64> = (1..n).map(|t| c[t] - rho * c[t - 1]).collect();
        let ne = e.len() as f64;
        let gamma = |l: usize| -> f64 { (l..e.len()).map(|t| e[t] * e[t - l]).sum::<f64>() / ne };
        let mut lr = gamma(0);
        for l in 1..=lag.min(e.len() - 1) {
            lr += 2.0 * (1.0 - l as f64 / (lag as f64 + 1.0)) * gamma(l);
        }
        // Never below a tenth of the plain variance (a negative estimate
        // of a long-run variance is noise).
        (lr.max(0.0) / (1.0 - rho).powi(2) * ne / (ne - 1.0)).max(0.1 * plain)
    };
    let se = (v / nf).sqrt();
    let df = nf - 1.0;
    let half = student_t_critical(alpha, df) * se;
    let p_value = if se > 0.0 {
        student_t_two_sided(m / se, df)
    } else if m == 0.0 {
        1.0
    } else {
        0.0
    };
    Some(Look {
        n,
        mean_ratio: m.exp(),
        ci_low: (m - half).exp(),
        ci_high: (m + half).exp(),
        p_value,
        alpha,
    })
}

/// What `n` blocks with these `d` could resolve at `alpha` with 80% power,
/// with the HAC standard error and t quantiles.
pub fn hac_resolution(d: &[f64], alpha: f64, secs_per_block: f64) -> Option<Resolution> {
    let n = d.len();
    let l = hac_look(d, alpha, nw_lag(n))?;
    let half = (l.ci_high.ln() - l.ci_low.ln()) / 2.0;
    let df = n as f64 - 1.0;
    let se = half / student_t_critical(alpha, df);
    let t_power = student_t_critical(2.0 * (1.0 - super::POWER), df);
    let per_block_sd = se * (n as f64).sqrt();
    let detect = (student_t_critical(alpha, df) + t_power) * se;
    let est = l.mean_ratio.ln().abs();
    let needed = (est > 0.0).then(|| {
        let z = redoctor_stats::normal_critical(alpha)
            + redoctor_stats::normal_critical(2.0 * (1.0 - super::POWER));
        ((z * per_block_sd / est).powi(2)).ceil().max(n as f64) as u64
    });
    Some(Resolution {
        pairs: n,
        per_pair_sd: per_block_sd,
        alpha,
        detectable: detect.exp() - 1.0,
        pairs_needed: needed,
        secs_per_pair: secs_per_block,
    })
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
    let max_blocks = sb.max_blocks(budget);
    let looks = sb.look_at(max_blocks);
    if looks.is_empty() {
        rec.outcome = Outcome::Inconclusive;
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
    };
    let result = run.blocks(max_blocks, &looks);
    let d = clipped(&run.rec.log_ratios);
    let level = run.rec.looks.last().map_or(plan.alpha, |l| l.alpha);
    run.rec.estimate = hac_look(&d, level, nw_lag(d.len()));
    run.finish(result);
    let blocks = run.rec.log_ratios.len();
    if blocks > 0 {
        run.rec.resolving_power =
            hac_resolution(&d, level, run.rec.elapsed_s / blocks as f64).map(Box::new);
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
            for side in order {
                let r = self.period(block, side)?;
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
                if side == Side::Candidate {
                    match (self.below_floor(r), strike.take()) {
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
            let harm = (decision == Decision::Continue && self.plan.harm > 0.0)
                .then(|| hac_look(&ds, 2.0 * self.plan.harm, lag))
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
                        "likely slower: {est} (upper bound {} at one-sided {:.2}): stopped, rolled back",
                        pct(h.ci_high),
                        self.plan.harm
                    ),
                ));
            }
            match decision {
                Decision::Better => {
                    return Ok((Outcome::Kept, format!("candidate faster: {est}: kept")))
                }
                Decision::Worse => {
                    return Ok((
                        Outcome::RolledBackWorse,
                        format!("candidate slower: {est}: rolled back"),
                    ))
                }
                Decision::Futile => {
                    return Ok((
                        Outcome::Inconclusive,
                        format!(
                            "no meaningful difference: {est} lies within ±{:.1}%: rolled back",
                            self.plan.min_effect * 100.0
                        ),
                    ))
                }
                Decision::Continue if last => {
                    return Ok((
                        Outcome::Inconclusive,
                        format!(
                            "inconclusive after {n} blocks (the budget's most): {est}: rolled back"
                        ),
                    ))
                }
                Decision::Continue => {}
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
    fn period(&mut self, block: usize, side: Side) -> Result<f64, ExperimentError> {
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
    ) -> Result<f64, ExperimentError> {
        let s = self.tb.measure(len)?;
        self.rec.elapsed_s += s.secs;
        self.rec.windows.push(Window {
            pair: block,
            side,
            warmup: guard,
            commits_per_s: s.commits_per_s,
            secs: s.secs,
        });
        Ok(s.commits_per_s)
    }

    /// The floor on a rolling window: `floor` × the lowest of the last
    /// [`FLOOR_WINDOW`] baseline periods, at least half their median.
    fn below_floor(&self, r: f64) -> Option<String> {
        let base: Vec<f64> = self
            .rec
            .measured(Side::Baseline)
            .map(|w| w.commits_per_s)
            .collect();
        let recent = &base[base.len().saturating_sub(FLOOR_WINDOW)..];
        let median = median(recent)?;
        let lowest = recent.iter().copied().fold(f64::INFINITY, f64::min);
        let reference = lowest.max(0.5 * median);
        (self.plan.floor > 0.0 && r < self.plan.floor * reference).then(|| {
            format!(
                "{r:.0} commits/s, below {:.2} × the baseline's lowest recent period {reference:.0} (median {median:.0})",
                self.plan.floor
            )
        })
    }

    fn finish(&mut self, result: Result<(Outcome, String), ExperimentError>) {
        super::trial::finish(&mut *self.tb, &mut self.rec, &mut self.at, result)
    }
}
