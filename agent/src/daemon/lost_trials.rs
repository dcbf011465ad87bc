//! Candidates that lost a trial, and when each may be tried again.
//!
//! A loss (measured worse, inconclusive, aborted) says what the load was
//! like during that trial, not forever: a trial begun seconds after a load
//! step can judge the step's transient (the bundled engine's redo mode at
//! 256 users reads worse in the first seconds after a step from 4 users
//! and better once settled: `agent/bench/RESULTS.md`), and a server's load
//! drifts within a phase. So a lost
//! candidate waits `retry_after`, twice that after a second loss in the
//! phase, and so on up to [`MAX_WAIT`]: a candidate that keeps losing
//! costs ever less trial time, one that lost to a transient is found
//! again. A phase change forgets every loss (the next load is judged
//! afresh), as before.

use std::time::{Duration, Instant};

use redoctor_advisor::experiment::Settings;

/// The longest wait before a lost candidate is tried again.
pub const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);

struct Loss {
    settings: Settings,
    /// Losses in this phase.
    count: u32,
    /// Not tried again before this.
    until: Instant,
}

pub struct LostTrials {
    retry_after: Duration,
    losses: Vec<Loss>,
}

impl LostTrials {
    pub fn new(retry_after: Duration) -> LostTrials {
        LostTrials {
            retry_after,
            losses: vec![],
        }
    }

    /// `settings` lost a trial that ended at `now`; returns how long it
    /// now waits.
    pub fn lost(&mut self, settings: &Settings, now: Instant) -> Duration {
        let i = self
            .losses
            .iter()
            .position(|l| &l.settings == settings)
            .unwrap_or_else(|| {
                self.losses.push(Loss {
                    settings: settings.clone(),
                    count: 0,
                    until: now,
                });
                self.losses.len() - 1
            });
        let l = &mut self.losses[i];
        l.count += 1;
        let wait = self
            .retry_after
            .saturating_mul(1 << (l.count - 1).min(20))
            .min(MAX_WAIT);
        l.until = now + wait;
        wait
    }

    /// Whether `settings` may be tried at `now`: it never lost in this
    /// phase, or its wait is over.
    pub fn may_try(&self, settings: &Settings, now: Instant) -> bool {
        self.losses
            .iter()
            .find(|l| &l.settings == settings)
            .is_none_or(|l| now >= l.until)
    }

    /// A new phase (or a new process): every loss is forgotten.
    pub fn clear(&mut self) {
        self.losses.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Settings {
        [("innodb_log_writer_threads".to_string(), v.to_string())]
            .into_iter()
            .collect()
    }

    #[test]
    fn a_lost_candidate_waits_twice_as_long_after_each_loss() {
        let t0 = Instant::now();
        let mut l = LostTrials::new(Duration::from_secs(600));
        assert!(l.may_try(&s("OFF"), t0));
        assert_eq!(l.lost(&s("OFF"), t0), Duration::from_secs(600));
        assert!(!l.may_try(&s("OFF"), t0 + Duration::from_secs(599)));
        assert!(l.may_try(&s("OFF"), t0 + Duration::from_secs(600)));
        // Another candidate is not held back by it.
        assert!(l.may_try(&s("ON"), t0));
        let t1 = t0 + Duration::from_secs(600);
        assert_eq!(l.lost(&s("OFF"), t1), Duration::from_secs(1200));
        assert!(!l.may_try(&s("OFF"), t1 + Duration::from_secs(1199)));
        assert!(l.may_try(&s("OFF"), t1 + Duration::from_secs(1200)));
        // Capped at a day, however many losses.
        let mut t = t1;
        for _ in 0..40 {
            t += l.lost(&s("OFF"), t);
        }
        assert_eq!(l.lost(&s("OFF"), t), MAX_WAIT);
    }

    #[test]
    fn a_phase_change_forgets_every_loss() {
        let t0 = Instant::now();
        let mut l = LostTrials::new(Duration::from_secs(600));
        l.lost(&s("OFF"), t0);
        l.lost(&s("OFF"), t0);
        l.clear();
        assert!(l.may_try(&s("OFF"), t0));
        // And the count starts again.
        assert_eq!(l.lost(&s("OFF"), t0), Duration::from_secs(600));
    }
}
