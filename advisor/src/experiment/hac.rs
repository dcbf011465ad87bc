//! The t-test a switchback's blocks get: mean `d = 0` with a standard
//! error that holds under serial correlation (an AR(1)-prewhitened
//! Newey–West long-run variance), and the resolution it states.

use redoctor_stats::{mean, student_t_critical};

use super::power::{FullBudget, Resolution};
use super::sequential::Look;

/// Newey–West lag for `n` blocks: `⌊4 (n/100)^{2/9}⌋`, at least 1, less than `n`.
pub fn nw_lag(n: usize) -> usize {
    let l = (4.0 * (n as f64 / 100.0).powf(2.0 / 9.0)).floor() as usize;
    l.max(1).min(n.saturating_sub(2).max(1))
}

/// Kiefer and Vogelsang's (2005) fixed-b critical value of the Bartlett
/// kernel's t-statistic at the 97.5% point, as a factor of the normal
/// one (their cubic in the bandwidth's share `b` of the sample).
fn fixed_b_factor(b: f64) -> f64 {
    (1.96 + 2.9694 * b + 0.4160 * b * b - 0.5324 * b * b * b) / 1.96
}

/// The most serial correlation the prewhitening takes from `n` blocks:
/// 0.5 at six, rising linearly to 0.9 at 24 and beyond. At a few blocks
/// the sample correlation is mostly noise (its standard error is about
/// `1/√n`, 0.41 at six) and the bias correction below doubles it there
/// (it divides by `n − 3`), so without this cap one moderate sample
/// correlation took ρ to 0.9 and the standard error ×10: a six-block
/// trial stated "−89% to +881%". In simulation (AR(1) ρ = 0, 0.3, 0.6;
/// 6 to 24 blocks) the cap leaves the test's level as it was at ρ 0 and
/// 0.3 (within 0.1 point; 0.2-0.4 points higher at ρ 0.6, where it was
/// 9-11% already), its power equal or higher, and bounds the interval
/// (the 90th percentile of the half-width at six white-noise blocks
/// 2.4× narrower; `advisor/bench/RESULTS.md`, 12-06).
fn rho_cap(n: usize) -> f64 {
    (0.5 + (n as f64 - 6.0) * 0.4 / 18.0).clamp(0.5, 0.9)
}

/// [`fixed_b_factor`] at `n` blocks with the lag [`nw_lag`] gives them.
fn nw_fixed_b(n: usize) -> f64 {
    fixed_b_factor((nw_lag(n) as f64 + 1.0) / n as f64)
}

/// The t-test of mean `d` = 0 at level `alpha` with a serial-correlation
/// robust standard error, Student t on `n − 1` degrees of freedom; None
/// with fewer than 3 values or a non-finite one. The long-run variance is
/// Newey and West's (Bartlett weights up to `lag`) on the residuals of an
/// AR(1) fit, recoloured by `1 / (1 − ρ)²` (Andrews and Monahan's
/// prewhitening: Newey–West alone, with a lag a few dozen blocks allow,
/// misses most of a strong correlation). Two small-sample corrections
/// keep the level at a few dozen blocks, where the estimate is itself
/// noisy and biased low (at 12 white-noise blocks a nominal 5% test
/// rejected 11.7% of the time, `advisor/bench/RESULTS.md`): ρ is corrected
/// for its downward bias (`(nρ + 1)/(n − 3)`, Kendall's) and capped by
/// what `n` blocks can show ([`rho_cap`]), and the
/// standard error is widened by the fixed-b critical value over the
/// normal one at `b = (lag + 1)/n` (the factor is the 5% level's; the
/// sequential test's other levels take the same). `lag = 0` is the plain
/// t-test that takes the blocks as independent (for comparison).
pub fn hac_look(d: &[f64], alpha: f64, lag: usize) -> Option<Look> {
    let n = d.len();
    if n < 3 || d.iter().any(|x| !x.is_finite()) || !(alpha > 0.0 && alpha < 1.0) {
        return None;
    }
    let nf = n as f64;
    let m = mean(d);
    let c: Vec<f64> = d.iter().map(|x| x - m).collect();
    let plain = c.iter().map(|x| x * x).sum::<f64>() / (nf - 1.0);
    let v = if lag == 0 {
        plain
    } else {
        let num: f64 = (1..n).map(|t| c[t] * c[t - 1]).sum();
        let den: f64 = c.iter().map(|x| x * x).sum();
        let rho = if den > 0.0 {
            ((nf * num / den + 1.0) / (nf - 3.0).max(1.0)).clamp(-0.9, rho_cap(n))
        } else {
            0.0
        };
        let e: Vec<f64> = (1..n).map(|t| c[t] - rho * c[t - 1]).collect();
        let ne = e.len() as f64;
        let gamma = |l: usize| -> f64 { (l..e.len()).map(|t| e[t] * e[t - l]).sum::<f64>() / ne };
        let mut lr = gamma(0);
        for l in 1..=lag.min(e.len() - 1) {
            lr += 2.0 * (1.0 - l as f64 / (lag as f64 + 1.0)) * gamma(l);
        }
        // Never below a tenth of the plain variance (a negative estimate
        // of a long-run variance is noise).
        let v = (lr.max(0.0) / (1.0 - rho).powi(2) * ne / (ne - 1.0)).max(0.1 * plain);
        v * fixed_b_factor((lag as f64 + 1.0) / nf).powi(2)
    };
    Some(Look::t_test(n, m, (v / nf).sqrt(), alpha))
}

/// What `n` blocks with these `d` could resolve at `alpha` with 80% power,
/// with the HAC standard error and t quantiles.
pub fn hac_resolution(d: &[f64], alpha: f64, secs_per_block: f64) -> Option<Resolution> {
    let n = d.len();
    let l = hac_look(d, alpha, nw_lag(n))?;
    let half = (l.ci_high.ln() - l.ci_low.ln()) / 2.0;
    let df = n as f64 - 1.0;
    let se = half / student_t_critical(alpha, df);
    let t_power = student_t_critical(2.0 * (1.0 - super::POWER), df);
    let per_block_sd = se * (n as f64).sqrt();
    let detect = (student_t_critical(alpha, df) + t_power) * se;
    let est = l.mean_ratio.ln().abs();
    let needed = (est > 0.0).then(|| {
        let z = redoctor_stats::normal_critical(alpha)
            + redoctor_stats::normal_critical(2.0 * (1.0 - super::POWER));
        ((z * per_block_sd / est).powi(2)).ceil().max(n as f64) as u64
    });
    Some(Resolution {
        pairs: n,
        per_pair_sd: per_block_sd,
        alpha,
        detectable: detect.exp() - 1.0,
        pairs_needed: needed,
        secs_per_pair: secs_per_block,
        full_budget: None,
    })
}

/// What `units` blocks would resolve at `alpha` with 80% power, given the
/// spread `r` measured over its own blocks: the per-block long-run sd
/// without the fixed-b inflation of `r`'s own count, with that of
/// `units` (the inflation shrinks as blocks are added), t quantiles on
/// `units − 1` degrees of freedom.
pub fn full_budget(r: &Resolution, units: usize, alpha: f64) -> Option<FullBudget> {
    if units < 3 || r.pairs < 3 || !r.per_pair_sd.is_finite() {
        return None;
    }
    let sd = r.per_pair_sd / nw_fixed_b(r.pairs) * nw_fixed_b(units);
    let df = units as f64 - 1.0;
    let z = student_t_critical(alpha, df) + student_t_critical(2.0 * (1.0 - super::POWER), df);
    Some(FullBudget {
        units,
        alpha,
        detectable: (z * sd / (units as f64).sqrt()).exp() - 1.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 12 blocks alternating around +1% by ±3%.
    fn blocks(n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| 0.01 + if i % 2 == 0 { 0.03 } else { -0.03 })
            .collect()
    }

    #[test]
    fn the_full_budget_at_the_units_run_is_the_resolution_itself() {
        let r = hac_resolution(&blocks(12), 0.05, 1.0).unwrap();
        let f = full_budget(&r, 12, 0.05).unwrap();
        assert!((f.detectable - r.detectable).abs() < 1e-12, "{f:?} {r:?}");
    }

    #[test]
    fn a_longer_budget_resolves_finer_by_more_than_the_root_of_its_units() {
        let r = hac_resolution(&blocks(12), 0.001, 1.0).unwrap();
        let f = full_budget(&r, 60, 0.045).unwrap();
        assert_eq!(f.units, 60);
        // sqrt(12/60) alone gives 0.447 of the width; the looser level,
        // more degrees of freedom and a smaller fixed-b inflation narrow
        // it further.
        let ratio = f.detectable.ln_1p() / r.detectable.ln_1p();
        assert!(ratio < 0.447 * 0.8, "{ratio}: {f:?} against {r:?}");
        // By hand: the per-block sd without 12 blocks' fixed-b factor,
        // with 60's, and t quantiles on 59 df.
        let b = |n: usize| (nw_lag(n) as f64 + 1.0) / n as f64;
        let sd = r.per_pair_sd / fixed_b_factor(b(12)) * fixed_b_factor(b(60));
        let z = student_t_critical(0.045, 59.0) + student_t_critical(0.4, 59.0);
        assert!((f.detectable - ((z * sd / 60f64.sqrt()).exp() - 1.0)).abs() < 1e-12);
        assert!(full_budget(&r, 2, 0.05).is_none());
    }
}
