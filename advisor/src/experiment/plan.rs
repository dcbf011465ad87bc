//! The parameters of an experiment, with defaults and validation.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::design::{secs, Design};
use super::ExperimentError;

/// How windows are measured and when the sequential test stops.
/// Durations serialise as seconds (`window_s`, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Length of each measured window (default 1 s).
    #[serde(rename = "window_s", with = "secs")]
    pub window: Duration,
    /// Length of the discarded window after each settings switch (default
    /// 1 s; zero: none).
    #[serde(rename = "warmup_s", with = "secs")]
    pub warmup: Duration,
    /// Pairs before the first look (default 3, at least 2).
    pub min_pairs: usize,
    /// Pairs at most; the last look (default 10).
    pub max_pairs: usize,
    /// Time bound of a whole search, and of a lone trial run with it
    /// (default 60 s).
    #[serde(rename = "max_total_s", with = "secs")]
    pub max_total: Duration,
    /// Overall two-sided level, split over the looks (default 0.05).
    pub alpha: f64,
    /// Smallest relative change worth having: the futility band is
    /// `±ln(1 + min_effect)` (default 0.03; 0 never stops for futility).
    pub min_effect: f64,
    /// A candidate window below `floor` × the baseline's lowest window (at
    /// least half its median) restores the baseline at once; two in a row
    /// abort (default 0.7; 0 disables the guard).
    pub floor: f64,
    /// Early stop for harm: at a look, a candidate whose one-sided upper
    /// bound at this level's share (see below) lies below no change (it
    /// is slower) ends the trial inconclusive, rolled back, without waiting
    /// for the strict interim level (default 0.05 over all the looks, each
    /// tested at [`Plan::harm_level`]; 0 never stops for harm). Like futility it
    /// never keeps a candidate, so it spends no `alpha`; on equal settings
    /// it stops at most this share of trials.
    #[serde(default = "default_harm")]
    pub harm: f64,
    /// How baseline and candidate alternate: ABBA pairs of windows (the
    /// default, with `window` and `warmup`), or switchback periods
    /// ([`Switchback`]; `window`, `warmup`, `min_pairs` and `max_pairs` are
    /// then unused: the budget sets the most blocks).
    #[serde(default)]
    pub design: Design,
}

fn default_harm() -> f64 {
    0.05
}

impl Default for Plan {
    fn default() -> Plan {
        Plan {
            window: Duration::from_secs(1),
            warmup: Duration::from_secs(1),
            min_pairs: 3,
            max_pairs: 10,
            max_total: Duration::from_secs(60),
            alpha: 0.05,
            min_effect: 0.03,
            floor: 0.7,
            harm: default_harm(),
            design: Design::Pairs,
        }
    }
}

/// Most pairs a plan may ask for.
pub const MAX_PAIRS: usize = 1000;

impl Plan {
    /// Checks every field; the error names the field and its valid range.
    pub fn validate(&self) -> Result<(), ExperimentError> {
        let bad = |field, value: String, valid| {
            Err(ExperimentError::Plan {
                field,
                value,
                valid,
            })
        };
        if self.window.is_zero() {
            return bad("window", "0s".into(), "longer than 0");
        }
        if self.max_total.is_zero() {
            return bad("max_total", "0s".into(), "longer than 0");
        }
        if self.min_pairs < 2 {
            return bad(
                "min_pairs",
                self.min_pairs.to_string(),
                "2..=max_pairs (a paired t-test needs 2 pairs)",
            );
        }
        if self.max_pairs < self.min_pairs || self.max_pairs > MAX_PAIRS {
            return bad("max_pairs", self.max_pairs.to_string(), "min_pairs..=1000");
        }
        if !(self.alpha > 0.0 && self.alpha <= 0.5) {
            return bad("alpha", self.alpha.to_string(), "above 0, at most 0.5");
        }
        if !(0.0..1.0).contains(&self.min_effect) {
            return bad(
                "min_effect",
                self.min_effect.to_string(),
                "0 (no futility stop) up to below 1",
            );
        }
        if !(0.0..1.0).contains(&self.floor) {
            return bad(
                "floor",
                self.floor.to_string(),
                "0 (no floor guard) up to below 1",
            );
        }
        if !(0.0..0.5).contains(&self.harm) {
            return bad(
                "harm",
                self.harm.to_string(),
                "0 (no early stop for harm) up to below 0.5",
            );
        }
        if let Design::Switchback(sb) = &self.design {
            sb.validate()?;
        }
        Ok(())
    }

    /// Planned looks: `max_pairs - min_pairs + 1`.
    pub fn looks(&self) -> usize {
        self.max_pairs + 1 - self.min_pairs
    }

    /// The futility band's level at every look: `alpha / looks`. Stopping
    /// for futility never rejects, so it spends none of `alpha`.
    pub fn look_alpha(&self) -> f64 {
        self.alpha / self.looks() as f64
    }

    /// The rejection level of an interim look (Haybittle–Peto): a strict
    /// `min(alpha / 50, alpha / (2 (looks - 1)))`, 0.001 by default, so
    /// only an overwhelming effect stops a trial early.
    pub fn interim_alpha(&self) -> f64 {
        let looks = self.looks();
        if looks <= 1 {
            return self.alpha;
        }
        (self.alpha / 50.0).min(self.alpha / (2.0 * (looks - 1) as f64))
    }

    /// The rejection level of the final look after `interim` interim
    /// looks: what they left of `alpha` (0.043 after 7 by default). The
    /// levels of the looks made sum to `alpha` whenever the trial stops
    /// (Bonferroni over the looks actually made), and the last look keeps
    /// nearly a fixed-length test's power.
    pub fn final_alpha(&self, interim: usize) -> f64 {
        (self.alpha - interim as f64 * self.interim_alpha()).max(self.interim_alpha())
    }

    /// The early stop for harm's one-sided level at each look, for looks
    /// planned after the pair (block) counts `looks`: Pocock's constant
    /// level with `harm` over all of them ([`super::boundary`]), so that
    /// on equal settings the stop fires in at most `harm` of trials. At
    /// `harm` at every look it fired in 10% of simulated and 22% of live
    /// A/A trials at five looks (`agent/bench/RESULTS.md`, 2026-12-03).
    pub fn harm_level(&self, looks: &[usize]) -> f64 {
        if self.harm == 0.0 {
            return 0.0;
        }
        super::boundary::pocock_level(looks, self.harm)
    }

    /// Planned length of one pair: two windows and one warm-up (a
    /// switchback's block: four periods).
    pub fn pair_time(&self) -> Duration {
        match &self.design {
            Design::Pairs => self.window * 2 + self.warmup,
            Design::Switchback(sb) => sb.block_time(),
        }
    }

    /// How far a pair may overrun a time budget and still be started: a
    /// tenth of a window. A live server's windows end a few milliseconds
    /// late, so without it a trial given exactly `min_pairs` pairs' time
    /// stopped one pair short of its first look.
    pub fn slack(&self) -> Duration {
        self.window / 10
    }

    /// Whether `need` fits in `budget`, with [`Plan::slack`]: the one test
    /// of every time bound (a trial's start, each pair, a search's next
    /// candidate).
    pub fn fits(&self, need: Duration, budget: Duration) -> bool {
        need <= budget + self.slack()
    }

    /// Shortest time a decision can take: `min_pairs` pairs (a
    /// switchback's `min_blocks` blocks).
    pub fn min_time(&self) -> Duration {
        match &self.design {
            Design::Pairs => self.pair_time() * self.min_pairs as u32,
            Design::Switchback(sb) => sb.block_time() * sb.min_blocks as u32,
        }
    }

    /// The test in one sentence, with its parameters.
    pub fn describe(&self) -> String {
        if let Design::Switchback(sb) = &self.design {
            return format!(
                "switchback: {:.0} ms periods ({:.0} ms guard after each switch) in blocks of four, \
                 ABBA or BAAB at random (seed {}); t-test on the blocks' ln(candidate/baseline) with a \
                 Newey-West standard error; {} looks evenly over the blocks the budget holds (the first \
                 at {} blocks), Haybittle-Peto at alpha {} (two-sided); futility within ±{:.1}%; an early \
                 stop when slower at one-sided {:.2} over the looks (Pocock's constant level); floor {:.2} × the baseline's lowest recent period",
                sb.period.as_secs_f64() * 1e3,
                sb.guard.as_secs_f64() * 1e3,
                sb.seed,
                sb.looks,
                sb.min_blocks,
                self.alpha,
                self.min_effect * 100.0,
                self.harm,
                self.floor
            );
        }
        format!(
            "paired t-test on ln(candidate/baseline) of ABBA-ordered window pairs \
             ({:.1}s windows, {:.1}s warm-up after each switch); looks at pairs {}..={} \
             rejecting at alpha {:.4} at an interim look and what is left of {} \
             (two-sided) at the last (Haybittle–Peto, up to {} looks); \
             futility within ±{:.1}% at alpha {:.5}; an early stop when slower at one-sided {:.2} over the looks (Pocock's constant level); floor {:.2} × the baseline's lowest window (at least half its median), \
             the baseline restored at each breach, aborting at the second in a row",
            self.window.as_secs_f64(),
            self.warmup.as_secs_f64(),
            self.min_pairs,
            self.max_pairs,
            self.interim_alpha(),
            self.alpha,
            self.looks(),
            self.min_effect * 100.0,
            self.look_alpha(),
            self.harm,
            self.floor
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_valid_and_splits_alpha_over_eight_looks() {
        let p = Plan::default();
        p.validate().unwrap();
        assert_eq!(p.looks(), 8);
        assert!((p.look_alpha() - 0.00625).abs() < 1e-12);
        assert!((p.interim_alpha() - 0.001).abs() < 1e-12);
        assert!((p.final_alpha(7) - 0.043).abs() < 1e-12);
        assert!((p.final_alpha(2) - 0.048).abs() < 1e-12);
        let many = Plan {
            max_pairs: 1000,
            ..Plan::default()
        };
        let spent = 997.0 * many.interim_alpha() + many.final_alpha(997);
        assert!((spent - 0.05).abs() < 1e-12 && many.final_alpha(997) >= 0.025);
        assert_eq!(p.pair_time(), Duration::from_millis(3000));
        assert_eq!(p.min_time(), Duration::from_millis(9000));
    }

    #[test]
    fn a_bad_field_is_named_with_its_range() {
        let cases: Vec<(Plan, &str)> = vec![
            (
                Plan {
                    min_pairs: 1,
                    ..Plan::default()
                },
                "min_pairs = 1",
            ),
            (
                Plan {
                    max_pairs: 2,
                    ..Plan::default()
                },
                "max_pairs = 2",
            ),
            (
                Plan {
                    alpha: 0.0,
                    ..Plan::default()
                },
                "alpha = 0",
            ),
            (
                Plan {
                    alpha: f64::NAN,
                    ..Plan::default()
                },
                "alpha = NaN",
            ),
            (
                Plan {
                    floor: 1.0,
                    ..Plan::default()
                },
                "floor = 1",
            ),
            (
                Plan {
                    min_effect: -0.1,
                    ..Plan::default()
                },
                "min_effect = -0.1",
            ),
            (
                Plan {
                    harm: 0.5,
                    ..Plan::default()
                },
                "harm = 0.5",
            ),
            (
                Plan {
                    window: Duration::ZERO,
                    ..Plan::default()
                },
                "window = 0s",
            ),
        ];
        for (p, want) in cases {
            let e = p.validate().unwrap_err().to_string();
            assert!(e.contains(want) && e.contains("valid:"), "{e}");
        }
    }

    #[test]
    fn durations_serialise_as_seconds() {
        let p = Plan::default();
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["window_s"], 1.0);
        assert_eq!(v["warmup_s"], 1.0);
        assert_eq!(serde_json::from_value::<Plan>(v.clone()).unwrap(), p);
        // A record written before `harm` existed reads with its default.
        let mut old = v;
        old.as_object_mut().unwrap().remove("harm");
        assert_eq!(serde_json::from_value::<Plan>(old).unwrap(), p);
    }
}
