//! The statistics redoctor's parts share — the advisor's live trials, its
//! evaluation, the sweep harness's oracle — in one place, on `statrs`.

use statrs::distribution::{ContinuousCDF, StudentsT};

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

/// The arithmetic mean (NaN when empty).
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

/// Standard error of the mean of the logs of `values` (the relative
/// standard error of their geometric mean); needs 2 positive values.
pub fn log_standard_error(values: &[f64]) -> Option<f64> {
    let logs: Vec<f64> = values
        .iter()
        .filter(|v| **v > 0.0)
        .map(|v| v.ln())
        .collect();
    Some((variance(&logs)? / logs.len() as f64).sqrt())
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

/// `P(|T| >= |t|)` for Student's t with `df` degrees of freedom (NaN for a
/// non-positive or non-finite `df`).
pub fn student_t_two_sided(t: f64, df: f64) -> f64 {
    match StudentsT::new(0.0, 1.0, df) {
        Ok(d) => (2.0 * d.cdf(-t.abs())).clamp(0.0, 1.0),
        Err(_) => f64::NAN,
    }
}

/// The two-sided `1 - alpha` critical value of Student's t with `df`
/// degrees of freedom (NaN for a bad `df` or `alpha`).
pub fn student_t_critical(alpha: f64, df: f64) -> f64 {
    match StudentsT::new(0.0, 1.0, df) {
        Ok(d) if alpha > 0.0 && alpha < 1.0 => d.inverse_cdf(1.0 - alpha / 2.0),
        _ => f64::NAN,
    }
}

/// One-sided p-value of the Mann–Whitney U test that values of `b` tend
/// to be larger than values of `a` (`P(U_b >= u_b)` under "same
/// distribution"). Exact (by counting rank arrangements) when neither
/// sample has more than 20 values and there are no ties; else the normal
/// approximation with the tie correction and a continuity correction.
/// None when a sample is empty or a value is not finite.
pub fn mann_whitney_greater(a: &[f64], b: &[f64]) -> Option<f64> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 || a.iter().chain(b).any(|x| !x.is_finite()) {
        return None;
    }
    // U of b: pairs (x in a, y in b) with y > x, ties counted as 1/2.
    let mut u2: f64 = 0.0;
    for y in b {
        for x in a {
            if y > x {
                u2 += 1.0;
            } else if y == x {
                u2 += 0.5;
            }
        }
    }
    let mut sorted: Vec<f64> = a.iter().chain(b).copied().collect();
    sorted.sort_by(f64::total_cmp);
    let ties = sorted.windows(2).any(|w| w[0] == w[1]);
    if !ties && n1 <= 20 && n2 <= 20 {
        let counts = u_distribution(n1, n2);
        let total: f64 = counts.iter().sum();
        let at_least = u2.round() as usize;
        return Some(counts[at_least.min(counts.len())..].iter().sum::<f64>() / total);
    }
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let n = n1f + n2f;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < sorted.len() {
        let j = sorted[i..].iter().take_while(|v| **v == sorted[i]).count();
        let t = j as f64;
        tie_term += t * t * t - t;
        i += j;
    }
    let var = n1f * n2f / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if var <= 0.0 {
        return Some(1.0);
    }
    let z = (u2 - n1f * n2f / 2.0 - 0.5) / var.sqrt();
    Some(normal_upper_tail(z))
}

/// `P(Z >= z)` for a standard normal `Z`.
pub fn normal_upper_tail(z: f64) -> f64 {
    use statrs::distribution::Normal;
    match Normal::new(0.0, 1.0) {
        Ok(d) => d.sf(z),
        Err(_) => f64::NAN,
    }
}

/// The two-sided `1 - alpha` critical value of the standard normal
/// (`z` with `P(|Z| >= z) = alpha`; NaN for `alpha` outside (0, 1)).
pub fn normal_critical(alpha: f64) -> f64 {
    use statrs::distribution::Normal;
    match Normal::new(0.0, 1.0) {
        Ok(d) if alpha > 0.0 && alpha < 1.0 => d.inverse_cdf(1.0 - alpha / 2.0),
        _ => f64::NAN,
    }
}

/// Number of rank arrangements of two samples of sizes `n1`, `n2` (no
/// ties) giving each value of U (index), by the recurrence
/// `c(n1, n2, u) = c(n1 - 1, n2, u - n2) + c(n1, n2 - 1, u)`.
fn u_distribution(n1: usize, n2: usize) -> Vec<f64> {
    // table[j] = counts for (i, j) at the current i; built up over i.
    let max = n1 * n2;
    let mut prev: Vec<Vec<f64>> = (0..=n2).map(|_| vec![1.0]).collect(); // i = 0
    for i in 1..=n1 {
        let mut cur: Vec<Vec<f64>> = vec![vec![1.0]; n2 + 1]; // j = 0: one arrangement, U = 0
        for j in 1..=n2 {
            let mut c = vec![0.0; i * j + 1];
            for (u, v) in prev[j].iter().enumerate() {
                c[u + j] += v; // the largest value is from the first sample
            }
            for (u, v) in cur[j - 1].iter().enumerate() {
                c[u] += v; // the largest value is from the second sample
            }
            cur[j] = c;
        }
        prev = cur;
    }
    let mut out = prev[n2].clone();
    out.resize(max + 1, 0.0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn normal_critical_values() {
        assert!(close(normal_critical(0.05), 1.959964, 1e-5));
        assert!(close(normal_critical(0.4), 0.841621, 1e-5));
        assert!(normal_critical(0.0).is_nan() && normal_critical(1.0).is_nan());
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
        assert!(close(student_t_two_sided(-2.228, 10.0), 0.05, 1e-4));
        assert!(close(student_t_two_sided(3.169, 10.0), 0.01, 1e-4));
        assert!(close(student_t_two_sided(0.0, 5.0), 1.0, 1e-12));
        assert!(close(student_t_critical(0.05, 4.0), 2.776, 1e-3));
        assert!(student_t_two_sided(1.0, 0.0).is_nan());
    }

    #[test]
    fn mann_whitney_matches_tables_and_the_normal_approximation() {
        // 4 vs 4, b entirely above a: U = 16, p = 1 / C(8, 4) = 1/70.
        let p = mann_whitney_greater(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]).unwrap();
        assert!(close(p, 1.0 / 70.0, 1e-12), "{p}");
        // b entirely below: p = 1.
        let p = mann_whitney_greater(&[5.0, 6.0, 7.0, 8.0], &[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert!(close(p, 1.0, 1e-12), "{p}");
        // 5 vs 5 interleaved: U = 13 of 25 → p near one half.
        let p =
            mann_whitney_greater(&[1.0, 3.0, 5.0, 7.0, 9.0], &[2.0, 4.0, 6.0, 8.0, 10.0]).unwrap();
        assert!((0.3..0.6).contains(&p), "{p}");
        // 3 vs 3 all above: 1/20 (the smallest p a 3 vs 3 test can give).
        let p = mann_whitney_greater(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!(close(p, 0.05, 1e-12), "{p}");
        // Ties: the normal approximation; identical samples are not significant.
        let p = mann_whitney_greater(&[1.0, 1.0, 2.0], &[1.0, 1.0, 2.0]).unwrap();
        assert!(p > 0.4, "{p}");
        let a: Vec<f64> = (0..30).map(f64::from).collect();
        let b: Vec<f64> = (0..30).map(|x| f64::from(x) + 15.0).collect();
        assert!(mann_whitney_greater(&a, &b).unwrap() < 0.001);
        assert_eq!(mann_whitney_greater(&[], &[1.0]), None);
        assert_eq!(mann_whitney_greater(&[f64::NAN], &[1.0]), None);
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
