//! Calibration: fit the host constants ([`Params`]) to observations of one
//! configuration paired with the measured commits/s of others under the
//! same load, and measure the model's error on points it was not fitted to
//! (leave-one-out), which becomes the width of every prediction's interval.
//!
//! The fit is a robust maximum a posteriori estimate: a soft-L1 loss of the
//! predicted log-ratios' errors (each over its measurement noise, at least
//! [`NOISE_FLOOR`]) plus a Gaussian prior on each parameter around
//! [`PARAMS`]' prior, in a bounded (logistic) transform, minimised by
//! Nelder–Mead (the `argmin` crate).

use argmin::core::{CostFunction, Error as ArgminError, Executor};
use argmin::solver::neldermead::NelderMead;
use serde::{Deserialize, Serialize};

use super::config::Config;
use super::domain::Domain;
use super::inputs::Inputs;
use super::mechanics::{ratio, ratios, Params, PARAMS, REVISION};
use super::ModelError;

/// Measurement noise assumed for one measured ratio when none is given (log scale).
pub const DEFAULT_RATIO_NOISE: f64 = 0.1;
/// Smallest model error used for intervals, whatever the fit says (log scale).
pub const MIN_SIGMA: f64 = 0.05;
/// Model error used without calibration (log scale): wide on purpose.
pub const UNCALIBRATED_SIGMA: f64 = 0.5;

/// One observed configuration and what other configurations measured under
/// the same load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationPoint {
    /// Where it comes from (`update_index/16u/RT1`, a scenario name, ...).
    pub label: String,
    /// The load it was observed under (`update_index/16u`): every point of
    /// one load (each configuration observed, paired with the others)
    /// shares a cross-validation fold, so a load's mirror points (A → B and
    /// B → A) never predict each other. Empty in files older than the
    /// field: [`CalibrationPoint::load_key`] reads it off the label then.
    #[serde(default)]
    pub load: String,
    /// The observed configuration's inputs.
    pub inputs: Inputs,
    pub outcomes: Vec<Outcome>,
}

impl CalibrationPoint {
    /// The load this point was observed under: [`CalibrationPoint::load`],
    /// or for older files the label without its configuration (the part
    /// after the last `/` of `update_index/16u/RT1`, or after `@` of
    /// `SCENARIO@RT1`).
    pub fn load_key(&self) -> &str {
        if !self.load.is_empty() {
            return &self.load;
        }
        match self.label.rsplit_once('@') {
            Some((load, _)) => load,
            None => self
                .label
                .rsplit_once('/')
                .map_or(self.label.as_str(), |(l, _)| l),
        }
    }
}

/// Measured commits/s of `config` over the observed configuration's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub config: Config,
    pub ratio: f64,
    /// Noise of `ln(ratio)` (standard error); [`DEFAULT_RATIO_NOISE`] when unknown.
    #[serde(default)]
    pub noise: Option<f64>,
}

/// One point's measured and predicted ratio.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Residual {
    pub label: String,
    pub from: Config,
    pub to: Config,
    pub measured: f64,
    /// Predicted by the fit on every point.
    pub fitted: f64,
    /// Predicted by the fit without this point (leave-one-out).
    pub held_out: Option<f64>,
}

/// The fitted constants and how well they predict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fitted {
    pub params: Params,
    /// The model's own held-out error (log scale): the RMS of
    /// `ln(predicted / measured)` on held-out points ([`Fitted::sigma_raw`])
    /// with the outcomes' own measurement noise taken out (the measured
    /// ratios are noisy too, and that noise is no error of the model); the
    /// error used for intervals, at least [`MIN_SIGMA`].
    pub sigma: f64,
    /// The held-out RMS log error as measured, the outcomes' noise included.
    #[serde(default)]
    pub sigma_raw: f64,
    /// RMS of the held-out outcomes' measurement noise (log scale).
    #[serde(default)]
    pub outcome_noise: f64,
    /// RMS of the same on the points fitted.
    pub in_sample_rms: f64,
    pub points: usize,
    pub residuals: Vec<Residual>,
    /// The range of inputs the points covered (None in files written
    /// before it was kept: the calibration's points give it then).
    #[serde(default)]
    pub domain: Option<Domain>,
    /// The mechanics' [`REVISION`] the constants were fitted under (0:
    /// not recorded, a file older than the field).
    #[serde(default)]
    pub mechanics: u32,
}

/// The model's own error from a held-out RMS error `raw` whose measured
/// outcomes carry noise of RMS `noise` (both log scale): an error measured
/// against noisy outcomes is the model's and the outcomes' in quadrature,
/// so `sqrt(raw² − noise²)`, at least [`MIN_SIGMA`].
pub fn model_error(raw: f64, noise: f64) -> f64 {
    (raw.powi(2) - noise.powi(2)).max(0.0).sqrt().max(MIN_SIGMA)
}

struct Objective<'a> {
    points: &'a [CalibrationPoint],
}

fn logistic(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// Parameter vector from the unbounded transform.
fn to_params(z: &[f64]) -> Params {
    let v: Vec<f64> = PARAMS
        .iter()
        .zip(z)
        .map(|((_, _, lo, hi, _, _), z)| lo + (hi - lo) * logistic(*z))
        .collect();
    Params::from_vec(&v)
}

fn to_z(p: &Params) -> Vec<f64> {
    PARAMS
        .iter()
        .zip(p.to_vec())
        .map(|((_, _, lo, hi, _, _), x)| {
            let t = ((x - lo) / (hi - lo)).clamp(1e-6, 1.0 - 1e-6);
            (t / (1.0 - t)).ln()
        })
        .collect()
}

/// Run-to-run noise no single measurement can show (a disk hiccup, another
/// process): the floor of every outcome's noise (log scale).
pub const NOISE_FLOOR: f64 = 0.1;

/// Sum of soft-L1 losses `2(sqrt(1 + e²) - 1)` of the standardised log
/// errors: quadratic near zero, linear far out, so one disturbed run cannot
/// drag the constants.
fn loss(p: &Params, points: &[CalibrationPoint]) -> f64 {
    let mut s = 0.0;
    for pt in points {
        let configs: Vec<Config> = pt.outcomes.iter().map(|o| o.config).collect();
        let rs = ratios(p, &pt.inputs, &configs);
        for (o, r) in pt.outcomes.iter().zip(rs) {
            let e = (r.max(1e-9).ln() - o.ratio.max(1e-9).ln())
                / o.noise.unwrap_or(DEFAULT_RATIO_NOISE).max(NOISE_FLOOR);
            s += if e.is_finite() {
                2.0 * ((1.0 + e * e).sqrt() - 1.0)
            } else {
                1e6
            };
        }
    }
    s
}

impl CostFunction for Objective<'_> {
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, z: &Vec<f64>) -> Result<f64, ArgminError> {
        let prior = to_z(&Params::prior());
        let penalty: f64 = z.iter().zip(&prior).map(|(a, b)| (a - b).powi(2)).sum();
        Ok(loss(&to_params(z), self.points) + 0.5 * penalty)
    }
}

/// Nelder–Mead runs, each from the best vertex of the one before.
const RESTARTS: usize = 3;
/// Iterations of each run.
const MAX_ITERS: u64 = 1000;

fn minimise(points: &[CalibrationPoint], start: &[f64]) -> Result<Vec<f64>, ModelError> {
    let mut best = start.to_vec();
    // Restarts from the best simplex vertex escape early collapse.
    for _ in 0..RESTARTS {
        let mut simplex = vec![best.clone()];
        for j in 0..best.len() {
            let mut v = best.clone();
            v[j] += 0.7;
            simplex.push(v);
        }
        let solver = NelderMead::new(simplex)
            .with_sd_tolerance(1e-7)
            .map_err(|e| ModelError::Fit(e.to_string()))?;
        let res = Executor::new(Objective { points }, solver)
            .configure(|s| s.max_iters(MAX_ITERS))
            .run()
            .map_err(|e| ModelError::Fit(e.to_string()))?;
        best = res
            .state
            .best_param
            .ok_or_else(|| ModelError::Fit("no solution".into()))?;
    }
    Ok(best)
}

/// Cross-validation folds for the model error: leave-one-load-out up to
/// this many loads, this many folds beyond.
pub const MAX_FOLDS: usize = 8;

/// The cross-validation fold of each point, grouped by load: every point
/// of one load ([`CalibrationPoint::load_key`]) in the same fold, loads
/// dealt to folds in order of first appearance (leave-one-load-out up to
/// [`MAX_FOLDS`] loads). `None` with fewer than three loads: no held-out
/// error can be measured.
pub fn folds(points: &[CalibrationPoint]) -> Option<(usize, Vec<usize>)> {
    let mut loads: Vec<&str> = Vec::new();
    let idx: Vec<usize> = points
        .iter()
        .map(|p| {
            let k = p.load_key();
            loads.iter().position(|l| *l == k).unwrap_or_else(|| {
                loads.push(k);
                loads.len() - 1
            })
        })
        .collect();
    if loads.len() < 3 {
        return None;
    }
    let n = loads.len().min(MAX_FOLDS);
    Some((n, idx.into_iter().map(|i| i % n).collect()))
}

/// Fits the constants to `points`; `sigma` from cross-validation grouped
/// by load ([`folds`]: each load's points predicted by a fit without that
/// load) when there are at least three loads, else [`UNCALIBRATED_SIGMA`].
pub fn fit(points: &[CalibrationPoint]) -> Result<Fitted, ModelError> {
    if points.iter().all(|p| p.outcomes.is_empty()) {
        return Err(ModelError::Fit(
            "no calibration point has a measured outcome".into(),
        ));
    }
    let z0 = to_z(&Params::prior());
    let params = to_params(&minimise(points, &z0)?);
    let mut held: Vec<Option<Params>> = vec![None; points.len()];
    if let Some((n, fold)) = folds(points) {
        for f in 0..n {
            let rest: Vec<CalibrationPoint> = points
                .iter()
                .zip(&fold)
                .filter(|(_, k)| **k != f)
                .map(|(p, _)| p.clone())
                .collect();
            let p = to_params(&minimise(&rest, &to_z(&params))?);
            for (h, k) in held.iter_mut().zip(&fold) {
                if *k == f {
                    *h = Some(p);
                }
            }
        }
    }
    let mut residuals = Vec::new();
    let mut held_sq = Vec::new();
    let mut noise_sq = Vec::new();
    let mut in_sq = Vec::new();
    for (pt, h) in points.iter().zip(&held) {
        for o in &pt.outcomes {
            let fitted = ratio(&params, &pt.inputs, &o.config);
            in_sq.push((fitted / o.ratio).ln().powi(2));
            let held_out = h.map(|h| ratio(&h, &pt.inputs, &o.config));
            if let Some(h) = held_out {
                held_sq.push((h / o.ratio).ln().powi(2));
                // Only a measured noise is taken out; an unknown one is not assumed.
                noise_sq.push(o.noise.unwrap_or(0.0).powi(2));
            }
            residuals.push(Residual {
                label: pt.label.clone(),
                from: pt.inputs.config,
                to: o.config,
                measured: o.ratio,
                fitted,
                held_out,
            });
        }
    }
    let rms = |v: &[f64]| (v.iter().sum::<f64>() / v.len().max(1) as f64).sqrt();
    let (sigma, sigma_raw, outcome_noise) = if held_sq.is_empty() {
        (UNCALIBRATED_SIGMA, UNCALIBRATED_SIGMA, 0.0)
    } else {
        let (raw, noise) = (rms(&held_sq), rms(&noise_sq));
        (model_error(raw, noise), raw.max(MIN_SIGMA), noise)
    };
    Ok(Fitted {
        params,
        sigma,
        sigma_raw,
        outcome_noise,
        in_sample_rms: rms(&in_sq),
        points: points.len(),
        residuals,
        domain: Domain::of(points.iter().map(|p| &p.inputs)),
        mechanics: REVISION,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::mechanics::estimate_observed;

    fn config(redo_threads: bool, cap: u32, throttle: u32) -> Config {
        Config {
            redo_threads,
            cap,
            throttle,
        }
    }

    /// An update load observed in RT1 (`on`) or RT0 on 2 CPUs, `work_us` of
    /// CPU per commit beside the commit path, as the model's world under
    /// `truth` shows it: the commit path's CPU (RT1's log threads'
    /// included), the rate and the group size (Little's law on the cycle:
    /// the fsync, plus RT1's two hand-offs) iterated together.
    fn observed(truth: &Params, on: bool, users: f64, work_us: f64, fsync_us: f64) -> Inputs {
        let mut i = Inputs {
            config: config(on, 0, 0),
            cores: 2.0,
            users,
            commits_per_s: 1.0,
            window_rates: vec![],
            binlog: false,
            flush: 1,
            cpu_us: work_us,
            log_cpu_us: 0.0,
            group: 1.0,
            fsync_us,
            binlog_fsync_us: 0.0,
            lock_wait_us: 0.0,
            lock_waits: 0.0,
            futex_waits: 0.0,
            commit_wait_us: 0.0,
            cpu_share: 0.0,
        };
        for _ in 0..60 {
            if on {
                i.log_cpu_us = truth.rt1_group_cpu_us / i.group;
            }
            i.cpu_us = work_us + estimate_observed(truth, &i).commit_path_cpu_us;
            let e = estimate_observed(truth, &i);
            i.commits_per_s = e.commits_per_s;
            let cycle = crate::model::mechanics::cycle_at(&i, on, e.hop_us);
            let g = (i.commits_per_s * cycle / 1e6).clamp(1.0, users);
            i.group = (i.group * g).sqrt();
        }
        i
    }

    /// Observed in one mode, "measured" in the other mode and with a cap
    /// of 4 and a throttle of 16 where they hold anyone back: each
    /// outcome is the mechanics' own ratio under `truth`.
    fn point(
        truth: &Params,
        on: bool,
        users: f64,
        work_us: f64,
        fsync_us: f64,
    ) -> CalibrationPoint {
        let inputs = observed(truth, on, users, work_us, fsync_us);
        let outcomes = [config(!on, 0, 0), config(on, 4, 0), config(on, 0, 16)]
            .into_iter()
            .filter(|c| c.redo_threads != on || c.inside(users) < users)
            .map(|c| Outcome {
                config: c,
                ratio: ratio(truth, &inputs, &c),
                noise: None,
            })
            .collect();
        CalibrationPoint {
            label: format!("RT{}/{users}u/{fsync_us}us", u8::from(on)),
            load: format!("{users}u/{fsync_us}us"),
            inputs,
            outcomes,
        }
    }

    /// A host unlike the priors: slower hand-offs (45 us, prior 20), costlier
    /// sleeps (8, prior 5), RT1 rounds of 150 us (prior 80) and gate
    /// hand-offs of 100 us (prior 40).
    fn truth() -> Params {
        let mut p = Params::prior();
        p.hop_us = 45.0;
        p.switch_cpu_us = 8.0;
        p.rt1_group_cpu_us = 150.0;
        p.gate_handoff_us = 100.0;
        p
    }

    /// Both modes observed at 1 to 256 users, a fast and a slow fsync: what
    /// `redoctor calibrate` measures, here from known constants.
    fn calibration(truth: &Params) -> Vec<CalibrationPoint> {
        let mut points = vec![];
        for on in [true, false] {
            for users in [1.0, 4.0, 16.0, 64.0, 256.0] {
                for f in [100.0, 1000.0] {
                    points.push(point(truth, on, users, 20.0, f));
                }
            }
        }
        points
    }

    /// A calibration file fitted under an older revision of the mechanics
    /// is refitted from its points, once; one that cannot be refitted is
    /// left as it was.
    #[test]
    fn stale_calibrations_are_refitted_from_their_points() {
        use crate::model::calibration::{Calibration, HostFacts};
        // Three loads are enough to refit (a fit costs seconds).
        let t = truth();
        let points: Vec<CalibrationPoint> = [1.0, 16.0, 256.0]
            .into_iter()
            .flat_map(|u| [true, false].map(|on| point(&t, on, u, 20.0, 100.0)))
            .collect();
        let fresh = fit(&points).unwrap();
        let host = HostFacts {
            hostname: "h".into(),
            kernel: "k".into(),
            cpu_model: "c".into(),
            cpus_online: 2,
            cores: 2,
            storage: "/d".into(),
            fsync_us: 100.0,
        };
        let mut stale = fresh.clone();
        stale.mechanics = 0;
        stale.params = Params::prior();
        let mut c = Calibration::new(host.clone(), points.clone(), stale);
        assert_eq!(c.refit_if_stale().unwrap(), Some(0));
        assert_eq!(c.fitted.mechanics, REVISION);
        assert_eq!(c.fitted, fresh);
        assert_eq!(c.refit_if_stale().unwrap(), None, "refitted once");
        // No measured outcome to refit from: an error, nothing changed.
        let mut bare: Vec<CalibrationPoint> = points.clone();
        for p in &mut bare {
            p.outcomes.clear();
        }
        let mut old = fresh;
        old.mechanics = 1;
        let mut c = Calibration::new(host, bare, old.clone());
        assert!(c.refit_if_stale().is_err());
        assert_eq!(c.fitted, old);
    }

    #[test]
    fn fit_recovers_known_constants_and_ratios() {
        let t = truth();
        let points = calibration(&t);
        let f = fit(&points).unwrap();
        let rel = |a: f64, b: f64| (a / b - 1.0).abs();
        // The constants the points pin down, each far from its prior:
        // the hand-off (the latency-bound points' RT0/RT1 gap, within 5%:
        // it shares RT1's chain with the run-queue wait a woken thread
        // pays) and the gate's hand-off (the capped and throttled
        // outcomes). RT1's rounds are an open class at the CPUs, which
        // moves the rate only as far as the CPUs are busy, and trade with
        // the usable share: they are pinned only to within 30%.
        for (name, got, want, tol) in [
            ("hop_us", f.params.hop_us, t.hop_us, 0.05),
            (
                "rt1_group_cpu_us",
                f.params.rt1_group_cpu_us,
                t.rt1_group_cpu_us,
                0.3,
            ),
            (
                "gate_handoff_us",
                f.params.gate_handoff_us,
                t.gate_handoff_us,
                0.05,
            ),
        ] {
            assert!(rel(got, want) < tol, "{name}: fitted {got}, truth {want}");
        }
        // A sleep's CPU shows in the ratios only divided by a group size,
        // so the prior keeps a pull on it: it must still move from the
        // prior (5) toward the truth (8).
        let (got, prior) = (f.params.switch_cpu_us, Params::prior().switch_cpu_us);
        assert!(
            got > prior && got < t.switch_cpu_us * 1.1,
            "switch_cpu_us: fitted {got}, truth {}, prior {prior}",
            t.switch_cpu_us
        );
        // The ratios: fitted, held out, and on loads no point had.
        assert!(f.in_sample_rms < 0.01, "in-sample RMS {}", f.in_sample_rms);
        assert_eq!(f.sigma, MIN_SIGMA, "held-out error below the floor");
        let outcomes: usize = points.iter().map(|p| p.outcomes.len()).sum();
        assert_eq!(f.residuals.len(), outcomes);
        for r in &f.residuals {
            let held = r.held_out.expect("every point is held out once");
            // Held out, 6%: RT1 predicted from an RT0 observation turns on
            // how busy the device is (RT1's hand-offs leave the cycle when
            // the flusher has a backlog), and the fold without the point
            // pins the hand-off less (RT0, 16 users, 100 µs: 5.5% off).
            assert!(
                rel(r.fitted, r.measured) < 0.03 && rel(held, r.measured) < 0.06,
                "{} {} -> {}: measured {}, fitted {}, held out {held}",
                r.label,
                r.from,
                r.to,
                r.measured,
                r.fitted
            );
        }
        for on in [true, false] {
            for users in [2.0, 8.0, 32.0, 128.0] {
                for fsync in [50.0, 300.0, 2000.0] {
                    let pt = point(&t, on, users, 35.0, fsync);
                    for o in &pt.outcomes {
                        let r = ratio(&f.params, &pt.inputs, &o.config);
                        assert!(
                            rel(r, o.ratio) < 0.03,
                            "{} -> {}: truth {}, fitted {r}",
                            pt.label,
                            o.config,
                            o.ratio
                        );
                    }
                }
            }
        }
        assert!(f.domain.is_some());
    }

    /// Both directions of one load (observed in RT1 paired with RT0, and
    /// the reverse) land in one fold, wherever they sit in the list: with
    /// folds by index (`j % folds`) two neighbours of one load were split,
    /// and each predicted the other's mirror from a fit that had seen it.
    #[test]
    fn folds_never_split_the_two_directions_of_one_load() {
        let t = truth();
        let mut points = calibration(&t);
        // Twelve loads (more than MAX_FOLDS), their points interleaved.
        points.extend(
            [300.0, 3000.0]
                .into_iter()
                .flat_map(|f| [true, false].map(|on| point(&t, on, 32.0, 20.0, f))),
        );
        let (n, fold) = folds(&points).expect("enough loads");
        assert_eq!(n, MAX_FOLDS);
        for (a, fa) in points.iter().zip(&fold) {
            for (b, fb) in points.iter().zip(&fold) {
                if a.load_key() == b.load_key() {
                    assert_eq!(fa, fb, "{} and {} of one load split", a.label, b.label);
                }
            }
        }
        // The assignment by index splits them: this test fails on it.
        let by_index: Vec<usize> = (0..points.len()).map(|j| j % n).collect();
        assert!(points.iter().zip(&by_index).any(|(a, fa)| points
            .iter()
            .zip(&by_index)
            .any(|(b, fb)| a.load_key() == b.load_key() && fa != fb)));
        // Older files without the field: the load is read off the label.
        let mut old = points[0].clone();
        old.load.clear();
        old.label = "update_index/16u/RT1".into();
        assert_eq!(old.load_key(), "update_index/16u");
        old.label = "read_write/16u/2c/nobinlog/flush1/disk@RT0".into();
        assert_eq!(old.load_key(), "read_write/16u/2c/nobinlog/flush1/disk");
        // Two loads are too few to hold one out.
        let two = [0, 10, 1, 11].map(|j| points[j].clone());
        assert_eq!(two[0].load_key(), two[1].load_key());
        assert!(folds(&two).is_none());
    }

    /// The outcomes' own noise is no error of the model: an RMS error of
    /// 0.25 measured against outcomes with noise 0.15 is 0.20 of the model.
    #[test]
    fn the_outcome_noise_is_taken_out_of_the_model_error() {
        assert!((model_error(0.25, 0.15) - 0.20).abs() < 1e-12);
        assert_eq!(model_error(0.1, 0.2), MIN_SIGMA, "never below the floor");
        assert_eq!(model_error(0.3, 0.0), 0.3);
    }

    #[test]
    fn fewer_than_three_points_get_no_held_out_error() {
        let t = truth();
        let points = vec![
            point(&t, true, 16.0, 20.0, 100.0),
            point(&t, false, 16.0, 20.0, 100.0),
        ];
        let f = fit(&points).unwrap();
        assert_eq!(f.sigma, UNCALIBRATED_SIGMA);
        assert!(f.residuals.iter().all(|r| r.held_out.is_none()));
        assert_eq!(f.points, 2);
    }

    #[test]
    fn points_without_outcomes_are_rejected() {
        let no_points = fit(&[]);
        let mut bare = point(&truth(), true, 16.0, 20.0, 100.0);
        bare.outcomes.clear();
        let no_outcomes = fit(&[bare.clone(), bare]);
        for r in [no_points, no_outcomes] {
            match r {
                Err(ModelError::Fit(m)) => {
                    assert!(
                        m.contains("no calibration point has a measured outcome"),
                        "{m}"
                    )
                }
                other => panic!("expected a fit error, got {other:?}"),
            }
        }
    }
}
