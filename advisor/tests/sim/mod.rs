//! A simulated testbed: scripted mean commits/s per settings, multiplicative
//! log-normal noise from a seeded RNG, an optional linear drift, optional
//! stalls of the load (a window now and then at a fraction of its rate,
//! whatever the settings), and a simulated clock (measuring advances it;
//! nothing sleeps).
//!
//! Beside the per-window noise, noise in continuous time, so that window
//! length, alternation and serial correlation matter as on a live host
//! ([`Sim::correlated`]): an Ornstein–Uhlenbeck (AR(1)) process, a 1/f-like
//! sum of them at octave time constants, white noise whose spread falls
//! with the window's length, steps of the whole load, and carryover (after
//! a switch the rate relaxes from the old setting's to the new one's). A
//! window's rate is the mean of the instantaneous rate over 5-ms steps.
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
    /// Continuous-time noise and carryover (None: per-window noise only).
    pub cont: Option<Continuous>,
    /// (state, factor): every other window measured in that state runs at
    /// `factor` × its rate (a setting that stalls the load now and then).
    pub stall_state: Option<(Settings, f64)>,
}

/// Noise in continuous time (see the module docs).
pub struct Continuous {
    /// (sd, time constant in s) of each AR(1) component of the log rate.
    pub components: Vec<(f64, f64)>,
    /// Their states.
    state: Vec<f64>,
    /// Log sd of a 1-s window's white noise (a window of `t` s: / √t).
    pub white_1s: f64,
    /// Carryover's time constant (s): the level relaxes to the current
    /// setting's mean.
    pub carryover_s: f64,
    /// The relaxing level (None before the first window).
    level: Option<f64>,
    /// (time in s, factor): from that time on every rate is multiplied.
    pub steps: Vec<(f64, f64)>,
    /// A covariate the testbed reports beside each window's rate (the
    /// disks' write latency): `−share × mean noise + measurement noise +
    /// the state's shift` (None: no covariate).
    pub covariate: Option<Covariate>,
    /// (mean gap in s, length in s, factor): the load stalls now and
    /// then, whatever the setting (a disk's slow sync): stalls start at
    /// random at that mean gap, and for their length every rate is
    /// multiplied by `factor`.
    pub dips: Option<(f64, f64, f64)>,
    /// What is left of the current stall (s).
    dip_left: f64,
    /// The mean continuous log noise over the last window.
    last_noise: f64,
    std: Normal<f64>,
}

/// See [`Continuous::covariate`].
pub struct Covariate {
    /// How much of the rate's continuous noise it sees (1: all of it).
    pub share: f64,
    /// Log sd of its own measurement noise per window.
    pub noise: f64,
    /// Per state: how much that state moves it (a candidate that changes
    /// how the server writes).
    pub shifts: BTreeMap<Settings, f64>,
}

impl Continuous {
    /// AR(1) noise of log sd `sd` and time constant `tau_s`.
    pub fn ar1(sd: f64, tau_s: f64) -> Continuous {
        Continuous {
            components: vec![(sd, tau_s)],
            state: vec![0.0],
            white_1s: 0.0,
            carryover_s: 0.0,
            level: None,
            steps: vec![],
            covariate: None,
            dips: None,
            dip_left: 0.0,
            last_noise: 0.0,
            std: Normal::new(0.0, 1.0).unwrap(),
        }
    }

    /// With a covariate that sees `share` of the noise, measured with log
    /// sd `noise`, moved by `shifts` per state.
    pub fn with_covariate(
        mut self,
        share: f64,
        noise: f64,
        shifts: &[(Settings, f64)],
    ) -> Continuous {
        self.covariate = Some(Covariate {
            share,
            noise,
            shifts: shifts.iter().cloned().collect(),
        });
        self
    }

    /// 1/f-like noise of total log sd `sd`: ten AR(1) components of equal
    /// variance at time constants 50 ms, 100 ms, ... 25.6 s.
    pub fn pink(sd: f64) -> Continuous {
        let k = 10;
        let each = sd / (k as f64).sqrt();
        let components: Vec<(f64, f64)> = (0..k).map(|i| (each, 0.05 * 2f64.powi(i))).collect();
        Continuous {
            state: vec![0.0; components.len()],
            components,
            ..Continuous::ar1(0.0, 1.0)
        }
    }

    pub fn white(mut self, sd_1s: f64) -> Continuous {
        self.white_1s = sd_1s;
        self
    }

    pub fn carryover(mut self, tau_s: f64) -> Continuous {
        self.carryover_s = tau_s;
        self
    }

    pub fn step(mut self, at_s: f64, factor: f64) -> Continuous {
        self.steps.push((at_s, factor));
        self
    }

    /// Stalls of `len_s` at `factor`, one every `gap_s` on average.
    pub fn dips(mut self, gap_s: f64, len_s: f64, factor: f64) -> Continuous {
        self.dips = Some((gap_s, len_s, factor));
        self
    }
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
            cont: None,
            stall_state: None,
        }
    }

    /// With continuous-time noise `c` instead of per-window noise.
    pub fn correlated(rates: &[(Settings, f64)], c: Continuous, seed: u64) -> Sim {
        let mut s = Sim::new(rates, 0.0, seed);
        s.cont = Some(c);
        s
    }

    /// The mean rate of the current state over a window of `len` from
    /// the clock, under the continuous noise (advancing its state).
    fn continuous_rate(&mut self, mean: f64, len: Duration) -> f64 {
        let start = self.clock.as_secs_f64();
        let c = self.cont.as_mut().expect("continuous noise");
        let dt = 0.005;
        let steps = ((len.as_secs_f64() / dt).ceil() as usize).max(1);
        let dt = len.as_secs_f64() / steps as f64;
        let mut sum = 0.0;
        let mut noise = 0.0;
        let mut level = c.level.unwrap_or(mean);
        for k in 0..steps {
            let t = start + (k as f64 + 0.5) * dt;
            let mut x = 0.0;
            for (i, (sd, tau)) in c.components.iter().enumerate() {
                let a = (-dt / tau).exp();
                c.state[i] =
                    c.state[i] * a + sd * (1.0 - a * a).sqrt() * c.std.sample(&mut self.rng);
                x += c.state[i];
            }
            if c.carryover_s > 0.0 {
                level = mean + (level - mean) * (-dt / c.carryover_s).exp();
            } else {
                level = mean;
            }
            let step: f64 = c
                .steps
                .iter()
                .filter(|(at, _)| t >= *at)
                .map(|(_, f)| f)
                .product();
            let mut dip = 1.0;
            if let Some((gap, len, factor)) = c.dips {
                if c.dip_left <= 0.0 && self.rng.gen_bool((dt / gap).min(1.0)) {
                    c.dip_left = len;
                }
                if c.dip_left > 0.0 {
                    c.dip_left -= dt;
                    dip = factor;
                }
            }
            sum += level * step * dip * x.exp();
            noise += x;
        }
        c.level = Some(level);
        c.last_noise = noise / steps as f64;
        let white = if c.white_1s > 0.0 {
            c.white_1s / len.as_secs_f64().sqrt() * c.std.sample(&mut self.rng)
        } else {
            0.0
        };
        sum / steps as f64 * white.exp()
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
        let base = if self.cont.is_some() {
            self.continuous_rate(mean, len)
        } else {
            mean
        };
        self.clock += len;
        self.log.push((self.current.clone(), len));
        let mut r = base * (1.0 + self.drift_per_s * mid) * self.noise.sample(&mut self.rng).exp();
        if let Some((n, factor)) = self.scale_window {
            if self.log.len() == n {
                r *= factor;
            }
        }
        if let Some((state, factor)) = &self.stall_state {
            if *state == self.current && self.windows_in(state).is_multiple_of(2) {
                r *= factor;
            }
        }
        if let Some((p, factor)) = self.stalls {
            if self.rng.gen_bool(p) {
                r *= factor;
            }
        }
        let covariate = self.cont.as_ref().and_then(|c| {
            let cv = c.covariate.as_ref()?;
            let shift = cv.shifts.get(&self.current).copied().unwrap_or(0.0);
            Some(5.0 - cv.share * c.last_noise + shift + cv.noise * c.std.sample(&mut self.rng))
        });
        Ok(Sample {
            commits_per_s: r,
            secs: len.as_secs_f64(),
            covariate,
        })
    }
}
