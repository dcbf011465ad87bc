//! Key access distributions: which row id a statement touches.
//!
//! As sysbench's `--rand-type`: `uniform` (the default), `zipfian` with
//! exponent `s` (`--rand-zipfian-exp`, sysbench default 0.8: the key of rank
//! r is drawn with probability ∝ 1/r^s) and `pareto` with parameter `h`
//! (`--rand-pareto-h`, default 0.2: `id = 1 + n·u^(ln h / ln(1-h))` for a
//! uniform `u`, so roughly a fraction `h` of the keys gets `1-h` of the
//! accesses). The hot keys are the low ids, as in sysbench.

use std::fmt;
use std::str::FromStr;

use rand::Rng;
use rand_distr::{Distribution, Zipf};

/// A key access distribution (parsed from `uniform`, `zipf[:S]`, `pareto[:H]`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum KeyDist {
    #[default]
    Uniform,
    /// Zipfian with exponent `s` (> 0).
    Zipf { s: f64 },
    /// Pareto with parameter `h` (0 < h < 1; below 0.5, smaller is more skewed).
    Pareto { h: f64 },
}

/// sysbench's `--rand-zipfian-exp` default.
pub const DEFAULT_ZIPF_EXP: f64 = 0.8;
/// sysbench's `--rand-pareto-h` default.
pub const DEFAULT_PARETO_H: f64 = 0.2;

/// Why a distribution text was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KeyDistError {
    #[error("unknown key distribution `{0}`: use uniform, zipf[:EXPONENT] (e.g. zipf:0.8) or pareto[:H] (e.g. pareto:0.2)")]
    Unknown(String),
    #[error("zipf exponent `{0}` is invalid: give a number above 0 and at most 10 (sysbench's default is 0.8)")]
    ZipfExp(String),
    #[error("pareto h `{0}` is invalid: give a number strictly between 0 and 1 (sysbench's default is 0.2)")]
    ParetoH(String),
}

impl FromStr for KeyDist {
    type Err = KeyDistError;

    fn from_str(text: &str) -> Result<KeyDist, KeyDistError> {
        let (name, arg) = match text.split_once(':') {
            Some((n, a)) => (n.trim(), Some(a.trim())),
            None => (text.trim(), None),
        };
        match name {
            "uniform" if arg.is_none() => Ok(KeyDist::Uniform),
            "zipf" | "zipfian" => {
                let s = match arg {
                    None => DEFAULT_ZIPF_EXP,
                    Some(a) => a
                        .parse::<f64>()
                        .ok()
                        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 10.0)
                        .ok_or_else(|| KeyDistError::ZipfExp(a.to_string()))?,
                };
                Ok(KeyDist::Zipf { s })
            }
            "pareto" => {
                let h = match arg {
                    None => DEFAULT_PARETO_H,
                    Some(a) => a
                        .parse::<f64>()
                        .ok()
                        .filter(|h| *h > 0.0 && *h < 1.0)
                        .ok_or_else(|| KeyDistError::ParetoH(a.to_string()))?,
                };
                Ok(KeyDist::Pareto { h })
            }
            _ => Err(KeyDistError::Unknown(text.to_string())),
        }
    }
}

impl fmt::Display for KeyDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyDist::Uniform => f.write_str("uniform"),
            KeyDist::Zipf { s } => write!(f, "zipf:{s}"),
            KeyDist::Pareto { h } => write!(f, "pareto:{h}"),
        }
    }
}

/// Draws ids from `1..=n` with a [`KeyDist`].
#[derive(Debug, Clone)]
pub struct KeySampler {
    n: u64,
    kind: SamplerKind,
}

#[derive(Debug, Clone)]
enum SamplerKind {
    Uniform,
    Zipf(Zipf<f64>),
    Pareto { power: f64 },
}

impl KeySampler {
    /// A sampler over `1..=n` (`n` ≥ 1).
    pub fn new(dist: KeyDist, n: u64) -> KeySampler {
        let n = n.max(1);
        let kind = match dist {
            KeyDist::Uniform => SamplerKind::Uniform,
            KeyDist::Zipf { s } => SamplerKind::Zipf(
                Zipf::new(n, s)
                    .expect("n >= 1 and s > 0 are checked when the distribution is parsed"),
            ),
            KeyDist::Pareto { h } => SamplerKind::Pareto {
                power: h.ln() / (1.0 - h).ln(),
            },
        };
        KeySampler { n, kind }
    }

    /// One id in `1..=n`.
    pub fn sample(&self, rng: &mut impl Rng) -> i64 {
        let id = match &self.kind {
            SamplerKind::Uniform => rng.gen_range(1..=self.n),
            SamplerKind::Zipf(z) => z.sample(rng) as u64,
            SamplerKind::Pareto { power } => {
                let u: f64 = rng.gen();
                1 + (self.n as f64 * u.powf(*power)) as u64
            }
        };
        id.clamp(1, self.n) as i64
    }
}
