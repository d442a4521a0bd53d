//! Forks until decisive: a group-sequential paired t-test.
//!
//! An A/B run with `--forks auto` looks at the paired test after every fork pair from
//! `min_pairs` to `max_pairs` and stops as soon as the interval of the ratio lies wholly outside
//! the noise band (a difference) or wholly inside it (no change). Testing every look at `alpha`
//! would raise the false-alarm rate well above `alpha`, so every look tests at one lower
//! *nominal* level (Pocock's boundary), chosen so that the chance that any look rejects a true
//! "no difference" is `alpha`. The nominal level is found by simulating null sequences of
//! normal log ratios (seeded, so it is the same number every time): the t statistic is pivotal,
//! so the level does not depend on the noise. Stopping for "inside the band" never raises an
//! alarm, so it can only lower the false-alarm rate.

use super::fork_test::{ForkTest, paired};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

/// Null sequences simulated to find the nominal level.
const SIMULATIONS: usize = 20_000;

/// Seed of the simulation.
const SEED: u64 = 0x706f_636f_636b;

/// How a sequential comparison looks and at what level.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SequentialPlan {
    /// The overall false-alarm rate.
    pub alpha: f64,
    /// First look, in fork pairs.
    pub min_pairs: usize,
    /// Last look: the budget.
    pub max_pairs: usize,
    /// The level every look tests at.
    pub nominal_alpha: f64,
}

impl SequentialPlan {
    /// The plan for looks after every pair from `min_pairs` to `max_pairs` (at least 2).
    pub(crate) fn new(alpha: f64, min_pairs: usize, max_pairs: usize) -> SequentialPlan {
        let min_pairs = min_pairs.max(2);
        let max_pairs = max_pairs.max(min_pairs);
        SequentialPlan { alpha, min_pairs, max_pairs, nominal_alpha: nominal_alpha(alpha, min_pairs, max_pairs) }
    }
}

/// Why a `--forks auto` case stopped adding fork pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SequentialStop {
    /// The interval of the ratio lay wholly outside the noise band: a difference.
    OutsideBand,
    /// The interval lay wholly inside the noise band: no change.
    InsideBand,
    /// `--max-forks` pairs ran without a decision.
    BudgetSpent,
}

/// The paired test of `ratios` at the plan's nominal level, and why to stop (`None`: run
/// another pair).
pub(crate) fn decide(ratios: &[f64], plan: &SequentialPlan, band: f64) -> (Option<ForkTest>, Option<SequentialStop>) {
    let test = paired(ratios, 1.0 - plan.nominal_alpha);
    let stop = match test {
        _ if ratios.len() < plan.min_pairs => None,
        Some(t) if t.outside_band(band) => Some(SequentialStop::OutsideBand),
        Some(t) if t.inside_band(band) => Some(SequentialStop::InsideBand),
        _ if ratios.len() >= plan.max_pairs => Some(SequentialStop::BudgetSpent),
        _ => None,
    };
    (test, stop)
}

/// About how many more pairs a case needs before a look decides it, for the progress line (an
/// estimate, never a decision): the interval's half-width shrinks as 1/sqrt(n), so the pairs at
/// which it would clear the nearer edge of the band from where its centre is now; at least one,
/// at most what is left of the budget.
pub(crate) fn pairs_left(test: Option<&ForkTest>, pairs: usize, plan: &SequentialPlan, band: f64) -> usize {
    let budget_left = plan.max_pairs.saturating_sub(pairs);
    let Some(t) = test.filter(|_| pairs >= 2) else {
        return plan.min_pairs.saturating_sub(pairs).max(1).min(budget_left);
    };
    let (lo, hi) = (t.lower.ln(), t.upper.ln());
    let (centre, half) = ((lo + hi) / 2.0, (hi - lo) / 2.0);
    let (edge_lo, edge_hi) = ((1.0 - band).ln(), (1.0 + band).ln());
    let room = if centre > edge_hi {
        centre - edge_hi
    } else if centre < edge_lo {
        edge_lo - centre
    } else {
        (edge_hi - centre).min(centre - edge_lo)
    };
    let needed = pairs as f64 * (half / room).powi(2);
    let more = if needed.is_finite() { (needed.ceil() as usize).saturating_sub(pairs) } else { budget_left };
    more.max(plan.min_pairs.saturating_sub(pairs)).clamp(1.min(budget_left), budget_left)
}

/// A standard normal draw (Box-Muller).
fn normal(rng: &mut Xoshiro256PlusPlus) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// |t| of the one-sample t statistic at every look `min..=max` of `SIMULATIONS` null sequences.
fn null_t_statistics(min: usize, max: usize) -> Vec<Vec<f64>> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(SEED);
    (0..SIMULATIONS)
        .map(|_| {
            let (mut sum, mut sum_sq) = (0.0, 0.0);
            let mut looks = Vec::with_capacity(max - min + 1);
            for n in 1..=max {
                let x = normal(&mut rng);
                sum += x;
                sum_sq += x * x;
                if n >= min {
                    let nf = n as f64;
                    let mean = sum / nf;
                    let var = (sum_sq - nf * mean * mean) / (nf - 1.0);
                    looks.push((mean / (var / nf).sqrt()).abs());
                }
            }
            looks
        })
        .collect()
}

/// Share of `sims` that cross `critical` (per look) at some look.
fn crossing_rate(sims: &[Vec<f64>], critical: &[f64]) -> f64 {
    let crossed = sims.iter().filter(|looks| looks.iter().zip(critical).any(|(t, c)| t >= c)).count();
    crossed as f64 / sims.len() as f64
}

/// The level each look of a paired t-test at `min..=max` pairs tests at so that the chance of
/// a false alarm at any look is `alpha` (Pocock's constant nominal level).
pub(crate) fn nominal_alpha(alpha: f64, min: usize, max: usize) -> f64 {
    if min >= max {
        return alpha;
    }
    let sims = null_t_statistics(min, max);
    let critical = |level: f64| -> Vec<f64> {
        (min..=max).map(|n| super::student_t_quantile(1.0 - level / 2.0, (n - 1) as f64)).collect()
    };
    let (mut lo, mut hi) = (alpha / (max - min + 1) as f64, alpha);
    for _ in 0..40 {
        let mid = (lo + hi) / 2.0;
        if crossing_rate(&sims, &critical(mid)) > alpha {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the stopping rule on one simulated sequence of log ratios with mean `shift` and
    /// standard deviation `sd`; returns the final test and the pairs used.
    fn simulate(
        plan: &SequentialPlan,
        band: f64,
        shift: f64,
        sd: f64,
        rng: &mut Xoshiro256PlusPlus,
    ) -> (ForkTest, usize) {
        let mut ratios = vec![];
        loop {
            ratios.push((shift + sd * normal(rng)).exp());
            let (test, decision) = decide(&ratios, plan, band);
            if decision.is_some() {
                return (test.expect("at least two pairs"), ratios.len());
            }
        }
    }

    #[test]
    fn the_nominal_level_is_below_alpha_and_one_look_is_alpha() {
        let plan = SequentialPlan::new(0.05, 5, 30);
        assert!(plan.nominal_alpha < 0.05 && plan.nominal_alpha > 0.05 / 26.0, "{plan:?}");
        assert_eq!(nominal_alpha(0.05, 5, 5), 0.05);
        assert_eq!(SequentialPlan::new(0.05, 1, 1).min_pairs, 2, "a paired test needs two pairs");
    }

    #[test]
    fn false_alarms_under_the_null_stay_within_the_binomial_interval_of_alpha() {
        // Band 0: every stop before the budget is an alarm, the hardest case for the rule.
        // 4,000 sequences: the 99% binomial interval of 5% is about 3.9%..6.1%.
        let plan = SequentialPlan::new(0.05, 5, 30);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let n = 4_000;
        let alarms = (0..n)
            .filter(|_| {
                let (t, _) = simulate(&plan, 0.0, 0.0, 0.02, &mut rng);
                t.p_value < plan.nominal_alpha
            })
            .count();
        let rate = alarms as f64 / n as f64;
        let half = 2.576 * (0.05f64 * 0.95 / n as f64).sqrt();
        assert!((rate - 0.05).abs() <= half, "false-alarm rate {rate} outside 0.05 ± {half}");
        // Looking at every pair at alpha instead would alarm far more often.
        let naive = SequentialPlan { nominal_alpha: 0.05, ..plan.clone() };
        let naive_alarms = (0..n).filter(|_| simulate(&naive, 0.0, 0.0, 0.02, &mut rng).0.p_value < 0.05).count();
        assert!(naive_alarms as f64 / n as f64 > 0.10, "naive looks: {naive_alarms} of {n}");
    }

    #[test]
    fn a_three_percent_slowdown_is_found_and_never_called_faster() {
        // Pair ratios spread 2% around 0.97, band 1%.
        let plan = SequentialPlan::new(0.05, 5, 30);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let runs: Vec<(ForkTest, usize)> =
            (0..1_000).map(|_| simulate(&plan, 0.01, 0.97f64.ln(), 0.02, &mut rng)).collect();
        let slower = runs.iter().filter(|(t, _)| t.outside_band(0.01) && t.ratio < 1.0).count();
        let faster = runs.iter().filter(|(t, _)| t.ratio > 1.0 && t.p_value < plan.nominal_alpha).count();
        assert!(slower >= 950, "found {slower} of 1000");
        assert_eq!(faster, 0);
        let mut pairs: Vec<usize> = runs.iter().map(|r| r.1).collect();
        pairs.sort_unstable();
        assert!(pairs[pairs.len() / 2] < 20, "median pairs {}", pairs[pairs.len() / 2]);
    }

    #[test]
    fn pairs_left_follows_the_interval_and_stays_within_the_budget() {
        let plan = SequentialPlan::new(0.05, 5, 30);
        let test = |ratio: f64, half: f64| ForkTest {
            ratio,
            lower: ratio * (-half).exp(),
            upper: ratio * half.exp(),
            p_value: 0.5,
            df: 9.0,
            units: (10, 10),
        };
        // Centre 0.02 (log) below the band, half-width 0.04: the interval must halve, so four
        // times the pairs, 40 in all: capped at the 20 left of the budget.
        let below = (0.99f64.ln() - 0.02).exp();
        assert_eq!(pairs_left(Some(&test(below, 0.04)), 10, &plan, 0.01), 20);
        // Half-width 0.024 with 0.02 of room: 10 * 1.2^2 = 14.4 pairs, so 5 more.
        assert_eq!(pairs_left(Some(&test(below, 0.024)), 10, &plan, 0.01), 5);
        // Centred on no change with plenty of room: one more look.
        assert_eq!(pairs_left(Some(&test(1.0, 0.001)), 10, &plan, 0.01), 1);
        // Before the first look: the pairs up to it.
        assert_eq!(pairs_left(None, 2, &plan, 0.01), 3);
        // A centre on the band's edge never clears it: the rest of the budget.
        assert_eq!(pairs_left(Some(&test(0.99, 0.01)), 10, &plan, 0.01), 20);
        assert_eq!(pairs_left(Some(&test(below, 0.04)), 30, &plan, 0.01), 0);
    }

    #[test]
    fn no_change_inside_a_wide_band_stops_early() {
        let plan = SequentialPlan::new(0.05, 5, 30);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let (t, pairs) = simulate(&plan, 0.05, 0.0, 0.005, &mut rng);
        assert!(t.inside_band(0.05) && pairs == 5, "{t:?} after {pairs}");
    }
}
