//! A two-level (hierarchical) bootstrap of the ratio of two means.
//!
//! Iterations of one fork share that fork's process, heap layout and CPU placement, so they are
//! not independent draws: resampling iterations alone would ignore the fork-to-fork spread and
//! give an interval that is too narrow. Each resample therefore draws forks with replacement,
//! then iterations with replacement within each drawn fork. The generator is seeded, so the same
//! reports always print the same interval.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

/// Resamples drawn by [`ratio_interval`].
pub const RESAMPLES: usize = 10_000;

/// Seed of the bootstrap generator: the same input gives the same interval.
const SEED: u64 = 0x0068_6172_6e65_7373;

/// A confidence interval for `mean(new) / mean(base)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatioInterval {
    /// Ratio of the plain means.
    pub ratio: f64,
    /// Lower bound.
    pub lower: f64,
    /// Upper bound.
    pub upper: f64,
}

/// Mean of every value of every group.
pub fn grand_mean(groups: &[Vec<f64>]) -> Option<f64> {
    let (sum, n) = groups.iter().flatten().fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

fn resample_mean(groups: &[&Vec<f64>], rng: &mut Xoshiro256PlusPlus) -> f64 {
    let (mut sum, mut n) = (0.0, 0usize);
    for _ in 0..groups.len() {
        let g = groups[rng.random_range(0..groups.len())];
        for _ in 0..g.len() {
            sum += g[rng.random_range(0..g.len())];
        }
        n += g.len();
    }
    sum / n as f64
}

fn non_empty(groups: &[Vec<f64>]) -> Vec<&Vec<f64>> {
    groups.iter().filter(|v| !v.is_empty()).collect()
}

/// The percentile interval at `confidence` for the ratio of the means of `new` to `base`, each
/// given as its forks' samples. `None` without data or with a base mean of zero.
pub fn ratio_interval(base: &[Vec<f64>], new: &[Vec<f64>], confidence: f64) -> Option<RatioInterval> {
    let (b, n) = (non_empty(base), non_empty(new));
    let (bm, nm) = (grand_mean(base)?, grand_mean(new)?);
    if b.is_empty() || n.is_empty() || bm == 0.0 {
        return None;
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(SEED);
    let mut ratios: Vec<f64> = (0..RESAMPLES)
        .map(|_| resample_mean(&n, &mut rng) / resample_mean(&b, &mut rng))
        .filter(|r| r.is_finite())
        .collect();
    ratios.sort_by(f64::total_cmp);
    let alpha = (1.0 - confidence) / 2.0;
    let at = |q: f64| ratios[((q * (ratios.len() - 1) as f64).round() as usize).min(ratios.len() - 1)];
    Some(RatioInterval { ratio: nm / bm, lower: at(alpha), upper: at(1.0 - alpha) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_constant_samples_give_a_point() {
        let a = vec![vec![10.0; 3], vec![10.0; 3]];
        let r = ratio_interval(&a, &a, 0.95).unwrap();
        assert_eq!((r.ratio, r.lower, r.upper), (1.0, 1.0, 1.0));
    }

    #[test]
    fn a_clear_shift_is_bracketed_and_excludes_one() {
        let base = vec![vec![100.0, 101.0, 99.0], vec![103.0, 102.0, 104.0]];
        let new: Vec<Vec<f64>> = base.iter().map(|f| f.iter().map(|v| v * 0.8).collect()).collect();
        let r = ratio_interval(&base, &new, 0.95).unwrap();
        assert!((r.ratio - 0.8).abs() < 1e-12);
        assert!(r.lower < 0.8 && 0.8 < r.upper || (r.lower - 0.8).abs() < 0.02, "{r:?}");
        assert!(r.upper < 0.9, "{r:?}");
    }

    #[test]
    fn fork_to_fork_spread_widens_the_interval() {
        // Same iterations, arranged as one tight fork per level or spread over forks.
        let tight = vec![vec![100.0, 100.5, 99.5, 110.0, 110.5, 109.5]];
        let split = vec![vec![100.0, 100.5, 99.5], vec![110.0, 110.5, 109.5]];
        let a = ratio_interval(&tight, &tight, 0.95).unwrap();
        let b = ratio_interval(&split, &split, 0.95).unwrap();
        assert!(b.upper - b.lower > a.upper - a.lower, "{a:?} {b:?}");
        assert_eq!(ratio_interval(&split, &split, 0.95), Some(b), "seeded: the same every time");
    }

    #[test]
    fn empty_or_zero_base_has_no_interval() {
        assert!(ratio_interval(&[], &[vec![1.0]], 0.95).is_none());
        assert!(ratio_interval(&[vec![0.0]], &[vec![1.0]], 0.95).is_none());
        assert_eq!(grand_mean(&[vec![1.0, 2.0], vec![3.0]]), Some(2.0));
    }
}
