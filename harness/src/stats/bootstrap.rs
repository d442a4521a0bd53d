//! The percentile bootstrap over paired units (Efron & Tibshirani, *An Introduction to the
//! Bootstrap*, 1993, ch. 13): the other test `compare --metric latency` can run on the log ratio
//! of each fork pair's percentile, beside [`super::fork_test::paired`]. It assumes nothing of the
//! units' distribution, but with few units its interval is too narrow (it cannot see past the
//! spread of the units it has); `scripts/calibrate --only latency` measures both on this machine.

use super::fork_test::ForkTest;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

/// Resamples drawn: the interval's ends move by well under 0.1% of a ratio between seeds.
pub(crate) const RESAMPLES: usize = 10_000;

/// The percentile bootstrap of the mean log ratio of `ratios` (one per unit, new/base), its
/// interval at `confidence` mapped back to a ratio; the p-value is twice the share of resampled
/// means on the far side of no change. Seeded, so one report gives one answer. `None` with
/// fewer than two units or a ratio that is not positive.
pub(crate) fn paired(ratios: &[f64], confidence: f64) -> Option<ForkTest> {
    let logs: Vec<f64> = ratios.iter().map(|&r| (r > 0.0 && r.is_finite()).then(|| r.ln())).collect::<Option<_>>()?;
    let n = logs.len();
    if n < 2 {
        return None;
    }
    let mean = logs.iter().sum::<f64>() / n as f64;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x6274_7374_7261_7021);
    let mut means: Vec<f64> =
        (0..RESAMPLES).map(|_| (0..n).map(|_| logs[rng.random_range(0..n)]).sum::<f64>() / n as f64).collect();
    means.sort_by(f64::total_cmp);
    let at = |q: f64| means[((q * RESAMPLES as f64).floor() as usize).min(RESAMPLES - 1)];
    let tail = (1.0 - confidence) / 2.0;
    let below = means.iter().filter(|&&m| m <= 0.0).count() as f64 / RESAMPLES as f64;
    let above = means.iter().filter(|&&m| m >= 0.0).count() as f64 / RESAMPLES as f64;
    Some(ForkTest {
        ratio: mean.exp(),
        lower: at(tail).exp(),
        upper: at(1.0 - tail).exp(),
        p_value: (2.0 * below.min(above)).min(1.0),
        df: (n - 1) as f64,
        units: (n, n),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_many_normal_units_the_bootstrap_agrees_with_the_t_interval() {
        // 200 log ratios spread evenly over the normal quantiles (mean 0.02, sd 0.05): for a large
        // sample the percentile bootstrap of a mean and the t interval agree to a few percent.
        let normal = statrs::distribution::Normal::new(0.02, 0.05).unwrap();
        use statrs::distribution::ContinuousCDF;
        let ratios: Vec<f64> = (0..200).map(|i| normal.inverse_cdf((i as f64 + 0.5) / 200.0).exp()).collect();
        let (b, t) = (paired(&ratios, 0.95).unwrap(), super::super::fork_test::paired(&ratios, 0.95).unwrap());
        assert!((b.ratio - t.ratio).abs() < 1e-12);
        let (bw, tw) = (b.upper.ln() - b.lower.ln(), t.upper.ln() - t.lower.ln());
        assert!((bw / tw - 1.0).abs() < 0.05, "bootstrap width {bw}, t width {tw}");
        assert!(b.p_value < 1e-3 && b.lower > 1.0, "{b:?}");
    }

    #[test]
    fn few_units_give_a_narrower_interval_than_t_and_degenerate_inputs_are_handled() {
        let ratios: Vec<f64> = [0.01f64, -0.02, 0.03, 0.015, -0.005].iter().map(|d| d.exp()).collect();
        let (b, t) = (paired(&ratios, 0.95).unwrap(), super::super::fork_test::paired(&ratios, 0.95).unwrap());
        assert!(b.upper.ln() - b.lower.ln() < t.upper.ln() - t.lower.ln(), "{b:?} vs {t:?}");
        assert!(b.lower < 1.0 && b.upper > 1.0 && b.p_value > 0.05);
        assert!(paired(&[1.1], 0.95).is_none() && paired(&[1.0, 0.0], 0.95).is_none());
        let same = paired(&[1.2, 1.2, 1.2], 0.95).unwrap();
        assert_eq!((same.lower, same.upper, same.p_value), (same.ratio, same.ratio, 0.0));
    }
}
