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

pub(crate) mod gate;
mod render;

pub(crate) use gate::comparison;

use super::case_runs;
use crate::report::{Benchmark, CaseId, Fork, Iteration, Report};
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
    /// Slower, but both builds ran the same instructions per op (within [`SAME_INSTRUCTIONS`]):
    /// the code under test may not have changed, only where it landed (or its data layout).
    SlowerSameInstructions,
    /// Faster, with the same instructions per op on both builds.
    FasterSameInstructions,
    /// One run per side, whose forks' interval lies below the band: slower, or the machine
    /// changed between the runs.
    LooksSlower,
    /// One run per side, whose forks' interval lies above the band.
    LooksFaster,
    /// Not decided: the interval reaches both inside and past the band (`undecided`; more
    /// pairs would tell). Its JSON token stays `no_change`.
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
    pub(crate) fn tone(self) -> crate::format::Tone {
        use crate::format::Tone;
        match self {
            Verdict::Slower | Verdict::Missing => Tone::Bad,
            Verdict::Faster => Tone::Good,
            Verdict::SlowerSameInstructions | Verdict::FasterSameInstructions => Tone::Doubt,
            Verdict::LooksSlower
            | Verdict::LooksFaster
            | Verdict::NoChange
            | Verdict::TooFewForks
            | Verdict::NoData => Tone::Doubt,
            Verdict::WithinBand | Verdict::Extra => Tone::Plain,
        }
    }

    /// The verdict as people read it, `band` the noise band in percent.
    pub(crate) fn text(self, band: f64) -> String {
        match self {
            Verdict::Faster => "FASTER".into(),
            Verdict::Slower => "SLOWER".into(),
            Verdict::SlowerSameInstructions => "SLOWER (same instructions: layout?)".into(),
            Verdict::FasterSameInstructions => "FASTER (same instructions: layout?)".into(),
            Verdict::LooksSlower => "slower? (1 run each)".into(),
            Verdict::LooksFaster => "faster? (1 run each)".into(),
            Verdict::NoChange => "undecided".into(),
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
            Verdict::SlowerSameInstructions => "slower_same_instructions",
            Verdict::FasterSameInstructions => "faster_same_instructions",
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

    /// Faster or slower (with or without the same instructions).
    pub(crate) fn is_difference(self) -> bool {
        matches!(
            self,
            Verdict::Faster | Verdict::Slower | Verdict::SlowerSameInstructions | Verdict::FasterSameInstructions
        )
    }

    /// The difference labelled by the instruction counts of both builds (per op, base and new):
    /// a layout suspect where they agree within [`SAME_INSTRUCTIONS`].
    pub(crate) fn with_instructions(self, counts: Option<(f64, f64)>) -> Verdict {
        match (self, counts.is_some_and(|(b, n)| same_instructions(b, n))) {
            (Verdict::Slower, true) => Verdict::SlowerSameInstructions,
            (Verdict::Faster, true) => Verdict::FasterSameInstructions,
            (v, _) => v,
        }
    }

    /// Faster or slower, or looks it in one run per side.
    pub(crate) fn is_apparent_difference(self) -> bool {
        self.is_difference() || matches!(self, Verdict::LooksFaster | Verdict::LooksSlower)
    }

    /// The verdict one run per side can give: a difference only looks like one.
    pub(crate) fn unconfirmed(self) -> Verdict {
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
    /// The case.
    pub id: CaseId,
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
    /// A/B runs: instructions per op of the base and the new build, where both were counted.
    pub instructions: Option<(f64, f64)>,
    /// Verdict.
    pub verdict: Verdict,
}

impl Row {
    /// A row with only the test's own fields: no runs, fork pairs or instruction counts.
    fn tested(
        id: CaseId,
        sides: (Option<f64>, Option<f64>),
        test: Option<ForkTest>,
        forks: (usize, usize),
        verdict: Verdict,
    ) -> Row {
        Row { id, base: sides.0, new: sides.1, test, forks, runs: None, pairs: vec![], instructions: None, verdict }
    }
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
    /// An A/B report run over this many code-layout variants per build (`--layouts K`).
    pub layouts: Option<u32>,
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

    fn verdict_text(&self, v: Verdict) -> String {
        let text = v.text(self.options.noise_band_pct);
        if v.is_apparent_difference() && self.machine_changed() { format!("{text} (machine changed)") } else { text }
    }
}

/// The most two builds' instructions per op may differ, as a fraction, and still be "the same
/// instructions": deterministic cases count exactly the same when the code did not change, and
/// 0.1% leaves room for the few instructions a workload's clock reads or thread hand-offs vary by.
pub(crate) const SAME_INSTRUCTIONS: f64 = 0.001;

/// Whether per-op counts `base` and `new` agree within [`SAME_INSTRUCTIONS`].
pub(crate) fn same_instructions(base: f64, new: f64) -> bool {
    base > 0.0 && ((new / base) - 1.0).abs() <= SAME_INSTRUCTIONS
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
    tagged_pair_ratios(base, new).into_iter().map(|p| p.1).collect()
}

/// The units of the paired test: one per fork pair, or one per code-layout variant when the
/// pairs ran layout variants (`--layouts`, see [`crate::stats::layout`]).
pub(crate) fn pair_units(base: &[Fork], new: &[Fork]) -> Vec<f64> {
    crate::stats::layout::layout_units(&tagged_pair_ratios(base, new))
}

/// (layout variant, new/base) of each fork pair, as [`pair_ratios`].
fn tagged_pair_ratios(base: &[Fork], new: &[Fork]) -> Vec<(Option<u32>, f64)> {
    let base_forks: Vec<(&Fork, Vec<f64>)> = ok_timed(base).collect();
    ok_timed(new)
        .filter_map(|(nf, n)| {
            let (bf, b) = base_forks.iter().find(|(bf, _)| bf.index == nf.index)?;
            let ratio = if bf.lockstep && nf.lockstep && b.len() == n.len() {
                lockstep_ratio(b, &n)?
            } else {
                crate::stats::summarize(&n)?.median / crate::stats::summarize(b)?.median
            };
            Some((nf.layout.filter(|_| bf.layout == nf.layout), ratio))
        })
        .filter(|(_, r)| r.is_finite() && *r > 0.0)
        .collect()
}

/// The median of new/base over iterations run side by side (equal counts on both sides).
fn lockstep_ratio(base: &[f64], new: &[f64]) -> Option<f64> {
    let logs: Vec<f64> = base.iter().zip(new).map(|(b, n)| (n / b).ln()).filter(|x| x.is_finite()).collect();
    Some(crate::stats::summarize(&logs)?.median.exp())
}

/// Geometric mean of the fork medians: the level the ratio compares.
fn geometric_mean(medians: &[(u32, f64)]) -> Option<f64> {
    crate::stats::geometric_mean(medians.iter().map(|m| m.1))
}

/// The verdict of `test` (its interval at 1 − `level`) against the band: a difference only when
/// the whole interval lies beyond the band (a minimum-effect test: when the true change is at
/// most the band, it is called at most `level / 2` of the time in each direction).
pub(crate) fn verdict(test: Option<&ForkTest>, level: f64, band: f64, forks: (usize, usize)) -> Verdict {
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
pub(crate) fn compare_case(id: CaseId, base: &[Fork], new: &[Fork], options: Options, level: f64) -> Row {
    let (b, n) = (fork_medians(base), fork_medians(new));
    let values = |m: &[(u32, f64)]| m.iter().map(|v| v.1).collect::<Vec<f64>>();
    let test = welch(&values(&b), &values(&n), 1.0 - level);
    let forks = (b.len(), n.len());
    let verdict = verdict(test.as_ref(), level, options.noise_band_pct / 100.0, forks);
    Row::tested(id, (geometric_mean(&b), geometric_mean(&n)), test, forks, verdict)
}

/// Compares one case of several separate runs per side: Welch's t on each run's log geometric
/// mean of its fork medians, the run being the unit.
pub(crate) fn compare_runs(id: CaseId, base: &[&Benchmark], new: &[&Benchmark], options: Options) -> Row {
    let medians =
        |side: &[&Benchmark]| -> Vec<Vec<(u32, f64)>> { side.iter().map(|b| fork_medians(&b.forks)).collect() };
    let (base_medians, new_medians) = (medians(base), medians(new));
    let run_means = |side: &[Vec<(u32, f64)>]| -> Vec<f64> { side.iter().filter_map(|m| geometric_mean(m)).collect() };
    let (b, n) = (run_means(&base_medians), run_means(&new_medians));
    let ok_forks = |side: &[Vec<(u32, f64)>]| side.iter().map(Vec::len).sum::<usize>();
    let test = welch(&b, &n, 1.0 - options.alpha);
    let runs = (b.len(), n.len());
    let verdict = verdict(test.as_ref(), options.alpha, options.noise_band_pct / 100.0, runs);
    let (base_mean, new_mean) = (crate::stats::geometric_mean(b), crate::stats::geometric_mean(n));
    let forks = (ok_forks(&base_medians), ok_forks(&new_medians));
    Row { runs: Some(runs), ..Row::tested(id, (base_mean, new_mean), test, forks, verdict) }
}

/// Compares one case of an A/B run (paired t on the log ratio of each fork pair, or of each
/// layout variant's pairs, see [`pair_units`]) at `level`.
pub(crate) fn compare_pairs(id: CaseId, base: &[Fork], new: &[Fork], options: Options, level: f64) -> Row {
    let (b, n) = (fork_medians(base), fork_medians(new));
    let pairs = pair_ratios(base, new);
    let test = paired(&pair_units(base, new), 1.0 - level);
    let forks = (b.len(), n.len());
    let units = if pairs.is_empty() { (forks.0.min(1), forks.1.min(1)) } else { forks };
    let verdict = verdict(test.as_ref(), level, options.noise_band_pct / 100.0, units);
    Row { pairs, ..Row::tested(id, (geometric_mean(&b), geometric_mean(&n)), test, forks, verdict) }
}

/// Compares one case of an A/B report: [`compare_pairs`], its verdict labelled by the two
/// builds' instruction counts where both were counted.
pub(crate) fn compare_benchmark(b: &Benchmark, options: Options, level: f64) -> Row {
    let row = compare_pairs(b.id(), &b.baseline_forks, &b.forks, options, level);
    let instructions =
        b.baseline_instructions.as_ref().zip(b.instructions.as_ref()).map(|(b, n)| (b.median(), n.median()));
    Row { verdict: row.verdict.with_instructions(instructions), instructions, ..row }
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
        .map(|(id, b, n)| match (b.is_empty(), n.is_empty()) {
            (false, false) if by_runs => compare_runs(id, &b, &n, options),
            (false, false) => {
                let forks =
                    |side: &[&Benchmark]| side.iter().flat_map(|c| c.forks.iter().cloned()).collect::<Vec<Fork>>();
                let row = compare_case(id, &forks(&b), &forks(&n), options, options.alpha);
                Row { verdict: row.verdict.unconfirmed(), ..row }
            }
            _ => absent(id, b.first().copied(), n.first().copied()),
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
        layouts: None,
        rows,
    }
}

/// The row of a case only one side has.
fn absent(id: CaseId, base: Option<&Benchmark>, new: Option<&Benchmark>) -> Row {
    let verdict = if base.is_some() { Verdict::Missing } else { Verdict::Extra };
    let mean = |c: Option<&Benchmark>| c.and_then(|c| c.score.as_ref()).map(|s| s.mean);
    Row::tested(id, (mean(base), mean(new)), None, (0, 0), verdict)
}

/// new/base of the drift canary: the geometric mean of each side's runs (every run must have one).
fn canary_ratio(base: &[Report], new: &[Report]) -> Option<f64> {
    let side = |runs: &[Report]| -> Option<f64> {
        let rates: Option<Vec<f64>> =
            runs.iter().map(|r| r.meta.canary.as_ref().and_then(|c| c.ops_per_sec())).collect();
        crate::stats::geometric_mean(rates?)
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
        // An open-loop fork's ops/s is its arrival rate: those cases are judged by latency.
        .filter(|b| b.rate.is_none())
        .map(|b| compare_benchmark(b, options, level))
        .collect();
    let layouts = report.meta.settings.as_ref().and_then(|s| s.layouts);
    Comparison {
        options,
        level,
        paired: true,
        runs: (1, 1),
        sequential,
        canary: None,
        sampled: sampled(report),
        layouts,
        rows,
    }
}

#[cfg(test)]
mod tests;
