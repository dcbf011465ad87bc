//! Baseline runs against new runs, metric by metric.

use std::collections::{BTreeMap, BTreeSet};

use redoctor_stats::{mann_whitney_greater, median};
use serde::{Deserialize, Serialize};

use super::metrics::{def_of, Direction, Scope, Threshold};

/// What the comparison says about one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Worse beyond every part of the threshold.
    Regression,
    /// Better beyond every part of the threshold (reported, never fails).
    Improvement,
    /// Neither.
    Pass,
    /// Too few runs on a side (fewer than 2) or the metric is missing on
    /// one side: reported, not judged.
    NotCompared,
    /// A metric that moves with the host ([`Scope::Host`]) against a
    /// stored baseline: measured and shown, not judged unless asked.
    HostDependent,
}

/// Which metrics a comparison judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Judge {
    /// Every metric: the two sides ran side by side on one host
    /// (`--against`), or the user asked.
    All,
    /// Only what the code alone sets ([`Scope::Code`]): against a stored
    /// baseline, which another host or another day recorded.
    CodeOnly,
}

/// One metric's comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricResult {
    pub name: String,
    pub unit: String,
    pub direction: Direction,
    pub threshold: Threshold,
    pub baseline: Vec<f64>,
    pub new: Vec<f64>,
    pub baseline_median: Option<f64>,
    pub new_median: Option<f64>,
    /// (new - baseline) / baseline median, percent (None for a zero baseline).
    pub change_pct: Option<f64>,
    /// One-sided Mann–Whitney p-value that `new` is worse.
    pub p_worse: Option<f64>,
    /// One-sided Mann–Whitney p-value that `new` is better.
    pub p_better: Option<f64>,
    pub verdict: Verdict,
}

/// Every metric's comparison; `regressions` counts the failing ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub metrics: Vec<MetricResult>,
    pub regressions: usize,
}

/// Compares the runs metric by metric. `overrides` replaces a metric's
/// default threshold (by exact name; `wakeups_per_commit:*` for every
/// role pair). Metrics the gate does not know are not compared; with
/// [`Judge::CodeOnly`] those that move with the host are shown as
/// [`Verdict::HostDependent`].
pub fn compare(
    baseline: &[BTreeMap<String, f64>],
    new: &[BTreeMap<String, f64>],
    overrides: &BTreeMap<String, Threshold>,
    judge_which: Judge,
) -> Comparison {
    let names: BTreeSet<&String> = baseline.iter().chain(new).flat_map(|r| r.keys()).collect();
    let mut metrics = Vec::new();
    for name in names {
        let Some(def) = def_of(name) else { continue };
        let threshold = overrides
            .get(name.as_str())
            .or_else(|| {
                name.starts_with(super::metrics::ROLE_PAIR_PREFIX)
                    .then(|| overrides.get("wakeups_per_commit:*"))
                    .flatten()
            })
            .copied()
            .unwrap_or(def.threshold);
        // A role pair seen in some runs only: the others had none of it.
        let pair = name.starts_with(super::metrics::ROLE_PAIR_PREFIX);
        let values = |runs: &[BTreeMap<String, f64>]| -> Vec<f64> {
            runs.iter()
                .filter_map(|r| r.get(name).copied().or(pair.then_some(0.0)))
                .collect()
        };
        let (b, n) = (values(baseline), values(new));
        let mut r = judge(name, def.unit, def.direction, threshold, b, n);
        if judge_which == Judge::CodeOnly && def.scope == Scope::Host {
            r.verdict = Verdict::HostDependent;
        }
        metrics.push(r);
    }
    let regressions = metrics
        .iter()
        .filter(|m| m.verdict == Verdict::Regression)
        .count();
    Comparison {
        metrics,
        regressions,
    }
}

fn judge(
    name: &str,
    unit: &str,
    direction: Direction,
    threshold: Threshold,
    b: Vec<f64>,
    n: Vec<f64>,
) -> MetricResult {
    let (bm, nm) = (median(&b), median(&n));
    let change_pct = match (bm, nm) {
        (Some(x), Some(y)) if x.abs() > 1e-12 => Some((y - x) / x.abs() * 100.0),
        _ => None,
    };
    // "Worse" means larger for costs, smaller for throughput.
    let (p_larger, p_smaller) = (mann_whitney_greater(&b, &n), mann_whitney_greater(&n, &b));
    let (p_worse, p_better) = match direction {
        Direction::LowerIsBetter => (p_larger, p_smaller),
        Direction::HigherIsBetter => (p_smaller, p_larger),
    };
    let verdict = match (bm, nm) {
        (Some(x), Some(y)) if b.len() >= 2 && n.len() >= 2 => {
            let worse_by = match direction {
                Direction::LowerIsBetter => y - x,
                Direction::HigherIsBetter => x - y,
            };
            let beyond = |by: f64, p: Option<f64>| {
                by >= threshold.min_abs
                    && by > 0.0
                    && (x.abs() < 1e-12 || by / x.abs() * 100.0 >= threshold.pct)
                    && p.is_some_and(|p| p < threshold.alpha)
            };
            if beyond(worse_by, p_worse) {
                Verdict::Regression
            } else if beyond(-worse_by, p_better) {
                Verdict::Improvement
            } else {
                Verdict::Pass
            }
        }
        _ => Verdict::NotCompared,
    };
    MetricResult {
        name: name.to_string(),
        unit: unit.to_string(),
        direction,
        threshold,
        baseline_median: bm,
        new_median: nm,
        baseline: b,
        new: n,
        change_pct,
        p_worse,
        p_better,
        verdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(metric: &str, values: &[f64]) -> Vec<BTreeMap<String, f64>> {
        values
            .iter()
            .map(|v| BTreeMap::from([(metric.to_string(), *v)]))
            .collect()
    }

    #[test]
    fn a_clear_rise_in_a_cost_is_a_regression_and_noise_is_not() {
        let m = "voluntary_switches_per_commit";
        let base = runs(m, &[2.0, 2.1, 1.9, 2.05, 1.95]);
        let worse = runs(m, &[4.0, 4.1, 3.9, 4.2, 4.05]);
        let c = compare(&base, &worse, &BTreeMap::new(), Judge::All);
        assert_eq!(c.regressions, 1);
        assert_eq!(c.metrics[0].verdict, Verdict::Regression);
        let same = runs(m, &[2.02, 1.98, 2.07, 1.93, 2.0]);
        assert_eq!(
            compare(&base, &same, &BTreeMap::new(), Judge::All).regressions,
            0
        );
        // Better: reported, not failing.
        let better = runs(m, &[1.0, 1.1, 0.9, 1.05, 0.95]);
        let c = compare(&base, &better, &BTreeMap::new(), Judge::All);
        assert_eq!(
            (c.regressions, c.metrics[0].verdict),
            (0, Verdict::Improvement)
        );
    }

    #[test]
    fn throughput_regresses_downwards_and_thresholds_can_be_overridden() {
        let m = "commits_per_s";
        let base = runs(m, &[1000.0, 1010.0, 990.0, 1005.0, 995.0]);
        let new = runs(m, &[850.0, 860.0, 840.0, 855.0, 845.0]);
        // -15%: inside the default 25%.
        assert_eq!(
            compare(&base, &new, &BTreeMap::new(), Judge::All).regressions,
            0
        );
        let tight = BTreeMap::from([(
            m.to_string(),
            Threshold {
                pct: 10.0,
                min_abs: 0.0,
                alpha: 0.05,
            },
        )]);
        assert_eq!(compare(&base, &new, &tight, Judge::All).regressions, 1);
    }

    #[test]
    fn small_absolute_changes_and_single_runs_are_not_judged_as_regressions() {
        let m = "redo_fsyncs_per_commit";
        // +50% but only 0.005 fsyncs per commit: under min_abs 0.02.
        let base = runs(m, &[0.010, 0.011, 0.009, 0.010, 0.010]);
        let new = runs(m, &[0.015, 0.016, 0.014, 0.015, 0.015]);
        assert_eq!(
            compare(&base, &new, &BTreeMap::new(), Judge::All).regressions,
            0
        );
        let c = compare(
            &runs(m, &[1.0]),
            &runs(m, &[5.0]),
            &BTreeMap::new(),
            Judge::All,
        );
        assert_eq!(c.metrics[0].verdict, Verdict::NotCompared);
    }

    #[test]
    fn a_role_pair_missing_from_the_baseline_counts_as_zero() {
        let m = "wakeups_per_commit:user->log_notifier";
        let base: Vec<BTreeMap<String, f64>> = (0..5)
            .map(|_| BTreeMap::from([("commits_per_s".to_string(), 100.0)]))
            .collect();
        let new = runs(m, &[1.0, 1.02, 0.98, 1.01, 0.99]);
        let c = compare(&base, &new, &BTreeMap::new(), Judge::All);
        let r = c.metrics.iter().find(|r| r.name == m).unwrap();
        assert_eq!(r.baseline, vec![0.0; 5]);
        assert_eq!(r.verdict, Verdict::Regression);
    }

    /// Against a stored baseline only what the code sets is judged: a host
    /// half as fast (throughput, latency) is shown, not failed, while a
    /// change in the wakeups per commit still fails.
    #[test]
    fn a_stored_baseline_judges_counts_per_commit_only() {
        let mut base = runs("commits_per_s", &[1000.0, 1010.0, 990.0, 1005.0, 995.0]);
        let mut new = runs("commits_per_s", &[500.0, 505.0, 495.0, 502.0, 498.0]);
        let pair = "wakeups_per_commit:user->log_writer";
        for (r, v) in base.iter_mut().zip([0.6, 0.61, 0.59, 0.6, 0.6]) {
            r.insert(pair.into(), v);
        }
        for (r, v) in new.iter_mut().zip([0.6, 0.62, 0.58, 0.61, 0.6]) {
            r.insert(pair.into(), v);
        }
        let verdict =
            |c: &Comparison, name: &str| c.metrics.iter().find(|m| m.name == name).unwrap().verdict;
        let c = compare(&base, &new, &BTreeMap::new(), Judge::CodeOnly);
        assert_eq!(c.regressions, 0);
        assert_eq!(verdict(&c, "commits_per_s"), Verdict::HostDependent);
        assert_eq!(verdict(&c, pair), Verdict::Pass);
        let c = compare(&base, &new, &BTreeMap::new(), Judge::All);
        assert_eq!(verdict(&c, "commits_per_s"), Verdict::Regression);
        for r in new.iter_mut() {
            r.insert(pair.into(), 1.6);
        }
        let c = compare(&base, &new, &BTreeMap::new(), Judge::CodeOnly);
        assert_eq!((c.regressions, verdict(&c, pair)), (1, Verdict::Regression));
    }
}
