//! The decision rule: whether to advise a change without a trial.
//!
//! Each candidate's predicted log-ratio (candidate over current) is
//! combined with a prior ([`prior`]): what the same transition did across
//! the committed sweeps' scenarios of the same regime. The two are
//! weighed by their errors (the model's error in that regime, widened
//! outside the calibrated range; the prior's spread), a normal-normal
//! update. Out of the model's range its error is wide and the prior
//! speaks; where the model is good it does.
//!
//! The change is then judged with an asymmetric loss: a loss of `x` (log)
//! counts [`Priors::loss_asymmetry`] times a gain of `x`, since an applied
//! change that slows the server costs more than a missed gain. A
//! candidate's expected utility under its posterior is
//! `E[u] = μ − (λ − 1)·(s·φ(μ/s) − μ·Φ(−μ/s))` for a posterior `N(μ, s²)`;
//! the candidate with the highest is advised when it exceeds
//! [`Priors::min_utility`]. Every candidate carries its expected gain,
//! its 95% interval and the probability that it is worse.

pub mod prior;
pub mod restart;

use serde::{Deserialize, Serialize};

use crate::model::{Config, Inputs, Model, Prediction, Z95};
pub use prior::{CommitPath, Contention, Prior, Priors, PriorsError, Regime, Start, Transition};

/// How one candidate was judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assessment {
    pub config: Config,
    /// What it changes (None: not a transition the priors know; judged by
    /// the model alone).
    pub transition: Option<Transition>,
    /// The prior's regime key (`durable/upc<=16`), when it has one.
    pub regime: Option<String>,
    /// The model's predicted log-ratio and the error it is weighed with.
    pub model_log_ratio: f64,
    pub model_sigma: f64,
    /// The prior used (None: a flat one).
    pub prior: Option<Prior>,
    /// Share of the posterior mean that comes from the model (1: no prior).
    pub model_weight: f64,
    /// Posterior mean and standard deviation of the log-ratio.
    pub log_ratio: f64,
    pub sigma: f64,
    /// `exp(log_ratio) − 1`: the expected change of commits/s (the
    /// posterior's median ratio).
    pub gain: f64,
    /// 95% interval of the change (`exp(log_ratio ± 1.96·sigma) − 1`).
    pub low: f64,
    pub high: f64,
    /// Posterior probability that it is slower than the current configuration.
    pub p_worse: f64,
    /// Expected utility under the asymmetric loss (log units).
    pub utility: f64,
}

/// The decision over every candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// Every candidate, highest expected utility first.
    pub assessments: Vec<Assessment>,
    /// The advised candidate (the first assessment), if any.
    pub chosen: Option<Config>,
    pub loss_asymmetry: f64,
    pub min_utility: f64,
    /// Where the priors come from.
    pub priors: String,
    /// The observation's regime.
    pub regime: Regime,
}

/// Standard normal density.
fn phi(x: f64) -> f64 {
    (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// Standard normal distribution function.
fn cdf(x: f64) -> f64 {
    1.0 - redoctor_stats::normal_upper_tail(x)
}

/// Expected utility of a change whose log-ratio is `N(mean, sd²)`, a loss
/// weighing `asymmetry` times a gain: `E[Δ] − (λ − 1)·E[max(−Δ, 0)]`.
pub fn expected_utility(mean: f64, sd: f64, asymmetry: f64) -> f64 {
    if sd <= 0.0 {
        return if mean >= 0.0 { mean } else { asymmetry * mean };
    }
    let z = mean / sd;
    let expected_loss = sd * phi(z) - mean * cdf(-z);
    mean - (asymmetry - 1.0) * expected_loss
}

/// Posterior of a normal prior `N(mean, spread²)` and an estimate `m`
/// with error `sigma`: (mean, sd, the estimate's weight).
pub fn combine(prior: Option<(f64, f64)>, m: f64, sigma: f64) -> (f64, f64, f64) {
    match prior {
        None => (m, sigma, 1.0),
        Some((mu, tau)) => {
            let (wp, wm) = (1.0 / tau.powi(2), 1.0 / sigma.max(1e-6).powi(2));
            let w = wm / (wp + wm);
            (w * m + (1.0 - w) * mu, (wp + wm).sqrt().recip(), w)
        }
    }
}

/// The error the model's prediction of `c` is weighed with: a calibrated
/// model's measured error in this regime when the priors have one (which
/// includes its extrapolation there), else its own held-out error widened
/// outside the calibrated range; plus the observation's noise and the
/// regime check.
fn model_sigma(model: &Model, inputs: &Inputs, c: &Config, prior: Option<&Prior>) -> f64 {
    // The regime's error was measured with a calibrated model: an
    // uncalibrated one (the priors' constants) keeps its own, wide error.
    match prior
        .and_then(|p| p.model_error)
        .filter(|_| model.calibrated)
    {
        Some(e) => {
            (e.powi(2) + inputs.rate_noise().powi(2) + model.regime_sigma(inputs).powi(2)).sqrt()
        }
        None => model.sigma_for(inputs, c),
    }
}

/// Whether `b` is `a` under `users` users: the same redo mode, and a cap
/// or throttle only where it holds nobody back.
fn same_in_effect(a: &Config, b: &Config, users: f64) -> bool {
    let limit = |c: &Config| {
        let eff = |v: u32| if v > 0 && f64::from(v) < users { v } else { 0 };
        (c.redo_threads, eff(c.cap), eff(c.throttle))
    };
    limit(a) == limit(b)
}

/// The assessment of moving to `config` (a `transition`, with its
/// `prior` in `regime`) whose model log-ratio is `m` with error `sigma_m`.
#[allow(clippy::too_many_arguments)]
fn assess(
    config: Config,
    transition: Option<Transition>,
    regime: &Regime,
    prior: Option<&Prior>,
    m: f64,
    sigma_m: f64,
    asymmetry: f64,
) -> Assessment {
    let (mean, sd, w) = combine(prior.map(|x| (x.mean, x.spread)), m, sigma_m);
    Assessment {
        config,
        transition,
        regime: transition.map(|t| regime.key(t)),
        model_log_ratio: m,
        model_sigma: sigma_m,
        prior: prior.cloned(),
        model_weight: w,
        log_ratio: mean,
        sigma: sd,
        gain: mean.exp() - 1.0,
        low: (mean - Z95 * sd).exp() - 1.0,
        high: (mean + Z95 * sd).exp() - 1.0,
        p_worse: cdf(-mean / sd.max(1e-9)),
        utility: expected_utility(mean, sd, asymmetry),
    }
}

/// Every assessment, highest expected utility first, and the chosen one.
fn decision_of(mut assessments: Vec<Assessment>, regime: Regime, priors: &Priors) -> Decision {
    assessments.sort_by(|a, b| b.utility.total_cmp(&a.utility));
    let chosen = assessments
        .first()
        .filter(|a| a.utility > priors.min_utility)
        .map(|a| a.config);
    Decision {
        assessments,
        chosen,
        loss_asymmetry: priors.loss_asymmetry,
        min_utility: priors.min_utility,
        priors: priors.source.clone(),
        regime,
    }
}

/// Judges every prediction (candidates other than the observed
/// configuration) and picks the one to advise.
pub fn decide(
    model: &Model,
    inputs: &Inputs,
    predictions: &[Prediction],
    priors: &Priors,
) -> Decision {
    let regime = Regime::of(inputs);
    let start = Start::of(&inputs.config);
    let assessments: Vec<Assessment> = predictions
        .iter()
        // A cap or throttle that holds nobody back leaves the current
        // configuration as it is: nothing to judge.
        .filter(|p| !same_in_effect(&inputs.config, &p.config, inputs.users))
        .map(|p| {
            let transition = Transition::between(&inputs.config, &p.config, inputs.users);
            let prior = transition.and_then(|t| priors.get(start, t, &regime));
            let m = p.ratio.max(1e-9).ln();
            let sigma_m = model_sigma(model, inputs, &p.config, prior);
            assess(
                p.config,
                transition,
                &regime,
                prior,
                m,
                sigma_m,
                priors.loss_asymmetry,
            )
        })
        .collect();
    decision_of(assessments, regime, priors)
}

/// The decision for a host of another CPU count (`diagnose
/// --what-if-cpus N`): each configuration the what-if predicted, relative
/// to the current one on that host, combined with the prior of its
/// transition in the regime the load would be in there (users per CPU
/// move with the CPUs). The model's error is its measured error in that
/// regime (when calibrated) or its own, widened by the change of CPU count
/// as the what-if's interval is.
pub fn what_if(
    model: &Model,
    inputs: &Inputs,
    host: &crate::model::WhatIfHost,
    priors: &Priors,
) -> Decision {
    let mut there = inputs.clone();
    there.cores = f64::from(host.cores);
    let regime = Regime::of(&there);
    let start = Start::of(&inputs.config);
    let current = host
        .predictions
        .iter()
        .find(|p| p.config == inputs.config)
        .map_or(1.0, |p| p.ratio);
    let moved = crate::model::WHAT_IF_WEIGHT * (there.cores / inputs.cores).ln().abs();
    let assessments: Vec<Assessment> = host
        .predictions
        .iter()
        .filter(|p| !same_in_effect(&inputs.config, &p.config, inputs.users))
        .map(|p| {
            let transition = Transition::between(&inputs.config, &p.config, inputs.users);
            let prior = transition.and_then(|t| priors.get(start, t, &regime));
            let m = (p.ratio / current).max(1e-9).ln();
            let own = match prior
                .and_then(|x| x.model_error)
                .filter(|_| model.calibrated)
            {
                Some(e) => (e.powi(2) + inputs.rate_noise().powi(2)).sqrt(),
                None => host.sigma,
            };
            let sigma_m = (own.powi(2) + moved.powi(2)).sqrt();
            assess(
                p.config,
                transition,
                &regime,
                prior,
                m,
                sigma_m,
                priors.loss_asymmetry,
            )
        })
        .collect();
    decision_of(assessments, regime, priors)
}

impl Decision {
    /// The assessment of `c`.
    pub fn of(&self, c: &Config) -> Option<&Assessment> {
        self.assessments.iter().find(|a| a.config == *c)
    }
}

#[cfg(test)]
mod tests;
