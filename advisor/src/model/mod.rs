//! The what-if model: from what was observed in the current configuration,
//! predict the commits/s of other configurations (redo mode × concurrency
//! cap × transaction throttle), with an interval. Design, equations and
//! their limits: `advisor/MODEL.md`.
//!
//! - [`inputs`]: what an observation gives the model (per-commit costs);
//! - [`mechanics`]: the equations and the host constants they need;
//! - [`fit`]: calibrating the constants on measured points, and the
//!   model's held-out error;
//! - [`calibration`]: the host's calibration file;
//! - [`config`]: the configurations and their settings;
//! - [`domain`]: the range of inputs the calibration covered (outside it
//!   the interval widens).
//!
//! A prediction is anchored on the observation: the model says how much
//! another configuration changes commits/s (a ratio), the observed rate
//! gives the level. The interval is the ratio × exp(±1.96 σ), σ combining
//! the model's held-out error on this host, the observation's noise and,
//! for inputs outside the calibrated range, the distance from it.

pub mod calibration;
pub mod config;
pub mod domain;
pub mod fit;
pub mod inputs;
pub mod mechanics;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use calibration::{Calibration, HostFacts};
pub use config::{Config, Settings};
pub use domain::{Domain, Outside};
pub use fit::{fit, CalibrationPoint, Fitted, Outcome};
pub use inputs::Inputs;
pub use mechanics::{Estimate, Params};

/// Two-sided 95% normal quantile.
pub const Z95: f64 = 1.96;

/// Why the model could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// Nothing to anchor a prediction on.
    #[error("no commits were counted: the model needs the engine's commit counter (probe points) and a loaded server")]
    NoCommits,
    /// Fitting failed.
    #[error("fitting the model failed: {0}")]
    Fit(String),
    /// A calibration file is not usable.
    #[error("calibration file {}: {reason}", path.display())]
    Calibration { path: PathBuf, reason: String },
    /// A calibration file could not be read or written (the cause is the source).
    #[error("calibration file {}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Constants plus their error: what predictions are made with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    pub params: Params,
    /// Held-out error of the model on this host (log scale).
    pub sigma: f64,
    /// Whether the constants come from this host's calibration.
    pub calibrated: bool,
    /// Where the constants come from, for the report.
    pub source: String,
    /// The inputs the calibration covered (None: uncalibrated, or unknown).
    #[serde(default)]
    pub domain: Option<Domain>,
}

/// The predicted effect of one candidate configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub config: Config,
    /// Settings that turn the current configuration into this one.
    pub changes: Settings,
    /// Predicted commits/s over the observed rate.
    pub ratio: f64,
    pub ratio_low: f64,
    pub ratio_high: f64,
    /// The error the interval was drawn with (log scale): the model's,
    /// the observed rate's noise and this prediction's extrapolation.
    #[serde(default)]
    pub sigma: f64,
    /// Predicted commits/s and its interval.
    pub commits_per_s: f64,
    pub low: f64,
    pub high: f64,
    /// The mechanics behind it (CPU per commit, latency, bounds, group size).
    pub estimate: Estimate,
}

impl Prediction {
    /// The gain's interval lies above zero.
    pub fn gain_beyond_error(&self) -> bool {
        self.ratio_low > 1.0
    }
}

impl Model {
    /// The priors, with a wide error: predictions say which way, rarely enough to advise.
    pub fn uncalibrated() -> Model {
        Model {
            params: Params::prior(),
            sigma: fit::UNCALIBRATED_SIGMA,
            calibrated: false,
            source: "uncalibrated priors (run `redoctor calibrate` on this host)".into(),
            domain: None,
        }
    }

    pub fn from_calibration(c: &Calibration, path: &std::path::Path) -> Model {
        Model {
            params: c.fitted.params,
            sigma: c.fitted.sigma,
            calibrated: true,
            source: format!(
                "calibration {} ({} points on {}, {} CPUs, storage fsync ~{:.0} us; held-out error {:.1}%)",
                path.display(),
                c.fitted.points,
                c.host.hostname,
                c.host.cores,
                c.host.fsync_us,
                (c.fitted.sigma.exp() - 1.0) * 100.0
            ),
            domain: c
                .fitted
                .domain
                .clone()
                .or_else(|| Domain::of(c.points.iter().map(|p| &p.inputs))),
        }
    }

    pub fn from_fitted(f: &Fitted, source: String) -> Model {
        Model {
            params: f.params,
            sigma: f.sigma,
            calibrated: true,
            source,
            domain: f.domain.clone(),
        }
    }

    /// The observed configuration as the model sees it.
    pub fn current(&self, inputs: &Inputs) -> Estimate {
        mechanics::estimate_observed(&self.params, inputs)
    }

    /// Where `inputs` lie outside the calibrated range (empty: inside, or
    /// no range known).
    pub fn outside(&self, inputs: &Inputs) -> Vec<Outside> {
        self.domain
            .as_ref()
            .map(|d| d.outside(inputs))
            .unwrap_or_default()
    }

    /// The error of predicting `c` from `inputs` (log scale): the
    /// held-out error, the observed rate's noise and the extrapolation
    /// beyond the calibrated range, added in quadrature.
    pub fn sigma_for(&self, inputs: &Inputs, c: &Config) -> f64 {
        let extra = self
            .domain
            .as_ref()
            .map_or(0.0, |d| d.extra_sigma(inputs, &self.params, c));
        (self.sigma.powi(2) + inputs.rate_noise().powi(2) + extra.powi(2)).sqrt()
    }

    /// Predictions for `candidates` (the current configuration is skipped),
    /// best first.
    pub fn predict(
        &self,
        inputs: &Inputs,
        candidates: &[Config],
        current: &Settings,
    ) -> Vec<Prediction> {
        let base = mechanics::estimate_observed(&self.params, inputs).commits_per_s;
        let mut out: Vec<Prediction> = candidates
            .iter()
            .filter(|c| **c != inputs.config)
            .map(|c| {
                let e = mechanics::estimate(&self.params, inputs, c);
                let ratio = e.commits_per_s / base;
                let sigma = self.sigma_for(inputs, c);
                let (lo, hi) = (ratio * (-Z95 * sigma).exp(), ratio * (Z95 * sigma).exp());
                Prediction {
                    config: *c,
                    changes: c.changes_from(current),
                    ratio,
                    ratio_low: lo,
                    ratio_high: hi,
                    sigma,
                    commits_per_s: inputs.commits_per_s * ratio,
                    low: inputs.commits_per_s * lo,
                    high: inputs.commits_per_s * hi,
                    estimate: e,
                }
            })
            .collect();
        out.sort_by(|a, b| b.ratio.total_cmp(&a.ratio));
        out
    }
}
