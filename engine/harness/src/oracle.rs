//! The oracle: the best configuration of every scenario, from a results file.
//!
//! For each scenario (workload, users, cores, binlog, flush) every
//! configuration's successful repeats are summarised by their median TPS; the
//! best configuration is the one with the highest median. Each other
//! configuration gets its ratio to the best and a noise verdict: **Welch's
//! two-sample t-test** (unequal variances, two-sided) on the repeats' TPS of
//! the two configurations; the difference is "beyond noise" when p < `alpha`
//! (0.05). The test needs at least 2 repeats on each side; with fewer the
//! verdict is unknown (`null`). With 3 repeats a real but small difference
//! often stays inside the noise: more repeats sharpen the verdict.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::grid::{on_off, Scenario};
use super::results::{CellStatus, SweepResults};
use redoctor_stats::{median, welch_p_value};

/// Significance level of the noise test.
pub const ALPHA: f64 = 0.05;
pub const TEST: &str = "Welch's two-sample t-test (two-sided) on the TPS of the repeats, alpha 0.05; needs >= 2 repeats per configuration";

/// One configuration in one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigVerdict {
    pub config: String,
    /// TPS of each successful repeat.
    pub samples: Vec<f64>,
    pub median_tps: f64,
    /// `median_tps / best median` (1 for the best).
    pub ratio_to_best: f64,
    /// p-value of the test against the best (None for the best itself or too few repeats).
    pub p_value: Option<f64>,
    /// Whether the gap to the best exceeds run-to-run noise (None: unknown or the best).
    pub beyond_noise: Option<bool>,
}

/// The verdict on one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioVerdict {
    #[serde(flatten)]
    pub scenario: Scenario,
    pub best: String,
    pub best_tps: f64,
    /// True when the best beats every other configuration beyond noise.
    pub best_beyond_noise: bool,
    /// Configurations in descending median TPS (the best first).
    pub configs: Vec<ConfigVerdict>,
    /// Configurations of the grid with no successful repeat in this scenario.
    pub missing: Vec<String>,
}

/// The oracle over a whole results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OracleReport {
    pub test: String,
    pub alpha: f64,
    pub scenarios: Vec<ScenarioVerdict>,
}

/// Computes the oracle for every scenario with at least one successful cell.
pub fn oracle(results: &SweepResults) -> OracleReport {
    let mut by: BTreeMap<Scenario, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    for c in &results.cells {
        if c.status != CellStatus::Ok {
            continue;
        }
        let Some(m) = &c.metrics else { continue };
        by.entry(c.key.scenario.clone())
            .or_default()
            .entry(c.key.config.clone())
            .or_default()
            .push(m.tps);
    }
    let scenarios = by
        .into_iter()
        .map(|(scenario, configs)| verdict(results, scenario, configs))
        .collect();
    OracleReport {
        test: TEST.to_string(),
        alpha: ALPHA,
        scenarios,
    }
}

fn verdict(
    results: &SweepResults,
    scenario: Scenario,
    configs: BTreeMap<String, Vec<f64>>,
) -> ScenarioVerdict {
    let mut rows: Vec<(String, Vec<f64>, f64)> = configs
        .into_iter()
        .map(|(name, samples)| {
            let m = median(&samples).unwrap_or(0.0);
            (name, samples, m)
        })
        .collect();
    // Highest median first; ties by name for a stable order.
    rows.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    let (best, best_samples, best_tps) = rows[0].clone();
    let configs: Vec<ConfigVerdict> = rows
        .into_iter()
        .map(|(config, samples, m)| {
            let is_best = config == best;
            let p_value = if is_best {
                None
            } else {
                welch_p_value(&best_samples, &samples)
            };
            ConfigVerdict {
                ratio_to_best: if best_tps > 0.0 { m / best_tps } else { 1.0 },
                beyond_noise: p_value.map(|p| p < ALPHA),
                p_value,
                config,
                samples,
                median_tps: m,
            }
        })
        .collect();
    let best_beyond_noise =
        configs.len() > 1 && configs.iter().skip(1).all(|c| c.beyond_noise == Some(true));
    let missing = results
        .grid
        .configurations
        .keys()
        .filter(|k| !configs.iter().any(|c| &c.config == *k))
        .cloned()
        .collect();
    ScenarioVerdict {
        scenario,
        best,
        best_tps,
        best_beyond_noise,
        configs,
        missing,
    }
}

impl fmt::Display for OracleReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "noise test: {}", self.test)?;
        writeln!(
            f,
            "{:<28} {:>5} {:>5} {:>6} {:>5}  {:<14} {:>10}  others (ratio to best, * = beyond noise, ? = unknown)",
            "workload", "users", "cores", "binlog", "flush", "best", "best tps"
        )?;
        for s in &self.scenarios {
            let sc = &s.scenario;
            let others: Vec<String> = s
                .configs
                .iter()
                .skip(1)
                .map(|c| {
                    let mark = match c.beyond_noise {
                        Some(true) => "*",
                        Some(false) => "",
                        None => "?",
                    };
                    format!("{} {:.3}{mark}", c.config, c.ratio_to_best)
                })
                .chain(s.missing.iter().map(|m| format!("{m} (no result)")))
                .collect();
            writeln!(
                f,
                "{:<28} {:>5} {:>5} {:>6} {:>5}  {:<14} {:>10.1}  {}",
                sc.workload,
                sc.users,
                sc.cores,
                on_off(sc.binlog),
                sc.flush,
                s.best,
                s.best_tps,
                others.join(", ")
            )?;
        }
        Ok(())
    }
}
