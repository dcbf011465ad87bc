//! Priors: what a change did across the committed sweeps, per transition
//! and regime, and what the model's error was there. The decision rule
//! ([`super::decide`]) shrinks each prediction toward its prior.
//!
//! A prior file is data (`rules/priors/redoctor-engine.toml`, made by
//! `advice_eval priors` from the committed ground truths and a
//! calibration): one entry per starting redo mode, [`Transition`] and
//! regime key ([`Regime::key`]), plus a pooled entry (`regime = "*"`) per
//! transition for regimes the sweeps never saw.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::model::{Config, Inputs};

/// A redo fsync faster than this (µs) is no device's: tmpfs or a
/// battery-backed cache; the commit path is then CPU and hand-offs only.
pub const FAST_FSYNC_US: f64 = 20.0;

/// What a candidate changes, from a configuration with neither cap nor
/// throttle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transition {
    /// The other redo mode.
    Mode,
    /// A concurrency cap.
    Cap,
    /// A transaction throttle.
    Throttle,
    /// The other redo mode with a cap.
    ModeCap,
    /// The other redo mode with a throttle.
    ModeThrottle,
}

impl Transition {
    pub const ALL: [Transition; 5] = [
        Transition::Mode,
        Transition::Cap,
        Transition::Throttle,
        Transition::ModeCap,
        Transition::ModeThrottle,
    ];

    /// The transition from `from` to `to` under `users` users: a cap or
    /// throttle that holds nobody back (at least the users) is no change.
    /// None when `from` already limits the users (the sweeps never
    /// started there), when `to` is `from` in effect, or when it both caps
    /// and throttles.
    pub fn between(from: &Config, to: &Config, users: f64) -> Option<Transition> {
        let limits = |c: &Config| {
            let cap = c.cap > 0 && f64::from(c.cap) < users;
            let thr = c.throttle > 0 && f64::from(c.throttle) < users;
            (cap, thr)
        };
        if limits(from) != (false, false) {
            return None;
        }
        let mode = from.redo_threads != to.redo_threads;
        match (mode, limits(to)) {
            (true, (false, false)) => Some(Transition::Mode),
            (false, (true, false)) => Some(Transition::Cap),
            (false, (false, true)) => Some(Transition::Throttle),
            (true, (true, false)) => Some(Transition::ModeCap),
            (true, (false, true)) => Some(Transition::ModeThrottle),
            _ => None,
        }
    }

    /// Whether the prior of this transition is keyed by the commit path
    /// (the redo mode alone) or by the lock contention (a cap or throttle
    /// is involved).
    fn keyed_by_path(self) -> bool {
        self == Transition::Mode
    }
}

impl fmt::Display for Transition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Transition::Mode => "mode",
            Transition::Cap => "cap",
            Transition::Throttle => "throttle",
            Transition::ModeCap => "mode+cap",
            Transition::ModeThrottle => "mode+throttle",
        })
    }
}

/// What a commit waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommitPath {
    /// No device on the commit path: flush 0 or 2, or a redo fsync below
    /// [`FAST_FSYNC_US`] (tmpfs).
    Fast,
    /// The binlog's ordered commit: a serial FLUSH stage and two fsyncs.
    Binlog,
    /// A redo fsync on a device.
    Durable,
}

/// How much the users wait on each other outside the commit path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Contention {
    /// Below half a lock wait per commit.
    None,
    /// Half to three lock waits per commit.
    Some,
    /// Three or more lock waits per commit.
    Heavy,
}

/// Upper bounds of the users-per-CPU bands: `≤ 2`, `≤ 16`, `≤ 128`, above.
pub const USERS_PER_CPU_BANDS: [f64; 3] = [2.0, 16.0, 128.0];

/// The regime an observation is in, as the priors are keyed: mechanisms
/// that decide which way a change goes (what the commit waits for, how
/// many users share a CPU, how much they wait on each other), each cut
/// into a few bands fixed before any sweep was read.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Regime {
    pub path: CommitPath,
    pub users_per_cpu: f64,
    pub contention: Contention,
}

impl Regime {
    pub fn of(i: &Inputs) -> Regime {
        let path = if !i.waits_for_fsync() || i.fsync_us < FAST_FSYNC_US {
            CommitPath::Fast
        } else if i.binlog {
            CommitPath::Binlog
        } else {
            CommitPath::Durable
        };
        let contention = if i.lock_waits < 0.5 {
            Contention::None
        } else if i.lock_waits < 3.0 {
            Contention::Some
        } else {
            Contention::Heavy
        };
        Regime {
            path,
            users_per_cpu: i.users / i.cores.max(1.0),
            contention,
        }
    }

    /// The users-per-CPU band's label.
    pub fn band(&self) -> &'static str {
        let u = self.users_per_cpu;
        if u <= USERS_PER_CPU_BANDS[0] {
            "upc<=2"
        } else if u <= USERS_PER_CPU_BANDS[1] {
            "upc<=16"
        } else if u <= USERS_PER_CPU_BANDS[2] {
            "upc<=128"
        } else {
            "upc>128"
        }
    }

    /// The key of this regime's prior for `t`: `durable/upc<=16` for the
    /// redo mode (what the commit waits for, and how many users share a
    /// CPU); `heavy` where a cap or throttle is involved (the lock
    /// contention alone: the rules propose those only at 8 or more users
    /// per CPU).
    pub fn key(&self, t: Transition) -> String {
        if t.keyed_by_path() {
            format!("{}/{}", serde_plain(&self.path), self.band())
        } else {
            serde_plain(&self.contention)
        }
    }

    /// The key of the group this regime's prior pools toward, when the
    /// priors of `t` have three levels: `durable/*` for the redo mode.
    pub fn group_key(&self, t: Transition) -> Option<String> {
        t.keyed_by_path()
            .then(|| format!("{}/*", serde_plain(&self.path)))
    }
}

fn serde_plain<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The redo mode a transition starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Start {
    RT1,
    RT0,
}

impl Start {
    pub fn of(c: &Config) -> Start {
        if c.redo_threads {
            Start::RT1
        } else {
            Start::RT0
        }
    }
}

/// One prior: the log-ratio a transition had across the sweeps' scenarios
/// of one regime, and the model's error there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prior {
    pub from: Start,
    pub transition: Transition,
    /// [`Regime::key`], or `*`: every regime pooled.
    pub regime: String,
    /// Mean log-ratio (candidate over current), shrunk toward the
    /// transition's pooled mean by the number of scenarios.
    pub mean: f64,
    /// Spread of a new scenario's log-ratio around `mean` (log sd).
    pub spread: f64,
    /// Scenarios behind it.
    pub n: u32,
    /// RMS log error of the model's predictions in this regime, held out
    /// (None: too few to say; the model's own error is used).
    #[serde(default)]
    pub model_error: Option<f64>,
}

/// How the decision weighs a loss against a gain, and the priors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Priors {
    /// A loss of x (log) costs this many times a gain of x: a harmful
    /// change costs more than a missed gain (the operator applied it, the
    /// server got slower).
    pub loss_asymmetry: f64,
    /// A change is advised only when its expected utility exceeds this
    /// (log units: 0.01 is about 1%): a change has costs of its own (an
    /// operator's time, a restart of habits) that a tiny gain does not pay.
    #[serde(default)]
    pub min_utility: f64,
    /// Where the priors come from.
    pub source: String,
    #[serde(default, rename = "prior")]
    pub priors: Vec<Prior>,
    /// Measured changes of static settings (a restart each).
    #[serde(default, rename = "restart_prior")]
    pub restart: Vec<super::restart::RestartPrior>,
}

/// Why a priors file was refused.
#[derive(Debug, thiserror::Error)]
pub enum PriorsError {
    #[error("priors file {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("priors file {}: {reason}", path.display())]
    Invalid { path: PathBuf, reason: String },
}

/// The shipped priors for the bundled engine (and MySQL 8's knobs).
pub const SHIPPED: &str = include_str!("../../../rules/priors/redoctor-engine.toml");
/// The shipped restart priors (static settings; measured by hand from the
/// committed sweeps, kept apart from the file `advice_eval priors` makes).
pub const SHIPPED_RESTART: &str = include_str!("../../../rules/priors/restart.toml");

impl Priors {
    /// The priors built into the advisor.
    pub fn shipped() -> Priors {
        let mut p = Priors::parse(Path::new("rules/priors/redoctor-engine.toml"), SHIPPED)
            .expect("the shipped priors parse (checked by a test)");
        p.restart = Priors::shipped_restart();
        p
    }

    /// The shipped restart priors (`rules/priors/restart.toml`).
    pub fn shipped_restart() -> Vec<super::restart::RestartPrior> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            #[serde(rename = "restart_prior")]
            restart: Vec<super::restart::RestartPrior>,
        }
        let f: File = toml::from_str(SHIPPED_RESTART)
            .expect("the shipped restart priors parse (checked by a test)");
        f.restart
    }

    /// No prior anywhere: every candidate is judged by the model alone
    /// (and the loss asymmetry).
    pub fn none(loss_asymmetry: f64) -> Priors {
        Priors {
            loss_asymmetry,
            min_utility: 0.0,
            source: "no priors".into(),
            priors: vec![],
            restart: vec![],
        }
    }

    /// A priors file; without restart priors of its own it keeps the
    /// shipped ones.
    pub fn load(path: &Path) -> Result<Priors, PriorsError> {
        let text = std::fs::read_to_string(path).map_err(|source| PriorsError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut p = Priors::parse(path, &text)?;
        if p.restart.is_empty() {
            p.restart = Priors::shipped_restart();
        }
        Ok(p)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Priors, PriorsError> {
        let bad = |reason: String| PriorsError::Invalid {
            path: path.to_path_buf(),
            reason,
        };
        let p: Priors = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        if !(p.min_utility.is_finite() && p.min_utility >= 0.0) {
            return Err(bad(format!(
                "min_utility = {} must be zero or above",
                p.min_utility
            )));
        }
        if !(p.loss_asymmetry.is_finite() && p.loss_asymmetry >= 1.0) {
            return Err(bad(format!(
                "loss_asymmetry = {} must be at least 1 (a loss costs at least as much as a gain)",
                p.loss_asymmetry
            )));
        }
        for x in &p.priors {
            let ok = x.mean.is_finite()
                && x.spread.is_finite()
                && x.spread > 0.0
                && x.model_error.is_none_or(|e| e.is_finite() && e > 0.0);
            if !ok {
                return Err(bad(format!(
                    "prior {:?} {} {}: mean must be finite, spread and model_error above zero",
                    x.from, x.transition, x.regime
                )));
            }
        }
        for x in &p.restart {
            if !(x.mean.is_finite() && x.spread.is_finite() && x.spread > 0.0 && x.n > 0) {
                return Err(bad(format!(
                    "restart_prior {} {} -> {} ({}): mean must be finite, spread above zero, n at least 1",
                    x.setting, x.from, x.to, x.regime
                )));
            }
        }
        Ok(p)
    }

    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("priors serialise")
    }

    /// The prior of `t` from `from` in `regime`: its own cell, else its
    /// group's (the commit path's, for a users band no sweep saw), else
    /// the transition's pooled one.
    pub fn get(&self, from: Start, t: Transition, regime: &Regime) -> Option<&Prior> {
        let key = regime.key(t);
        let of = |k: &str| {
            self.priors
                .iter()
                .find(|p| p.from == from && p.transition == t && p.regime == k)
        };
        of(&key)
            .or_else(|| regime.group_key(t).and_then(|g| of(&g)))
            .or_else(|| of("*"))
    }

    /// Cells per transition, for reports.
    pub fn count(&self) -> BTreeMap<Transition, usize> {
        let mut m = BTreeMap::new();
        for p in &self.priors {
            *m.entry(p.transition).or_insert(0) += 1;
        }
        m
    }
}
