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
        assert!(close(student_t_two_sided(-2.228, 10.0), 0.05, 1e-4));
        assert!(close(student_t_two_sided(3.169, 10.0), 0.01, 1e-4));
        assert!(close(student_t_two_sided(0.0, 5.0), 1.0, 1e-12));
        assert!(close(student_t_critical(0.05, 4.0), 2.776, 1e-3));
        assert!(student_t_two_sided(1.0, 0.0).is_nan());
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
