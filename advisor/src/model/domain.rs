//! Where the calibration has data. The model's constants were fitted on
//! points whose inputs span some range; its held-out error was measured
//! inside that range. A prediction for inputs outside it is an
//! extrapolation, and nothing measured its error there: its interval widens
//! with the distance from the range (`advisor/MODEL.md`, "Out of range").
//!
//! The distance is summed over the inputs the mechanics turn on, plus one
//! unit for a setting the calibration never ran (binlog on or off,
//! `innodb_flush_log_at_trx_commit`). Above its range an input counts in
//! natural-log units (one unit: a factor of e beyond the highest calibrated
//! value): more load is where regimes the mechanics do not hold appear
//! (convoys, collapse), so nothing bounds the error there but the distance.
//! Below its range an input counts by how far the prediction moves when it
//! is put back at the lowest calibrated value: every cost the mechanics
//! read adds to a cycle or a demand, so a smaller cost takes its term
//! towards zero and the prediction converges instead of diverging (an fsync
//! of 0.3 µs on tmpfs, where the calibration saw ~45 µs and more, leaves the
//! commit path's other terms; `advisor/MODEL.md`, "Out of range").

use serde::{Deserialize, Serialize};

use super::config::Config;
use super::inputs::Inputs;
use super::mechanics::{ratio, Params};

/// Model error added per unit of distance outside the calibrated range
/// (log scale): half a log unit per factor of e extrapolated. With it,
/// 97,000 commits per round where the calibration saw at most 400 (5.5
/// units) under a flush setting it never ran (1 more) adds ±3.2 to the
/// log-interval: the prediction still says which way, and only a live trial
/// can say how much. Chosen from the held-out evaluation
/// (`advisor/bench/RESULTS.md`): with a quarter unit the 95% intervals of
/// held-out predictions outside the range held the measured ratio in 6 of
/// 11 scenarios, with half a unit in 8 of 11 (inside the range: 41 of 45).
/// Below the range a unit is one log unit of the predicted ratio's move:
/// the 95% interval then spans from about no effect of the input beyond the
/// range to twice the effect predicted.
pub const SIGMA_PER_UNIT: f64 = 0.5;

/// A numeric input the mechanics depend on, read on a log scale.
struct Feature {
    name: &'static str,
    read: fn(&Inputs) -> f64,
    /// Sets the input to a value on the same scale as `read`'s.
    write: fn(&mut Inputs, f64),
    /// Whether the mechanics use it for these inputs at all.
    applies: fn(&Inputs) -> bool,
}

fn always(_: &Inputs) -> bool {
    true
}

/// Floors keep the logs finite (an fsync on tmpfs takes ~0.3 µs).
const FEATURES: &[Feature] = &[
    Feature {
        name: "users per CPU",
        read: |i| (i.users / i.cores.max(1.0)).max(0.01),
        write: |i, v| i.users = v * i.cores.max(1.0),
        applies: always,
    },
    Feature {
        name: "commits per round of the log path",
        read: |i| i.group.max(1.0),
        write: |i, v| i.group = v,
        applies: always,
    },
    // The mechanics read it only where commits wait for the fsync.
    Feature {
        name: "redo fsync latency, us",
        read: |i| i.fsync_us.max(0.1),
        write: |i, v| i.fsync_us = v,
        applies: Inputs::waits_for_fsync,
    },
    Feature {
        name: "CPU per commit, us",
        read: |i| i.cpu_us.max(0.1),
        // The log threads' share of it scales along.
        write: |i, v| {
            let f = v / i.cpu_us.max(0.1);
            i.cpu_us = v;
            i.log_cpu_us *= f;
        },
        applies: always,
    },
];

/// The calibrated range of one input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Range {
    pub name: String,
    pub lo: f64,
    pub hi: f64,
}

/// The inputs the calibration points covered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Domain {
    pub ranges: Vec<Range>,
    /// Binlog settings the points ran with.
    pub binlog: Vec<bool>,
    /// `innodb_flush_log_at_trx_commit` values the points ran with.
    pub flush: Vec<u8>,
}

/// One way an observation lies outside the calibrated range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outside {
    pub name: String,
    /// The observation's value, and the calibrated range (for a setting
    /// the calibration never ran, `lo` = `hi` = the value).
    pub value: f64,
    pub lo: f64,
    pub hi: f64,
    /// Distance in log units (1 for an uncalibrated setting).
    pub distance: f64,
}

impl Outside {
    pub fn describe(&self) -> String {
        if self.lo == self.hi && self.lo == self.value {
            format!("{} = {} (never calibrated)", self.name, self.value)
        } else {
            format!(
                "{} = {} (calibrated {}-{})",
                self.name,
                crate::num::fmt_num(self.value),
                crate::num::fmt_num(self.lo),
                crate::num::fmt_num(self.hi)
            )
        }
    }
}

impl Domain {
    /// The range the calibration points' inputs span; None without points.
    pub fn of<'a>(points: impl IntoIterator<Item = &'a Inputs>) -> Option<Domain> {
        let points: Vec<&Inputs> = points.into_iter().collect();
        if points.is_empty() {
            return None;
        }
        let ranges = FEATURES
            .iter()
            .filter_map(|f| {
                let v: Vec<f64> = points
                    .iter()
                    .filter(|p| (f.applies)(p))
                    .map(|p| (f.read)(p))
                    .collect();
                (!v.is_empty()).then(|| Range {
                    name: f.name.to_string(),
                    lo: v.iter().copied().fold(f64::INFINITY, f64::min),
                    hi: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                })
            })
            .collect();
        let mut binlog: Vec<bool> = points.iter().map(|p| p.binlog).collect();
        binlog.sort_unstable();
        binlog.dedup();
        let mut flush: Vec<u8> = points.iter().map(|p| p.flush).collect();
        flush.sort_unstable();
        flush.dedup();
        Some(Domain {
            ranges,
            binlog,
            flush,
        })
    }

    /// The numeric inputs of `i` the mechanics read, each with its value and
    /// the calibrated range it was read in. An input no calibration point
    /// used has no range and is left out: the setting's own unit counts the
    /// extrapolation.
    fn read_in_range<'a>(
        &'a self,
        i: &'a Inputs,
    ) -> impl Iterator<Item = (&'a Feature, &'a Range, f64)> + 'a {
        FEATURES.iter().filter(|f| (f.applies)(i)).filter_map(|f| {
            let r = self.ranges.iter().find(|r| r.name == f.name)?;
            Some((f, r, (f.read)(i)))
        })
    }

    /// The settings of `i` the calibration never ran, by name and value.
    fn unseen_settings(&self, i: &Inputs) -> Vec<(&'static str, f64)> {
        let mut out = Vec::new();
        if !self.binlog.contains(&i.binlog) {
            out.push(("log_bin", f64::from(u8::from(i.binlog))));
        }
        if !self.flush.contains(&i.flush) {
            out.push(("innodb_flush_log_at_trx_commit", f64::from(i.flush)));
        }
        out
    }

    /// Where `i` lies outside the range, each with its log distance.
    pub fn outside(&self, i: &Inputs) -> Vec<Outside> {
        let mut out = Vec::new();
        for (_, r, x) in self.read_in_range(i) {
            let d = if x < r.lo {
                (r.lo / x).ln()
            } else if x > r.hi {
                (x / r.hi).ln()
            } else {
                0.0
            };
            if d > 0.0 && d.is_finite() {
                out.push(Outside {
                    name: r.name.clone(),
                    value: x,
                    lo: r.lo,
                    hi: r.hi,
                    distance: d,
                });
            }
        }
        out.extend(
            self.unseen_settings(i)
                .into_iter()
                .map(|(name, v)| Outside {
                    name: name.to_string(),
                    value: v,
                    lo: v,
                    hi: v,
                    distance: 1.0,
                }),
        );
        out
    }

    /// How far predicting configuration `c` from `i` extrapolates: each
    /// input above its range by its log distance, each below it by how
    /// much the log of the predicted ratio moves when that input is put at
    /// the range's lowest value, plus one unit per setting never
    /// calibrated.
    pub fn distance(&self, i: &Inputs, params: &Params, c: &Config) -> f64 {
        let mut d = self.unseen_settings(i).len() as f64;
        let mut predicted = None;
        for (f, r, x) in self.read_in_range(i) {
            if x > r.hi {
                d += (x / r.hi).ln();
            } else if x < r.lo {
                let at = *predicted.get_or_insert_with(|| ratio(params, i, c).ln());
                let mut edge = i.clone();
                (f.write)(&mut edge, r.lo);
                let moved = (at - ratio(params, &edge, c).ln()).abs();
                if moved.is_finite() {
                    d += moved;
                }
            }
        }
        d
    }

    /// The model error to add for predicting `c` from `i` (log scale):
    /// [`SIGMA_PER_UNIT`] per unit of [`distance`](Self::distance).
    pub fn extra_sigma(&self, i: &Inputs, params: &Params, c: &Config) -> f64 {
        SIGMA_PER_UNIT * self.distance(i, params, c)
    }
}

#[cfg(test)]
mod tests_support {
    use super::*;
    use crate::model::Config;

    /// A latency-bound RT1 observation, its rate the model's own at the
    /// priors (so the regime check adds nothing).
    pub fn inputs(users: f64, group: f64, fsync_us: f64, flush: u8) -> Inputs {
        let mut i = Inputs {
            config: Config {
                redo_threads: true,
                cap: 0,
                throttle: 0,
            },
            cores: 2.0,
            users,
            commits_per_s: 10_000.0,
            window_rates: vec![],
            binlog: false,
            flush,
            cpu_us: 12.0,
            log_cpu_us: 4.0,
            group,
            fsync_us,
            binlog_fsync_us: 0.0,
            lock_wait_us: 0.0,
            lock_waits: 0.0,
            futex_waits: 0.0,
            commit_wait_us: 100.0,
            cpu_share: 0.5,
        };
        i.commits_per_s =
            crate::model::mechanics::estimate_observed(&crate::model::Params::prior(), &i)
                .commits_per_s;
        i
    }

    /// A calibration point's inputs (what the domain reads of it).
    pub fn point(i: Inputs) -> Inputs {
        i
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::*;
    use super::*;

    fn domain() -> Domain {
        Domain::of(&[
            point(inputs(1.0, 1.0, 100.0, 1)),
            point(inputs(512.0, 400.0, 200.0, 1)),
        ])
        .unwrap()
    }

    const RT0: Config = Config {
        redo_threads: false,
        cap: 0,
        throttle: 0,
    };

    fn extra(d: &Domain, i: &Inputs) -> f64 {
        d.extra_sigma(i, &Params::prior(), &RT0)
    }

    #[test]
    fn inside_the_range_adds_nothing() {
        let d = domain();
        assert!(d.outside(&inputs(16.0, 6.0, 150.0, 1)).is_empty());
        assert_eq!(extra(&d, &inputs(16.0, 6.0, 150.0, 1)), 0.0);
        // The range's own ends are inside.
        assert_eq!(extra(&d, &inputs(512.0, 400.0, 200.0, 1)), 0.0);
    }

    #[test]
    fn above_the_range_the_interval_widens_with_the_distance() {
        let d = domain();
        let near = extra(&d, &inputs(16.0, 800.0, 150.0, 1));
        let far = extra(&d, &inputs(16.0, 97_000.0, 150.0, 1));
        assert!((near - SIGMA_PER_UNIT * 2f64.ln()).abs() < 1e-9, "{near}");
        assert!(far > 5.0 * SIGMA_PER_UNIT && far > near, "{far}");
        // Whatever the mechanics predict there: a convoy or a collapse
        // beyond the range is nothing they hold. Predicting the observed
        // configuration itself (ratio 1 everywhere) still counts it.
        let slow = inputs(16.0, 6.0, 20_000.0, 1);
        let same = slow.config;
        let d_same = d.distance(&slow, &Params::prior(), &same);
        assert!((d_same - 100f64.ln()).abs() < 1e-9, "{d_same}");
    }

    /// tmpfs: an fsync of 0.3 µs where the calibration saw 100-200 µs. The
    /// report names it with its raw distance, but the interval widens by
    /// how far the prediction moves between 0.3 and 100 µs, which is less:
    /// the fsync's term shrinks towards zero, it does not diverge.
    #[test]
    fn below_the_range_the_interval_widens_by_what_the_input_moves() {
        let d = domain();
        let tmpfs = inputs(16.0, 6.0, 0.3, 1);
        let o = d.outside(&tmpfs);
        assert_eq!(o.len(), 1);
        assert!((o[0].distance - (100.0f64 / 0.3).ln()).abs() < 1e-9);
        assert!(
            o[0].describe().contains("calibrated 100-200"),
            "{}",
            o[0].describe()
        );
        let p = Params::prior();
        let mut edge = tmpfs.clone();
        edge.fsync_us = 100.0;
        let moved = (ratio(&p, &tmpfs, &RT0) / ratio(&p, &edge, &RT0))
            .ln()
            .abs();
        assert!(moved > 0.01, "the fsync moves RT0's prediction: {moved}");
        let dist = d.distance(&tmpfs, &p, &RT0);
        assert!((dist - moved).abs() < 1e-9, "{dist} vs {moved}");
        assert!(dist < o[0].distance / 2.0, "{dist}");
        // A prediction the fsync does not move gets no extrapolation.
        assert_eq!(d.distance(&tmpfs, &p, &tmpfs.config), 0.0);
        // Below and above at once: each counts its own way.
        let mixed = inputs(16.0, 97_000.0, 0.3, 1);
        let mut mixed_edge = mixed.clone();
        mixed_edge.fsync_us = 100.0;
        let moved = (ratio(&p, &mixed, &RT0) / ratio(&p, &mixed_edge, &RT0))
            .ln()
            .abs();
        let dist = d.distance(&mixed, &p, &RT0);
        assert!(
            (dist - moved - (97_000.0f64 / 400.0).ln()).abs() < 1e-9,
            "{dist}"
        );
    }

    #[test]
    fn a_setting_never_calibrated_counts_one_unit() {
        let d = domain();
        let o = d.outside(&inputs(16.0, 6.0, 150.0, 2));
        assert_eq!(o.len(), 1);
        assert_eq!(o[0].distance, 1.0);
        assert!(o[0].describe().contains("never calibrated"));
    }

    #[test]
    fn the_background_fsync_is_no_distance() {
        // At flush 2 the mechanics do not read the fsync latency (the
        // background flush's, 8 ms on a disk): only the setting counts.
        let d = domain();
        let o = d.outside(&inputs(16.0, 6.0, 8000.0, 2));
        assert_eq!(o.len(), 1, "{o:?}");
        assert_eq!(o[0].name, "innodb_flush_log_at_trx_commit");
        // Nor do flush-2 points widen the range a flush-1 load is read in.
        let d = Domain::of(&[
            point(inputs(1.0, 1.0, 100.0, 1)),
            point(inputs(512.0, 400.0, 200.0, 1)),
            point(inputs(16.0, 6.0, 8000.0, 2)),
        ])
        .unwrap();
        let o = d.outside(&inputs(16.0, 6.0, 4000.0, 1));
        assert_eq!(o.len(), 1, "{o:?}");
        assert!((o[0].distance - 20f64.ln()).abs() < 1e-9);
        // Calibrated at flush 2 only: no fsync range, the setting counts.
        let d = Domain::of(&[point(inputs(16.0, 6.0, 8000.0, 2))]).unwrap();
        let o = d.outside(&inputs(16.0, 6.0, 100.0, 1));
        assert_eq!(o.len(), 1, "{o:?}");
        assert_eq!(o[0].distance, 1.0);
    }

    #[test]
    fn no_points_no_domain() {
        assert!(Domain::of(std::iter::empty()).is_none());
    }
}

#[cfg(test)]
mod model_tests {
    //! The model's intervals with a domain: as before inside it, wider
    //! outside, so a confident prediction there becomes "a trial would
    //! settle it".
    use super::tests_support::*;
    use crate::model::{Model, Settings};

    #[test]
    fn predictions_outside_the_range_get_wider_intervals() {
        use crate::model::mechanics::ratio;
        let points = [
            point(inputs(1.0, 1.0, 100.0, 1)),
            point(inputs(512.0, 400.0, 200.0, 1)),
        ];
        let mut m = Model::uncalibrated();
        m.sigma = 0.1;
        m.calibrated = true;
        m.domain = super::Domain::of(&points);
        let rt0 = crate::model::Config {
            redo_threads: false,
            cap: 0,
            throttle: 0,
        };
        let inside = inputs(16.0, 6.0, 150.0, 1);
        let slow = inputs(16.0, 6.0, 20_000.0, 1);
        let tmpfs = inputs(16.0, 6.0, 0.3, 1);
        assert!((m.sigma_for(&inside, &rt0) - 0.1).abs() < 1e-12);
        assert!(
            m.sigma_for(&slow, &rt0) > 2.0,
            "{}",
            m.sigma_for(&slow, &rt0)
        );
        let predict = |i| m.predict(i, &[rt0], &Settings::new()).remove(0);
        let width = |i| {
            let p = predict(i);
            (p.ratio_high / p.ratio_low).ln()
        };
        assert!(width(&slow) > 10.0 * width(&inside));
        // Below the range: half the prediction's move is one σ more.
        let mut edge = tmpfs.clone();
        edge.fsync_us = 100.0;
        let moved = (ratio(&m.params, &tmpfs, &rt0) / ratio(&m.params, &edge, &rt0)).ln();
        let want = (0.1f64.powi(2) + (0.5 * moved).powi(2) + m.regime_sigma(&tmpfs).powi(2)).sqrt();
        let p = predict(&tmpfs);
        assert!((p.sigma - want).abs() < 1e-12, "{} vs {want}", p.sigma);
        assert!(width(&tmpfs) > width(&inside) && width(&tmpfs) < width(&slow));
        // Without a domain (an old calibration file and no points) nothing widens.
        m.domain = None;
        assert!((m.sigma_for(&slow, &rt0) - 0.1).abs() < 1e-12);
    }
}
