//! Learning the decision rule's priors from measured scenarios
//! (`advice_eval priors`): per starting redo mode, transition and regime,
//! the log-ratio the transition had (partially pooled toward the levels
//! above it) and the model's held-out error there.
//!
//! Empirical Bayes, per starting mode and transition, in three levels
//! where the regime keys have a group (`binlog/upc<=16`: a band of a
//! commit path) and two where they do not (the lock contention). The
//! scenarios' log-ratios `y` in cells `k` (`n_k` each, mean `ȳ_k`) of
//! groups `g`:
//! - within a cell, the variance `s²_k`: the cell's own, shrunk toward its
//!   group's pooled within-cell variance `s²_g` (itself shrunk toward the
//!   transition's `s²`) by a few pseudo-scenarios;
//! - between the cells of a group, `τ²_c` (the cell means' variance around
//!   their group's, pooled over the groups, less their sampling noise);
//!   between groups, `τ²_g` likewise;
//! - a group's mean is shrunk toward the transition's mean `μ` with weight
//!   `1/v_g : 1/τ²_g` (`v_g` its mean's variance), leaving `u_g` unknown;
//!   a cell's mean toward its group's with weight `n_k/s²_k : 1/(τ²_c + u_g)`;
//!   a new scenario's spread around it is `s²_k` plus what is left unknown
//!   of the mean.
//!
//! A group's entry (`binlog/*`) serves a band no sweep saw; the pooled
//! entry (`*`, mean `μ`, spread `s² + τ²` over all cells) a regime no
//! sweep saw at all.

use std::collections::BTreeMap;

use redoctor_advisor::decision::{Prior, Priors, Regime, Start, Transition};
use redoctor_advisor::model::Model;

use crate::records::{log_se, parse_config, Record};

/// Smallest spread of a prior (log): no sweep pins an effect closer.
pub const MIN_SPREAD: f64 = 0.05;
/// Share of the ground truth's own noise taken out of the spreads and
/// errors (see `advisor/bench/README.md`, "Priors").
const NOISE_OUT: f64 = 0.0;
/// A cell's model error is shrunk toward its group's, the group's toward
/// its transition's, by this many pseudo-scenarios.
const ERROR_PSEUDO_N: f64 = 3.0;
/// A cell's spread is shrunk toward its group's pooled within-cell spread,
/// the group's toward the transition's, by this many pseudo-scenarios.
const SPREAD_PSEUDO_N: f64 = 3.0;

/// One scenario's measured transition.
struct Sample {
    /// Measured log-ratio (candidate over current, medians).
    y: f64,
    /// Its noise variance (both medians' standard errors).
    noise: f64,
    /// The model's predicted log-ratio, when a model is given.
    m: Option<f64>,
}

/// Every (start, transition, regime key) sample of `records`.
fn samples(
    records: &[&Record],
    models: &BTreeMap<u32, Model>,
) -> BTreeMap<(Start, Transition), BTreeMap<String, Vec<Sample>>> {
    let mut out: BTreeMap<(Start, Transition), BTreeMap<String, Vec<Sample>>> = BTreeMap::new();
    for r in records {
        // The model a diagnosis of this scenario would use: its CPU count's.
        let model = models.get(&r.cores);
        for obs in ["RT1", "RT0"] {
            let (Some((inputs, o)), Some(base)) = (r.inputs(obs), r.median(obs)) else {
                continue;
            };
            let from = inputs.config;
            let regime = Regime::of(&inputs);
            let current = o
                .facts
                .as_ref()
                .map(|f| f.settings.clone())
                .unwrap_or_default();
            let mut seen = Vec::new();
            for label in r.cells.keys() {
                let canon = r.canonical(label);
                if seen.contains(&canon) {
                    continue;
                }
                seen.push(canon.clone());
                let (Some(to), Some(m)) = (parse_config(&canon), r.median(&canon)) else {
                    continue;
                };
                let Some(t) = Transition::between(&from, &to, inputs.users) else {
                    continue;
                };
                let pred = model.and_then(|md| {
                    md.predict(&inputs, &[to], &current)
                        .first()
                        .map(|p| p.ratio.max(1e-9).ln())
                });
                out.entry((Start::of(&from), t))
                    .or_default()
                    .entry(regime.key(t))
                    .or_default()
                    .push(Sample {
                        y: (m / base).ln(),
                        noise: log_se(&r.samples(obs)).powi(2) + log_se(&r.samples(&canon)).powi(2),
                        m: pred,
                    });
            }
        }
    }
    out
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0.0), |(s, n), x| (s + x, n + 1.0));
    if n > 0.0 {
        s / n
    } else {
        0.0
    }
}

/// The group a regime key pools toward before its transition: a commit
/// path's bands (`binlog/upc<=16` in `binlog`); keys of one level (the
/// lock contention) form one group, the transition's.
fn group_of(key: &str) -> &str {
    key.split_once('/').map_or("", |(g, _)| g)
}

/// Sum of squares around the mean, and the mean.
fn ss(v: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let m = mean(v.clone());
    (v.map(|x| (x - m).powi(2)).sum(), m)
}

/// The priors `records` teach, with the model errors in each regime of
/// `models` (a calibration's per CPU count; a scenario on a CPU count
/// without one adds no error).
///
/// Three levels for the redo mode (bands within a commit path, paths
/// within the transition), two for the rest: a band's mean is shrunk
/// toward its path's, the path's toward the transition's; a band's spread
/// toward its path's pooled within-band spread (a fast path's 1.1-20x
/// gains no longer widen a binlog band's spread).
pub fn learn(
    records: &[&Record],
    models: &BTreeMap<u32, Model>,
    loss_asymmetry: f64,
    min_utility: f64,
    source: String,
) -> Priors {
    let mut priors = Vec::new();
    for ((start, t), cells) in samples(records, models) {
        priors.extend(pool(start, t, &cells));
    }
    Priors {
        loss_asymmetry,
        min_utility,
        source,
        priors,
        // Restart priors live in their own file (rules/priors/restart.toml).
        restart: vec![],
    }
}

/// The priors of one transition from one starting mode: its samples per
/// regime key, pooled in three levels (keys `group/band`) or two (keys
/// without a group).
fn pool(start: Start, t: Transition, cells: &BTreeMap<String, Vec<Sample>>) -> Vec<Prior> {
    let floor = MIN_SPREAD.powi(2);
    let mut out = Vec::new();
    let all: Vec<&Sample> = cells.values().flatten().collect();
    let n_all = all.len() as f64;
    if n_all < 2.0 {
        return vec![];
    }
    let mu = mean(all.iter().map(|s| s.y));
    // Within-cell variance pooled over the transition (the fallback).
    let cell_ss = |v: &[Sample]| ss(v.iter().map(|s| s.y)).0;
    let df = (n_all - cells.len() as f64).max(1.0);
    let s2 = (cells.values().map(|v| cell_ss(v)).sum::<f64>() / df).max(floor);
    // The model's error, per group and cell, each shrunk toward the
    // level above.
    let err2 = |v: &[&Sample]| -> Option<(f64, f64)> {
        let e: Vec<(f64, f64)> = v
            .iter()
            .filter_map(|s| s.m.map(|m| ((m - s.y).powi(2), s.noise)))
            .collect();
        (!e.is_empty()).then(|| (mean(e.iter().map(|x| x.0)), mean(e.iter().map(|x| x.1))))
    };
    let shrink_err = |v: &[&Sample], above: (f64, f64)| -> (f64, f64) {
        let (cm, cn) = err2(v).unwrap_or(above);
        let n = v.len() as f64;
        (
            (n * cm + ERROR_PSEUDO_N * above.0) / (n + ERROR_PSEUDO_N),
            (n * cn + ERROR_PSEUDO_N * above.1) / (n + ERROR_PSEUDO_N),
        )
    };
    let pooled_err = err2(&all);
    let as_error = |e: (f64, f64)| {
        round(
            redoctor_advisor::model::fit::model_error(e.0.sqrt(), (NOISE_OUT * e.1).sqrt())
                .max(MIN_SPREAD),
        )
    };
    // The groups and their cells.
    let mut groups: BTreeMap<&str, Vec<(&String, &Vec<Sample>)>> = BTreeMap::new();
    for (key, v) in cells {
        groups.entry(group_of(key)).or_default().push((key, v));
    }
    // Each group's within-cell variance, shrunk toward the transition's.
    let group_s2: BTreeMap<&str, f64> = groups
        .iter()
        .map(|(g, cs)| {
            let own = cs.iter().map(|(_, v)| cell_ss(v)).sum::<f64>();
            let df = cs.iter().map(|(_, v)| v.len() as f64 - 1.0).sum::<f64>();
            (
                *g,
                ((own + SPREAD_PSEUDO_N * s2) / (df + SPREAD_PSEUDO_N)).max(floor),
            )
        })
        .collect();
    // Between cells within a group, pooled over the groups, less the
    // cell means' sampling noise.
    let (mut between, mut noise, mut dfb, mut k) = (0.0, 0.0, 0.0, 0.0);
    for (g, cs) in &groups {
        let (gss, _) = ss(cs.iter().map(|(_, v)| mean(v.iter().map(|s| s.y))));
        between += gss;
        dfb += cs.len() as f64 - 1.0;
        for (_, v) in cs {
            noise += group_s2[g] / v.len() as f64;
            k += 1.0;
        }
    }
    let tau_cell2 = if dfb >= 1.0 {
        (between / dfb - noise / k).max(floor)
    } else {
        floor
    };
    // Each group's mean (of its cells' means) and that mean's variance.
    let group_stats: BTreeMap<&str, (f64, f64)> = groups
        .iter()
        .map(|(g, cs)| {
            let kg = cs.len() as f64;
            let m = mean(cs.iter().map(|(_, v)| mean(v.iter().map(|s| s.y))));
            let var = cs
                .iter()
                .map(|(_, v)| tau_cell2 + group_s2[g] / v.len() as f64)
                .sum::<f64>()
                / (kg * kg);
            (*g, (m, var))
        })
        .collect();
    // Between groups, less their means' sampling noise.
    let tau_group2 = if group_stats.len() >= 2 {
        let gs = group_stats.values();
        let (gss, _) = ss(gs.clone().map(|x| x.0));
        let g = group_stats.len() as f64;
        (gss / (g - 1.0) - mean(gs.map(|x| x.1))).max(floor)
    } else {
        f64::INFINITY
    };
    for (g, cs) in &groups {
        let (gm, gvar) = group_stats[g];
        // The group's mean shrunk toward the transition's, and what
        // is left unknown of it.
        // One group is the transition itself: its cells pool toward
        // the transition's mean, as with two levels.
        let (g_mean, g_unknown) = if g.is_empty() {
            (mu, 0.0)
        } else {
            let gprec = 1.0 / gvar + 1.0 / tau_group2;
            ((gm / gvar + mu / tau_group2) / gprec, 1.0 / gprec)
        };
        let grefs: Vec<&Sample> = cs.iter().flat_map(|(_, v)| v.iter()).collect();
        let g_err = pooled_err.map(|pe| shrink_err(&grefs, pe));
        let gs2 = group_s2[g];
        for (key, v) in cs {
            let n = v.len() as f64;
            let ybar = mean(v.iter().map(|s| s.y));
            // The cell's own spread, shrunk toward its group's.
            let cs2 = ((cell_ss(v) + SPREAD_PSEUDO_N * gs2)
                / ((n - 1.0).max(0.0) + SPREAD_PSEUDO_N))
                .max(floor);
            let prior_var = tau_cell2 + g_unknown;
            let prec = n / cs2 + 1.0 / prior_var;
            let shrunk = (n * ybar / cs2 + g_mean / prior_var) / prec;
            let refs: Vec<&Sample> = v.iter().collect();
            out.push(Prior {
                from: start,
                transition: t,
                regime: (*key).clone(),
                mean: round(shrunk),
                spread: round((cs2 + 1.0 / prec).sqrt().max(MIN_SPREAD)),
                n: v.len() as u32,
                model_error: g_err.map(|ge| as_error(shrink_err(&refs, ge))),
            });
        }
        // A band of this path no sweep saw.
        if !g.is_empty() {
            out.push(Prior {
                from: start,
                transition: t,
                regime: format!("{g}/*"),
                mean: round(g_mean),
                spread: round((gs2 + tau_cell2 + g_unknown).sqrt().max(MIN_SPREAD)),
                n: grefs.len() as u32,
                model_error: g_err.map(as_error),
            });
        }
    }
    // Every regime pooled: the transition's mean, spread across all.
    let means: Vec<(f64, f64)> = cells
        .values()
        .map(|v| (mean(v.iter().map(|s| s.y)), v.len() as f64))
        .collect();
    let kk = means.len() as f64;
    let tau2 = if kk >= 2.0 {
        let (mss, _) = ss(means.iter().map(|x| x.0));
        (mss / (kk - 1.0) - mean(means.iter().map(|x| s2 / x.1))).max(floor)
    } else {
        floor
    };
    out.push(Prior {
        from: start,
        transition: t,
        regime: "*".into(),
        mean: round(mu),
        spread: round((s2 + tau2).sqrt().max(MIN_SPREAD)),
        n: all.len() as u32,
        model_error: pooled_err.map(as_error),
    });
    out
}

fn round(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples with log-ratios `ys` (no noise, no model prediction).
    fn cell(ys: &[f64]) -> Vec<Sample> {
        ys.iter()
            .map(|&y| Sample {
                y,
                noise: 0.0,
                m: None,
            })
            .collect()
    }

    fn get<'a>(ps: &'a [Prior], key: &str) -> &'a Prior {
        ps.iter().find(|p| p.regime == key).unwrap()
    }

    /// The redo mode's cells: a binlog path whose bands agree closely (a
    /// few percent either side of +10%), a fast path whose gains run from
    /// 1.1x to 20x.
    fn mode_cells() -> BTreeMap<String, Vec<Sample>> {
        let mut cells = BTreeMap::new();
        cells.insert("binlog/upc<=2".into(), cell(&[0.12, 0.10, 0.14]));
        cells.insert("binlog/upc<=16".into(), cell(&[0.08, 0.11, 0.09]));
        cells.insert("binlog/upc<=128".into(), cell(&[0.10, 0.07, 0.12]));
        cells.insert("fast/upc<=2".into(), cell(&[0.1, 3.0, 1.2]));
        cells.insert("fast/upc<=16".into(), cell(&[0.3, 2.0, 0.9]));
        cells.insert("durable/upc<=16".into(), cell(&[-0.1, 0.0, -0.05]));
        cells
    }

    /// A band's spread follows its own path's, not the transition's: the
    /// fast path's wide gains do not make a binlog band as uncertain as
    /// the transition's pooled spread did (0.33 log here; 0.60 with two
    /// levels, which fails this test).
    #[test]
    fn a_band_spreads_as_its_path_does() {
        let ps = pool(Start::RT1, Transition::Mode, &mode_cells());
        let binlog = get(&ps, "binlog/upc<=16");
        let fast = get(&ps, "fast/upc<=16");
        let all = get(&ps, "*");
        assert!(fast.spread > 2.5 * binlog.spread, "{fast:?} {binlog:?}");
        assert!(all.spread > 2.5 * binlog.spread, "{all:?} {binlog:?}");
    }

    /// A band's mean pools toward its path's mean (all binlog bands near
    /// +10%), not toward the transition's (pulled up by the fast path).
    #[test]
    fn a_band_pools_toward_its_path() {
        let ps = pool(Start::RT1, Transition::Mode, &mode_cells());
        let all = get(&ps, "*");
        let path = get(&ps, "binlog/*");
        let band = get(&ps, "binlog/upc<=16");
        assert!(all.mean > 0.3, "{all:?}");
        assert!((path.mean - 0.10).abs() < 0.03, "{path:?}");
        assert!((band.mean - 0.095).abs() < 0.02, "{band:?}");
        assert_eq!(path.n, 9);
        // Every group gets its own entry, with its own spread.
        for g in ["binlog/*", "fast/*", "durable/*"] {
            assert!(get(&ps, g).spread > 0.0);
        }
        assert!(get(&ps, "fast/*").spread > get(&ps, "binlog/*").spread);
    }

    /// Keys without a group (a cap's lock contention) pool in two levels
    /// toward the transition's mean, with no group entry.
    #[test]
    fn keys_without_a_group_pool_toward_the_transition() {
        let mut cells = BTreeMap::new();
        cells.insert("none".into(), cell(&[-0.3, -0.2, -0.25]));
        cells.insert("heavy".into(), cell(&[0.3]));
        let ps = pool(Start::RT1, Transition::Cap, &cells);
        assert_eq!(ps.len(), 3, "{ps:?}");
        let mu = get(&ps, "*").mean;
        let heavy = get(&ps, "heavy");
        // One scenario: shrunk from +0.3 toward the transition's mean.
        assert!(heavy.mean < 0.3 && heavy.mean > mu, "{heavy:?} {mu}");
    }
}
