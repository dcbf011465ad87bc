//! A simulated testbed: scripted mean commits/s per settings, multiplicative
//! log-normal noise from a seeded RNG, an optional linear drift, optional
//! stalls of the load (a window now and then at a fraction of its rate,
//! whatever the settings), and a simulated clock (measuring advances it;
//! nothing sleeps).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};
use redoctor_advisor::experiment::{ExperimentError, Sample, Settings, Testbed};

pub fn s(pairs: &[(&str, &str)]) -> Settings {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub struct Sim {
    /// Mean commits/s of each full state of the knobs.
    rates: BTreeMap<Settings, f64>,
    /// The knobs' current values.
    pub current: Settings,
    /// Standard deviation of the log of the noise factor.
    noise: Normal<f64>,
    /// Relative change of every rate per simulated second.
    pub drift_per_s: f64,
    pub clock: Duration,
    rng: SmallRng,
    /// Every measured window: the state it ran in and its length.
    pub log: Vec<(Settings, Duration)>,
    pub applies: usize,
    /// The apply call (1-based) that fails after setting its first knob.
    pub fail_apply: Option<usize>,
    /// (probability, factor): a window stalls with that probability and
    /// then runs at `factor` × its rate (0: no commits at all).
    pub stalls: Option<(f64, f64)>,
    /// (n, factor): the n-th window measured (1-based, warm-ups
    /// included) runs at `factor` × its rate.
    pub scale_window: Option<(usize, f64)>,
    /// How much longer than asked each window runs (a live server's
    /// windows end a few milliseconds late).
    pub overrun: Duration,
}

impl Sim {
    /// Starts at the first scripted state.
    pub fn new(rates: &[(Settings, f64)], noise: f64, seed: u64) -> Sim {
        Sim {
            current: rates[0].0.clone(),
            rates: rates.iter().cloned().collect(),
            noise: Normal::new(0.0, noise).unwrap(),
            drift_per_s: 0.0,
            clock: Duration::ZERO,
            rng: SmallRng::seed_from_u64(seed),
            log: vec![],
            applies: 0,
            fail_apply: None,
            stalls: None,
            scale_window: None,
            overrun: Duration::ZERO,
        }
    }

    /// Windows measured in `state` (warm-ups included).
    pub fn windows_in(&self, state: &Settings) -> usize {
        self.log.iter().filter(|(s, _)| s == state).count()
    }
}

impl Testbed for Sim {
    fn read(&mut self, names: &[String]) -> Result<Settings, ExperimentError> {
        names
            .iter()
            .map(|n| match self.current.get(n) {
                Some(v) => Ok((n.clone(), v.clone())),
                None => Err(ExperimentError::read(names, format!("no knob {n}"))),
            })
            .collect()
    }

    fn apply(&mut self, settings: &Settings) -> Result<(), ExperimentError> {
        self.applies += 1;
        for (k, v) in settings {
            self.current.insert(k.clone(), v.clone());
            if self.fail_apply == Some(self.applies) {
                return Err(ExperimentError::apply(settings, "simulated refusal"));
            }
        }
        Ok(())
    }

    fn measure(&mut self, len: Duration) -> Result<Sample, ExperimentError> {
        let mean = *self
            .rates
            .get(&self.current)
            .unwrap_or_else(|| panic!("no rate scripted for {:?}", self.current));
        let len = len + self.overrun;
        let mid = (self.clock + len / 2).as_secs_f64();
        self.clock += len;
        self.log.push((self.current.clone(), len));
        let mut r = mean * (1.0 + self.drift_per_s * mid) * self.noise.sample(&mut self.rng).exp();
        if let Some((n, factor)) = self.scale_window {
            if self.log.len() == n {
                r *= factor;
            }
        }
        if let Some((p, factor)) = self.stalls {
            if self.rng.gen_bool(p) {
                r *= factor;
            }
        }
        Ok(Sample {
            commits_per_s: r,
            secs: len.as_secs_f64(),
        })
    }
}
