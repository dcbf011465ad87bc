//! The what-if model: from what was observed in the current configuration,
//! predict the commits/s of other configurations (redo mode × concurrency
//! cap × transaction throttle), with an interval. Design, equations and
//! their limits: `advisor/MODEL.md`.
//!
//! - [`inputs`]: what an observation gives the model (per-commit costs);
//! - [`mechanics`]: the per-commit costs and the host constants they need;
//! - [`queueing`]: the closed queueing network (MVA) the costs are solved in;
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
pub mod queueing;

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

/// The regime check's tolerance (log units): a model level within a
/// factor of `e^0.4` ≈ 1.5 of the observed rate counts as the right regime.
pub const REGIME_TOLERANCE: f64 = 0.4;
/// Error added per log unit of level gap beyond the tolerance.
pub const REGIME_WEIGHT: f64 = 0.5;
/// Error a what-if adds per log unit of CPU-count change (doubling the
/// CPUs adds 0.5 · ln 2 ≈ 0.35 in quadrature).
pub const WHAT_IF_WEIGHT: f64 = 0.5;

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

/// A configuration's predicted commits/s on a host of another CPU count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhatIf {
    pub config: Config,
    /// Predicted commits/s there, over the rate observed here.
    pub ratio: f64,
    pub commits_per_s: f64,
    /// Its 95% interval, over the rate observed here.
    pub ratio_low: f64,
    pub ratio_high: f64,
}

/// Every candidate on a host of `cores` CPUs, best first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhatIfHost {
    pub cores: u32,
    /// The CPU count observed.
    pub observed_cores: f64,
    pub predictions: Vec<WhatIf>,
    /// The error the intervals were drawn with (log scale): the model's
    /// error on this host, widened by the change of CPU count.
    pub sigma: f64,
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
    /// held-out error, the observed rate's noise, the extrapolation
    /// beyond the calibrated range and the regime check
    /// ([`Model::regime_sigma`]), added in quadrature.
    pub fn sigma_for(&self, inputs: &Inputs, c: &Config) -> f64 {
        let extra = self
            .domain
            .as_ref()
            .map_or(0.0, |d| d.extra_sigma(inputs, &self.params, c));
        (self.sigma.powi(2)
            + inputs.rate_noise().powi(2)
            + extra.powi(2)
            + self.regime_sigma(inputs).powi(2))
        .sqrt()
    }

    /// How far the model's own level for the observed configuration lies
    /// from the observed rate (log units): the predictions are anchored on
    /// the observation, but a model whose level is far off is in the wrong
    /// regime (a bound binds that does not, or a queue it does not have).
    pub fn regime_gap(&self, inputs: &Inputs) -> f64 {
        let own = self.current(inputs).commits_per_s;
        if own > 0.0 && inputs.commits_per_s > 0.0 {
            (own / inputs.commits_per_s).ln().abs()
        } else {
            0.0
        }
    }

    /// The error the regime check adds (log scale): [`REGIME_WEIGHT`] per
    /// log unit of [`Model::regime_gap`] beyond [`REGIME_TOLERANCE`].
    pub fn regime_sigma(&self, inputs: &Inputs) -> f64 {
        REGIME_WEIGHT * (self.regime_gap(inputs) - REGIME_TOLERANCE).max(0.0)
    }

    /// What `configs` (the current one included) would do on a host of
    /// `cores` CPUs under the observed load, best first: the same
    /// mechanics and constants with another number of CPU servers
    /// (`mechanics::estimate_on`), anchored on the observed rate. The
    /// interval widens by [`WHAT_IF_WEIGHT`] per log unit of CPU-count
    /// change (the constants were calibrated at the observed count).
    pub fn what_if(&self, inputs: &Inputs, configs: &[Config], cores: u32) -> WhatIfHost {
        let base = mechanics::estimate_observed(&self.params, inputs).commits_per_s;
        let moved = (f64::from(cores) / inputs.cores).ln().abs();
        let sigma = (self.sigma.powi(2)
            + inputs.rate_noise().powi(2)
            + (WHAT_IF_WEIGHT * moved).powi(2)
            + self.regime_sigma(inputs).powi(2))
        .sqrt();
        let mut all: Vec<Config> = configs.to_vec();
        if !all.contains(&inputs.config) {
            all.push(inputs.config);
        }
        let mut predictions: Vec<WhatIf> = all
            .iter()
            .map(|c| {
                let e = mechanics::estimate_on(&self.params, inputs, c, f64::from(cores));
                let ratio = e.commits_per_s / base;
                WhatIf {
                    config: *c,
                    ratio,
                    commits_per_s: inputs.commits_per_s * ratio,
                    ratio_low: ratio * (-Z95 * sigma).exp(),
                    ratio_high: ratio * (Z95 * sigma).exp(),
                }
            })
            .collect();
        predictions.sort_by(|a, b| b.ratio.total_cmp(&a.ratio));
        WhatIfHost {
            cores,
            observed_cores: inputs.cores,
            predictions,
            sigma,
        }
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
