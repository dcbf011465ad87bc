//! Variance reduction with a covariate the testbed measures beside the
//! commit rate (CUPED: Deng, Xu, Kohavi and Walker, "Improving the
//! Sensitivity of Online Controlled Experiments by Utilizing
//! Pre-Experiment Data", 2013), applied to a switchback's blocks.
//!
//! On a host whose disk speeds up and slows down second to second, most of
//! a block's spread is the disk's, and the disk's speed is visible on its
//! own: the mean latency of its writes over each period
//! ([`Sample::covariate`](super::Sample::covariate)). Each block gets
//! `c = mean ln(latency) over its candidate periods − over its baseline
//! periods` beside its `d`; the adjusted block is `d − β c`, with `β` the
//! least-squares slope of `d` on `c` over the blocks so far. Its mean
//! estimates the same effect as `mean d` when the candidate does not move
//! the covariate itself, and its spread is `√(1 − R²)` of the raw one.
//!
//! A candidate that changes how the server writes can move the disk's
//! latency (bigger or fewer writes), and then the adjustment would remove
//! part of the candidate's own effect. So the adjustment is used only when
//! the covariate is balanced: the serial-correlation robust test of
//! `mean c = 0` does not reject at [`BALANCE_ALPHA`] (a loose level, so
//! that an imbalance is caught early) and its interval lies within
//! ±[`BALANCE_MAX`]. It is also left out when it explains little
//! (R² < [`MIN_R2`]), when fewer than [`MIN_BLOCKS`] blocks carry it, or
//! when any block lacks it (a window without disk writes, e.g. data on
//! tmpfs). What was decided, and why, is in the trial's record.

use serde::{Deserialize, Serialize};

use super::hac::{hac_look, nw_lag};
use super::sequential::Look;

/// Level of the balance test: a covariate that differs between the sides
/// at this level is not used.
pub const BALANCE_ALPHA: f64 = 0.10;
/// The most the covariate's side-to-side ratio may differ from 1 (its
/// interval at [`BALANCE_ALPHA`] inside ±5%).
pub const BALANCE_MAX: f64 = 0.05;
/// The least share of the blocks' variance the covariate must explain.
pub const MIN_R2: f64 = 0.10;
/// Blocks needed to estimate the slope.
pub const MIN_BLOCKS: usize = 8;

/// What the covariate is, in words, for reports.
pub const COVARIATE: &str = "the disks' mean write latency per period";

/// The adjustment's fit and whether it was used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Adjustment {
    /// What the covariate measures.
    pub covariate: String,
    /// Blocks that carried the covariate.
    pub blocks: usize,
    /// Least-squares slope of `d` on `c` (0 when not fitted).
    pub slope: f64,
    /// Share of the blocks' variance the covariate explains.
    pub r2: f64,
    /// The covariate's candidate/baseline ratio and its test (the balance).
    pub balance: Option<Look>,
    /// The adjusted blocks were what the test saw.
    pub used: bool,
    /// The test on the adjusted blocks, at the level of the trial's last
    /// look, whenever the covariate qualified (used or, with the design's
    /// `covariate` off, recorded for comparison).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adjusted: Option<Look>,
    /// One sentence: why it was or was not used.
    pub why: String,
}

/// The blocks the test should see and how they were adjusted: `d` adjusted
/// by `c` when [`Adjustment::used`], else `d` unchanged. `c` lines up with
/// `d` (None: a block without the covariate). `d` comes clipped.
///
/// With `enabled` false the fit and the checks are the same, but the
/// blocks come back unchanged and [`Adjustment::why`] says the adjustment
/// was only recorded.
pub fn adjust(d: &[f64], c: &[Option<f64>], enabled: bool) -> (Vec<f64>, Adjustment) {
    let (adjusted, mut adj) = qualify(d, c);
    match adjusted {
        Some(out) if adj.decide(enabled) => (out, adj),
        _ => (d.to_vec(), adj),
    }
}

/// The fit and its checks: the adjusted blocks when the covariate
/// qualifies (then [`Adjustment::decide`] says whether they are used),
/// else None with [`Adjustment::why`] saying why not.
pub fn qualify(d: &[f64], c: &[Option<f64>]) -> (Option<Vec<f64>>, Adjustment) {
    let mut adj = Adjustment {
        covariate: COVARIATE.into(),
        blocks: c.iter().flatten().filter(|x| x.is_finite()).count(),
        slope: 0.0,
        r2: 0.0,
        balance: None,
        used: false,
        adjusted: None,
        why: String::new(),
    };
    let n = d.len();
    if adj.blocks < n || c.len() != n {
        adj.why = format!(
            "not used: {} of {n} blocks carry the covariate (a period without disk writes)",
            adj.blocks
        );
        return (None, adj);
    }
    if n < MIN_BLOCKS {
        adj.why = format!("not used: {n} blocks, fewer than the {MIN_BLOCKS} a slope needs");
        return (None, adj);
    }
    let c: Vec<f64> = c.iter().map(|x| x.expect("checked")).collect();
    (adj.slope, adj.r2) = fit(d, &c);
    adj.balance = hac_look(&c, BALANCE_ALPHA, nw_lag(n));
    let Some(b) = &adj.balance else {
        adj.why = "not used: the covariate's balance could not be tested".into();
        return (None, adj);
    };
    let within = b.ci_low >= 1.0 - BALANCE_MAX && b.ci_high <= 1.0 + BALANCE_MAX;
    let shift = format!(
        "{:+.1}%, {:+.1}% to {:+.1}%, p {:.2}",
        (b.mean_ratio - 1.0) * 100.0,
        (b.ci_low - 1.0) * 100.0,
        (b.ci_high - 1.0) * 100.0,
        b.p_value
    );
    if b.p_value < BALANCE_ALPHA {
        adj.why = format!(
            "not used: the candidate moves the covariate ({shift}), so adjusting would absorb part of its effect"
        );
        return (None, adj);
    }
    if !within {
        // No shift shown, but none ruled out either: too few or too noisy
        // blocks to say the candidate leaves the disk alone.
        adj.why = format!(
            "not used: the covariate's balance is not shown ({shift}: the interval reaches past ±{:.0}%), so adjusting could absorb part of the candidate's effect",
            BALANCE_MAX * 100.0
        );
        return (None, adj);
    }
    if adj.r2 < MIN_R2 {
        adj.why = format!(
            "not used: it explains {:.0}% of the blocks' variance",
            adj.r2 * 100.0
        );
        return (None, adj);
    }
    let slope = adj.slope;
    let out = d.iter().zip(&c).map(|(d, c)| d - slope * c).collect();
    (Some(out), adj)
}

impl Adjustment {
    /// For a covariate that qualified ([`qualify`]): records whether its
    /// adjusted blocks decide (`enabled`, the design's `covariate`) and
    /// says so in [`Adjustment::why`]; returns [`Adjustment::used`].
    pub fn decide(&mut self, enabled: bool) -> bool {
        let b = self
            .balance
            .as_ref()
            .expect("a qualified covariate was tested for balance");
        let fit = format!(
            "it explains {:.0}% of the blocks' variance (slope {:+.2}); balanced between the sides ({:+.1}%, p {:.2})",
            self.r2 * 100.0,
            self.slope,
            (b.mean_ratio - 1.0) * 100.0,
            b.p_value
        );
        self.used = enabled;
        self.why = if enabled {
            format!("used: {fit}")
        } else {
            format!("recorded, not used (the trial design's covariate is off): {fit}")
        };
        enabled
    }
}

/// Least-squares slope of `y` on `x` (with an intercept) and R².
fn fit(y: &[f64], x: &[f64]) -> (f64, f64) {
    let n = y.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let sxy: f64 = x.iter().zip(y).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = x.iter().map(|x| (x - mx).powi(2)).sum();
    let syy: f64 = y.iter().map(|y| (y - my).powi(2)).sum();
    if sxx <= 0.0 || syy <= 0.0 {
        return (0.0, 0.0);
    }
    (sxy / sxx, sxy * sxy / (sxx * syy))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(seed: u64, n: usize) -> Vec<f64> {
        // A small deterministic generator: uniform on (-0.5, 0.5).
        let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
            })
            .collect()
    }

    #[test]
    fn a_balanced_covariate_that_explains_the_noise_narrows_the_blocks() {
        let c = noise(1, 60);
        let e = noise(2, 60);
        // d = -0.05 + (-0.8) c + a little of its own noise.
        let d: Vec<f64> = c
            .iter()
            .zip(&e)
            .map(|(c, e)| -0.05 - 0.8 * c * 0.2 + 0.02 * e)
            .collect();
        let c: Vec<Option<f64>> = c.iter().map(|c| Some(c * 0.2)).collect();
        let (out, a) = adjust(&d, &c, true);
        assert!(a.used, "{}", a.why);
        assert!((a.slope + 0.8).abs() < 0.1, "slope {}", a.slope);
        assert!(a.r2 > 0.8, "r2 {}", a.r2);
        let sd = |v: &[f64]| {
            let m = v.iter().sum::<f64>() / v.len() as f64;
            (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / v.len() as f64).sqrt()
        };
        assert!(sd(&out) < 0.5 * sd(&d), "{} vs {}", sd(&out), sd(&d));
        let m = out.iter().sum::<f64>() / 60.0;
        assert!((m + 0.05).abs() < 0.01, "mean {m}");
    }

    #[test]
    fn a_covariate_the_candidate_moves_is_not_used() {
        let c = noise(3, 60);
        let e = noise(4, 60);
        // The candidate lowers the covariate by 10% in every block.
        let c: Vec<f64> = c.iter().map(|c| -0.10 + 0.05 * c).collect();
        let d: Vec<f64> = c.iter().zip(&e).map(|(c, e)| -0.8 * c + 0.01 * e).collect();
        let (out, a) = adjust(&d, &c.iter().map(|c| Some(*c)).collect::<Vec<_>>(), true);
        assert!(!a.used);
        assert!(a.why.contains("moves the covariate"), "{}", a.why);
        assert_eq!(out, d);
    }

    #[test]
    fn an_unshown_balance_is_not_called_a_shift() {
        // The candidate leaves the covariate alone, but its blocks are too
        // noisy for the interval to fit within the bound.
        let c: Vec<f64> = noise(7, 12).iter().map(|c| 0.4 * c).collect();
        let e = noise(8, 12);
        let d: Vec<f64> = c.iter().zip(&e).map(|(c, e)| -0.8 * c + 0.01 * e).collect();
        let (out, a) = adjust(&d, &c.iter().map(|c| Some(*c)).collect::<Vec<_>>(), true);
        let b = a.balance.as_ref().expect("tested");
        assert!(b.p_value >= BALANCE_ALPHA, "p {}", b.p_value);
        assert!(!a.used);
        assert!(a.why.contains("balance is not shown"), "{}", a.why);
        assert!(!a.why.contains("moves the covariate"), "{}", a.why);
        assert_eq!(out, d);
    }

    #[test]
    fn a_missing_or_useless_covariate_leaves_the_blocks_alone() {
        let d = noise(5, 20);
        let mut c: Vec<Option<f64>> = noise(6, 20).into_iter().map(Some).collect();
        let (out, a) = adjust(&d, &c, true);
        assert!(!a.used, "uncorrelated: {}", a.why);
        assert_eq!(out, d);
        c[3] = None;
        let (_, a) = adjust(&d, &c, true);
        assert!(a.why.contains("19 of 20"), "{}", a.why);
        let (_, a) = adjust(&d[..5], &c[..5], true);
        assert!(!a.used);
    }
}
