//! Code layout as a random effect (`harness ab --layouts K`).
//!
//! Every build places its functions somewhere, and where they land moves the speed of code that
//! did not change (Mytkowicz et al., ASPLOS 2009). One build per side is one draw of that
//! layout effect per side: a paired test over its fork pairs sees the noise between forks but
//! not the layout, so it can call a layout's luck a change. With layout variants (each side
//! relinked with its functions in the order of seed *i*, the same order for the functions both
//! builds have), fork pair *j* runs variant `j mod K` of both builds and the model of a pair's
//! log ratio is
//!
//! `log r_ij = mu + (L_i^new - L_i^base) + e_ij`,
//!
//! with a random layout effect per variant and per side (correlated between the sides, since both
//! lay out their shared code alike: their difference is what the layout does to the change, and
//! it is smaller the less the change moves). The unit of the test is then the
//! variant, not the pair: [`layout_units`] turns the pairs into one value per variant (the
//! geometric mean of its pairs' ratios), and the paired t-test on those K values (K - 1 degrees
//! of freedom) holds its level whatever the layout variance, because the variant means are
//! independent draws of the same distribution (balanced variants; the runner runs whole rounds).
//! Where every pair ran a variant of its own, the units are the pairs themselves.

/// One value per code-layout variant: the geometric mean of the ratios of the fork pairs that ran
/// it, in the order the variants first appear. `pairs` are (variant, new/base) of each fork pair;
/// pairs without a variant (no `--layouts`) are their own units, unchanged.
pub(crate) fn layout_units(pairs: &[(Option<u32>, f64)]) -> Vec<f64> {
    if pairs.iter().any(|(layout, _)| layout.is_none()) {
        return pairs.iter().map(|p| p.1).collect();
    }
    let mut groups: Vec<(u32, Vec<f64>)> = vec![];
    for &(layout, ratio) in pairs {
        let layout = layout.expect("checked above");
        match groups.iter_mut().find(|(l, _)| *l == layout) {
            Some((_, ratios)) => ratios.push(ratio),
            None => groups.push((layout, vec![ratio])),
        }
    }
    groups.into_iter().filter_map(|(_, ratios)| super::geometric_mean(ratios)).collect()
}

#[cfg(test)]
mod tests {
    use super::layout_units;
    use crate::stats::fork_test::paired;
    use crate::stats::sequential::{SequentialPlan, SequentialStop, decide};
    use rand::rngs::Xoshiro256PlusPlus;
    use rand::{RngExt, SeedableRng};

    /// A standard normal draw (Box-Muller).
    fn normal(rng: &mut Xoshiro256PlusPlus) -> f64 {
        let u1: f64 = 1.0 - rng.random::<f64>();
        let u2: f64 = rng.random::<f64>();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// The log ratios of `variants` x `per_variant` fork pairs of two builds with the same code:
    /// each variant draws a layout effect per side (sd `layout_sd`), each pair a noise (`noise_sd`).
    fn null_pairs(
        rng: &mut Xoshiro256PlusPlus,
        variants: u32,
        per_variant: u32,
        layout_sd: f64,
        noise_sd: f64,
    ) -> Vec<(Option<u32>, f64)> {
        let mut pairs = vec![];
        for v in 0..variants {
            let effect = layout_sd * (normal(rng) - normal(rng));
            for _ in 0..per_variant {
                pairs.push((Some(v), (effect + noise_sd * normal(rng)).exp()));
            }
        }
        pairs
    }

    /// Share of `trials` null comparisons in which `reject` rejects.
    fn alarm_rate(trials: usize, mut reject: impl FnMut(&mut Xoshiro256PlusPlus) -> bool) -> f64 {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x6c61_796f_7574);
        (0..trials).filter(|_| reject(&mut rng)).count() as f64 / trials as f64
    }

    /// The 99.9% binomial interval of a rate `alpha` over `trials` (normal approximation).
    fn binomial_interval(alpha: f64, trials: usize) -> (f64, f64) {
        let sd = (alpha * (1.0 - alpha) / trials as f64).sqrt();
        (alpha - 3.29 * sd, alpha + 3.29 * sd)
    }

    #[test]
    fn pairs_of_one_variant_become_one_unit_and_pairs_without_variants_stay() {
        let units = layout_units(&[(Some(3), 1.1), (Some(5), 0.9), (Some(3), 1.1f64.powi(3))]);
        assert_eq!(units.len(), 2);
        assert!((units[0] - 1.1f64.powi(2)).abs() < 1e-12 && (units[1] - 0.9).abs() < 1e-12);
        assert_eq!(layout_units(&[(None, 1.2), (None, 0.8)]), vec![1.2, 0.8]);
    }

    #[test]
    fn the_variant_unit_holds_alpha_where_the_pair_unit_does_not() {
        // 6 variants x 4 pairs, layout effects 4x the noise between forks (as measured in issue
        // 24: a layout moved sql/thread_select_by_id by ~2-3% against ~0.5% fork noise).
        let (trials, alpha) = (4000, 0.05);
        let by_variant = alarm_rate(trials, |rng| {
            let pairs = null_pairs(rng, 6, 4, 0.02, 0.005);
            paired(&layout_units(&pairs), 1.0 - alpha).is_some_and(|t| t.p_value < alpha)
        });
        let (low, high) = binomial_interval(alpha, trials);
        assert!((low..=high).contains(&by_variant), "variant unit: {by_variant} outside {low}..{high}");
        let by_pair = alarm_rate(trials, |rng| {
            let pairs: Vec<f64> = null_pairs(rng, 6, 4, 0.02, 0.005).into_iter().map(|p| p.1).collect();
            paired(&pairs, 1.0 - alpha).is_some_and(|t| t.p_value < alpha)
        });
        assert!(by_pair > 3.0 * alpha, "the pair unit ignores the layout variance: {by_pair}");
    }

    #[test]
    fn the_variant_unit_holds_alpha_without_layout_variance_too() {
        let (trials, alpha) = (4000, 0.05);
        let rate = alarm_rate(trials, |rng| {
            paired(&layout_units(&null_pairs(rng, 5, 3, 0.0, 0.01)), 1.0 - alpha).is_some_and(|t| t.p_value < alpha)
        });
        let (low, high) = binomial_interval(alpha, trials);
        assert!((low..=high).contains(&rate), "{rate} outside {low}..{high}");
    }

    #[test]
    fn sequential_looks_with_a_variant_per_pair_hold_alpha() {
        // --forks auto --layouts K with K >= --max-forks: every look's pairs ran variants of
        // their own, so each pair is a draw of layout and noise together.
        let (trials, alpha) = (2000, 0.05);
        let plan = SequentialPlan::new(alpha, 5, 12);
        let rate = alarm_rate(trials, |rng| {
            let pairs = null_pairs(rng, 12, 1, 0.02, 0.005);
            (plan.min_pairs..=plan.max_pairs).any(|n| {
                let (test, stop) = decide(&layout_units(&pairs[..n]), &plan, 0.0);
                stop == Some(SequentialStop::OutsideBand) && test.is_some()
            })
        });
        let (_, high) = binomial_interval(alpha, trials);
        assert!(rate <= high, "sequential false alarms {rate} above {high}");
    }
}
