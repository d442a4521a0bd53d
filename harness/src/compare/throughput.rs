//! Wall-clock throughput, case by case: the ratio NEW/BASE of the mean ops/s with a confidence
//! interval, a Mann-Whitney U test over the iterations of every ok fork, and a verdict.
//!
//! A case is called faster or slower only when all three agree: the rank test (its variance
//! inflated for the clustering of iterations into forks) rejects "no difference" at `alpha`,
//! the fork-level bootstrap interval of the ratio (at `1 - alpha`) excludes 1, and the ratio
//! lies outside the noise band.

use super::case_pairs;
use crate::format::si;
use crate::report::{Benchmark, Fork, ForkKind, ForkStatus, Iteration, Report};
use crate::stats::bootstrap::{RatioInterval, ratio_interval};
use crate::stats::rank::{RankTest, mann_whitney_u_clustered};

/// How a verdict is reached.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Ratios within `1 ± noise_band_pct / 100` are "no change" even when significant.
    pub noise_band_pct: f64,
    /// Significance level of the rank test; the interval is at `1 - alpha`.
    pub alpha: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options { noise_band_pct: 1.0, alpha: 0.05 }
    }
}

/// The verdict on one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Significantly faster, beyond the noise band.
    Faster,
    /// Significantly slower, beyond the noise band.
    Slower,
    /// No significant difference.
    NoChange,
    /// Significant, but within the noise band.
    WithinBand,
    /// Too few iterations for the rank test to reach `alpha` at all.
    TooFewSamples,
    /// Only in the base report.
    Missing,
    /// Only in the new report.
    Extra,
    /// In both, but one has no ok timed iteration.
    NoData,
}

impl Verdict {
    fn text(self, band: f64) -> String {
        match self {
            Verdict::Faster => "FASTER".into(),
            Verdict::Slower => "SLOWER".into(),
            Verdict::NoChange => "no change".into(),
            Verdict::WithinBand => format!("no change (within ±{band}%)"),
            Verdict::TooFewSamples => "no change (too few iterations to tell)".into(),
            Verdict::Missing => "missing in new".into(),
            Verdict::Extra => "new case".into(),
            Verdict::NoData => "no data".into(),
        }
    }
}

/// One case's comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// `name[params]`.
    pub label: String,
    /// Mean ops/s in the base report.
    pub base: Option<f64>,
    /// Mean ops/s in the new report.
    pub new: Option<f64>,
    /// Ratio new/base of the means and its interval.
    pub interval: Option<RatioInterval>,
    /// The rank test over the iterations.
    pub test: Option<RankTest>,
    /// Iterations on each side.
    pub samples: (usize, usize),
    /// Per fork pair, new/base of the fork means (A/B runs, where fork i of each build ran
    /// back to back).
    pub pairs: Vec<f64>,
    /// Verdict.
    pub verdict: Verdict,
}

/// A whole comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The options used.
    pub options: Options,
    /// One row per case of either report.
    pub rows: Vec<Row>,
}

impl Comparison {
    /// Whether any case is significantly slower beyond the band.
    pub fn regressed(&self) -> bool {
        self.rows.iter().any(|r| r.verdict == Verdict::Slower)
    }
}

/// Iteration throughputs of the ok timed forks, one `Vec` per fork.
pub fn fork_samples(forks: &[Fork]) -> Vec<Vec<f64>> {
    forks
        .iter()
        .filter(|f| f.status == ForkStatus::Ok && f.kind == ForkKind::Time)
        .map(|f| f.iterations.iter().map(Iteration::ops_per_sec).filter(|x| x.is_finite()).collect::<Vec<f64>>())
        .filter(|v| !v.is_empty())
        .collect()
}

/// The smallest two-sided p-value the exact rank test can give for these sample sizes.
fn smallest_p(n1: usize, n2: usize) -> f64 {
    // 2 / C(n1 + n2, n1), computed in floating point.
    let k = n1.min(n2);
    let c = (0..k).fold(1.0f64, |acc, i| acc * (n1 + n2 - i) as f64 / (i + 1) as f64);
    (2.0 / c).min(1.0)
}

/// Compares one case; `paired` when fork i of each side ran back to back (A/B runs).
pub fn compare_case(label: String, base: &[Vec<f64>], new: &[Vec<f64>], options: Options, paired: bool) -> Row {
    let flat = |g: &[Vec<f64>]| g.iter().flatten().copied().collect::<Vec<f64>>();
    let (b, n) = (flat(base), flat(new));
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let test = mann_whitney_u_clustered(base, new);
    let interval = ratio_interval(base, new, 1.0 - options.alpha);
    let pairs = if paired {
        base.iter().zip(new).filter_map(|(x, y)| Some(mean(y)? / mean(x)?)).filter(|r| r.is_finite()).collect()
    } else {
        vec![]
    };
    let band = options.noise_band_pct / 100.0;
    let verdict = match (test, interval) {
        (Some(t), Some(i)) => {
            let significant = t.p_value < options.alpha && (i.upper < 1.0 || i.lower > 1.0);
            if significant && i.ratio < 1.0 - band {
                Verdict::Slower
            } else if significant && i.ratio > 1.0 + band {
                Verdict::Faster
            } else if significant {
                Verdict::WithinBand
            } else if smallest_p(b.len(), n.len()) >= options.alpha {
                Verdict::TooFewSamples
            } else {
                Verdict::NoChange
            }
        }
        _ => Verdict::NoData,
    };
    Row { label, base: mean(&b), new: mean(&n), interval, test, samples: (b.len(), n.len()), pairs, verdict }
}

/// Compares every case of `new` against `base`.
pub fn compare(base: &Report, new: &Report, options: Options) -> Comparison {
    let rows = case_pairs(base, new)
        .into_iter()
        .map(|(label, b, n)| match (b, n) {
            (Some(b), Some(n)) => compare_case(label, &fork_samples(&b.forks), &fork_samples(&n.forks), options, false),
            (b, n) => {
                let verdict = if b.is_some() { Verdict::Missing } else { Verdict::Extra };
                let mean = |c: Option<&Benchmark>| c.and_then(|c| c.score.as_ref()).map(|s| s.mean);
                Row {
                    label,
                    base: mean(b),
                    new: mean(n),
                    interval: None,
                    test: None,
                    samples: (0, 0),
                    pairs: vec![],
                    verdict,
                }
            }
        })
        .collect();
    Comparison { options, rows }
}

/// Compares the two builds of an A/B report (`run --baseline-bin`): baseline forks as base,
/// this build's forks as new, paired fork by fork.
pub fn compare_sides(report: &Report, options: Options) -> Comparison {
    let rows = report
        .benchmarks
        .iter()
        .filter(|b| !b.baseline_forks.is_empty() || !b.forks.is_empty())
        .map(|b| {
            compare_case(super::label(b), &fork_samples(&b.baseline_forks), &fork_samples(&b.forks), options, true)
        })
        .collect();
    Comparison { options, rows }
}

const HEADER: [&str; 7] =
    ["benchmark", "base ops/s", "new ops/s", "new/base", "95% interval", "p (rank test)", "verdict"];

fn cells(r: &Row, c: &Comparison) -> Vec<String> {
    let num = |v: Option<f64>| v.map_or("-".into(), si);
    let mut v = vec![
        r.label.clone(),
        num(r.base),
        num(r.new),
        r.interval.map_or("-".into(), |i| format!("{:.3}", i.ratio)),
        r.interval.map_or("-".into(), |i| format!("{:.3}..{:.3}", i.lower, i.upper)),
        r.test.map_or("-".into(), |t| format!("{:.3}", t.p_value)),
        r.verdict.text(c.options.noise_band_pct),
    ];
    if c.rows.iter().any(|r| !r.pairs.is_empty()) {
        v.push(r.pairs.iter().map(|p| format!("{p:.3}")).collect::<Vec<_>>().join(" "));
    }
    v
}

fn header(c: &Comparison) -> Vec<String> {
    let confidence = format!("{}% interval", ((1.0 - c.options.alpha) * 100.0).round());
    let mut h: Vec<String> =
        HEADER.iter().map(|s| if s.ends_with("interval") { confidence.clone() } else { s.to_string() }).collect();
    if c.rows.iter().any(|r| !r.pairs.is_empty()) {
        h.push("fork pairs new/base".into());
    }
    h
}

/// What the verdicts mean, printed under the table.
pub fn legend(c: &Comparison) -> String {
    format!(
        "Mann-Whitney U over all iterations, corrected for their clustering in forks (alpha {}); bootstrap interval over forks; faster/slower only when both are significant and the ratio is beyond ±{}%.\n",
        c.options.alpha, c.options.noise_band_pct
    )
}

/// A plain-text table.
pub fn render_text(c: &Comparison) -> String {
    let rows: Vec<Vec<String>> = std::iter::once(header(c)).chain(c.rows.iter().map(|r| cells(r, c))).collect();
    crate::format::table(&rows, |i| (1..6).contains(&i)) + &legend(c)
}

/// A Markdown table with a one-line verdict, for a CI job summary.
pub fn render_markdown(c: &Comparison) -> String {
    let slower = c.rows.iter().filter(|r| r.verdict == Verdict::Slower).count();
    let faster = c.rows.iter().filter(|r| r.verdict == Verdict::Faster).count();
    let mut out =
        format!("**{slower} slower, {faster} faster** in throughput; the rest show no significant change.\n\n");
    let h = header(c);
    out.push_str(&format!("| {} |\n|---|{}\n", h.join(" | "), "---:|".repeat(h.len() - 1)));
    for r in &c.rows {
        out.push_str(&format!(
            "| {} |\n",
            cells(r, c).iter().map(|c| c.replace('|', "\\|")).collect::<Vec<_>>().join(" | ")
        ));
    }
    out.push('\n');
    out.push_str(&legend(c));
    out
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    const A: &[f64] = &[100.0, 101.0, 99.0, 100.5];
    const B: &[f64] = &[99.5, 100.2, 100.8, 99.8];

    #[test]
    fn a_report_against_itself_is_no_change() {
        let r = report(vec![timed("a", &[A, B]), timed("b", &[B, A])]);
        let c = compare(&r, &r, Options::default());
        assert!(c.rows.iter().all(|row| row.verdict == Verdict::NoChange), "{c:?}");
        assert!(!c.regressed());
        assert!(render_text(&c).contains("no change"));
    }

    #[test]
    fn a_shift_of_twenty_percent_is_slower_or_faster() {
        let slow: Vec<f64> = A.iter().map(|v| v * 0.8).collect();
        let slow2: Vec<f64> = B.iter().map(|v| v * 0.8).collect();
        let base = report(vec![timed("a", &[A, B])]);
        let new = report(vec![timed("a", &[&slow, &slow2])]);
        let c = compare(&base, &new, Options::default());
        assert_eq!(c.rows[0].verdict, Verdict::Slower, "{c:?}");
        assert!((c.rows[0].interval.unwrap().ratio - 0.8).abs() < 1e-3);
        assert!(c.regressed());
        let back = compare(&new, &base, Options::default());
        assert_eq!(back.rows[0].verdict, Verdict::Faster);
        assert!(render_markdown(&c).starts_with("**1 slower, 0 faster**"));
    }

    #[test]
    fn a_significant_shift_inside_the_band_is_no_change() {
        let base: Vec<f64> = (0..8).map(|i| 100.0 + f64::from(i) * 0.01).collect();
        let new: Vec<f64> = base.iter().map(|v| v * 1.005).collect();
        let row = compare_case(
            "x".into(),
            std::slice::from_ref(&base),
            std::slice::from_ref(&new),
            Options::default(),
            false,
        );
        assert_eq!(row.verdict, Verdict::WithinBand, "{row:?}");
        let tight = Options { noise_band_pct: 0.1, ..Options::default() };
        assert_eq!(compare_case("x".into(), &[base], &[new], tight, false).verdict, Verdict::Faster);
    }

    #[test]
    fn three_against_three_cannot_reach_five_percent() {
        let row =
            compare_case("x".into(), &[vec![1.0, 2.0, 3.0]], &[vec![10.0, 11.0, 12.0]], Options::default(), false);
        assert_eq!(row.test.unwrap().p_value, 0.1);
        assert_eq!(row.verdict, Verdict::TooFewSamples);
        assert!((smallest_p(4, 4) - 2.0 / 70.0).abs() < 1e-12);
    }

    #[test]
    fn missing_extra_and_empty_cases() {
        let base = report(vec![timed("gone", &[A]), timed("empty", &[A])]);
        let mut empty = case("empty");
        empty.forks = vec![];
        let new = report(vec![empty, timed("fresh", &[A])]);
        let v: Vec<Verdict> = compare(&base, &new, Options::default()).rows.iter().map(|r| r.verdict).collect();
        assert_eq!(v, [Verdict::Missing, Verdict::NoData, Verdict::Extra]);
    }

    #[test]
    fn ab_sides_are_paired_fork_by_fork() {
        let mut b = timed("a", &[A, B]);
        b.baseline_forks = timed("a", &[B, A]).forks;
        let c = compare_sides(&report(vec![b]), Options::default());
        assert_eq!(c.rows[0].pairs.len(), 2);
        assert_eq!(c.rows[0].verdict, Verdict::NoChange);
        assert!(render_text(&c).contains("fork pairs"));
    }
}
