//! The sequential test's look: a paired t-test on the pairs' log-ratios
//! `d_i = ln(candidate_i / baseline_i)` at one look's level, and the
//! decision it leads to (see the module docs of [`super`]).

use redoctor_stats::{mean, student_t_critical, student_t_two_sided, variance};
use serde::{Deserialize, Serialize};

/// The test at one look. Ratios are `exp` of the log-ratio statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Look {
    /// Pairs so far.
    pub n: usize,
    /// `exp(mean d)`: candidate over baseline commits/s.
    pub mean_ratio: f64,
    /// The two-sided `1 - alpha` confidence interval of the ratio.
    pub ci_low: f64,
    pub ci_high: f64,
    /// Two-sided p-value of "no difference" (mean d = 0).
    pub p_value: f64,
    /// This look's rejection level (interim or final, see [`super::Plan`]).
    pub alpha: f64,
}

/// What a look decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The interval lies above no change.
    Better,
    /// The interval lies below no change.
    Worse,
    /// The interval lies inside the futility band: no meaningful difference.
    Futile,
    /// None of these: measure another pair.
    Continue,
}

/// The paired t-test on `d` (n - 1 degrees of freedom) at level `alpha`;
/// None with fewer than 2 pairs or a non-finite value.
pub fn look(d: &[f64], alpha: f64) -> Option<Look> {
    let n = d.len();
    if n < 2 || d.iter().any(|x| !x.is_finite()) || !(alpha > 0.0 && alpha < 1.0) {
        return None;
    }
    let se = (variance(d)? / n as f64).sqrt();
    Some(Look::t_test(n, mean(d), se, alpha))
}

impl Look {
    /// The two-sided t-test of a log-ratio mean `m` = 0 with standard
    /// error `se` over `n` values (Student t on `n − 1` degrees of
    /// freedom) at level `alpha`, as a ratio with its interval.
    pub(crate) fn t_test(n: usize, m: f64, se: f64, alpha: f64) -> Look {
        let df = n as f64 - 1.0;
        let half = student_t_critical(alpha, df) * se;
        let p_value = if se > 0.0 {
            student_t_two_sided(m / se, df)
        } else if m == 0.0 {
            1.0
        } else {
            0.0
        };
        Look {
            n,
            mean_ratio: m.exp(),
            ci_low: (m - half).exp(),
            ci_high: (m + half).exp(),
            p_value,
            alpha,
        }
    }

    /// Better / worse when the interval excludes no change; futile when it
    /// lies within `(1/(1 + min_effect), 1 + min_effect)`, i.e.
    /// `±ln(1 + min_effect)` on the log scale; else continue.
    pub fn decide(&self, min_effect: f64) -> Decision {
        let band = 1.0 + min_effect;
        if self.ci_low > 1.0 {
            Decision::Better
        } else if self.ci_high < 1.0 {
            Decision::Worse
        } else if self.ci_low > 1.0 / band && self.ci_high < band {
            Decision::Futile
        } else {
            Decision::Continue
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_uses_the_student_t_quantile() {
        // d = ln(ratios) with mean 0.1 and sd 0.1 over 3 pairs: half-width
        // t(0.975, 2) * 0.1 / sqrt(3) = 4.3027 * 0.057735 = 0.248414.
        let d = [0.0, 0.1, 0.2];
        let l = look(&d, 0.05).unwrap();
        assert_eq!(l.n, 3);
        assert!((l.mean_ratio.ln() - 0.1).abs() < 1e-12);
        assert!((l.ci_high.ln() - (0.1 + 0.248414)).abs() < 1e-5, "{l:?}");
        assert!((l.ci_low.ln() - (0.1 - 0.248414)).abs() < 1e-5, "{l:?}");
        // t = 0.1 / 0.057735 = 1.7321, two-sided p with 2 df = 0.2254.
        assert!((l.p_value - 0.2254).abs() < 1e-3, "{l:?}");
        assert_eq!(l.decide(0.03), Decision::Continue);
    }

    #[test]
    fn a_smaller_alpha_widens_the_interval() {
        let d = [0.05, 0.07, 0.06, 0.08];
        let wide = look(&d, 0.00625).unwrap();
        let narrow = look(&d, 0.05).unwrap();
        assert!(wide.ci_low < narrow.ci_low && wide.ci_high > narrow.ci_high);
        assert_eq!(narrow.decide(0.03), Decision::Better);
    }

    #[test]
    fn decisions_follow_the_interval() {
        let l = |lo: f64, hi: f64| Look {
            n: 5,
            mean_ratio: (lo * hi).sqrt(),
            ci_low: lo,
            ci_high: hi,
            p_value: 0.5,
            alpha: 0.01,
        };
        assert_eq!(l(1.01, 1.2).decide(0.03), Decision::Better);
        assert_eq!(l(0.8, 0.99).decide(0.03), Decision::Worse);
        assert_eq!(l(0.98, 1.02).decide(0.03), Decision::Futile);
        assert_eq!(l(0.96, 1.02).decide(0.03), Decision::Continue);
        assert_eq!(l(0.98, 1.02).decide(0.0), Decision::Continue);
    }

    #[test]
    fn degenerate_inputs() {
        assert!(look(&[0.1], 0.05).is_none());
        assert!(look(&[0.1, f64::NEG_INFINITY], 0.05).is_none());
        let same = look(&[0.5, 0.5, 0.5], 0.05).unwrap();
        assert_eq!(same.p_value, 0.0);
        assert_eq!(same.decide(0.03), Decision::Better);
        assert_eq!(look(&[0.0, 0.0], 0.05).unwrap().p_value, 1.0);
    }
}
