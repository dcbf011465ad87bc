//! The statistics the oracle needs: median, mean, variance and Welch's t-test.

/// The median (mean of the two middle values for an even count); None when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Sample variance (n - 1 in the denominator); needs 2 values.
pub fn variance(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let m = mean(values);
    Some(values.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (values.len() - 1) as f64)
}

/// Two-sided p-value of Welch's unequal-variance t-test for equal means of
/// `a` and `b` (each needs at least 2 values). When both samples have zero
/// variance the p-value is 0 if the means differ and 1 if they are equal.
pub fn welch_p_value(a: &[f64], b: &[f64]) -> Option<f64> {
    let (va, vb) = (variance(a)?, variance(b)?);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (sa, sb) = (va / na, vb / nb);
    let diff = mean(a) - mean(b);
    if sa + sb == 0.0 {
        return Some(if diff == 0.0 { 1.0 } else { 0.0 });
    }
    let t = diff / (sa + sb).sqrt();
    let df = (sa + sb).powi(2) / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0));
    Some(student_t_two_sided(t, df))
}

/// `P(|T| >= |t|)` for Student's t with `df` degrees of freedom:
/// `I_{df/(df+t²)}(df/2, 1/2)`.
pub fn student_t_two_sided(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    regularized_incomplete_beta(x, df / 2.0, 0.5).clamp(0.0, 1.0)
}

/// `ln Γ(x)` for x > 0 (Lanczos approximation, g = 7, 9 terms).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1-x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// `I_x(a, b)`, the regularized incomplete beta function, by its continued
/// fraction (modified Lentz), using the symmetry `I_x(a,b) = 1 - I_{1-x}(b,a)`
/// where the fraction converges faster.
pub fn regularized_incomplete_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_fraction(x, a, b) / a
    } else {
        1.0 - ln_front.exp() * beta_fraction(1.0 - x, b, a) / b
    }
}

fn beta_fraction(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const EPS: f64 = 1e-14;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = m as f64;
        // Even step.
        let num = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 + num * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + num / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        h *= d * c;
        // Odd step.
        let num = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        d = 1.0 + num * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + num / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let delta = d * c;
        h *= delta;
        if (delta - 1.0).abs() < EPS {
            break;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }

    #[test]
    fn t_distribution_matches_tables() {
        // Critical values of Student's t at two-sided 5 % and 1 %.
        assert!(close(student_t_two_sided(12.706, 1.0), 0.05, 1e-4));
        assert!(close(student_t_two_sided(2.776, 4.0), 0.05, 1e-4));
        assert!(close(student_t_two_sided(2.228, 10.0), 0.05, 1e-4));
        assert!(close(student_t_two_sided(3.169, 10.0), 0.01, 1e-4));
        assert!(close(student_t_two_sided(0.0, 5.0), 1.0, 1e-12));
        assert!(close(ln_gamma(5.0), 24f64.ln(), 1e-10));
        assert!(close(
            ln_gamma(0.5),
            std::f64::consts::PI.sqrt().ln(),
            1e-10
        ));
    }

    #[test]
    fn welch_on_known_samples() {
        // Clearly separated samples: tiny p; overlapping ones: large p.
        let p = welch_p_value(&[100.0, 101.0, 99.0], &[80.0, 81.0, 79.0]).unwrap();
        assert!(p < 0.001, "{p}");
        let p = welch_p_value(&[100.0, 110.0, 90.0], &[101.0, 95.0, 108.0]).unwrap();
        assert!(p > 0.5, "{p}");
        // Hand-computed: a = [1,2,3,4], b = [3,4,5,6]: t = -2.191, df = 6, p = 0.0710.
        let p = welch_p_value(&[1.0, 2.0, 3.0, 4.0], &[3.0, 4.0, 5.0, 6.0]).unwrap();
        assert!(close(p, 0.0710, 5e-4), "{p}");
        assert_eq!(welch_p_value(&[1.0], &[2.0, 3.0]), None);
        assert_eq!(welch_p_value(&[2.0, 2.0], &[2.0, 2.0]), Some(1.0));
        assert_eq!(welch_p_value(&[2.0, 2.0], &[3.0, 3.0]), Some(0.0));
    }
}
