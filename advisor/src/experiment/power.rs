//! What a trial's pairs could resolve. An inconclusive trial says "no
//! difference shown", which is not "no difference": from the spread of the
//! pairs it ran (their clipped log-ratios, handed in by the trial, which
//! stores the result in its record), [`resolution`] gives the smallest change the same number
//! of pairs detects (80% power, at the level of the trial's last look) and
//! how many pairs, and seconds, a trial would need to tell its own estimate
//! from no change. So a report can say "this trial resolves ±12%; telling
//! the +2% it measured apart needs ~140 pairs (~7 minutes)".
//!
//! Normal approximation to the paired test on the clipped log-ratios (what
//! the sequential test sees): `n = ((z_{1-α/2} + z_{power}) · s / δ)²`.

use redoctor_stats::{mean, normal_critical, variance};
use serde::{Deserialize, Serialize};

/// The power [`resolution`] asks for.
pub const POWER: f64 = 0.8;

/// A trial's resolving power, from its own pairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resolution {
    /// Pairs the trial ran (complete, not void).
    pub pairs: usize,
    /// Standard deviation of one pair's `ln(candidate / baseline)`.
    pub per_pair_sd: f64,
    /// The two-sided level it was computed at (the last look's).
    pub alpha: f64,
    /// The smallest change (a share: 0.12 is ±12%) that this many pairs
    /// detect with [`POWER`].
    pub detectable: f64,
    /// Pairs a trial needs to tell the trial's estimate from no change with
    /// [`POWER`]; None when the estimate is no change at all.
    pub pairs_needed: Option<u64>,
    /// Seconds one pair took here (both windows and the warm-up).
    pub secs_per_pair: f64,
    /// What the trial's whole budget would resolve with the same spread:
    /// set when it stopped before its last planned look, whose wider
    /// figure (fewer units, a stricter look's level) says how soon it
    /// stopped, not what a trial at this load can tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_budget: Option<FullBudget>,
}

/// The resolution of a trial's whole planned budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FullBudget {
    /// Units (pairs or blocks) the budget plans.
    pub units: usize,
    /// The two-sided level of its last look.
    pub alpha: f64,
    /// The smallest change it detects with [`POWER`] (a share).
    pub detectable: f64,
}

impl Resolution {
    /// Seconds a trial of `pairs_needed` pairs would take at this pace.
    pub fn secs_needed(&self) -> Option<f64> {
        self.pairs_needed.map(|n| n as f64 * self.secs_per_pair)
    }

    /// One sentence for a report.
    pub fn summary(&self) -> String {
        self.summary_in("pairs")
    }

    /// [`Resolution::summary`] counting in `unit` (`pairs`, `blocks`).
    pub fn summary_in(&self, unit: &str) -> String {
        let one = unit.trim_end_matches('s');
        let mut s = format!(
            "{} {unit} resolve ±{:.1}% ({:.0}% power; one {one} spreads by {:.1}%)",
            self.pairs,
            100.0 * self.detectable,
            100.0 * POWER,
            100.0 * self.per_pair_sd
        );
        if let Some(f) = &self.full_budget {
            s.push_str(&format!(
                "; its full budget ({} {unit}) would resolve ±{:.1}%",
                f.units,
                100.0 * f.detectable
            ));
        }
        if let (Some(n), Some(secs)) = (self.pairs_needed, self.secs_needed()) {
            if n > self.pairs as u64 {
                s.push_str(&format!(
                    "; telling this trial's estimate from no change needs ~{n} {unit} (~{})",
                    duration_text(secs)
                ));
            }
        }
        s
    }
}

fn duration_text(secs: f64) -> String {
    if secs < 120.0 {
        format!("{secs:.0} s")
    } else if secs < 7200.0 {
        format!("{:.0} min", secs / 60.0)
    } else {
        format!("{:.1} h", secs / 3600.0)
    }
}

/// The resolving power of pairs whose clipped log-ratios are `d`, tested
/// at the two-sided level `alpha`, at `secs_per_pair` each; None with fewer
/// than 3 pairs (no spread worth the name) or no time measured.
pub fn resolution(d: &[f64], alpha: f64, secs_per_pair: f64) -> Option<Resolution> {
    let n = d.len();
    if n < 3 || secs_per_pair.is_nan() || secs_per_pair <= 0.0 {
        return None;
    }
    let sd = variance(d)?.sqrt();
    let z = normal_critical(alpha) + normal_critical(2.0 * (1.0 - POWER));
    if !(z.is_finite() && sd.is_finite()) {
        return None;
    }
    let detectable = (z * sd / (n as f64).sqrt()).exp() - 1.0;
    let m = mean(d).abs();
    let pairs_needed = (m > 0.0).then(|| ((z * sd / m).powi(2)).ceil().max(2.0) as u64);
    Some(Resolution {
        pairs: n,
        per_pair_sd: sd,
        alpha,
        detectable,
        pairs_needed,
        secs_per_pair,
        full_budget: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_a_of_the_agent_bench_needs_minutes() {
        // 2026-12-01, agent/bench/pair_noise.py at 4 users: per-pair sd
        // 0.084, mean +0.010 over 60 pairs of 3 s. Ten pairs with that
        // spread and mean, alternating around it.
        let d: Vec<f64> = (0..10)
            .map(|i| 0.010 + if i % 2 == 0 { 0.0797 } else { -0.0797 })
            .collect();
        let r = resolution(&d, 0.05, 3.0).unwrap();
        assert!((r.per_pair_sd - 0.084).abs() < 1e-3, "{r:?}");
        assert_eq!(r.alpha, 0.05);
        // (1.96 + 0.8416) * 0.084 / sqrt(10) = 0.0744: ±7.7%.
        assert!((r.detectable - 0.0773).abs() < 2e-3, "{r:?}");
        // ((2.8016 * 0.084) / 0.010)^2 = 554 pairs, ~28 minutes.
        let n = r.pairs_needed.unwrap();
        assert!((540..=570).contains(&n), "{n}");
        assert!((r.secs_needed().unwrap() - 3.0 * n as f64).abs() < 1e-9);
        let s = r.summary();
        assert!(s.starts_with("10 pairs resolve ±7.7%"), "{s}");
        assert!(s.contains("min)"), "{s}");
    }

    #[test]
    fn an_early_stop_says_what_its_full_budget_resolves() {
        let d: Vec<f64> = (0..12)
            .map(|i| -0.10 + if i % 2 == 0 { 0.05 } else { -0.05 })
            .collect();
        let mut r = resolution(&d, 0.001, 1.0).unwrap();
        assert!(!r.summary_in("blocks").contains("full budget"));
        r.full_budget = Some(FullBudget {
            units: 60,
            alpha: 0.045,
            detectable: 0.041,
        });
        let s = r.summary_in("blocks");
        assert!(
            s.contains("12 blocks resolve")
                && s.contains("its full budget (60 blocks) would resolve ±4.1%"),
            "{s}"
        );
    }

    #[test]
    fn a_clear_effect_needs_no_more_pairs_than_it_had() {
        let around = |n: usize, m: f64, h: f64| -> Vec<f64> {
            (0..n)
                .map(|i| m + if i % 2 == 0 { h } else { -h })
                .collect()
        };
        let r = resolution(&around(8, 0.20, 0.02), 0.05, 2.0).unwrap();
        assert!(r.pairs_needed.unwrap() <= 8, "{r:?}");
        assert!(!r.summary().contains("needs"), "{}", r.summary());
        // More spread, more pairs; more pairs, a finer resolution; a
        // stricter level, a coarser one.
        let w = resolution(&around(8, 0.20, 0.2), 0.05, 2.0).unwrap();
        assert!(w.detectable > r.detectable && w.pairs_needed > r.pairs_needed);
        let long = resolution(&around(32, 0.20, 0.2), 0.05, 2.0).unwrap();
        assert!(long.detectable < w.detectable);
        let strict = resolution(&around(8, 0.20, 0.2), 0.001, 2.0).unwrap();
        assert!(strict.detectable > w.detectable);
    }

    #[test]
    fn too_few_pairs_no_time_or_no_change_say_so() {
        assert!(resolution(&[0.1, 0.2], 0.05, 2.0).is_none());
        assert!(resolution(&[0.1, 0.2, 0.3], 0.05, 0.0).is_none());
        let r = resolution(&[0.1, -0.1, 0.1, -0.1], 0.05, 2.0).unwrap();
        assert_eq!(r.pairs_needed, None);
        assert!(!r.summary().contains("needs"));
    }
}
