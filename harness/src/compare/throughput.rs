//! Wall-clock throughput, case by case: the ratio NEW/BASE with an interval, a t-test on the
//! unit of replication and a verdict.
//!
//! Each ok timed fork contributes the log of its median iteration ops/s (robust to an iteration
//! the host preempted). An A/B report (`run --baseline-bin`) is tested with a paired t-test on
//! the log ratio of each fork pair, at the nominal level of its sequential plan when it ran with
//! `--forks auto`. Separate reports with two or more runs on each side are tested with Welch's
//! t-test on each run's log geometric mean: the run is the unit, so the machine's drift between
//! runs widens the interval. One run per side can only be tested over its forks, which cannot
//! see that drift: its differences are "looks slower/faster", never a verdict the gate acts on.
//! A case is called faster or slower only when the whole interval lies beyond the noise band;
//! "no change (within ±band)" when it lies inside. Separate runs also compare their drift
//! canaries: where the machine itself changed speed beyond the band, every difference says so.

mod render;

pub(crate) use render::{render_markdown, render_text, summary_line, to_json};

use super::case_runs;
use crate::report::{Benchmark, Fork, Iteration, Report};
use crate::stats::fork_test::{ForkTest, paired, welch};
use crate::stats::sequential::SequentialPlan;

/// How a verdict is reached.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Options {
    /// Ratios within `1 ± noise_band_pct / 100` are "no change" even when significant.
    pub noise_band_pct: f64,
    /// Significance level of the test; the interval is at `1 - alpha`.
    pub alpha: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options { noise_band_pct: 1.0, alpha: 0.05 }
    }
}

/// The verdict on one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Faster: the whole interval lies above the noise band.
    Faster,
    /// Slower: the whole interval lies below the noise band.
    Slower,
    /// One run per side, whose forks' interval lies below the band: slower, or the machine
    /// changed between the runs.
    LooksSlower,
    /// One run per side, whose forks' interval lies above the band.
    LooksFaster,
    /// Not decided: the interval reaches both inside and past the band.
    NoChange,
    /// Significant but within the band, or the whole interval lies within the band.
    WithinBand,
    /// Fewer than two forks (or fork pairs) on a side: no fork-level test is possible.
    TooFewForks,
    /// Only in the base report.
    Missing,
    /// Only in the new report.
    Extra,
    /// In both, but one has no ok timed iteration.
    NoData,
}

impl Verdict {
    /// Its colour on a terminal.
    fn tone(self) -> crate::format::Tone {
        use crate::format::Tone;
        match self {
            Verdict::Slower | Verdict::Missing => Tone::Bad,
            Verdict::Faster => Tone::Good,
            Verdict::LooksSlower
            | Verdict::LooksFaster
            | Verdict::NoChange
            | Verdict::TooFewForks
            | Verdict::NoData => Tone::Doubt,
            Verdict::WithinBand | Verdict::Extra => Tone::Plain,
        }
    }

    fn text(self, band: f64) -> String {
        match self {
            Verdict::Faster => "FASTER".into(),
            Verdict::Slower => "SLOWER".into(),
            Verdict::LooksSlower => "slower? (1 run each)".into(),
            Verdict::LooksFaster => "faster? (1 run each)".into(),
            Verdict::NoChange => "no change".into(),
            Verdict::WithinBand => format!("no change (within ±{band}%)"),
            Verdict::TooFewForks => "too few forks to tell".into(),
            Verdict::Missing => "missing in new".into(),
            Verdict::Extra => "new case".into(),
            Verdict::NoData => "no data".into(),
        }
    }

    /// The verdict as a stable token for scripts (`compare --json`).
    pub(crate) fn token(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::LooksSlower => "looks_slower",
            Verdict::LooksFaster => "looks_faster",
            Verdict::NoChange => "no_change",
            Verdict::WithinBand => "within_band",
            Verdict::TooFewForks => "too_few_forks",
            Verdict::Missing => "missing",
            Verdict::Extra => "extra",
            Verdict::NoData => "no_data",
        }
    }

    /// Faster or slower.
    pub(crate) fn is_difference(self) -> bool {
        matches!(self, Verdict::Faster | Verdict::Slower)
    }

    /// Faster or slower, or looks it in one run per side.
    pub(crate) fn is_apparent_difference(self) -> bool {
        self.is_difference() || matches!(self, Verdict::LooksFaster | Verdict::LooksSlower)
    }

    /// The verdict one run per side can give: a difference only looks like one.
    fn unconfirmed(self) -> Verdict {
        match self {
            Verdict::Slower => Verdict::LooksSlower,
            Verdict::Faster => Verdict::LooksFaster,
            v => v,
        }
    }
}

/// One case's comparison.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    /// `name[params]`.
    pub label: String,
    /// Base ops/s: the geometric mean of the fork medians, or of the runs' geometric means (the
    /// report's score for missing cases).
    pub base: Option<f64>,
    /// New ops/s, likewise.
    pub new: Option<f64>,
    /// The fork-level test: ratio new/base, its interval and p-value.
    pub test: Option<ForkTest>,
    /// Ok timed forks on each side.
    pub forks: (usize, usize),
    /// Several runs per side: the runs with data on each side (the test's units).
    pub runs: Option<(usize, usize)>,
    /// A/B runs: new/base of the fork medians, per fork pair, in fork order.
    pub pairs: Vec<f64>,
    /// Verdict.
    pub verdict: Verdict,
}

/// A whole comparison.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Comparison {
    /// The options used.
    pub options: Options,
    /// The level each test ran at: `alpha`, or the sequential plan's nominal level.
    pub level: f64,
    /// An A/B report's fork pairs (true) or separate reports (false).
    pub paired: bool,
    /// Separate reports: how many runs on each side ((1, 1) for an A/B report).
    pub runs: (usize, usize),
    /// The sequential plan of a `--forks auto` A/B run.
    pub sequential: Option<SequentialPlan>,
    /// Separate reports: new/base of the drift canary (the same CPU loop measured by every run;
    /// geometric means over several runs).
    pub canary: Option<f64>,
    /// Either report timed single ops (`--mode sample`), whose percentiles are not compared.
    pub sampled: bool,
    /// One row per case of either report.
    pub rows: Vec<Row>,
}

impl Comparison {
    /// Whether the test's unit is the run (two or more separate runs on each side).
    pub(crate) fn by_runs(&self) -> bool {
        !self.paired && self.runs.0 >= 2 && self.runs.1 >= 2
    }

    /// The unit of replication as a token: `fork_pair`, `run` or `fork`.
    pub(crate) fn unit(&self) -> &'static str {
        if self.paired {
            "fork_pair"
        } else if self.by_runs() {
            "run"
        } else {
            "fork"
        }
    }

    /// Whether the drift canary moved beyond the noise band between the two sides' runs.
    pub(crate) fn machine_changed(&self) -> bool {
        let band = self.options.noise_band_pct / 100.0;
        self.canary.is_some_and(|c| (c - 1.0).abs() > band)
    }

    /// Keeps only the cases that changed or cannot be compared (`--only-changed`).
    pub(crate) fn retain_changed(&mut self) {
        self.rows.retain(|r| !matches!(r.verdict, Verdict::NoChange | Verdict::WithinBand));
    }

    fn verdict_text(&self, v: Verdict) -> String {
        let text = v.text(self.options.noise_band_pct);
        if v.is_apparent_difference() && self.machine_changed() { format!("{text} (machine changed)") } else { text }
    }
}

/// Iteration throughputs of the ok timed forks, one `Vec` per fork.
pub(crate) fn fork_samples(forks: &[Fork]) -> Vec<Vec<f64>> {
    ok_timed(forks).map(|(_, v)| v).collect()
}

/// (fork, iteration throughputs) of every ok timed fork with a finite iteration.
fn ok_timed(forks: &[Fork]) -> impl Iterator<Item = (&Fork, Vec<f64>)> + '_ {
    forks
        .iter()
        .filter(|f| f.is_ok_timed())
        .map(|f| (f, f.iterations.iter().map(Iteration::ops_per_sec).filter(|x| x.is_finite()).collect()))
        .filter(|(_, v): &(&Fork, Vec<f64>)| !v.is_empty())
}

/// (fork index, median iteration ops/s) of every ok timed fork: the number each fork
/// contributes to a comparison.
pub(crate) fn fork_medians(forks: &[Fork]) -> Vec<(u32, f64)> {
    ok_timed(forks).filter_map(|(f, v)| Some((f.index, crate::stats::summarize(&v)?.median))).collect()
}

/// new/base of each fork pair (the same fork index on both sides, both ok): for a pair run in
/// lockstep, the median over iterations of the ratio of iteration *i* on both sides (each pair
/// of iterations ran side by side); otherwise the ratio of the two forks' medians.
pub(crate) fn pair_ratios(base: &[Fork], new: &[Fork]) -> Vec<f64> {
    let base_forks: Vec<(&Fork, Vec<f64>)> = ok_timed(base).collect();
    ok_timed(new)
        .filter_map(|(nf, n)| {
            let (bf, b) = base_forks.iter().find(|(bf, _)| bf.index == nf.index)?;
            if bf.lockstep && nf.lockstep && b.len() == n.len() {
                lockstep_ratio(b, &n)
            } else {
                Some(crate::stats::summarize(&n)?.median / crate::stats::summarize(b)?.median)
            }
        })
        .filter(|r| r.is_finite() && *r > 0.0)
        .collect()
}

/// The median of new/base over iterations run side by side (equal counts on both sides).
fn lockstep_ratio(base: &[f64], new: &[f64]) -> Option<f64> {
    let logs: Vec<f64> = base.iter().zip(new).map(|(b, n)| (n / b).ln()).filter(|x| x.is_finite()).collect();
    Some(crate::stats::summarize(&logs)?.median.exp())
}

/// Geometric mean of the fork medians: the level the ratio compares.
fn geometric_mean(medians: &[(u32, f64)]) -> Option<f64> {
    geometric_mean_of(medians.iter().map(|m| m.1))
}

fn geometric_mean_of(values: impl ExactSizeIterator<Item = f64>) -> Option<f64> {
    let n = values.len();
    (n > 0).then(|| (values.map(f64::ln).sum::<f64>() / n as f64).exp())
}

/// The verdict of `test` (its interval at 1 − `level`) against the band: a difference only when
/// the whole interval lies beyond the band (a minimum-effect test: when the true change is at
/// most the band, it is called at most `level / 2` of the time in each direction).
fn verdict(test: Option<&ForkTest>, level: f64, band: f64, forks: (usize, usize)) -> Verdict {
    let Some(t) = test else {
        return if forks.0 == 0 || forks.1 == 0 { Verdict::NoData } else { Verdict::TooFewForks };
    };
    if t.upper < 1.0 - band {
        Verdict::Slower
    } else if t.lower > 1.0 + band {
        Verdict::Faster
    } else if t.inside_band(band) || (t.p_value < level && (t.ratio - 1.0).abs() <= band) {
        Verdict::WithinBand
    } else {
        Verdict::NoChange
    }
}

/// Compares one case of two separate runs (Welch's t on log fork medians) at `level`.
pub(crate) fn compare_case(label: String, base: &[Fork], new: &[Fork], options: Options, level: f64) -> Row {
    let (b, n) = (fork_medians(base), fork_medians(new));
    let values = |m: &[(u32, f64)]| m.iter().map(|v| v.1).collect::<Vec<f64>>();
    let test = welch(&values(&b), &values(&n), 1.0 - level);
    let forks = (b.len(), n.len());
    let verdict = verdict(test.as_ref(), level, options.noise_band_pct / 100.0, forks);
    Row { label, base: geometric_mean(&b), new: geometric_mean(&n), test, forks, runs: None, pairs: vec![], verdict }
}

/// Compares one case of several separate runs per side: Welch's t on each run's log geometric
/// mean of its fork medians, the run being the unit.
pub(crate) fn compare_runs(label: String, base: &[&Benchmark], new: &[&Benchmark], options: Options) -> Row {
    let run_means = |side: &[&Benchmark]| -> Vec<f64> {
        side.iter().filter_map(|b| geometric_mean(&fork_medians(&b.forks))).collect()
    };
    let (b, n) = (run_means(base), run_means(new));
    let ok_forks = |side: &[&Benchmark]| side.iter().map(|b| fork_medians(&b.forks).len()).sum::<usize>();
    let test = welch(&b, &n, 1.0 - options.alpha);
    let runs = (b.len(), n.len());
    let verdict = verdict(test.as_ref(), options.alpha, options.noise_band_pct / 100.0, runs);
    let (base_mean, new_mean) = (geometric_mean_of(b.into_iter()), geometric_mean_of(n.into_iter()));
    Row {
        label,
        base: base_mean,
        new: new_mean,
        test,
        forks: (ok_forks(base), ok_forks(new)),
        runs: Some(runs),
        pairs: vec![],
        verdict,
    }
}

/// Compares one case of an A/B run (paired t on the log ratio of each fork pair, see
/// [`pair_ratios`]) at `level`.
pub(crate) fn compare_pairs(label: String, base: &[Fork], new: &[Fork], options: Options, level: f64) -> Row {
    let (b, n) = (fork_medians(base), fork_medians(new));
    let pairs = pair_ratios(base, new);
    let test = paired(&pairs, 1.0 - level);
    let forks = (b.len(), n.len());
    let units = if pairs.is_empty() { (forks.0.min(1), forks.1.min(1)) } else { forks };
    let verdict = verdict(test.as_ref(), level, options.noise_band_pct / 100.0, units);
    Row { label, base: geometric_mean(&b), new: geometric_mean(&n), test, forks, runs: None, pairs, verdict }
}

fn sampled(r: &Report) -> bool {
    r.meta.settings.as_ref().is_some_and(|s| s.mode == "sample")
}

/// Compares every case of the `new` runs against the `base` runs (separate reports): by runs
/// with two or more on each side, else over the forks of all runs with differences unconfirmed.
pub(crate) fn compare(base: &[Report], new: &[Report], options: Options) -> Comparison {
    let by_runs = base.len() >= 2 && new.len() >= 2;
    let rows = case_runs(base, new)
        .into_iter()
        .map(|(label, b, n)| match (b.is_empty(), n.is_empty()) {
            (false, false) if by_runs => compare_runs(label, &b, &n, options),
            (false, false) => {
                let forks =
                    |side: &[&Benchmark]| side.iter().flat_map(|c| c.forks.iter().cloned()).collect::<Vec<Fork>>();
                let row = compare_case(label, &forks(&b), &forks(&n), options, options.alpha);
                Row { verdict: row.verdict.unconfirmed(), ..row }
            }
            _ => absent(label, b.first().copied(), n.first().copied()),
        })
        .collect();
    Comparison {
        options,
        level: options.alpha,
        paired: false,
        runs: (base.len(), new.len()),
        sequential: None,
        canary: canary_ratio(base, new),
        sampled: base.iter().chain(new).any(sampled),
        rows,
    }
}

/// The row of a case only one side has.
fn absent(label: String, base: Option<&Benchmark>, new: Option<&Benchmark>) -> Row {
    let verdict = if base.is_some() { Verdict::Missing } else { Verdict::Extra };
    let mean = |c: Option<&Benchmark>| c.and_then(|c| c.score.as_ref()).map(|s| s.mean);
    Row { label, base: mean(base), new: mean(new), test: None, forks: (0, 0), runs: None, pairs: vec![], verdict }
}

/// new/base of the drift canary: the geometric mean of each side's runs (every run must have one).
fn canary_ratio(base: &[Report], new: &[Report]) -> Option<f64> {
    let side = |runs: &[Report]| -> Option<f64> {
        let rates: Option<Vec<f64>> =
            runs.iter().map(|r| r.meta.canary.as_ref().and_then(|c| c.ops_per_sec())).collect();
        geometric_mean_of(rates?.into_iter())
    };
    side(base).zip(side(new)).map(|(b, n)| n / b).filter(|r| r.is_finite())
}

/// Compares the two builds of an A/B report (`run --baseline-bin`): baseline forks as base,
/// this build's forks as new, fork pair by fork pair.
pub(crate) fn compare_sides(report: &Report, options: Options) -> Comparison {
    let sequential = report
        .meta
        .settings
        .as_ref()
        .and_then(|s| s.sequential.as_ref())
        .map(|s| SequentialPlan::new(options.alpha, s.min_forks as usize, s.max_forks as usize));
    let level = sequential.as_ref().map_or(options.alpha, |p| p.nominal_alpha);
    let rows = report
        .benchmarks
        .iter()
        .filter(|b| !b.baseline_forks.is_empty() || !b.forks.is_empty())
        .map(|b| compare_pairs(b.label(), &b.baseline_forks, &b.forks, options, level))
        .collect();
    Comparison { options, level, paired: true, runs: (1, 1), sequential, canary: None, sampled: sampled(report), rows }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::render::legend;
    use super::*;
    use crate::report::ForkStatus;

    const A: &[f64] = &[100.0, 101.0, 99.0, 100.5];
    const B: &[f64] = &[99.5, 100.2, 100.8, 99.8];
    const C: &[f64] = &[101.0, 99.0, 100.4, 100.1];

    fn scaled(xs: &[f64], k: f64) -> Vec<f64> {
        xs.iter().map(|v| v * k).collect()
    }

    fn one(r: &Report) -> &[Report] {
        std::slice::from_ref(r)
    }

    /// A run of case `a` whose three forks ran at A, B and C scaled by `k`.
    fn run_at(k: f64) -> Report {
        report(vec![timed("a", &[&scaled(A, k), &scaled(B, k), &scaled(C, k)])])
    }

    #[test]
    fn lockstep_pairs_take_the_median_of_their_iteration_ratios() {
        // Base and new drift together iteration by iteration; one iteration of new was hit by a
        // stall. Side by side, every ratio but that one is 0.97; by medians it would be 0.99.
        let base = [100.0, 90.0, 110.0, 105.0, 95.0];
        let new = [97.0, 87.3, 106.7, 101.85, 30.0];
        let (b, n) = (fork(0, &base), fork(0, &new));
        let by_medians = pair_ratios(std::slice::from_ref(&b), std::slice::from_ref(&n));
        assert!((by_medians[0] - 97.0 / 100.0).abs() < 1e-9, "{by_medians:?}");
        let side_by_side = |f: &Fork| Fork { lockstep: true, ..f.clone() };
        let r = pair_ratios(&[side_by_side(&b)], &[side_by_side(&n)]);
        assert!((r[0] - 0.97).abs() < 1e-9, "{r:?}");
        // Unequal iteration counts cannot be paired: back to the ratio of medians.
        let short = Fork { iterations: n.iterations[..4].to_vec(), ..side_by_side(&n) };
        let r = pair_ratios(&[side_by_side(&b)], &[short]);
        assert!((r[0] - 99.425 / 100.0).abs() < 1e-9, "{r:?}");
    }

    #[test]
    fn a_report_against_itself_is_no_change() {
        let r = report(vec![timed("a", &[A, B, C]), timed("b", &[B, A, C])]);
        let c = compare(one(&r), one(&r), Options::default());
        assert!(c.rows.iter().all(|row| row.verdict == Verdict::WithinBand), "{c:?}");
        assert!(c.rows.iter().all(|r| r.verdict != Verdict::Slower));
        assert!(render_text(&c).contains("no change (within ±1%)"));
    }

    #[test]
    fn a_shift_of_twenty_percent_over_three_runs_a_side_is_slower_or_faster() {
        let base = [run_at(1.0), run_at(1.01), run_at(0.99)];
        let new = [run_at(0.8), run_at(0.81), run_at(0.79)];
        let c = compare(&base, &new, Options::default());
        assert_eq!((c.rows[0].verdict, c.unit(), c.rows[0].runs), (Verdict::Slower, "run", Some((3, 3))), "{c:?}");
        assert!((c.rows[0].test.unwrap().ratio - 0.8).abs() < 1e-3);
        assert_eq!(c.rows[0].forks, (9, 9));
        assert!(c.rows.iter().any(|r| r.verdict == Verdict::Slower));
        let back = compare(&new, &base, Options::default());
        assert_eq!(back.rows[0].verdict, Verdict::Faster);
        assert!(render_markdown(&c).starts_with("**1 slower, 0 faster"), "{}", render_markdown(&c));
        assert!(render_text(&c).contains("9/9 (3/3)") && legend(&c).contains("3 base and 3 new runs"));
    }

    #[test]
    fn one_run_per_side_only_looks_different() {
        let c = compare(one(&run_at(1.0)), one(&run_at(0.8)), Options::default());
        assert_eq!((c.rows[0].verdict, c.unit()), (Verdict::LooksSlower, "fork"), "{c:?}");
        assert!(c.rows.iter().all(|r| r.verdict != Verdict::Slower));
        assert!(summary_line(&c).contains("1 unconfirmed (one run per side)"), "{}", summary_line(&c));
        assert!(render_text(&c).contains("slower? (1 run each)") && legend(&c).contains("harness ab REF"));
        let back = compare(one(&run_at(0.8)), one(&run_at(1.0)), Options::default());
        assert_eq!(back.rows[0].verdict, Verdict::LooksFaster);
    }

    #[test]
    fn runs_that_drift_apart_are_not_called_different() {
        // Within each run the forks agree to 1%, but the runs themselves wander by ±10%: the
        // forks of one run per side call a 10% change; the runs, rightly, cannot.
        let base = [run_at(1.0), run_at(1.1)];
        let new = [run_at(0.9), run_at(1.05)];
        let by_forks = compare(one(&base[0]), one(&new[0]), Options::default());
        assert_eq!(by_forks.rows[0].verdict, Verdict::LooksSlower);
        let by_runs = compare(&base, &new, Options::default());
        assert_eq!(by_runs.rows[0].verdict, Verdict::NoChange, "{by_runs:?}");
        // A case that one side's runs lack is tested on the runs that hold it.
        let mut gappy = base.clone();
        gappy[1].benchmarks.clear();
        let c = compare(&gappy, &new, Options::default());
        assert_eq!((c.rows[0].verdict, c.rows[0].runs), (Verdict::TooFewForks, Some((1, 2))));
        assert!(legend(&c).contains("at least 2 runs"), "{}", legend(&c));
    }

    #[test]
    fn a_significant_shift_inside_the_band_is_no_change() {
        let base = report(vec![timed("x", &[A, B, C])]);
        let new = report(vec![timed("x", &[&scaled(A, 1.005), &scaled(B, 1.005), &scaled(C, 1.005)])]);
        assert_eq!(compare(one(&base), one(&new), Options::default()).rows[0].verdict, Verdict::WithinBand);
        let tight = Options { noise_band_pct: 0.1, ..Options::default() };
        assert_eq!(compare(one(&base), one(&new), tight).rows[0].verdict, Verdict::LooksFaster);
    }

    #[test]
    fn one_fork_per_side_cannot_be_tested_and_says_what_can() {
        let base = report(vec![timed("x", &[A])]);
        let new = report(vec![timed("x", &[&scaled(A, 0.5)])]);
        let c = compare(one(&base), one(&new), Options::default());
        assert_eq!(c.rows[0].verdict, Verdict::TooFewForks);
        assert!(legend(&c).contains("--forks 5"), "{}", legend(&c));
    }

    #[test]
    fn missing_extra_and_empty_cases() {
        let base = report(vec![timed("gone", &[A]), timed("empty", &[A])]);
        let mut empty = case("empty");
        empty.forks = vec![];
        let new = report(vec![empty, timed("fresh", &[A])]);
        let v: Vec<Verdict> =
            compare(one(&base), one(&new), Options::default()).rows.iter().map(|r| r.verdict).collect();
        assert_eq!(v, [Verdict::Missing, Verdict::NoData, Verdict::Extra]);
    }

    #[test]
    fn ab_sides_are_paired_by_fork_index() {
        let mut b = timed("a", &[A, B, C]);
        b.baseline_forks = timed("a", &[&scaled(A, 1.1), &scaled(B, 1.1), &scaled(C, 1.1)]).forks;
        // A failed baseline fork drops its pair, not the alignment of the others.
        b.baseline_forks[1].status = ForkStatus::Failed;
        let c = compare_sides(&report(vec![b]), Options::default());
        assert_eq!(c.rows[0].pairs.len(), 2);
        assert!(c.rows[0].pairs.iter().all(|p| (p - 1.0 / 1.1).abs() < 1e-9), "{:?}", c.rows[0].pairs);
        assert_eq!(c.rows[0].verdict, Verdict::Slower);
        assert!(render_text(&c).contains("fork pairs"));
    }

    #[test]
    fn a_moved_canary_is_named_next_to_every_verdict() {
        use crate::report::meta::{Canary, CanaryReading};
        let canary = |rate: f64| Canary {
            workload: "baseline/busy_loop[work=1000]".into(),
            readings: ["start", "end"]
                .iter()
                .map(|at| CanaryReading { at: (*at).into(), ops_per_sec: rate, iterations: vec![rate] })
                .collect(),
        };
        let mut base = report(vec![timed("a", &[A, B, C])]);
        let mut new = report(vec![timed("a", &[&scaled(A, 0.8), &scaled(B, 0.8), &scaled(C, 0.8)])]);
        base.meta.canary = Some(canary(1000.0));
        new.meta.canary = Some(canary(950.0));
        let c = compare(one(&base), one(&new), Options::default());
        assert!(c.machine_changed());
        let text = render_text(&c);
        assert!(text.contains("slower? (1 run each) (machine changed)") && text.contains("ran 5.0% slower"), "{text}");
        new.meta.canary = Some(canary(1002.0));
        let c = compare(one(&base), one(&new), Options::default());
        assert!(!c.machine_changed() && render_text(&c).contains("kept its speed"));
    }
}
