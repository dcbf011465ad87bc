//! Phase-change detection: a setting that was right for the morning load
//! is reconsidered for the evening load. Fed once a second with commits/s
//! and connected users (cheap status counters), or, for a target without
//! an admin socket, with the fsyncs/s its fsync counters count; and with
//! each sampled observation's signal mix. A change counts when it holds
//! for `hold` consecutive seconds, so one slow second is not a phase.

use std::collections::VecDeque;

use redoctor_advisor::Summary;

use super::config::PhaseConfig;

/// Signals whose per-commit mix says the load's character changed.
pub const MIX_SIGNALS: &[&str] = &[
    "cpu_us_per_commit",
    "commit_path_wakeups_per_commit",
    "ctx_switches_per_commit",
    "commits_per_fsync",
];

/// What changed.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// The per-second rate (`what`: commits/s or fsyncs/s).
    Rate {
        what: &'static str,
        from: f64,
        to: f64,
    },
    Users {
        from: f64,
        to: f64,
    },
    Mix {
        signal: String,
        from: f64,
        to: f64,
    },
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Rate { what, from, to } => write!(f, "{what} {from:.0} -> {to:.0}"),
            Change::Users { from, to } => write!(f, "connected users {from:.0} -> {to:.0}"),
            Change::Mix { signal, from, to } => write!(f, "{signal} {from:.3} -> {to:.3}"),
        }
    }
}

pub struct PhaseDetector {
    cfg: PhaseConfig,
    /// The level the current phase was evaluated at (None: not yet known).
    reference: Option<(f64, f64)>,
    /// Recent seconds: (commits/s, users).
    recent: VecDeque<(f64, f64)>,
    /// Consecutive seconds outside the reference band.
    outside: u32,
    mix: Option<Summary>,
    /// What the per-second rate is.
    source: &'static str,
}

/// The rate sources.
pub const COMMITS: &str = "commits/s";
pub const FSYNCS: &str = "fsyncs/s";

fn median(v: impl Iterator<Item = f64>) -> f64 {
    redoctor_stats::median(&v.collect::<Vec<f64>>()).unwrap_or(0.0)
}

impl PhaseDetector {
    pub fn new(cfg: PhaseConfig) -> PhaseDetector {
        PhaseDetector {
            cfg,
            reference: None,
            recent: VecDeque::new(),
            outside: 0,
            mix: None,
            source: COMMITS,
        }
    }

    /// Says what the next seconds' rate is ([`COMMITS`] or [`FSYNCS`]);
    /// a switch forgets the reference (the two do not compare).
    pub fn use_source(&mut self, source: &'static str) {
        if self.source != source {
            self.source = source;
            self.reference = None;
            self.recent.clear();
            self.outside = 0;
        }
    }

    fn hold_secs(&self) -> u32 {
        self.cfg.hold.as_secs_f64().ceil().max(1.0) as u32
    }

    /// Takes the level of the last few seconds as the phase's reference
    /// (after an evaluation, or after a kept change moved the rate).
    pub fn settle(&mut self) {
        if !self.recent.is_empty() {
            self.reference = Some((
                median(self.recent.iter().map(|r| r.0)),
                median(self.recent.iter().map(|r| r.1)),
            ));
        }
        self.outside = 0;
    }

    /// Forgets the recent seconds (a trial switched settings: its rates are not the load's).
    pub fn pause(&mut self) {
        self.recent.clear();
        self.outside = 0;
    }

    /// After trials: settings may have moved the rate, so the rate's
    /// reference is taken afresh; the users' reference stays (settings do
    /// not change who is connected, so a load change during a trial still counts).
    pub fn after_trials(&mut self) {
        if let Some((_, u)) = self.reference {
            self.reference = Some((f64::NAN, u));
        }
        self.recent.clear();
        self.outside = 0;
    }

    /// One second's counters; `Some` when a change has held for `hold`.
    pub fn second(&mut self, rate: f64, users: f64) -> Option<Change> {
        self.recent.push_back((rate, users));
        let keep = self.hold_secs() as usize;
        while self.recent.len() > keep {
            self.recent.pop_front();
        }
        let Some((r0, u0)) = self.reference else {
            if self.recent.len() >= keep {
                self.settle();
            }
            return None;
        };
        if r0.is_nan() && self.recent.len() >= keep {
            self.reference = Some((median(self.recent.iter().map(|r| r.0)), u0));
        }
        let r0 = if r0.is_nan() { rate } else { r0 };
        let rate_out =
            r0 > 0.0 && ((rate / r0) - 1.0).abs() > self.cfg.rate_change || r0 == 0.0 && rate > 0.0;
        let users_out = users.max(u0) >= self.cfg.users_factor * users.min(u0).max(1.0)
            && (users - u0).abs() >= 2.0;
        if !(rate_out || users_out) {
            self.outside = 0;
            return None;
        }
        self.outside += 1;
        if self.outside < self.hold_secs() {
            return None;
        }
        let (r1, u1) = (
            median(self.recent.iter().map(|r| r.0)),
            median(self.recent.iter().map(|r| r.1)),
        );
        self.reference = Some((r1, u1));
        self.outside = 0;
        Some(if users_out {
            Change::Users { from: u0, to: u1 }
        } else {
            Change::Rate {
                what: self.source,
                from: r0,
                to: r1,
            }
        })
    }

    /// A sampled observation's signals; `Some` when the per-commit mix
    /// moved beyond `signal_change` since the last sample of this phase.
    pub fn sample(&mut self, s: &Summary) -> Option<Change> {
        let prev = self.mix.replace(s.clone())?;
        for name in MIX_SIGNALS {
            let (Some(a), Some(b)) = (prev.get(*name), s.get(*name)) else {
                continue;
            };
            let big = a.abs().max(b.abs());
            if big > 0.0
                && (a - b).abs() / big > self.cfg.signal_change / (1.0 + self.cfg.signal_change)
            {
                return Some(Change::Mix {
                    signal: name.to_string(),
                    from: *a,
                    to: *b,
                });
            }
        }
        None
    }

    /// Forgets the last sample's mix (settings changed: the mix moves by design).
    pub fn forget_mix(&mut self) {
        self.mix = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn det() -> PhaseDetector {
        PhaseDetector::new(PhaseConfig {
            hold: Duration::from_secs(3),
            ..Default::default()
        })
    }

    #[test]
    fn a_steady_load_is_one_phase_and_one_slow_second_is_not_a_change() {
        let mut d = det();
        for i in 0..60 {
            let rate = if i == 30 {
                2000.0
            } else {
                10000.0 + (i % 7) as f64 * 300.0
            };
            assert_eq!(d.second(rate, 64.0), None, "second {i}");
        }
    }

    #[test]
    fn more_users_is_a_new_phase_after_the_hold() {
        let mut d = det();
        for _ in 0..10 {
            assert_eq!(d.second(5000.0, 4.0), None);
        }
        assert_eq!(d.second(20000.0, 256.0), None);
        assert_eq!(d.second(21000.0, 256.0), None);
        let c = d.second(20500.0, 256.0).expect("a change after 3 s");
        assert_eq!(
            c,
            Change::Users {
                from: 4.0,
                to: 256.0
            }
        );
        // The new level is the reference: no second report.
        for _ in 0..10 {
            assert_eq!(d.second(20500.0, 256.0), None);
        }
    }

    #[test]
    fn after_trials_the_rate_is_retaken_but_a_users_change_still_counts() {
        let mut d = det();
        for _ in 0..5 {
            d.second(5000.0, 4.0);
        }
        d.after_trials();
        // The kept change doubled the rate: not a phase.
        for _ in 0..10 {
            assert_eq!(d.second(10000.0, 4.0), None);
        }
        d.after_trials();
        let mut got = None;
        for _ in 0..3 {
            got = got.or(d.second(10000.0, 256.0));
        }
        assert!(matches!(got, Some(Change::Users { .. })), "{got:?}");
    }

    #[test]
    fn a_rate_shift_alone_counts() {
        let mut d = det();
        for _ in 0..5 {
            d.second(10000.0, 64.0);
        }
        let mut got = None;
        for _ in 0..3 {
            got = got.or(d.second(4000.0, 64.0));
        }
        assert!(matches!(got, Some(Change::Rate { .. })), "{got:?}");
    }

    #[test]
    fn fsyncs_stand_in_for_commits_and_a_switch_is_not_a_change() {
        let mut d = det();
        for _ in 0..5 {
            d.second(10000.0, 64.0);
        }
        // No socket any more: fsyncs/s, on another scale, from a new reference.
        d.use_source(FSYNCS);
        for _ in 0..5 {
            assert_eq!(d.second(900.0, 0.0), None);
        }
        let mut got = None;
        for _ in 0..3 {
            got = got.or(d.second(0.0, 0.0));
        }
        assert_eq!(
            got.map(|c| c.to_string()),
            Some("fsyncs/s 900 -> 0".to_string())
        );
    }

    #[test]
    fn the_signal_mix_counts_between_samples() {
        let mut d = det();
        let s = |w: f64| Summary::from([("commit_path_wakeups_per_commit".to_string(), w)]);
        assert_eq!(d.sample(&s(1.0)), None);
        assert_eq!(d.sample(&s(1.2)), None);
        assert!(d.sample(&s(3.0)).is_some());
        d.forget_mix();
        assert_eq!(d.sample(&s(0.5)), None);
    }
}
