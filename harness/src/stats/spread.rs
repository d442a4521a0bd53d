//! Where a case's noise comes from: fork-to-fork versus within-fork variance, a trend across
//! iterations, outliers, and how many forks a stated precision needs. Pure functions over the
//! per-fork samples (one `Vec` per fork).

use super::student_t_quantile;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The split of variance between forks and within forks (one-way random-effects ANOVA).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct VarianceSplit {
    /// Variance of iterations around their fork's mean (the ANOVA's mean square within).
    pub within: f64,
    /// Variance component of the fork means (0 when the forks agree better than chance).
    pub between: f64,
}

impl VarianceSplit {
    /// Share of the total variance that lies between forks, 0 to 1.
    pub(crate) fn between_share(&self) -> f64 {
        let total = self.within + self.between;
        if total > 0.0 { self.between / total } else { 0.0 }
    }
}

/// The variance split of `groups`; `None` with fewer than two non-empty forks or no
/// within-fork degrees of freedom.
pub(crate) fn variance_split(groups: &[Vec<f64>]) -> Option<VarianceSplit> {
    let groups: Vec<&Vec<f64>> = groups.iter().filter(|g| !g.is_empty()).collect();
    let k = groups.len();
    let n: usize = groups.iter().map(|g| g.len()).sum();
    if k < 2 || n <= k {
        return None;
    }
    let grand = groups.iter().flat_map(|g| g.iter()).sum::<f64>() / n as f64;
    let (mut ssb, mut ssw) = (0.0, 0.0);
    for g in &groups {
        let m = g.iter().sum::<f64>() / g.len() as f64;
        ssb += g.len() as f64 * (m - grand).powi(2);
        ssw += g.iter().map(|v| (v - m).powi(2)).sum::<f64>();
    }
    let (msb, msw) = (ssb / (k - 1) as f64, ssw / (n - k) as f64);
    let sum_sq: f64 = groups.iter().map(|g| (g.len() * g.len()) as f64).sum();
    let n0 = (n as f64 - sum_sq / n as f64) / (k - 1) as f64;
    Some(VarianceSplit { within: msw, between: ((msb - msw) / n0).max(0.0) })
}

/// A linear trend of the samples against their iteration index within each fork.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Trend {
    /// Change per iteration (pooled within-fork least-squares slope).
    pub slope: f64,
    /// Standard error of the slope.
    pub stderr: f64,
    /// Two-sided p-value of "no slope" (Student t, N - forks - 1 degrees of freedom).
    pub p_value: f64,
}

/// The pooled within-fork trend of `groups`; `None` with too few iterations to fit one.
/// For a single fork this is ordinary least squares (`scipy.stats.linregress`).
pub(crate) fn trend(groups: &[Vec<f64>]) -> Option<Trend> {
    let (mut sxx, mut sxy, mut syy, mut n, mut k) = (0.0, 0.0, 0.0, 0usize, 0usize);
    for g in groups.iter().filter(|g| g.len() >= 2) {
        let len = g.len() as f64;
        let (mx, my) = ((len - 1.0) / 2.0, g.iter().sum::<f64>() / len);
        for (i, y) in g.iter().enumerate() {
            let (dx, dy) = (i as f64 - mx, y - my);
            sxx += dx * dx;
            sxy += dx * dy;
            syy += dy * dy;
        }
        n += g.len();
        k += 1;
    }
    let df = n.checked_sub(k + 1).filter(|&d| d > 0)? as f64;
    if sxx == 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let rss = (syy - slope * sxy).max(0.0);
    let stderr = (rss / df / sxx).sqrt();
    let p_value = if stderr == 0.0 {
        if slope == 0.0 { 1.0 } else { 0.0 }
    } else {
        let t = StudentsT::new(0.0, 1.0, df).ok()?;
        2.0 * (1.0 - t.cdf((slope / stderr).abs()))
    };
    Some(Trend { slope, stderr, p_value })
}

/// Threshold of the modified z-score above which a sample is an outlier (Iglewicz and Hoaglin).
pub(crate) const OUTLIER_Z: f64 = 3.5;

/// Indices of the outliers of `xs` by the modified z-score `0.6745 (x - median) / MAD` above
/// [`OUTLIER_Z`] in absolute value: Iglewicz and Hoaglin's rule. With a MAD of zero every
/// value off the median is an outlier.
pub(crate) fn outliers(xs: &[f64]) -> Vec<usize> {
    if xs.len() < 3 {
        return vec![];
    }
    let Some(med) = super::median(xs) else { return vec![] };
    let deviations: Vec<f64> = xs.iter().map(|x| (x - med).abs()).collect();
    let Some(mad) = super::median(&deviations) else { return vec![] };
    (0..xs.len())
        .filter(|&i| if mad == 0.0 { xs[i] != med } else { (0.6745 * (xs[i] - med) / mad).abs() > OUTLIER_Z })
        .collect()
}

/// Forks needed so that the `confidence` interval of the mean of fork means is within
/// `precision` (a fraction, 0.01 for ±1%) of the mean, from the spread of `fork_means`
/// (as pyperf estimates it). `None` with fewer than two forks or a mean of zero.
pub(crate) fn forks_needed(fork_means: &[f64], precision: f64, confidence: f64) -> Option<u32> {
    let s = super::summarize(fork_means)?;
    if s.n < 2 || s.mean == 0.0 || !s.stdev.is_finite() {
        return None;
    }
    let target = precision * s.mean.abs();
    if s.stdev == 0.0 {
        return Some(2);
    }
    let q = 1.0 - (1.0 - confidence) / 2.0;
    (2u32..=1_000_000).find(|&n| student_t_quantile(q, f64::from(n - 1)) * s.stdev / f64::from(n).sqrt() <= target)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol, "{a} != {b} (tol {tol})");
    }

    #[test]
    fn variance_split_of_a_known_layout() {
        // Means 2 and 5: MSB = 13.5, MSW = 1, n0 = 3, between = 12.5 / 3.
        let s = variance_split(&[vec![1.0, 2.0, 3.0], vec![4.0, 5.0, 6.0]]).unwrap();
        close(s.within, 1.0, 1e-12);
        close(s.between, 12.5 / 3.0, 1e-12);
        close(s.between_share(), (12.5 / 3.0) / (12.5 / 3.0 + 1.0), 1e-12);
        let agreeing = variance_split(&[vec![1.0, 3.0], vec![1.0, 3.0]]).unwrap();
        assert_eq!(agreeing.between, 0.0);
        assert!(variance_split(&[vec![1.0, 2.0]]).is_none());
        assert!(variance_split(&[vec![1.0], vec![2.0]]).is_none());
    }

    #[test]
    fn trend_matches_linregress() {
        // scipy.stats.linregress([0..5], [10, 12, 11, 15, 14]): slope 1.1, stderr 0.41231, p 0.075826.
        let t = trend(&[vec![10.0, 12.0, 11.0, 15.0, 14.0]]).unwrap();
        close(t.slope, 1.1, 1e-12);
        close(t.stderr, 0.41231056256176596, 1e-12);
        close(t.p_value, 0.07582649117357951, 1e-9);
    }

    #[test]
    fn trend_pools_forks_around_their_own_means() {
        // Each fork rises by 1 per iteration; their levels differ by 100, which is not a trend.
        let t = trend(&[vec![1.0, 2.0, 3.0], vec![101.0, 102.0, 103.0]]).unwrap();
        close(t.slope, 1.0, 1e-12);
        assert_eq!(t.p_value, 0.0);
        let flat = trend(&[vec![5.0, 5.0, 5.0], vec![9.0, 9.0, 9.0]]).unwrap();
        assert_eq!((flat.slope, flat.p_value), (0.0, 1.0));
        assert!(trend(&[vec![1.0, 2.0]]).is_none(), "two points leave no degrees of freedom");
    }

    #[test]
    fn outliers_by_modified_z_score() {
        // median 10.1, MAD 0.1: z(14) = 0.6745 * 3.9 / 0.1 = 26.3, z(9.9) = 1.35.
        assert_eq!(outliers(&[10.0, 10.2, 9.9, 10.1, 14.0]), vec![4]);
        assert_eq!(outliers(&[5.0, 5.0, 5.0, 9.0]), vec![3]);
        assert!(outliers(&[1.0, 2.0, 3.0, 4.0]).is_empty());
    }

    #[test]
    fn forks_needed_for_one_percent_at_95() {
        // Fork means 98, 100, 102: stdev 2 (2%). scipy: the smallest n with
        // t.ppf(0.975, n - 1) * 2 / sqrt(n) <= 1 is 18.
        assert_eq!(forks_needed(&[98.0, 100.0, 102.0], 0.01, 0.95), Some(18));
        assert_eq!(forks_needed(&[98.0, 102.0], 0.01, 0.95).map(|n| n > 10), Some(true));
        assert_eq!(forks_needed(&[100.0, 100.0], 0.01, 0.95), Some(2));
        assert_eq!(forks_needed(&[100.0], 0.01, 0.95), None);
    }
}
