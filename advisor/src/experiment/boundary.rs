//! The early stop for harm's boundary: Pocock's constant nominal level for
//! the looks a trial plans, so that over all its looks a candidate equal to
//! the baseline stops for harm at most the plan's `harm` of the time.
//!
//! At a look after `n_k` pairs (blocks) the standardized statistic is
//! `Z_k = S_k / √n_k` with `S_k` a sum of `n_k` independent unit normals
//! under no change; the test stops at the first look with `Z_k > c`. The
//! crossing probability over the looks is computed exactly (up to the
//! grid) by Armitage, McPherson and Rowe's recursion: the density of `S_k`
//! on the region that has not stopped, convolved with the next increment's
//! normal density, look after look. `c` is found by bisection. Looks need
//! not be evenly spaced (the paired design looks after every pair from its
//! third, a switchback at block counts the budget sets).
//!
//! A constant level, not a spending function split by Bonferroni: with
//! five even looks at 0.05 overall it tests each look at 0.0169, where
//! Lan–DeMets' Pocock-type spending split by Bonferroni tests them at
//! 0.015 down to 0.007, and with the paired design's eight looks on
//! strongly overlapping pairs the gap is several-fold.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use redoctor_stats::{normal_critical, normal_upper_tail};

/// Grid points across one look's continuation region (the table's
/// constants to ±0.003 at 600).
const GRID: usize = 600;

/// The one-sided nominal level at which each look is tested so that the
/// chance of any look crossing, with no change, is `alpha` (one-sided),
/// for looks after the (increasing) counts `ns`. With one look it is
/// `alpha`; it is never above `alpha`. Counts that do not increase are
/// dropped; an empty list or an `alpha` outside (0, 0.5) gives `alpha`.
pub fn pocock_level(ns: &[usize], alpha: f64) -> f64 {
    let mut looks: Vec<usize> = vec![];
    for &n in ns {
        if n > 0 && looks.last().is_none_or(|&l| n > l) {
            looks.push(n);
        }
    }
    if looks.len() <= 1 || !(alpha > 0.0 && alpha < 0.5) {
        return alpha;
    }
    let key = (looks.clone(), alpha.to_bits());
    let cache = CACHE.get_or_init(Default::default);
    if let Some(level) = cache.lock().ok().and_then(|c| c.get(&key).copied()) {
        return level;
    }
    // The crossing probability falls as c rises; c lies between the one
    // look's critical value and Bonferroni's over the looks. Bisect.
    let (mut lo, mut hi) = (
        normal_critical(2.0 * alpha),
        normal_critical(2.0 * alpha / looks.len() as f64),
    );
    for _ in 0..30 {
        let mid = 0.5 * (lo + hi);
        if crossing(&looks, mid) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let level = normal_upper_tail(hi);
    if let Ok(mut c) = cache.lock() {
        c.insert(key, level);
    }
    level
}

/// Levels computed, by looks and `alpha`'s bits: a search's trials and a
/// daemon's plan the same looks again and again.
type Cache = Mutex<HashMap<(Vec<usize>, u64), f64>>;
static CACHE: OnceLock<Cache> = OnceLock::new();

fn phi(x: f64) -> f64 {
    (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// Chance that `S_k / √n_k > c` at any look, with no change.
fn crossing(ns: &[usize], c: f64) -> f64 {
    let bound = |n: usize| c * (n as f64).sqrt();
    // The first look: S_1 ~ N(0, n_1).
    let s1 = (ns[0] as f64).sqrt();
    let mut total = normal_upper_tail(c);
    let (mut xs, mut f) = grid(-8.0 * s1, bound(ns[0]), |x| phi(x / s1) / s1);
    for k in 1..ns.len() {
        let sd = ((ns[k] - ns[k - 1]) as f64).sqrt();
        let w = weights(&xs);
        let b = bound(ns[k]);
        total += xs
            .iter()
            .zip(&f)
            .zip(&w)
            .map(|((y, fy), wy)| wy * fy * normal_upper_tail((b - y) / sd))
            .sum::<f64>();
        if k + 1 == ns.len() {
            break;
        }
        // The density of S_k where no look has stopped.
        let lo = xs[0] - 8.0 * sd;
        let (nx, nf) = grid(lo, b, |x| {
            xs.iter()
                .zip(&f)
                .zip(&w)
                .map(|((y, fy), wy)| wy * fy * phi((x - y) / sd) / sd)
                .sum()
        });
        xs = nx;
        f = nf;
    }
    total
}

/// `GRID` evenly spaced points from `lo` to `hi` and `f` at each.
fn grid(lo: f64, hi: f64, f: impl Fn(f64) -> f64) -> (Vec<f64>, Vec<f64>) {
    let h = (hi - lo) / (GRID - 1) as f64;
    let xs: Vec<f64> = (0..GRID).map(|i| lo + h * i as f64).collect();
    let fs = xs.iter().map(|&x| f(x)).collect();
    (xs, fs)
}

/// Trapezoid weights on an even grid.
fn weights(xs: &[f64]) -> Vec<f64> {
    let h = xs[1] - xs[0];
    let mut w = vec![h; xs.len()];
    w[0] = h / 2.0;
    w[xs.len() - 1] = h / 2.0;
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pocock's (1977) constants for even looks, the standard tables: at
    /// two-sided 0.05 (one-sided 0.025, the two tails' overlap being
    /// negligible) 2.178 (2 looks), 2.289 (3), 2.413 (5), 2.555 (10); at
    /// two-sided 0.10 (one-sided 0.05) 1.875 (2) and 2.122 (5).
    #[test]
    fn it_reproduces_pococks_table() {
        for (alpha, k, c) in [
            (0.025, 2, 2.178),
            (0.025, 3, 2.289),
            (0.025, 5, 2.413),
            (0.025, 10, 2.555),
            (0.05, 2, 1.875),
            (0.05, 5, 2.122),
        ] {
            let ns: Vec<usize> = (1..=k).map(|i| 12 * i).collect();
            let level = pocock_level(&ns, alpha);
            let got = normal_critical(2.0 * level);
            assert!(
                (got - c).abs() < 0.003,
                "{k} looks at {alpha}: c = {got}, table {c}"
            );
        }
    }

    #[test]
    fn one_look_is_the_plain_level_and_more_looks_test_each_stricter() {
        assert_eq!(pocock_level(&[60], 0.05), 0.05);
        assert_eq!(pocock_level(&[], 0.05), 0.05);
        let five = pocock_level(&[12, 24, 36, 48, 60], 0.05);
        assert!((five - 0.0169).abs() < 0.0005, "{five}");
        // Looks after every pair from the third to the tenth overlap
        // strongly: their level stays near the few-look one.
        let pairs = pocock_level(&(3..=10).collect::<Vec<_>>(), 0.05);
        assert!(pairs > 0.012 && pairs < five, "{pairs}");
        // Repeated counts are one look.
        assert_eq!(
            pocock_level(&[12, 12, 24], 0.05),
            pocock_level(&[12, 24], 0.05)
        );
    }
}
