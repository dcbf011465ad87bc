//! How a trial alternates its sides: the paired design or switchback
//! periods, and the switchback's parameters.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::ExperimentError;

/// How a trial alternates its sides.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Design {
    /// ABBA pairs of windows, a discarded warm-up after each switch.
    #[default]
    Pairs,
    /// Short periods in randomized ABBA/BAAB blocks, a guard after each
    /// switch, a serial-correlation-robust test (`super::switchback`).
    Switchback(Switchback),
}

/// The switchback design's parameters (`Plan::design`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Switchback {
    /// One period: the guard, then the measured part.
    #[serde(rename = "period_s", with = "secs")]
    pub period: Duration,
    /// Discarded after each switch (the knob's carryover).
    #[serde(rename = "guard_s", with = "secs")]
    pub guard: Duration,
    /// Looks of the sequential test, evenly spaced over the blocks the
    /// budget allows.
    pub looks: usize,
    /// Blocks before the first look (at least 4).
    pub min_blocks: usize,
    /// Seed of the blocks' order.
    pub seed: u64,
    /// Let the test see the blocks adjusted by the testbed's covariate
    /// (the disks' write latency) when it is balanced (`super::covariate`).
    /// Off by default: the adjustment is then fitted and recorded beside
    /// the raw test, not decided on. A candidate that changes the commit
    /// rate changes the disk's load and so its latency, and the adjustment
    /// then counts part of the candidate's own effect as noise (measured:
    /// `agent/bench/RESULTS.md`, 2026-12-04).
    #[serde(default)]
    pub covariate: bool,
}

impl Default for Switchback {
    /// 50-ms periods with a 10-ms guard, for knobs that act on the next
    /// commit; a knob with a longer carryover stretches both
    /// (`super::carryover`). The host's noise is flicker-like: a 40-ms
    /// window's rate spreads about as much as a 200-ms one's, so the number
    /// of periods sets the resolution. At the demo load 60-s trials of a
    /// setting against itself stated ±2.5% at 50-ms periods, ±3.0% at 100 ms
    /// and ±3.8-5.7% at 250 ms (`agent/bench/RESULTS.md`, 2026-12-05).
    /// Shorter periods run into the counter's read (0.3-0.6 ms at the
    /// median, 3-7 ms at the 99th percentile). Six blocks before the first
    /// look, so that a 2-s period still gets its looks within a minute.
    fn default() -> Switchback {
        Switchback {
            period: Duration::from_millis(50),
            guard: Duration::from_millis(10),
            looks: 5,
            min_blocks: 6,
            seed: 1,
            covariate: false,
        }
    }
}

impl Switchback {
    /// A block: four periods.
    pub fn block_time(&self) -> Duration {
        self.period * 4
    }

    /// The most blocks `budget` holds ([`whole`]: a search's share of
    /// exactly a decision's minimum, counted as floats, ran no trial).
    pub fn max_blocks(&self, budget: Duration) -> usize {
        whole(budget, self.block_time())
    }

    /// The block counts at which the test looks, for `max` blocks.
    pub fn look_at(&self, max: usize) -> Vec<usize> {
        if max < self.min_blocks {
            return vec![];
        }
        let k = self.looks.max(1);
        let mut at: Vec<usize> = (1..=k)
            .map(|i| (max * i).div_ceil(k).max(self.min_blocks))
            .collect();
        at.dedup();
        at
    }

    pub fn validate(&self) -> Result<(), ExperimentError> {
        let bad = |field, value: String, valid| {
            Err(ExperimentError::Plan {
                field,
                value,
                valid,
            })
        };
        if self.period < Duration::from_millis(20) {
            return bad(
                "period",
                format!("{:?}", self.period),
                "at least 20ms (a counter read costs ~1 ms)",
            );
        }
        if self.guard >= self.period {
            return bad(
                "guard",
                format!("{:?}", self.guard),
                "shorter than the period",
            );
        }
        if self.min_blocks < 4 {
            return bad(
                "min_blocks",
                self.min_blocks.to_string(),
                "at least 4 (a serially correlated test needs blocks to spare)",
            );
        }
        if self.looks == 0 || self.looks > 50 {
            return bad("looks", self.looks.to_string(), "1..=50");
        }
        Ok(())
    }
}

/// Durations as seconds in serde (`window_s`, `period_s`, ...).
pub(super) mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = f64::deserialize(d)?;
        Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom)
    }
}

/// How many whole `unit`s `span` holds, counted in nanoseconds (as float
/// seconds 9.6 / 1.6 = 5.99… floors to five); a zero `unit` counts as 1 ns.
pub fn whole(span: Duration, unit: Duration) -> usize {
    usize::try_from(span.as_nanos() / unit.as_nanos().max(1)).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A budget of exactly n blocks holds n of them, whatever the period;
    /// in seconds as floats 9.6 s held five 1.6-s blocks, not six.
    #[test]
    fn a_budget_of_whole_blocks_holds_them_all() {
        for ms in (10..=3000).step_by(10) {
            let sb = Switchback {
                period: Duration::from_millis(ms),
                ..Switchback::default()
            };
            for n in 1..=60 {
                let whole = sb.block_time() * n;
                assert_eq!(sb.max_blocks(whole), n as usize, "{ms} ms, {n} blocks");
                assert_eq!(
                    sb.max_blocks(whole - Duration::from_nanos(1)),
                    n as usize - 1,
                    "{ms} ms, a nanosecond short of {n} blocks"
                );
            }
        }
        let zero = Switchback {
            period: Duration::ZERO,
            ..Switchback::default()
        };
        assert_eq!(zero.max_blocks(Duration::from_secs(1)), 1_000_000_000);
    }
}
