//! Learning the decision rule's priors from measured scenarios
//! (`advice_eval priors`): per starting redo mode, transition and regime,
//! the log-ratio the transition had (partially pooled toward the
//! transition's mean across regimes) and the model's held-out error there.
//!
//! Empirical Bayes, per starting mode and transition: the scenarios'
//! log-ratios `y` in regime cells `k` (`n_k` each, mean `ȳ_k`); the
//! within-cell variance `s²` (pooled, the ground truth's own noise taken
//! out) and the between-cell variance `τ²` (the cell means' variance less
//! their sampling noise). A cell's mean is shrunk toward the pooled mean
//! `μ` with weight `n_k/s² : 1/τ²`; a new scenario's spread around it is
//! `s² + 1/(n_k/s² + 1/τ²)`. The pooled entry (`*`) has mean `μ` and
//! spread `s² + τ²`.

use std::collections::BTreeMap;

use redoctor_advisor::decision::{Prior, Priors, Regime, Start, Transition};
use redoctor_advisor::model::Model;

use crate::records::{log_se, parse_config, Record};

/// Smallest spread of a prior (log): no sweep pins an effect closer.
pub const MIN_SPREAD: f64 = 0.05;
/// Share of the ground truth's own noise taken out of the spreads and
/// errors (see `advisor/bench/README.md`, "Priors").
const NOISE_OUT: f64 = 0.0;
/// A cell's model error is shrunk toward its transition's by this many
/// pseudo-scenarios.
const ERROR_PSEUDO_N: f64 = 3.0;
/// A cell's spread is shrunk toward the pooled within-cell spread by this
/// many pseudo-scenarios.
const SPREAD_PSEUDO_N: f64 = 3.0;

/// One scenario's measured transition.
struct Sample {
    /// Measured log-ratio (candidate over current, medians).
    y: f64,
    /// Its noise variance (both medians' standard errors).
    noise: f64,
    /// The model's predicted log-ratio, when a model is given.
    m: Option<f64>,
}

/// Every (start, transition, regime key) sample of `records`.
fn samples(
    records: &[&Record],
    models: &BTreeMap<u32, Model>,
) -> BTreeMap<(Start, Transition), BTreeMap<String, Vec<Sample>>> {
    let mut out: BTreeMap<(Start, Transition), BTreeMap<String, Vec<Sample>>> = BTreeMap::new();
    for r in records {
        // The model a diagnosis of this scenario would use: its CPU count's.
        let model = models.get(&r.cores);
        for obs in ["RT1", "RT0"] {
            let (Some((inputs, o)), Some(base)) = (r.inputs(obs), r.median(obs)) else {
                continue;
            };
            let from = inputs.config;
            let regime = Regime::of(&inputs);
            let current = o
                .facts
                .as_ref()
                .map(|f| f.settings.clone())
                .unwrap_or_default();
            let mut seen = Vec::new();
            for label in r.cells.keys() {
                let canon = r.canonical(label);
                if seen.contains(&canon) {
                    continue;
                }
                seen.push(canon.clone());
                let (Some(to), Some(m)) = (parse_config(&canon), r.median(&canon)) else {
                    continue;
                };
                let Some(t) = Transition::between(&from, &to, inputs.users) else {
                    continue;
                };
                let pred = model.and_then(|md| {
                    md.predict(&inputs, &[to], &current)
                        .first()
                        .map(|p| p.ratio.max(1e-9).ln())
                });
                out.entry((Start::of(&from), t))
                    .or_default()
                    .entry(regime.key(t))
                    .or_default()
                    .push(Sample {
                        y: (m / base).ln(),
                        noise: log_se(&r.samples(obs)).powi(2) + log_se(&r.samples(&canon)).powi(2),
                        m: pred,
                    });
            }
        }
    }
    out
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0.0), |(s, n), x| (s + x, n + 1.0));
    if n > 0.0 {
        s / n
    } else {
        0.0
    }
}

/// The priors `records` teach, with the model errors in each regime of
/// `models` (a calibration's per CPU count; a scenario on a CPU count
/// without one adds no error).
pub fn learn(
    records: &[&Record],
    models: &BTreeMap<u32, Model>,
    loss_asymmetry: f64,
    min_utility: f64,
    source: String,
) -> Priors {
    let mut priors = Vec::new();
    for ((start, t), cells) in samples(records, models) {
        let all: Vec<&Sample> = cells.values().flatten().collect();
        let n_all = all.len() as f64;
        if n_all < 2.0 {
            continue;
        }
        let mu = mean(all.iter().map(|s| s.y));
        let noise = mean(all.iter().map(|s| s.noise));
        // Within-cell variance, pooled; the ground truth's noise out.
        let df = (n_all - cells.len() as f64).max(1.0);
        let within = cells
            .values()
            .map(|v| {
                let m = mean(v.iter().map(|s| s.y));
                v.iter().map(|s| (s.y - m).powi(2)).sum::<f64>()
            })
            .sum::<f64>()
            / df;
        let s2 = (within - NOISE_OUT * noise).max(MIN_SPREAD.powi(2));
        // Between cells: the cell means' spread less their sampling noise.
        let means: Vec<(f64, f64)> = cells
            .values()
            .map(|v| (mean(v.iter().map(|s| s.y)), v.len() as f64))
            .collect();
        let k = means.len() as f64;
        let tau2 = if k >= 2.0 {
            let mm = mean(means.iter().map(|x| x.0));
            let var = means.iter().map(|x| (x.0 - mm).powi(2)).sum::<f64>() / (k - 1.0);
            (var - mean(means.iter().map(|x| s2 / x.1))).max(MIN_SPREAD.powi(2))
        } else {
            MIN_SPREAD.powi(2)
        };
        // The model's error: per cell, shrunk toward the transition's.
        let err2 = |v: &[&Sample]| -> Option<(f64, f64)> {
            let e: Vec<(f64, f64)> = v
                .iter()
                .filter_map(|s| s.m.map(|m| ((m - s.y).powi(2), s.noise)))
                .collect();
            (!e.is_empty()).then(|| (mean(e.iter().map(|x| x.0)), mean(e.iter().map(|x| x.1))))
        };
        let pooled_err = err2(&all);
        let model_error = |v: &[&Sample]| -> Option<f64> {
            let (pm, pn) = pooled_err?;
            let (cm, cn) = err2(v).unwrap_or((pm, pn));
            let n = v.len() as f64;
            let mse = (n * cm + ERROR_PSEUDO_N * pm) / (n + ERROR_PSEUDO_N);
            let nz = (n * cn + ERROR_PSEUDO_N * pn) / (n + ERROR_PSEUDO_N);
            Some(
                redoctor_advisor::model::fit::model_error(mse.sqrt(), (NOISE_OUT * nz).sqrt())
                    .max(MIN_SPREAD),
            )
        };
        for (key, v) in &cells {
            let n = v.len() as f64;
            let ybar = mean(v.iter().map(|s| s.y));
            // The cell's own spread, shrunk toward the pooled one: regimes
            // differ (a fast commit path spreads RT0's gain over 1.1-20x,
            // a disk over 0.8-1.2x).
            let own = v.iter().map(|s| (s.y - ybar).powi(2)).sum::<f64>();
            let cell_noise = mean(v.iter().map(|s| s.noise));
            let s2 = ((own + SPREAD_PSEUDO_N * s2) / ((n - 1.0).max(0.0) + SPREAD_PSEUDO_N)
                - NOISE_OUT * cell_noise)
                .max(MIN_SPREAD.powi(2));
            let prec = n / s2 + 1.0 / tau2;
            let shrunk = (n * ybar / s2 + mu / tau2) / prec;
            let refs: Vec<&Sample> = v.iter().collect();
            priors.push(Prior {
                from: start,
                transition: t,
                regime: key.clone(),
                mean: round(shrunk),
                spread: round((s2 + 1.0 / prec).sqrt().max(MIN_SPREAD)),
                n: v.len() as u32,
                model_error: model_error(&refs).map(round),
            });
        }
        priors.push(Prior {
            from: start,
            transition: t,
            regime: "*".into(),
            mean: round(mu),
            spread: round((s2 + tau2).sqrt().max(MIN_SPREAD)),
            n: all.len() as u32,
            model_error: model_error(&all).map(round),
        });
    }
    Priors {
        loss_asymmetry,
        min_utility,
        source,
        priors,
        // Restart priors live in their own file (rules/priors/restart.toml).
        restart: vec![],
    }
}

fn round(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}
