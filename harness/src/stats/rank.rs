//! The Mann-Whitney U test (Wilcoxon rank-sum), two-sided: does one sample tend to be larger
//! than the other? A rank test assumes no distribution shape, so the long right tail of timings
//! (a preemption, a page fault) cannot decide the verdict the way it can in a t-test.
//!
//! Iterations of one fork are not independent draws (they share a process layout and a CPU).
//! [`mann_whitney_u_clustered`] inflates the variance of U by the design effect
//! `1 + (m - 1) * ICC` (m iterations per fork, ICC the share of variance between forks), the
//! standard correction for clustered samples, so that many iterations of few forks do not
//! pass for many independent observations.

use statrs::distribution::{ContinuousCDF, Normal};

/// Result of [`mann_whitney_u`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankTest {
    /// U of the first sample: pairs (x, y) with x > y, ties counting one half.
    pub u: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// True when the p-value comes from the exact distribution of U (no ties, small samples,
    /// no clustering); false for the normal approximation with tie and continuity corrections.
    pub exact: bool,
    /// Factor the variance of U was inflated by for clustering (1 for independent samples).
    pub design_effect: f64,
}

/// Largest combined sample size for the exact distribution.
const EXACT_MAX_N: usize = 120;

/// The two-sided Mann-Whitney U test of `x` against `y`; `None` when either is empty.
/// Matches `scipy.stats.mannwhitneyu(x, y, method="auto")` for small samples without ties,
/// and `method="asymptotic"` otherwise.
pub fn mann_whitney_u(x: &[f64], y: &[f64]) -> Option<RankTest> {
    mann_whitney_u_inflated(x, y, 1.0)
}

/// The test over every value of the forks in `x` and `y`, its variance inflated by the design
/// effect of their clustering into forks (see the module documentation).
pub fn mann_whitney_u_clustered(x: &[Vec<f64>], y: &[Vec<f64>]) -> Option<RankTest> {
    let flat = |g: &[Vec<f64>]| g.iter().flatten().copied().collect::<Vec<f64>>();
    mann_whitney_u_inflated(&flat(x), &flat(y), design_effect(x, y))
}

/// `1 + (m - 1) * ICC`, with m the mean iterations per fork and ICC the share of variance
/// between forks of the log values, each side centred on its own mean so that a real
/// difference between the sides does not count as clustering. 1 when it cannot be estimated.
pub fn design_effect(x: &[Vec<f64>], y: &[Vec<f64>]) -> f64 {
    let centred = |g: &[Vec<f64>]| -> Vec<Vec<f64>> {
        let logs: Vec<Vec<f64>> = g.iter().map(|f| f.iter().filter(|v| **v > 0.0).map(|v| v.ln()).collect()).collect();
        let all: Vec<f64> = logs.iter().flatten().copied().collect();
        let mean = all.iter().sum::<f64>() / all.len().max(1) as f64;
        logs.into_iter().map(|f| f.into_iter().map(|v| v - mean).collect()).collect()
    };
    let mut groups = centred(x);
    groups.extend(centred(y));
    groups.retain(|g| !g.is_empty());
    let n: usize = groups.iter().map(Vec::len).sum();
    match super::spread::variance_split(&groups) {
        Some(s) if groups.len() < n => 1.0 + (n as f64 / groups.len() as f64 - 1.0) * s.between_share(),
        _ => 1.0,
    }
}

fn mann_whitney_u_inflated(x: &[f64], y: &[f64], design_effect: f64) -> Option<RankTest> {
    let (n1, n2) = (x.len(), y.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let mut all: Vec<(f64, bool)> = x.iter().map(|&v| (v, true)).chain(y.iter().map(|&v| (v, false))).collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = all.len();
    // Midranks; tie groups also feed the variance correction.
    let (mut rank_sum_x, mut tie_term, mut ties) = (0.0, 0.0, false);
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        let mid = (i + j) as f64 / 2.0 + 1.0;
        rank_sum_x += all[i..=j].iter().filter(|e| e.1).count() as f64 * mid;
        if t > 1.0 {
            ties = true;
            tie_term += t * t * t - t;
        }
        i = j + 1;
    }
    let (f1, f2) = (n1 as f64, n2 as f64);
    let u = rank_sum_x - f1 * (f1 + 1.0) / 2.0;
    let u_big = u.max(f1 * f2 - u);
    if !ties && n <= EXACT_MAX_N && design_effect <= 1.0 {
        let p = (2.0 * exact_upper_tail(n1, n2, u_big.round() as usize)).min(1.0);
        return Some(RankTest { u, p_value: p, exact: true, design_effect: 1.0 });
    }
    let nf = n as f64;
    let variance = f1 * f2 / 12.0 * ((nf + 1.0) - tie_term / (nf * (nf - 1.0))) * design_effect.max(1.0);
    let p = if variance <= 0.0 {
        1.0
    } else {
        let z = (u_big - f1 * f2 / 2.0 - 0.5) / variance.sqrt();
        let normal = Normal::new(0.0, 1.0).expect("standard normal");
        (2.0 * (1.0 - normal.cdf(z))).clamp(0.0, 1.0)
    };
    Some(RankTest { u, p_value: p, exact: false, design_effect: design_effect.max(1.0) })
}

/// P(U >= u) under the null for sample sizes `m` and `n`, from the coefficients of the
/// Gaussian binomial `[m + n choose m]_q` (the number of arrangements with each U).
fn exact_upper_tail(m: usize, n: usize, u: usize) -> f64 {
    let len = m * n + 1;
    let mut c = vec![0i128; len];
    c[0] = 1;
    // [n + i choose i] = [n + i - 1 choose i - 1] * (1 - q^(n+i)) / (1 - q^i): every
    // intermediate polynomial has integer coefficients.
    for i in 1..=m {
        let k = n + i;
        for d in (k..len).rev() {
            c[d] -= c[d - k];
        }
        for d in i..len {
            c[d] += c[d - i];
        }
    }
    let total: f64 = c.iter().map(|&v| v as f64).sum();
    let upper: f64 = c[u.min(len)..].iter().map(|&v| v as f64).sum();
    upper / total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol, "{a} != {b} (tol {tol})");
    }

    #[test]
    #[allow(clippy::approx_constant, reason = "3.14 is a data point of the published example")]
    fn scipy_documentation_example() {
        // scipy.stats.mannwhitneyu docs (Conover): the samples hold ties (1.06, 1.29), so the
        // corrected normal approximation applies: p = 0.1329 (`method="asymptotic"`).
        let x = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30];
        let y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29];
        let t = mann_whitney_u(&x, &y).unwrap();
        assert_eq!(t.u, 58.0);
        assert!(!t.exact);
        close(t.p_value, 0.13291945818531892, 1e-9);
    }

    #[test]
    fn exact_small_samples() {
        let t = mann_whitney_u(&[19.0, 22.0, 16.0, 29.0, 24.0], &[20.0, 11.0, 17.0, 12.0]).unwrap();
        assert_eq!(t.u, 17.0);
        close(t.p_value, 0.1111111111111111, 1e-12);
        // Complete separation: 2/C(6,3) and 2/C(8,4).
        close(mann_whitney_u(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap().p_value, 0.1, 1e-12);
        let t = mann_whitney_u(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]).unwrap();
        assert_eq!(t.u, 0.0);
        close(t.p_value, 0.02857142857142857, 1e-12);
    }

    #[test]
    fn ties_use_the_corrected_normal_approximation() {
        let t = mann_whitney_u(&[1.0, 2.0, 2.0, 3.0, 4.0, 5.0, 5.0, 6.0], &[3.0, 3.0, 4.0, 6.0, 7.0, 7.0, 8.0, 9.0])
            .unwrap();
        assert!(!t.exact);
        assert_eq!(t.u, 13.0);
        close(t.p_value, 0.05047987865939703, 1e-9);
    }

    #[test]
    fn clustering_inflates_the_variance_by_the_design_effect() {
        // Two forks per side, iterations identical within a fork: all variance lies between
        // forks (ICC = 1), so 3 iterations per fork count as one: design effect 3.
        let x = vec![vec![10.0; 3], vec![12.0; 3]];
        let y = vec![vec![11.0; 3], vec![13.0; 3]];
        let d = design_effect(&x, &y);
        assert!((d - 3.0).abs() < 1e-12, "{d}");
        // U = 9 (ties), mean 18, tie-corrected variance 36 / 12 * (13 - 4 * 24 / 132) * 3.
        let t = mann_whitney_u_clustered(&x, &y).unwrap();
        let variance: f64 = 3.0 * (13.0 - 96.0 / 132.0) * 3.0;
        let z = (27.0 - 18.0 - 0.5) / variance.sqrt();
        let normal = Normal::new(0.0, 1.0).unwrap();
        close(t.p_value, 2.0 * (1.0 - normal.cdf(z)), 1e-12);
        assert_eq!(t.design_effect, 3.0);
        // Independent-looking forks (no between-fork variance): no inflation, exact test.
        let flat = vec![vec![1.0, 3.0, 2.0], vec![2.5, 1.5, 3.5]];
        assert_eq!(design_effect(&flat, &flat), 1.0);
        assert_eq!(design_effect(&[vec![1.0, 2.0]], &[vec![3.0, 4.0]]), 1.0, "one fork per side: not estimable");
    }

    #[test]
    fn identical_and_empty_samples() {
        let same = mann_whitney_u(&[5.0; 6], &[5.0; 6]).unwrap();
        assert_eq!(same.p_value, 1.0);
        assert!(mann_whitney_u(&[], &[1.0]).is_none());
        let t = mann_whitney_u(&[1.0, 3.0, 5.0], &[2.0, 4.0, 6.0]).unwrap();
        close(t.p_value, 0.7, 1e-12);
    }
}
