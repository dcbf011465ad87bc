//! What a static setting's change (one that needs a restart) is expected to
//! do. No live trial can judge it and the what-if model has no mechanics
//! for it, so its expected gain comes from measurement alone: a
//! [`RestartPrior`] per change and regime, the log-ratio the change had
//! across the committed sweeps' scenarios of that regime (e.g. the
//! doublewrite sweep, `engine/sweeps/results/doublewrite/`). The change is
//! judged with the same asymmetric loss as a live one: it is worth a
//! restart when its expected utility exceeds the priors' `min_utility`.

use serde::{Deserialize, Serialize};

use super::{cdf, expected_utility};
use crate::model::Z95;

/// Users above this are the "many users" regime of a restart prior (the
/// seed's crossover: the legacy doublewrite buffer holds to ~64 users).
pub const MANY_USERS: f64 = 64.0;

/// The regime key of a restart prior for `users` user threads.
pub fn regime(users: f64) -> &'static str {
    if users > MANY_USERS {
        "users>64"
    } else {
        "users<=64"
    }
}

/// One measured change of a static setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RestartPrior {
    pub setting: String,
    /// The value changed from and to, as SHOW VARIABLES prints them; `to`
    /// may be `x2` (double the current number).
    pub from: String,
    pub to: String,
    /// [`regime`], or `*`: any.
    pub regime: String,
    /// Mean log-ratio of commits/s (changed over current) across the
    /// scenarios, and a new scenario's spread around it (log sd).
    pub mean: f64,
    pub spread: f64,
    pub n: u32,
    /// The measurement behind it.
    pub source: String,
}

/// The expected effect of a restart, from its prior.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RestartEstimate {
    /// `exp(mean) − 1`, and the 95% interval of a new scenario's change.
    pub gain: f64,
    pub low: f64,
    pub high: f64,
    /// Probability that it is slower than now.
    pub p_worse: f64,
    /// Expected utility under the asymmetric loss (log units).
    pub utility: f64,
    /// Whether that utility clears the priors' `min_utility`.
    pub worth_it: bool,
    pub regime: String,
    pub n: u32,
    pub source: String,
}

impl RestartPrior {
    /// Whether this prior is for `setting` going from `from` to `to`
    /// (numbers: `to` is twice `from` for an `x2` prior).
    fn matches(&self, setting: &str, from: &str, to: &str) -> bool {
        if !self.setting.eq_ignore_ascii_case(setting) {
            return false;
        }
        if self.to == "x2" {
            let num = |s: &str| s.trim().parse::<f64>().ok();
            return matches!((num(from), num(to)), (Some(a), Some(b)) if a > 0.0 && b == 2.0 * a);
        }
        self.from.eq_ignore_ascii_case(from) && self.to.eq_ignore_ascii_case(to)
    }

    /// The estimate this prior gives, judged with `asymmetry` and `min_utility`.
    pub fn estimate(&self, asymmetry: f64, min_utility: f64) -> RestartEstimate {
        let (m, s) = (self.mean, self.spread);
        let utility = expected_utility(m, s, asymmetry);
        RestartEstimate {
            gain: m.exp() - 1.0,
            low: (m - Z95 * s).exp() - 1.0,
            high: (m + Z95 * s).exp() - 1.0,
            p_worse: cdf(-m / s.max(1e-9)),
            utility,
            worth_it: utility > min_utility,
            regime: self.regime.clone(),
            n: self.n,
            source: self.source.clone(),
        }
    }
}

/// The prior for `setting` from `from` to `to` with `users` user threads:
/// its regime's, else the pooled one (`*`).
pub fn find<'a>(
    priors: &'a [RestartPrior],
    setting: &str,
    from: &str,
    to: &str,
    users: f64,
) -> Option<&'a RestartPrior> {
    let key = regime(users);
    let of = |k: &str| {
        priors
            .iter()
            .find(|p| p.regime == k && p.matches(setting, from, to))
    };
    of(key).or_else(|| of("*"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prior(to: &str, regime: &str, mean: f64) -> RestartPrior {
        RestartPrior {
            setting: "innodb_page_cleaners".into(),
            from: "1".into(),
            to: to.into(),
            regime: regime.into(),
            mean,
            spread: 0.05,
            n: 4,
            source: "test".into(),
        }
    }

    #[test]
    fn the_regime_cell_wins_over_the_pooled_one_and_x2_means_double() {
        let ps = vec![prior("2", "*", 0.01), prior("2", "users>64", 0.2)];
        assert_eq!(
            find(&ps, "innodb_page_cleaners", "1", "2", 256.0)
                .unwrap()
                .mean,
            0.2
        );
        assert_eq!(
            find(&ps, "innodb_page_cleaners", "1", "2", 16.0)
                .unwrap()
                .mean,
            0.01
        );
        assert!(find(&ps, "innodb_page_cleaners", "1", "4", 16.0).is_none());
        let x2 = vec![prior("x2", "*", 0.3)];
        assert!(find(&x2, "innodb_page_cleaners", "2", "4", 16.0).is_some());
        assert!(find(&x2, "innodb_page_cleaners", "2", "3", 16.0).is_none());
    }

    #[test]
    fn a_measured_loss_is_not_worth_a_restart_and_a_clear_gain_is() {
        let loss = prior("2", "*", -0.06).estimate(3.0, 0.01);
        assert!(!loss.worth_it && loss.gain < 0.0 && loss.p_worse > 0.5);
        let gain = prior("2", "*", 0.25).estimate(3.0, 0.01);
        assert!(gain.worth_it && gain.low > 0.0, "{gain:?}");
        assert!((gain.gain - (0.25f64.exp() - 1.0)).abs() < 1e-12);
    }
}
