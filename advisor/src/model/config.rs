//! The configurations the model compares: redo mode × concurrency cap ×
//! transaction throttle, and how they map to server settings.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::facts::normalize;

/// Settings by name, as `SHOW GLOBAL VARIABLES` prints them.
pub type Settings = BTreeMap<String, String>;

pub const REDO_THREADS: &str = "innodb_log_writer_threads";
pub const CAP: &str = "innodb_thread_concurrency";
pub const POLICY: &str = "innodb_admission_policy";
pub const THROTTLE: &str = "innodb_max_active_transactions";

/// One point of the space the model ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Config {
    /// Dedicated log threads (RT1) or user threads writing the log (RT0).
    pub redo_threads: bool,
    /// `innodb_thread_concurrency` (0 = unlimited), modelled as the FIFO gate.
    pub cap: u32,
    /// `innodb_max_active_transactions` (0 = unlimited).
    pub throttle: u32,
}

impl Config {
    /// The configuration `settings` describe; absent names take the
    /// engine's defaults (RT1, no cap, no throttle). Unparsable numbers read as 0.
    pub fn from_settings(settings: &Settings) -> Config {
        let num = |k: &str| {
            settings
                .get(k)
                .and_then(|v| v.trim().parse::<u32>().ok())
                .unwrap_or(0)
        };
        Config {
            redo_threads: settings
                .get(REDO_THREADS)
                .is_none_or(|v| normalize(v) != "OFF"),
            cap: num(CAP),
            throttle: num(THROTTLE),
        }
    }

    /// The settings that turn `current` into this configuration (only the
    /// ones that differ; a cap comes with the FIFO policy, which holds it).
    pub fn changes_from(&self, current: &Settings) -> Settings {
        let want = self.to_settings();
        let now = Config::from_settings(current);
        want.into_iter()
            .filter(|(k, v)| {
                let cur = current.get(k).map(|c| normalize(c));
                match k.as_str() {
                    REDO_THREADS => self.redo_threads != now.redo_threads,
                    CAP => self.cap != now.cap,
                    THROTTLE => self.throttle != now.throttle,
                    _ => cur.as_deref() != Some(v.as_str()),
                }
            })
            .collect()
    }

    /// This configuration with `changes` (setting → value) applied.
    pub fn with(&self, changes: &Settings) -> Config {
        let mut s = self.to_settings();
        for (k, v) in changes {
            s.insert(k.clone(), v.clone());
        }
        Config::from_settings(&s)
    }

    /// The settings that define it: the three knobs, and with a cap the
    /// FIFO policy, which holds it (the model's cap is a hard one; the
    /// engine's default policy lets a waiter in regardless after two
    /// sleeps, which at hundreds of users holds almost nobody back).
    pub fn to_settings(&self) -> Settings {
        let mut s = Settings::new();
        s.insert(
            REDO_THREADS.into(),
            if self.redo_threads { "ON" } else { "OFF" }.into(),
        );
        s.insert(CAP.into(), self.cap.to_string());
        if self.cap > 0 {
            s.insert(POLICY.into(), "fifo".into());
        }
        s.insert(THROTTLE.into(), self.throttle.to_string());
        s
    }

    /// Threads allowed to work inside the engine at once with `users` users.
    pub fn inside(&self, users: f64) -> f64 {
        let mut a = users.max(1.0);
        if self.cap > 0 {
            a = a.min(f64::from(self.cap));
        }
        if self.throttle > 0 {
            a = a.min(f64::from(self.throttle));
        }
        a
    }
}

impl fmt::Display for Config {
    /// `RT1`, `RT0+cap4`, `RT1+throttle16`, `RT0+cap4+throttle16`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.redo_threads { "RT1" } else { "RT0" })?;
        if self.cap > 0 {
            write!(f, "+cap{}", self.cap)?;
        }
        if self.throttle > 0 {
            write!(f, "+throttle{}", self.throttle)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(pairs: &[(&str, &str)]) -> Settings {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_and_labels() {
        let c = Config::from_settings(&Settings::new());
        assert_eq!(c.to_string(), "RT1");
        let c = Config::from_settings(&s(&[(REDO_THREADS, "off"), (CAP, "4")]));
        assert_eq!(c.to_string(), "RT0+cap4");
        assert_eq!(c.inside(64.0), 4.0);
    }

    #[test]
    fn changes_name_only_what_differs() {
        let cur = s(&[(REDO_THREADS, "ON"), (CAP, "0"), (THROTTLE, "0")]);
        let to = Config {
            redo_threads: false,
            cap: 4,
            throttle: 0,
        };
        assert_eq!(
            to.changes_from(&cur),
            s(&[(REDO_THREADS, "OFF"), (CAP, "4"), (POLICY, "fifo")])
        );
        assert!(Config::from_settings(&cur).changes_from(&cur).is_empty());
    }

    /// What `redoctor calibrate` starts the engine with: a cap is measured
    /// as the model means it, with the FIFO policy.
    #[test]
    fn a_cap_comes_with_the_fifo_policy() {
        let cap = Config {
            redo_threads: false,
            cap: 4,
            throttle: 0,
        };
        assert_eq!(
            cap.to_settings(),
            s(&[
                (REDO_THREADS, "OFF"),
                (CAP, "4"),
                (POLICY, "fifo"),
                (THROTTLE, "0")
            ])
        );
        assert_eq!(Config::from_settings(&cap.to_settings()), cap);
        let rt1 = Config::from_settings(&Settings::new());
        assert!(!rt1.to_settings().contains_key(POLICY));
    }
}
