//! Statistics as pure functions: summaries, Student t quantiles and confidence intervals.
//!
//! No I/O here; every function is tested against published values.

pub(crate) mod bootstrap;
pub(crate) mod fork_test;
pub(crate) mod layout;
pub(crate) mod sequential;
pub(crate) mod spread;

use statrs::distribution::{ContinuousCDF, StudentsT};

/// Confidence level of the reported `error`, as JMH reports it.
pub(crate) const CONFIDENCE: f64 = 0.999;

/// Summary of a sample: the numbers a score reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Summary {
    /// Sample size.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (mean of the two middle values for even `n`).
    pub median: f64,
    /// Sample standard deviation (n - 1 denominator); NaN for `n < 2`.
    pub stdev: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

/// The median of `xs` (the mean of the two middle values for an even count); `None` when
/// empty. The one median the harness computes.
pub(crate) fn median(xs: &[f64]) -> Option<f64> {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// The geometric mean of `xs` (`exp` of the mean log); `None` when empty. The one geometric
/// mean the harness computes: of fork medians, layout variants and canary readings.
pub(crate) fn geometric_mean(xs: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = xs.into_iter().fold((0.0, 0usize), |(sum, n), x| (sum + x.ln(), n + 1));
    (n > 0).then(|| (sum / n as f64).exp())
}

/// Summarizes the finite values of `xs`; `None` when there are none.
pub(crate) fn summarize(xs: &[f64]) -> Option<Summary> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let mean = v.iter().sum::<f64>() / n as f64;
    Some(Summary { n, mean, median: median(&v)?, stdev: stdev(&v, mean), min: v[0], max: v[n - 1] })
}

/// Sample standard deviation around `mean`; NaN for fewer than two values.
pub(crate) fn stdev(xs: &[f64], mean: f64) -> f64 {
    if xs.len() < 2 {
        return f64::NAN;
    }
    let ss: f64 = xs.iter().map(|x| (x - mean).powi(2)).sum();
    (ss / (xs.len() - 1) as f64).sqrt()
}

/// The `p` quantile of Student's t distribution with `df` degrees of freedom.
pub(crate) fn student_t_quantile(p: f64, df: f64) -> f64 {
    match StudentsT::new(0.0, 1.0, df) {
        Ok(t) => t.inverse_cdf(p),
        Err(_) => f64::NAN,
    }
}

/// Half-width of the two-sided `confidence` interval of the mean, as JMH computes it:
/// `t(1 - (1 - confidence) / 2, n - 1) * stdev / sqrt(n)`; `None` when `n <= 2`, as in JMH.
pub(crate) fn mean_error(s: &Summary, confidence: f64) -> Option<f64> {
    error_of(s.n, s.stdev, confidence)
}

/// [`mean_error`] from a sample's size and standard deviation: the one error formula the
/// reports and every export use.
pub(crate) fn error_of(n: usize, stdev: f64, confidence: f64) -> Option<f64> {
    if n <= 2 || !stdev.is_finite() {
        return None;
    }
    let t = student_t_quantile(1.0 - (1.0 - confidence) / 2.0, (n - 1) as f64);
    Some(t * stdev / (n as f64).sqrt()).filter(|e| e.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol, "{a} != {b} (tol {tol})");
    }

    #[test]
    fn t_quantiles_match_published_tables() {
        // Two-sided critical values from standard t tables.
        close(student_t_quantile(0.975, 10.0), 2.228139, 1e-5);
        close(student_t_quantile(0.975, 1.0), 12.706205, 1e-4);
        close(student_t_quantile(0.9995, 4.0), 8.610302, 1e-4);
        close(student_t_quantile(0.9995, 7.0), 5.407883, 1e-4);
        close(student_t_quantile(0.995, 30.0), 2.749996, 1e-5);
        close(student_t_quantile(0.5, 5.0), 0.0, 1e-12);
    }

    #[test]
    fn summary_of_known_sample() {
        let s = summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        close(s.mean, 5.0, 1e-12);
        close(s.median, 4.5, 1e-12);
        close(s.stdev, (32.0f64 / 7.0).sqrt(), 1e-12); // 2.13809
        assert_eq!((s.min, s.max), (2.0, 9.0));
    }

    #[test]
    fn jmh_error_of_known_sample() {
        let s = summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        // 5.407883 * 2.138090 / sqrt(8) = 4.08800
        close(mean_error(&s, CONFIDENCE).unwrap(), 4.08800, 1e-4);
        // 95%: 2.364624 * 2.138090 / sqrt(8) = 1.78749
        close(mean_error(&s, 0.95).unwrap(), 1.78749, 1e-4);
    }

    #[test]
    fn small_and_degenerate_samples_are_nan_safe() {
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[f64::NAN]).is_none());
        let one = summarize(&[3.0]).unwrap();
        assert!(one.stdev.is_nan());
        assert_eq!((one.median, one.min, one.max), (3.0, 3.0, 3.0));
        assert_eq!(mean_error(&one, CONFIDENCE), None);
        let two = summarize(&[1.0, 3.0]).unwrap();
        close(two.stdev, 2f64.sqrt(), 1e-12);
        assert_eq!(mean_error(&two, CONFIDENCE), None);
        let flat = summarize(&[4.0, 4.0, 4.0]).unwrap();
        assert_eq!(mean_error(&flat, CONFIDENCE), Some(0.0));
        let with_nan = summarize(&[1.0, f64::NAN, 3.0]).unwrap();
        assert_eq!(with_nan.n, 2);
    }
}
