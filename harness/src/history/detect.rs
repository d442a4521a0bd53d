//! Change points in one series, per commit: every change of an exact count, and for noisy
//! figures (throughput, latency) the steps a weighted two-sample test over the commits finds
//! by binary segmentation. Pure.
//!
//! The noisy model: commit i's level is the mean `y_i` of its forks' log values, known to
//! `v_i` (their variance over their count) plus `tau²`, the spread between runs that forks of
//! one run do not show (layout, drift). `tau²` is estimated from the differences of neighbouring
//! commits (median absolute deviation, so that a step moves one difference only). A split at
//! k compares the weighted means of the commits before and after it; the best split's p-value
//! is the chance that the largest of the segment's split statistics reaches it with no step
//! ([`max_tail`]: Bonferroni, or the standardized Brownian bridge's tail where that is
//! tighter), so a series with no step alarms with chance about `alpha` per segment tested.

use statrs::distribution::{Continuous, ContinuousCDF, Normal};

/// Commits on each side of a split, at least: a single commit is an outlier as often as a step.
pub(crate) const MIN_SIDE: usize = 2;

/// One commit of a series: its value and its forks' values (every run of it pooled).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CommitPoint {
    /// The commit.
    pub commit: String,
    /// Its first parent, where known.
    pub parent: Option<String>,
    /// The value of each run of it.
    pub values: Vec<f64>,
    /// The forks' values of every run of it (empty where forks were not the unit).
    pub forks: Vec<f64>,
}

/// What shows a change.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Evidence {
    /// A noisy figure's step: its p-value over the splits tried ([`max_tail`]).
    PValue(f64),
    /// An exact count's change, from one value to the other.
    Counts(f64, f64),
}

/// A change of level between two neighbouring stored commits.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Change {
    /// Index of the first commit at the new level.
    pub at: usize,
    /// The level before and after (the segments' means).
    pub before: f64,
    /// The level after.
    pub after: f64,
    /// `after / before - 1`, with its 95% interval where the figure is noisy.
    pub interval: Option<(f64, f64)>,
    /// What shows it.
    pub evidence: Evidence,
}

impl Change {
    /// `after / before - 1`.
    pub(crate) fn ratio(&self) -> f64 {
        self.after / self.before - 1.0
    }
}

/// Every change of an exact count between neighbouring commits.
pub(crate) fn exact(points: &[CommitPoint]) -> Vec<Change> {
    let level = |p: &CommitPoint| crate::stats::median(&p.values).unwrap_or(f64::NAN);
    let mut out = vec![];
    for (i, pair) in points.windows(2).enumerate() {
        let (a, b) = (level(&pair[0]), level(&pair[1]));
        if (a - b).abs() > 1e-9 * a.abs().max(b.abs()) {
            out.push(Change { at: i + 1, before: a, after: b, interval: None, evidence: Evidence::Counts(a, b) });
        }
    }
    out
}

/// The steps of a noisy series at level `alpha`, in commit order.
pub(crate) fn noisy(points: &[CommitPoint], alpha: f64) -> Vec<Change> {
    let levels: Vec<Level> = points.iter().map(Level::of).collect();
    if levels.iter().any(|l| !l.y.is_finite()) {
        return vec![];
    }
    // The forks' variance pooled over every commit: three forks alone say little about theirs.
    let (ss, df) = levels.iter().fold((0.0, 0.0), |(ss, df), l| (ss + l.ss, df + l.n - 1.0));
    let fork_var = if df > 0.0 { ss / df } else { 0.0 };
    let v: Vec<f64> = levels.iter().map(|l| fork_var / l.n).collect();
    let tau2 = between_runs(&levels, v.iter().sum::<f64>() / v.len().max(1) as f64);
    let weights: Vec<(f64, f64)> = levels.iter().zip(&v).map(|(l, v)| (l.y, 1.0 / (v + tau2).max(1e-12))).collect();
    let mut out = vec![];
    segment(&weights, 0, weights.len(), alpha, &mut out);
    out.sort_by_key(|c| c.at);
    out
}

/// A commit's log level: the mean of its forks' logs, their count and squared deviations.
struct Level {
    y: f64,
    n: f64,
    ss: f64,
}

impl Level {
    fn of(p: &CommitPoint) -> Level {
        let xs: Vec<f64> = if p.forks.len() >= p.values.len() { &p.forks } else { &p.values }
            .iter()
            .filter(|x| **x > 0.0)
            .map(|x| x.ln())
            .collect();
        let n = xs.len() as f64;
        let y = xs.iter().sum::<f64>() / n;
        Level { y, n, ss: xs.iter().map(|x| (x - y).powi(2)).sum() }
    }
}

/// `tau²`: the variance between commits the forks (`within`, a level's mean variance from
/// them) do not explain, from neighbours' differences.
fn between_runs(levels: &[Level], within: f64) -> f64 {
    let diffs: Vec<f64> = levels.windows(2).map(|w| w[1].y - w[0].y).collect();
    let Some(mid) = crate::stats::median(&diffs) else { return 0.0 };
    let dev: Vec<f64> = diffs.iter().map(|d| (d - mid).abs()).collect();
    let sigma = 1.4826 * crate::stats::median(&dev).unwrap_or(0.0);
    (sigma * sigma / 2.0 - within).max(0.0)
}

/// Binary segmentation of `[a, b)`: the best split, kept when significant, then each side.
/// Each segment is scanned once, with running sums.
fn segment(w: &[(f64, f64)], a: usize, b: usize, alpha: f64, out: &mut Vec<Change>) {
    if b - a < 2 * MIN_SIDE {
        return;
    }
    let (total_w, total_wy) = w[a..b].iter().fold((0.0, 0.0), |(sw, swy), &(y, wt)| (sw + wt, swy + wt * y));
    let (mut left_w, mut left_wy) = (0.0, 0.0);
    let mut best: Option<(usize, f64, f64, f64)> = None;
    // The share of the segment's weight before the first and the last split tried.
    let (mut first, mut last) = (0.0, 0.0);
    for k in a + 1..b - MIN_SIDE + 1 {
        let (y, wt) = w[k - 1];
        left_w += wt;
        left_wy += wt * y;
        if k < a + MIN_SIDE {
            continue;
        }
        if k == a + MIN_SIDE {
            first = left_w / total_w;
        }
        last = left_w / total_w;
        let (l, r) = (left_wy / left_w, (total_wy - left_wy) / (total_w - left_w));
        let se = (1.0 / left_w + 1.0 / (total_w - left_w)).sqrt();
        if best.is_none_or(|(_, bl, br, bse)| ((r - l) / se).abs() > ((br - bl) / bse).abs()) {
            best = Some((k, l, r, se));
        }
    }
    let Some((k, l, r, se)) = best else { return };
    let splits = (b - MIN_SIDE) - (a + MIN_SIDE) + 1;
    let p = max_tail(((r - l) / se).abs(), splits, first, last);
    if p >= alpha {
        return;
    }
    let interval = ((r - l - 1.96 * se).exp() - 1.0, (r - l + 1.96 * se).exp() - 1.0);
    out.push(Change {
        at: k,
        before: l.exp(),
        after: r.exp(),
        interval: Some(interval),
        evidence: Evidence::PValue(p),
    });
    segment(w, a, k, alpha, out);
    segment(w, k, b, alpha, out);
}

/// The chance that the largest of `splits` standardized split statistics reaches `z` when
/// there is no step: the smaller of Bonferroni (the normal tail times `splits`) and James,
/// James and Siegmund's approximation (Biometrika 1987) for the largest standardized Brownian
/// bridge over the weight shares `[t0, t1]` the splits span. Neighbouring splits are nearly the
/// same test, so the bridge's tail is the tighter one over many splits; the continuous maximum
/// exceeds the discrete one, so it errs on the side of fewer alarms.
fn max_tail(z: f64, splits: usize, t0: f64, t1: f64) -> f64 {
    let normal = Normal::standard();
    let bonferroni = 2.0 * (1.0 - normal.cdf(z)) * splits as f64;
    let density = normal.pdf(z);
    let span = if t0 > 0.0 && t1 < 1.0 && t1 > t0 { (t1 * (1.0 - t0) / (t0 * (1.0 - t1))).ln() } else { 0.0 };
    let bridge = z * density * (1.0 - 1.0 / (z * z)) * span + 4.0 * density / z;
    bonferroni.min(if bridge > 0.0 { bridge } else { f64::INFINITY }).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(i: usize, forks: &[f64]) -> CommitPoint {
        let value = crate::stats::geometric_mean(forks.iter().copied()).unwrap();
        CommitPoint { commit: format!("c{i}"), parent: None, values: vec![value], forks: forks.to_vec() }
    }

    /// A series of `n` commits at `level`, then at `level * (1 + step)` from `at`, each with
    /// three forks spread by a fixed pattern of about 1%.
    fn series(n: usize, at: usize, step: f64) -> Vec<CommitPoint> {
        let wobble = [0.0, 0.008, -0.006, 0.004, -0.009, 0.002, 0.007, -0.003];
        (0..n)
            .map(|i| {
                let level = 1000.0 * if i >= at { 1.0 + step } else { 1.0 } * (1.0 + wobble[i % 8] / 2.0);
                commit(i, &[level * 0.99, level, level * 1.01])
            })
            .collect()
    }

    #[test]
    fn a_flat_series_has_no_step_and_a_ten_percent_one_is_found_where_it_was_planted() {
        assert_eq!(noisy(&series(30, 30, 0.0), 0.001), vec![]);
        let found = noisy(&series(30, 17, -0.10), 0.001);
        assert_eq!(found.len(), 1, "{found:?}");
        let c = &found[0];
        assert_eq!(c.at, 17);
        let (lo, hi) = c.interval.unwrap();
        assert!(lo < c.ratio() && c.ratio() < hi && hi < 0.0, "{c:?}");
        assert!((c.ratio() + 0.10).abs() < 0.01, "{c:?}");
        assert!(matches!(c.evidence, Evidence::PValue(p) if p < 1e-6), "{c:?}");
    }

    #[test]
    fn two_steps_are_both_found_and_a_short_series_is_left_alone() {
        let mut s = series(40, 12, 0.05);
        for p in &mut s[28..] {
            p.values.iter_mut().chain(p.forks.iter_mut()).for_each(|x| *x *= 0.9);
        }
        let at: Vec<usize> = noisy(&s, 0.001).iter().map(|c| c.at).collect();
        assert_eq!(at, vec![12, 28]);
        assert_eq!(noisy(&series(3, 1, 0.5), 0.001), vec![], "fewer than two commits a side");
    }

    #[test]
    fn the_spread_between_runs_widens_what_counts_as_a_step() {
        // Forks agree within 0.1% but whole commits wander by ±3%: a 2% step is not a step.
        let wander = [0.03, -0.02, 0.01, -0.03, 0.02, -0.01, 0.025, -0.015];
        let s: Vec<CommitPoint> = (0..32)
            .map(|i| {
                let l = 1000.0 * (1.0 + wander[i % 8]) * if i >= 16 { 0.98 } else { 1.0 };
                commit(i, &[l * 0.999, l, l * 1.001])
            })
            .collect();
        assert_eq!(noisy(&s, 0.001), vec![]);
    }

    #[test]
    fn every_change_of_an_exact_count_is_one_change() {
        let counts = [5.0, 5.0, 6.0, 6.0, 6.0, 5.0];
        let s: Vec<CommitPoint> = counts
            .iter()
            .enumerate()
            .map(|(i, &c)| CommitPoint { commit: format!("c{i}"), parent: None, values: vec![c, c], forks: vec![] })
            .collect();
        let found = exact(&s);
        assert_eq!(
            found.iter().map(|c| (c.at, c.before, c.after)).collect::<Vec<_>>(),
            vec![(2, 5.0, 6.0), (5, 6.0, 5.0)]
        );
        assert!((found[0].ratio() - 0.2).abs() < 1e-12);
    }

    /// Normal draws from a fixed seed (xorshift and Box-Muller): the same series every run.
    struct Draws(u64);

    impl Draws {
        fn normal(&mut self, sd: f64) -> f64 {
            let mut uniform = || {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                (self.0 >> 11) as f64 / (1u64 << 53) as f64
            };
            let (u, v) = (uniform().max(1e-300), uniform());
            sd * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        }
    }

    /// `n` commits of three forks each: the commit's level off by `tau` (layout, drift), each
    /// fork by 1% more, and a step of `step` from commit `at`.
    fn drawn(d: &mut Draws, n: usize, at: usize, step: f64, tau: f64) -> Vec<CommitPoint> {
        (0..n)
            .map(|i| {
                let level = 1000.0 * d.normal(tau).exp() * if i >= at { 1.0 + step } else { 1.0 };
                let forks: Vec<f64> = (0..3).map(|_| level * d.normal(0.01).exp()).collect();
                commit(i, &forks)
            })
            .collect()
    }

    #[test]
    fn the_largest_split_statistic_alarms_at_about_alpha_with_no_step() {
        // One split: the normal tail itself; many: the bridge's tail, below Bonferroni's.
        let one = max_tail(3.0, 1, 0.5, 0.5);
        assert!((one - 0.0027).abs() < 0.0001, "{one}");
        let bonferroni = 2.0 * (1.0 - Normal::standard().cdf(4.4)) * 197.0;
        assert!(max_tail(4.4, 197, 0.01, 0.99) < bonferroni, "{bonferroni}");
        // Flat series of 200 commits of three forks (no spread between runs): the share of them
        // with a change point is at most alpha, and not far below it as Bonferroni alone is.
        // Measured (this seed): 40 and 10 of 2,000 at 0.05 and 0.01; Bonferroni alone, 8 and 4.
        let mut d = Draws(0x2545_f491_4f6c_dd1d);
        let mut alarmed =
            |alpha: f64| (0..2000).filter(|_| !noisy(&drawn(&mut d, 200, 200, 0.0, 0.0), alpha).is_empty()).count();
        let (at_5, at_1) = (alarmed(0.05), alarmed(0.01));
        assert!((20..=100).contains(&at_5) && at_1 <= 20, "{at_5} and {at_1} of 2,000 flat series alarmed");
    }

    #[test]
    fn flat_noisy_series_rarely_alarm_and_a_two_percent_step_is_found_five_commits_on() {
        let mut d = Draws(0x9e37_79b9_7f4a_7c15);
        let alarms: usize = (0..200).map(|_| noisy(&drawn(&mut d, 200, 200, 0.0, 0.005), 0.001).len()).sum();
        assert!(alarms <= 2, "{alarms} false alarms over 200 flat series of 200 commits");
        // Found where it was planted (one commit either side), with `after` commits behind it.
        let mut recall = |after: usize| {
            (0..100)
                .filter(|_| {
                    let s = drawn(&mut d, 150 + after, 150, -0.02, 0.005);
                    noisy(&s, 0.001).iter().any(|c| (149..=151).contains(&c.at))
                })
                .count()
        };
        let (five, ten) = (recall(5), recall(10));
        // Measured 81 and 95 of 100 (this seed; 80 and 95 with Bonferroni alone): short of the
        // goal of 95 five commits on (issue #43).
        assert!(five >= 75 && ten >= 90, "a 2% step found five commits on in {five}, ten on in {ten} of 100");
    }
}
