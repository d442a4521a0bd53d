//! Tests whose unit is the fork: a process is the unit of replication, so each fork contributes
//! one number, the log of its mean throughput, and iterations only make that number precise.
//!
//! - Two separate runs: [`welch`], Welch's t-test on the log fork values (medians) of each side.
//! - An A/B run: [`paired`], a one-sample t-test on the log ratio new/base of each fork pair
//!   (baseline fork i and this build's fork i ran back to back).
//!
//! Both give the ratio new/base as `exp` of the mean log difference, with a Student-t interval
//! on the same scale, so the interval and the p-value come from the same units.

use super::student_t_quantile;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// A test of "no difference" between the two sides, on the log scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ForkTest {
    /// Geometric-mean ratio new/base.
    pub ratio: f64,
    /// Lower bound of the ratio's interval.
    pub lower: f64,
    /// Upper bound of the ratio's interval.
    pub upper: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// Degrees of freedom of the t statistic.
    pub df: f64,
    /// Forks (or pairs) on each side that entered the test.
    pub units: (usize, usize),
}

impl ForkTest {
    /// The same test of base/new instead of new/base (a latency ratio read as a speed ratio).
    pub(crate) fn inverse(&self) -> ForkTest {
        ForkTest { ratio: 1.0 / self.ratio, lower: 1.0 / self.upper, upper: 1.0 / self.lower, ..*self }
    }

    /// Whether the interval lies wholly outside `1 ± band` (a decided difference).
    pub(crate) fn outside_band(&self, band: f64) -> bool {
        self.upper < 1.0 - band || self.lower > 1.0 + band
    }

    /// Whether the interval lies wholly inside `1 ± band` (a decided "no change").
    pub(crate) fn inside_band(&self, band: f64) -> bool {
        self.lower >= 1.0 - band && self.upper <= 1.0 + band
    }
}

fn mean_var(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var)
}

fn logs(xs: &[f64]) -> Option<Vec<f64>> {
    xs.iter().map(|&x| (x > 0.0 && x.is_finite()).then(|| x.ln())).collect()
}

/// The t test of a log difference `diff` with standard error `se` and `df` degrees of freedom,
/// its interval at `confidence` mapped back to a ratio.
fn t_result(diff: f64, se: f64, df: f64, confidence: f64, units: (usize, usize)) -> ForkTest {
    if se == 0.0 || !se.is_finite() {
        let r = diff.exp();
        let p_value = if diff == 0.0 { 1.0 } else { 0.0 };
        return ForkTest { ratio: r, lower: r, upper: r, p_value, df, units };
    }
    let t = StudentsT::new(0.0, 1.0, df).expect("df > 0");
    let p_value = (2.0 * (1.0 - t.cdf((diff / se).abs()))).clamp(0.0, 1.0);
    let q = student_t_quantile(1.0 - (1.0 - confidence) / 2.0, df);
    ForkTest { ratio: diff.exp(), lower: (diff - q * se).exp(), upper: (diff + q * se).exp(), p_value, df, units }
}

/// Welch's t-test on the logs of the fork values of two separate runs; the ratio is new/base.
/// `None` with fewer than two forks on either side or a non-positive mean.
/// Matches `scipy.stats.ttest_ind(log(new), log(base), equal_var=False)`.
pub(crate) fn welch(base: &[f64], new: &[f64], confidence: f64) -> Option<ForkTest> {
    let (b, n) = (logs(base)?, logs(new)?);
    if b.len() < 2 || n.len() < 2 {
        return None;
    }
    let ((bm, bv), (nm, nv)) = (mean_var(&b), mean_var(&n));
    let (eb, en) = (bv / b.len() as f64, nv / n.len() as f64);
    let se2 = eb + en;
    let df = se2 * se2 / (eb * eb / (b.len() - 1) as f64 + en * en / (n.len() - 1) as f64);
    let df = if df.is_finite() { df } else { (b.len() + n.len() - 2) as f64 };
    Some(t_result(nm - bm, se2.sqrt(), df, confidence, (b.len(), n.len())))
}

/// The paired t-test on the log of each pair's ratio new/base (`ratios`, one per fork pair).
/// `None` with fewer than two pairs. Matches `scipy.stats.ttest_1samp(log(ratios), 0)`.
pub(crate) fn paired(ratios: &[f64], confidence: f64) -> Option<ForkTest> {
    let d = logs(ratios)?;
    if d.len() < 2 {
        return None;
    }
    let (m, v) = mean_var(&d);
    let n = d.len();
    Some(t_result(m, (v / n as f64).sqrt(), (n - 1) as f64, confidence, (n, n)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol, "{a} != {b} (tol {tol})");
    }

    #[test]
    fn welch_matches_scipy() {
        // scipy.stats.ttest_ind(log(new), log(base), equal_var=False):
        // statistic -2.9655940718695644, pvalue 0.03061447412581508, df 5.093082405717879,
        // confidence_interval(0.95) of the log difference (-0.09496044915301706, -0.007034687306670548).
        let base = [10.0, 10.5, 9.8, 10.2];
        let new = [9.5, 9.9, 9.4, 9.7, 9.6];
        let t = welch(&base, &new, 0.95).unwrap();
        close(t.p_value, 0.03061447412581508, 1e-9);
        close(t.df, 5.093082405717879, 1e-9);
        close(t.lower.ln(), -0.09496044915301706, 1e-7);
        close(t.upper.ln(), -0.007034687306670548, 1e-7);
        assert_eq!(t.units, (4, 5));
        assert!(t.outside_band(0.005) && !t.inside_band(0.01) && t.inside_band(0.5));
    }

    #[test]
    fn paired_matches_scipy() {
        // scipy.stats.ttest_1samp([0.01, -0.02, 0.03, 0.015, -0.005], 0): pvalue
        // 0.5225820763952053, confidence_interval(0.95) (-0.01780305832303895, 0.029803058323038947).
        let ratios: Vec<f64> = [0.01f64, -0.02, 0.03, 0.015, -0.005].iter().map(|d| d.exp()).collect();
        let t = paired(&ratios, 0.95).unwrap();
        close(t.p_value, 0.5225820763952053, 1e-9);
        close(t.lower.ln(), -0.01780305832303895, 1e-7);
        close(t.upper.ln(), 0.029803058323038947, 1e-7);
        close(t.ratio.ln(), 0.006, 1e-12);
        assert_eq!(t.df, 4.0);
        assert!(!t.outside_band(0.01) && !t.inside_band(0.01) && t.inside_band(0.05));
    }

    #[test]
    fn too_few_and_degenerate_inputs() {
        assert!(welch(&[1.0], &[1.0, 2.0], 0.95).is_none());
        assert!(welch(&[1.0, 0.0], &[1.0, 2.0], 0.95).is_none(), "a zero throughput has no log");
        assert!(paired(&[1.1], 0.95).is_none());
        let same = welch(&[5.0, 5.0], &[5.0, 5.0], 0.95).unwrap();
        assert_eq!((same.p_value, same.ratio), (1.0, 1.0));
        let shifted = paired(&[0.5, 0.5, 0.5], 0.95).unwrap();
        assert_eq!((shifted.p_value, shifted.lower, shifted.upper), (0.0, 0.5, 0.5));
    }
}
