//! Wall-clock throughput, case by case: the ratio NEW/BASE of the fork medians with an
//! interval, a fork-level t-test and a verdict.
//!
//! The unit of replication is the fork (a process): each ok timed fork contributes the log of
//! its median iteration ops/s (robust to an iteration the host preempted). Two separate reports
//! are compared with Welch's t-test on those logs; an A/B report (`run --baseline-bin`) with a
//! paired t-test on the log ratio of each fork pair, at the nominal level of its sequential plan
//! when it ran with `--forks auto`. A case is called faster or slower only when the test rejects
//! "no difference" (the interval excludes 1) and the ratio lies beyond the noise band; "no
//! change (within ±band)" when the interval lies inside the band. Separate runs also compare
//! their drift canaries: where the machine itself changed speed beyond the band, every verdict
//! says so.

use super::case_pairs;
use super::json;
use crate::format::si;
use crate::report::{Benchmark, Fork, ForkKind, ForkStatus, Iteration, Report};
use crate::stats::fork_test::{ForkTest, paired, welch};
use crate::stats::sequential::SequentialPlan;

/// How a verdict is reached.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
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
pub enum Verdict {
    /// Faster: the whole interval lies above the noise band.
    Faster,
    /// Slower: the whole interval lies below the noise band.
    Slower,
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
            Verdict::NoChange | Verdict::TooFewForks | Verdict::NoData => Tone::Doubt,
            Verdict::WithinBand | Verdict::Extra => Tone::Plain,
        }
    }

    fn text(self, band: f64) -> String {
        match self {
            Verdict::Faster => "FASTER".into(),
            Verdict::Slower => "SLOWER".into(),
            Verdict::NoChange => "no change".into(),
            Verdict::WithinBand => format!("no change (within ±{band}%)"),
            Verdict::TooFewForks => "too few forks to tell".into(),
            Verdict::Missing => "missing in new".into(),
            Verdict::Extra => "new case".into(),
            Verdict::NoData => "no data".into(),
        }
    }

    /// The verdict as a stable token for scripts (`compare --json`).
    pub fn token(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoChange => "no_change",
            Verdict::WithinBand => "within_band",
            Verdict::TooFewForks => "too_few_forks",
            Verdict::Missing => "missing",
            Verdict::Extra => "extra",
            Verdict::NoData => "no_data",
        }
    }

    /// Faster or slower.
    pub fn is_difference(self) -> bool {
        matches!(self, Verdict::Faster | Verdict::Slower)
    }
}

/// One case's comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// `name[params]`.
    pub label: String,
    /// Base ops/s: the geometric mean of the fork medians (the report's score for missing cases).
    pub base: Option<f64>,
    /// New ops/s, likewise.
    pub new: Option<f64>,
    /// The fork-level test: ratio new/base, its interval and p-value.
    pub test: Option<ForkTest>,
    /// Ok timed forks on each side.
    pub forks: (usize, usize),
    /// A/B runs: new/base of the fork medians, per fork pair, in fork order.
    pub pairs: Vec<f64>,
    /// Verdict.
    pub verdict: Verdict,
}

/// A whole comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The options used.
    pub options: Options,
    /// The level each test ran at: `alpha`, or the sequential plan's nominal level.
    pub level: f64,
    /// An A/B report's fork pairs (true) or two separate reports (false).
    pub paired: bool,
    /// The sequential plan of a `--forks auto` A/B run.
    pub sequential: Option<SequentialPlan>,
    /// Separate reports: new/base of the drift canary (the same CPU loop measured by both runs).
    pub canary: Option<f64>,
    /// Either report timed single ops (`--mode sample`), whose percentiles are not compared.
    pub sampled: bool,
    /// One row per case of either report.
    pub rows: Vec<Row>,
}

impl Comparison {
    /// Whether any case is significantly slower beyond the band.
    pub fn regressed(&self) -> bool {
        self.rows.iter().any(|r| r.verdict == Verdict::Slower)
    }

    /// Whether the drift canary moved beyond the noise band between the two runs.
    pub fn machine_changed(&self) -> bool {
        let band = self.options.noise_band_pct / 100.0;
        self.canary.is_some_and(|c| (c - 1.0).abs() > band)
    }

    /// Keeps only the cases that changed or cannot be compared (`--only-changed`).
    pub fn retain_changed(&mut self) {
        self.rows.retain(|r| !matches!(r.verdict, Verdict::NoChange | Verdict::WithinBand));
    }

    fn verdict_text(&self, v: Verdict) -> String {
        let text = v.text(self.options.noise_band_pct);
        if v.is_difference() && self.machine_changed() { format!("{text} (machine changed)") } else { text }
    }
}

/// Iteration throughputs of the ok timed forks, one `Vec` per fork.
pub fn fork_samples(forks: &[Fork]) -> Vec<Vec<f64>> {
    ok_timed(forks).map(|(_, v)| v).collect()
}

/// (fork, iteration throughputs) of every ok timed fork with a finite iteration.
fn ok_timed(forks: &[Fork]) -> impl Iterator<Item = (&Fork, Vec<f64>)> + '_ {
    forks
        .iter()
        .filter(|f| f.status == ForkStatus::Ok && f.kind == ForkKind::Time)
        .map(|f| (f, f.iterations.iter().map(Iteration::ops_per_sec).filter(|x| x.is_finite()).collect()))
        .filter(|(_, v): &(&Fork, Vec<f64>)| !v.is_empty())
}

/// (fork index, median iteration ops/s) of every ok timed fork: the number each fork
/// contributes to a comparison.
pub fn fork_medians(forks: &[Fork]) -> Vec<(u32, f64)> {
    ok_timed(forks).filter_map(|(f, v)| Some((f.index, crate::stats::summarize(&v)?.median))).collect()
}

/// new/base of each fork pair (the same fork index on both sides, both ok): for a pair run in
/// lockstep, the median over iterations of the ratio of iteration *i* on both sides (each pair
/// of iterations ran side by side); otherwise the ratio of the two forks' medians.
pub fn pair_ratios(base: &[Fork], new: &[Fork]) -> Vec<f64> {
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
    let n = medians.len();
    (n > 0).then(|| (medians.iter().map(|(_, v)| v.ln()).sum::<f64>() / n as f64).exp())
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
pub fn compare_case(label: String, base: &[Fork], new: &[Fork], options: Options, level: f64) -> Row {
    let (b, n) = (fork_medians(base), fork_medians(new));
    let values = |m: &[(u32, f64)]| m.iter().map(|v| v.1).collect::<Vec<f64>>();
    let test = welch(&values(&b), &values(&n), 1.0 - level);
    let forks = (b.len(), n.len());
    let verdict = verdict(test.as_ref(), level, options.noise_band_pct / 100.0, forks);
    Row { label, base: geometric_mean(&b), new: geometric_mean(&n), test, forks, pairs: vec![], verdict }
}

/// Compares one case of an A/B run (paired t on the log ratio of each fork pair, see
/// [`pair_ratios`]) at `level`.
pub fn compare_pairs(label: String, base: &[Fork], new: &[Fork], options: Options, level: f64) -> Row {
    let (b, n) = (fork_medians(base), fork_medians(new));
    let pairs = pair_ratios(base, new);
    let test = paired(&pairs, 1.0 - level);
    let forks = (b.len(), n.len());
    let units = if pairs.is_empty() { (forks.0.min(1), forks.1.min(1)) } else { forks };
    let verdict = verdict(test.as_ref(), level, options.noise_band_pct / 100.0, units);
    Row { label, base: geometric_mean(&b), new: geometric_mean(&n), test, forks, pairs, verdict }
}

fn sampled(r: &Report) -> bool {
    r.meta.settings.as_ref().is_some_and(|s| s.mode == "sample")
}

/// Compares every case of `new` against `base`.
pub fn compare(base: &Report, new: &Report, options: Options) -> Comparison {
    let rows = case_pairs(base, new)
        .into_iter()
        .map(|(label, b, n)| match (b, n) {
            (Some(b), Some(n)) => compare_case(label, &b.forks, &n.forks, options, options.alpha),
            (b, n) => {
                let verdict = if b.is_some() { Verdict::Missing } else { Verdict::Extra };
                let mean = |c: Option<&Benchmark>| c.and_then(|c| c.score.as_ref()).map(|s| s.mean);
                Row { label, base: mean(b), new: mean(n), test: None, forks: (0, 0), pairs: vec![], verdict }
            }
        })
        .collect();
    let rate = |r: &Report| r.meta.canary.as_ref().and_then(|c| c.ops_per_sec());
    let canary = rate(base).zip(rate(new)).map(|(b, n)| n / b).filter(|r| r.is_finite());
    Comparison {
        options,
        level: options.alpha,
        paired: false,
        sequential: None,
        canary,
        sampled: sampled(base) || sampled(new),
        rows,
    }
}

/// Compares the two builds of an A/B report (`run --baseline-bin`): baseline forks as base,
/// this build's forks as new, fork pair by fork pair.
pub fn compare_sides(report: &Report, options: Options) -> Comparison {
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
        .map(|b| compare_pairs(super::label(b), &b.baseline_forks, &b.forks, options, level))
        .collect();
    Comparison { options, level, paired: true, sequential, canary: None, sampled: sampled(report), rows }
}

fn header(c: &Comparison) -> Vec<String> {
    let confidence = format!("{}% interval", fmt_pct(1.0 - c.level));
    let mut h: Vec<String> =
        ["benchmark", "base ops/s", "new ops/s", "new/base", confidence.as_str(), "p", "forks", "verdict"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    if c.paired {
        h.push("fork pairs new/base".into());
    }
    h
}

fn fmt_pct(x: f64) -> String {
    let p = x * 100.0;
    if (p - p.round()).abs() < 0.05 { format!("{}", p.round()) } else { format!("{p:.1}") }
}

/// The column of the verdict in [`cells`].
const VERDICT: usize = 7;

fn cells(r: &Row, c: &Comparison) -> Vec<String> {
    let num = |v: Option<f64>| v.map_or("-".into(), si);
    let mut v = vec![
        r.label.clone(),
        num(r.base),
        num(r.new),
        r.test.map_or("-".into(), |t| format!("{:.3}", t.ratio)),
        r.test.map_or("-".into(), |t| format!("{:.3}..{:.3}", t.lower, t.upper)),
        r.test.map_or("-".into(), |t| format!("{:.3}", t.p_value)),
        format!("{}/{}", r.forks.0, r.forks.1),
        c.verdict_text(r.verdict),
    ];
    if c.paired {
        v.push(r.pairs.iter().map(|p| format!("{p:.3}")).collect::<Vec<_>>().join(" "));
    }
    v
}

/// What one fork pair's ratio is, as the legend says it.
const PAIR_RATIO: &str = "the median ratio of its side-by-side iterations, or of its forks' medians";

/// What the verdicts mean and what to watch out for, printed under the table.
pub fn legend(c: &Comparison) -> String {
    let band = c.options.noise_band_pct;
    let mut out = match (&c.sequential, c.paired) {
        (Some(p), _) => format!(
            "Paired t-test on the log ratio of each fork pair ({PAIR_RATIO}), sequential (--forks auto, {}..{} pairs): every look tests at {:.4} so that a false alarm at any look has chance {}; faster/slower only when the whole interval lies beyond ±{band}%.\n",
            p.min_pairs, p.max_pairs, p.nominal_alpha, p.alpha
        ),
        (None, true) => format!(
            "Paired t-test on the log ratio of each fork pair ({PAIR_RATIO}; alpha {}); faster/slower only when the whole interval lies beyond ±{band}%.\n",
            c.options.alpha
        ),
        (None, false) => format!(
            "Welch's t-test on the log fork medians (alpha {}); ops/s are geometric means of the fork medians; faster/slower only when the whole interval lies beyond ±{band}%.\n",
            c.options.alpha
        ),
    };
    let too_few = c.rows.iter().filter(|r| r.verdict == Verdict::TooFewForks).count();
    if too_few > 0 {
        let what = if c.paired {
            "at least 2 fork pairs: rerun with --forks 5 or --forks auto"
        } else {
            "at least 2 ok forks on each side: rerun both with --forks 5 (2 at the very least), or make one A/B run with --baseline-bin"
        };
        out.push_str(&format!("{too_few} case(s) cannot be tested: a fork-level test needs {what}.\n"));
    }
    if let Some(r) = c.canary {
        let moved = if c.machine_changed() {
            format!(
                "the machine itself ran {:.1}% {} between the runs, beyond the ±{band}% band: a difference may be the machine's, not the code's; compare in one A/B run (`harness run --baseline-bin`)",
                (r - 1.0).abs() * 100.0,
                if r < 1.0 { "slower" } else { "faster" }
            )
        } else {
            format!("within ±{band}%: the machine kept its speed")
        };
        out.push_str(&format!(
            "Drift canary (the same CPU loop at the start and end of each run): new/base {r:.3}, {moved}.\n"
        ));
    } else if !c.paired {
        out.push_str("No drift canary in one of the reports: a change of the machine's speed between the runs cannot be told from a change of the code.\n");
    }
    if c.sampled {
        out.push_str("Latency percentiles (--mode sample) are not compared: these verdicts are on throughput.\n");
    }
    out
}

/// Counts of the verdicts, one line.
pub fn summary_line(c: &Comparison) -> String {
    let count = |v: Verdict| c.rows.iter().filter(|r| r.verdict == v).count();
    format!(
        "{} slower, {} faster, {} unchanged, {} undecided or untestable",
        count(Verdict::Slower),
        count(Verdict::Faster),
        count(Verdict::WithinBand),
        c.rows.len() - count(Verdict::Slower) - count(Verdict::Faster) - count(Verdict::WithinBand)
    )
}

/// The `compare --json` document of this comparison, with the gate's `decision`.
pub fn to_json(c: &Comparison, decision: json::Decision) -> json::Document {
    let cases = c
        .rows
        .iter()
        .map(|r| json::Case {
            ratio: r.test.map(|t| t.ratio),
            lower: r.test.map(|t| t.lower),
            upper: r.test.map(|t| t.upper),
            p_value: r.test.map(|t| t.p_value),
            forks: Some([r.forks.0, r.forks.1]),
            pairs: r.pairs.clone(),
            ..json::Case::new(r.label.clone(), r.base, r.new, r.verdict.token(), c.verdict_text(r.verdict))
        })
        .collect();
    json::Document {
        schema_version: json::COMPARE_SCHEMA_VERSION,
        metric: "throughput",
        test: Some(json::TestSettings {
            paired: c.paired,
            alpha: c.options.alpha,
            level: c.level,
            noise_band_pct: c.options.noise_band_pct,
            canary_ratio: c.canary,
            machine_changed: c.machine_changed(),
        }),
        summary: summary_line(c),
        cases,
        decision,
    }
}

/// A plain-text table.
pub fn render_text(c: &Comparison) -> String {
    let painted = |r: &Row| {
        let mut cells = cells(r, c);
        cells[VERDICT] = crate::format::paint(std::mem::take(&mut cells[VERDICT]), r.verdict.tone());
        cells
    };
    let rows: Vec<Vec<String>> = std::iter::once(header(c)).chain(c.rows.iter().map(painted)).collect();
    crate::format::table(&rows, |i| (1..7).contains(&i)) + &legend(c)
}

/// A Markdown table with a one-line verdict, for a CI job summary.
pub fn render_markdown(c: &Comparison) -> String {
    let mut out = format!("**{}** in throughput.\n\n", summary_line(c));
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
    const C: &[f64] = &[101.0, 99.0, 100.4, 100.1];

    fn scaled(xs: &[f64], k: f64) -> Vec<f64> {
        xs.iter().map(|v| v * k).collect()
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
        let c = compare(&r, &r, Options::default());
        assert!(c.rows.iter().all(|row| row.verdict == Verdict::WithinBand), "{c:?}");
        assert!(!c.regressed());
        assert!(render_text(&c).contains("no change (within ±1%)"));
    }

    #[test]
    fn a_shift_of_twenty_percent_is_slower_or_faster() {
        let base = report(vec![timed("a", &[A, B, C])]);
        let new = report(vec![timed("a", &[&scaled(A, 0.8), &scaled(B, 0.8), &scaled(C, 0.8)])]);
        let c = compare(&base, &new, Options::default());
        assert_eq!(c.rows[0].verdict, Verdict::Slower, "{c:?}");
        assert!((c.rows[0].test.unwrap().ratio - 0.8).abs() < 1e-3);
        assert!(c.regressed());
        let back = compare(&new, &base, Options::default());
        assert_eq!(back.rows[0].verdict, Verdict::Faster);
        assert!(render_markdown(&c).starts_with("**1 slower, 0 faster"), "{}", render_markdown(&c));
    }

    #[test]
    fn a_significant_shift_inside_the_band_is_no_change() {
        let base = report(vec![timed("x", &[A, B, C])]);
        let new = report(vec![timed("x", &[&scaled(A, 1.005), &scaled(B, 1.005), &scaled(C, 1.005)])]);
        assert_eq!(compare(&base, &new, Options::default()).rows[0].verdict, Verdict::WithinBand);
        let tight = Options { noise_band_pct: 0.1, ..Options::default() };
        assert_eq!(compare(&base, &new, tight).rows[0].verdict, Verdict::Faster);
    }

    #[test]
    fn one_fork_per_side_cannot_be_tested_and_says_what_can() {
        let base = report(vec![timed("x", &[A])]);
        let new = report(vec![timed("x", &[&scaled(A, 0.5)])]);
        let c = compare(&base, &new, Options::default());
        assert_eq!(c.rows[0].verdict, Verdict::TooFewForks);
        assert!(legend(&c).contains("--forks 5"), "{}", legend(&c));
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
        let c = compare(&base, &new, Options::default());
        assert!(c.machine_changed());
        let text = render_text(&c);
        assert!(text.contains("SLOWER (machine changed)") && text.contains("ran 5.0% slower"), "{text}");
        new.meta.canary = Some(canary(1002.0));
        let c = compare(&base, &new, Options::default());
        assert!(!c.machine_changed() && render_text(&c).contains("kept its speed"));
    }
}
