//! Open-loop latency, case by case (`--metric latency`): one percentile of the corrected
//! latency (from each op's intended start, `harness run --rate`), NEW/BASE with an interval and
//! the throughput comparison's verdicts, read the other way round (a higher latency is slower).
//!
//! The fork is the unit: each fork that kept its rate contributes its own percentile (a fork that
//! could not keep the rate measured another load and is left out, counted apart). An A/B report
//! is tested fork pair by fork pair on the log ratio of the pair's percentiles, by default with
//! the paired t-test, or with the percentile bootstrap over the pairs (`--latency-test`); with
//! `--layouts` the unit is the layout variant, as for throughput. Separate reports: Welch's t on
//! the log fork percentiles (one run per side: differences only look like ones), or on each
//! run's geometric mean with two or more runs per side. The rates match because a case's
//! identity holds its rate.

mod render;

use super::case_runs;
use super::throughput::{Verdict, verdict};
use crate::error::BadInput;
use crate::rate::Rate;
use crate::report::open_loop::kept;
use crate::report::{Benchmark, CaseId, Fork, Report};
use crate::stats::fork_test::{ForkTest, welch};

/// The percentile compared (`--percentile`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Percentile {
    /// The median.
    #[value(name = "p50")]
    P50,
    /// The 99th percentile.
    #[default]
    #[value(name = "p99")]
    P99,
    /// The 99.9th percentile: a fork needs thousands of ops for it to mean anything.
    #[value(name = "p99.9")]
    P999,
}

impl Percentile {
    /// Its key in a report's percentiles (`p99`).
    pub(crate) fn key(self) -> &'static str {
        match self {
            Percentile::P50 => "p50",
            Percentile::P99 => "p99",
            Percentile::P999 => "p99.9",
        }
    }
}

/// The test of an A/B report's fork pairs (`--latency-test`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Method {
    /// The paired t-test on the log ratios (reports/calibration.md: it holds its level with 5 pairs).
    #[default]
    T,
    /// The percentile bootstrap over the pairs (10,000 resamples, seeded).
    Bootstrap,
}

/// How a verdict is reached.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Options {
    /// The percentile compared.
    pub percentile: Percentile,
    /// Ratios within `1 ± noise_band_pct / 100` are "no change".
    pub noise_band_pct: f64,
    /// Significance level; the interval is at `1 - alpha`.
    pub alpha: f64,
    /// The fork-pair test.
    pub method: Method,
}

impl Default for Options {
    fn default() -> Self {
        Options { percentile: Percentile::P99, noise_band_pct: 1.0, alpha: 0.05, method: Method::T }
    }
}

/// One case's comparison.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    /// The case.
    pub id: CaseId,
    /// Its rate.
    pub rate: Option<Rate>,
    /// Base: the geometric mean of the kept forks' percentiles, nanoseconds.
    pub base: Option<f64>,
    /// New, likewise.
    pub new: Option<f64>,
    /// The test of the latency ratio new/base.
    pub test: Option<ForkTest>,
    /// Forks that kept the rate on each side.
    pub kept: (usize, usize),
    /// Ok forks that ran open-loop but did not keep the rate, on each side.
    pub missed: (usize, usize),
    /// Several runs per side: the runs with data on each side.
    pub runs: Option<(usize, usize)>,
    /// A/B reports: new/base of each fork pair's percentile, in fork order.
    pub pairs: Vec<f64>,
    /// A/B reports: both builds' instructions per op, where both were counted.
    pub instructions: Option<(f64, f64)>,
    /// The verdict, as throughput words it (FASTER is a lower latency).
    pub verdict: Verdict,
}

/// A whole comparison.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Comparison {
    /// The options used.
    pub options: Options,
    /// An A/B report's fork pairs (true) or separate reports.
    pub paired: bool,
    /// Reports on each side.
    pub runs: (usize, usize),
    /// `--layouts K` of an A/B report.
    pub layouts: Option<u32>,
    /// One row per open-loop case of either side.
    pub rows: Vec<Row>,
}

impl Comparison {
    /// Whether the run is the unit (two or more separate runs per side).
    pub(crate) fn by_runs(&self) -> bool {
        !self.paired && self.runs.0 >= 2 && self.runs.1 >= 2
    }
}

/// (fork index, layout variant, percentile in ns) of every fork of `forks` that kept its rate.
fn fork_values(forks: &[Fork], p: Percentile) -> Vec<(u32, Option<u32>, f64)> {
    kept(forks).filter_map(|(f, o)| Some((f.index, f.layout, o.corrected_at(p.key())? as f64))).collect()
}

/// Ok forks of `forks` that ran open-loop and did not keep their rate.
fn missed(forks: &[Fork]) -> usize {
    forks.iter().filter(|f| f.is_ok_timed() && f.open_loop.as_ref().is_some_and(|o| o.missed.is_some())).count()
}

/// The geometric mean of the values.
fn level_of(values: &[(u32, Option<u32>, f64)]) -> Option<f64> {
    crate::stats::geometric_mean(values.iter().map(|v| v.2))
}

/// The throughput verdict of a latency test: the test read as base/new, a speed ratio.
fn judged(test: Option<&ForkTest>, options: Options, units: (usize, usize)) -> Verdict {
    verdict(test.map(ForkTest::inverse).as_ref(), options.alpha, options.noise_band_pct / 100.0, units)
}

/// Compares one case of an A/B report, fork pair by fork pair.
pub(crate) fn compare_benchmark(b: &Benchmark, options: Options) -> Row {
    let (base, new) = (fork_values(&b.baseline_forks, options.percentile), fork_values(&b.forks, options.percentile));
    let tagged: Vec<(Option<u32>, f64)> = new
        .iter()
        .filter_map(|&(i, layout, n)| {
            let &(_, base_layout, v) = base.iter().find(|v| v.0 == i)?;
            Some((layout.filter(|_| layout == base_layout), n / v))
        })
        .filter(|(_, r)| r.is_finite() && *r > 0.0)
        .collect();
    let units = crate::stats::layout::layout_units(&tagged);
    let confidence = 1.0 - options.alpha;
    let test = match options.method {
        Method::T => crate::stats::fork_test::paired(&units, confidence),
        Method::Bootstrap => crate::stats::bootstrap::paired(&units, confidence),
    };
    let kept = (base.len(), new.len());
    let shown = if tagged.is_empty() { (kept.0.min(1), kept.1.min(1)) } else { kept };
    let instructions =
        b.baseline_instructions.as_ref().zip(b.instructions.as_ref()).map(|(b, n)| (b.median(), n.median()));
    Row {
        id: b.id(),
        rate: b.rate,
        base: level_of(&base),
        new: level_of(&new),
        test,
        kept,
        missed: (missed(&b.baseline_forks), missed(&b.forks)),
        runs: None,
        pairs: tagged.iter().map(|p| p.1).collect(),
        instructions,
        verdict: judged(test.as_ref(), options, shown).with_instructions(instructions),
    }
}

/// Compares one case of separate runs: Welch's t on the log fork percentiles of all runs (one run
/// per side: unconfirmed) or, with two or more runs per side, on each run's geometric mean.
fn compare_runs(id: CaseId, base: &[&Benchmark], new: &[&Benchmark], options: Options) -> Row {
    let p = options.percentile;
    let per_run = |side: &[&Benchmark]| -> Vec<Vec<(u32, Option<u32>, f64)>> {
        side.iter().map(|b| fork_values(&b.forks, p)).collect()
    };
    let (b, n) = (per_run(base), per_run(new));
    let by_runs = base.len() >= 2 && new.len() >= 2;
    let units = |side: &[Vec<(u32, Option<u32>, f64)>]| -> Vec<f64> {
        if by_runs {
            side.iter().filter_map(|r| level_of(r)).collect()
        } else {
            side.iter().flatten().map(|v| v.2).collect()
        }
    };
    let (bu, nu) = (units(&b), units(&n));
    let test = welch(&bu, &nu, 1.0 - options.alpha);
    let flat = |side: &[Vec<(u32, Option<u32>, f64)>]| side.concat();
    let kept = (flat(&b).len(), flat(&n).len());
    let verdict = judged(test.as_ref(), options, (bu.len(), nu.len()));
    let count_missed = |side: &[&Benchmark]| side.iter().map(|c| missed(&c.forks)).sum();
    Row {
        rate: base.first().or(new.first()).and_then(|c| c.rate),
        base: level_of(&flat(&b)),
        new: level_of(&flat(&n)),
        test,
        kept,
        missed: (count_missed(base), count_missed(new)),
        runs: by_runs.then_some((bu.len(), nu.len())),
        pairs: vec![],
        instructions: None,
        verdict: if by_runs { verdict } else { verdict.unconfirmed() },
        id,
    }
}

/// The row of a case only one side has.
fn absent(id: CaseId, base: Option<&Benchmark>) -> Row {
    let verdict = if base.is_some() { Verdict::Missing } else { Verdict::Extra };
    let rate = id.rate();
    Row {
        id,
        rate,
        base: None,
        new: None,
        test: None,
        kept: (0, 0),
        missed: (0, 0),
        runs: None,
        pairs: vec![],
        instructions: None,
        verdict,
    }
}

/// The registry's entry: the `new` runs against the `base` runs, or (no `new` run) the two
/// builds of one A/B report. Only open-loop cases (those with a rate) are compared.
pub(crate) fn comparison(base: &[Report], new: &[Report], options: Options) -> Result<Comparison, BadInput> {
    let rows = match (base, new) {
        ([one], []) if one.is_ab() => {
            one.benchmarks.iter().filter(|b| b.rate.is_some()).map(|b| compare_benchmark(b, options)).collect()
        }
        ([_], []) => {
            return Err(BadInput(
                "--metric latency: one report holds one build only: pass two reports (BASE.json NEW.json), or make an A/B report with `harness ab REF --rate OPS`".into(),
            ));
        }
        _ => case_runs(base, new)
            .into_iter()
            .filter(|(id, _, _)| id.rate().is_some())
            .map(|(id, b, n)| match (b.is_empty(), n.is_empty()) {
                (false, false) => compare_runs(id, &b, &n, options),
                _ => absent(id, b.first().copied()),
            })
            .collect(),
    };
    let ab = new.is_empty();
    Ok(Comparison {
        options,
        paired: ab,
        runs: (base.len(), new.len().max(1)),
        layouts: if ab { base[0].meta.settings.as_ref().and_then(|s| s.layouts) } else { None },
        rows,
    })
}

#[cfg(test)]
mod tests;
