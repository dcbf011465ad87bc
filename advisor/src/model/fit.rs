//! Calibration: fit the host constants ([`Params`]) to observations of one
//! configuration paired with the measured commits/s of others under the
//! same load, and measure the model's error on points it was not fitted to
//! (leave-one-out), which becomes the width of every prediction's interval.
//!
//! The fit is a robust maximum a posteriori estimate: a soft-L1 loss of the
//! predicted log-ratios' errors (each over its measurement noise, at least
//! [`NOISE_FLOOR`]) plus a Gaussian prior on each parameter around
//! [`PARAMS`]' prior, in a bounded (logistic) transform, minimised by
//! Nelder–Mead (the `argmin` crate).

use argmin::core::{CostFunction, Error as ArgminError, Executor};
use argmin::solver::neldermead::NelderMead;
use serde::{Deserialize, Serialize};

use super::config::Config;
use super::domain::Domain;
use super::inputs::Inputs;
use super::mechanics::{ratio, Params, PARAMS};
use super::ModelError;

/// Measurement noise assumed for one measured ratio when none is given (log scale).
pub const DEFAULT_RATIO_NOISE: f64 = 0.1;
/// Smallest model error used for intervals, whatever the fit says (log scale).
pub const MIN_SIGMA: f64 = 0.05;
/// Model error used without calibration (log scale): wide on purpose.
pub const UNCALIBRATED_SIGMA: f64 = 0.5;

/// One observed configuration and what other configurations measured under
/// the same load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationPoint {
    /// Where it comes from (`update_index/16u/2c`, a scenario name, ...).
    pub label: String,
    /// The observed configuration's inputs.
    pub inputs: Inputs,
    pub outcomes: Vec<Outcome>,
}

/// Measured commits/s of `config` over the observed configuration's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub config: Config,
    pub ratio: f64,
    /// Noise of `ln(ratio)` (standard error); [`DEFAULT_RATIO_NOISE`] when unknown.
    #[serde(default)]
    pub noise: Option<f64>,
}

/// One point's measured and predicted ratio.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Residual {
    pub label: String,
    pub from: Config,
    pub to: Config,
    pub measured: f64,
    /// Predicted by the fit on every point.
    pub fitted: f64,
    /// Predicted by the fit without this point (leave-one-out).
    pub held_out: Option<f64>,
}

/// The fitted constants and how well they predict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fitted {
    pub params: Params,
    /// RMS of `ln(predicted / measured)` on held-out points (leave-one-out);
    /// the model error used for intervals (at least [`MIN_SIGMA`]).
    pub sigma: f64,
    /// RMS of the same on the points fitted.
    pub in_sample_rms: f64,
    pub points: usize,
    pub residuals: Vec<Residual>,
    /// The range of inputs the points covered (None in files written
    /// before it was kept: the calibration's points give it then).
    #[serde(default)]
    pub domain: Option<Domain>,
}

struct Objective<'a> {
    points: &'a [CalibrationPoint],
}

fn logistic(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// Parameter vector from the unbounded transform.
fn to_params(z: &[f64]) -> Params {
    let v: Vec<f64> = PARAMS
        .iter()
        .zip(z)
        .map(|((_, _, lo, hi, _, _), z)| lo + (hi - lo) * logistic(*z))
        .collect();
    Params::from_vec(&v)
}

fn to_z(p: &Params) -> Vec<f64> {
    PARAMS
        .iter()
        .zip(p.to_vec())
        .map(|((_, _, lo, hi, _, _), x)| {
            let t = ((x - lo) / (hi - lo)).clamp(1e-6, 1.0 - 1e-6);
            (t / (1.0 - t)).ln()
        })
        .collect()
}

/// Run-to-run noise no single measurement can show (a disk hiccup, another
/// process): the floor of every outcome's noise (log scale).
pub const NOISE_FLOOR: f64 = 0.1;

/// Sum of soft-L1 losses `2(sqrt(1 + e²) - 1)` of the standardised log
/// errors: quadratic near zero, linear far out, so one disturbed run cannot
/// drag the constants.
fn loss(p: &Params, points: &[CalibrationPoint]) -> f64 {
    let mut s = 0.0;
    for pt in points {
        for o in &pt.outcomes {
            let r = ratio(p, &pt.inputs, &o.config);
            let e = (r.max(1e-9).ln() - o.ratio.max(1e-9).ln())
                / o.noise.unwrap_or(DEFAULT_RATIO_NOISE).max(NOISE_FLOOR);
            s += if e.is_finite() {
                2.0 * ((1.0 + e * e).sqrt() - 1.0)
            } else {
                1e6
            };
        }
    }
    s
}

impl CostFunction for Objective<'_> {
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, z: &Vec<f64>) -> Result<f64, ArgminError> {
        let prior = to_z(&Params::prior());
        let penalty: f64 = z.iter().zip(&prior).map(|(a, b)| (a - b).powi(2)).sum();
        Ok(loss(&to_params(z), self.points) + 0.5 * penalty)
    }
}

fn minimise(points: &[CalibrationPoint], start: &[f64]) -> Result<Vec<f64>, ModelError> {
    let mut best = start.to_vec();
    // Two restarts from the best simplex vertex escape early collapse.
    for _ in 0..3 {
        let mut simplex = vec![best.clone()];
        for j in 0..best.len() {
            let mut v = best.clone();
            v[j] += 0.7;
            simplex.push(v);
        }
        let solver = NelderMead::new(simplex)
            .with_sd_tolerance(1e-7)
            .map_err(|e| ModelError::Fit(e.to_string()))?;
        let res = Executor::new(Objective { points }, solver)
            .configure(|s| s.max_iters(3000))
            .run()
            .map_err(|e| ModelError::Fit(e.to_string()))?;
        best = res
            .state
            .best_param
            .ok_or_else(|| ModelError::Fit("no solution".into()))?;
    }
    Ok(best)
}

/// Cross-validation folds for the model error: leave-one-out up to this
/// many points, this many folds beyond.
pub const MAX_FOLDS: usize = 8;

/// Fits the constants to `points`; `sigma` from cross-validation (each
/// point predicted by a fit without it: leave-one-out up to [`MAX_FOLDS`]
/// points, that many folds beyond) when there are at least three points,
/// else [`UNCALIBRATED_SIGMA`].
pub fn fit(points: &[CalibrationPoint]) -> Result<Fitted, ModelError> {
    if points.iter().all(|p| p.outcomes.is_empty()) {
        return Err(ModelError::Fit(
            "no calibration point has a measured outcome".into(),
        ));
    }
    let z0 = to_z(&Params::prior());
    let params = to_params(&minimise(points, &z0)?);
    let folds = if points.len() >= 3 {
        points.len().min(MAX_FOLDS)
    } else {
        0
    };
    let mut held: Vec<Option<Params>> = vec![None; points.len()];
    for f in 0..folds {
        let rest: Vec<CalibrationPoint> = points
            .iter()
            .enumerate()
            .filter(|(j, _)| j % folds != f)
            .map(|(_, p)| p.clone())
            .collect();
        let p = to_params(&minimise(&rest, &to_z(&params))?);
        for (j, h) in held.iter_mut().enumerate() {
            if j % folds == f {
                *h = Some(p);
            }
        }
    }
    let mut residuals = Vec::new();
    let mut held_sq = Vec::new();
    let mut in_sq = Vec::new();
    for (pt, h) in points.iter().zip(&held) {
        for o in &pt.outcomes {
            let fitted = ratio(&params, &pt.inputs, &o.config);
            in_sq.push((fitted / o.ratio).ln().powi(2));
            let held_out = h.map(|h| ratio(&h, &pt.inputs, &o.config));
            if let Some(h) = held_out {
                held_sq.push((h / o.ratio).ln().powi(2));
            }
            residuals.push(Residual {
                label: pt.label.clone(),
                from: pt.inputs.config,
                to: o.config,
                measured: o.ratio,
                fitted,
                held_out,
            });
        }
    }
    let rms = |v: &[f64]| (v.iter().sum::<f64>() / v.len().max(1) as f64).sqrt();
    let sigma = if held_sq.is_empty() {
        UNCALIBRATED_SIGMA
    } else {
        rms(&held_sq).max(MIN_SIGMA)
    };
    Ok(Fitted {
        params,
        sigma,
        in_sample_rms: rms(&in_sq),
        points: points.len(),
        residuals,
        domain: Domain::of(points),
    })
}
