//! One step of a bisection: a commit built as `harness ab` builds a baseline and its case run
//! by the metric that decides it (instructions, I/O counts, or a paired A/B run against GOOD).

use super::{Bisection, Step, short};
use crate::bisect::Mark;
use crate::child::{ChildRun, Counting, Pairs, Selection, Timing};
use crate::cli::BisectArgs;
use crate::compare::throughput::{Options, Verdict, compare_sides};
use crate::metric::Metric;
use crate::report::Report;
use crate::report::read::read_report;
use std::path::{Path, PathBuf};

/// Tests commit `i` against GOOD (its own value only, for GOOD itself): builds it, runs the
/// case, and records what it measured in `b.steps[i]`.
pub(super) fn test_commit(args: &BisectArgs, b: &mut Bisection, i: usize, runs: &Path) -> Mark {
    let binary = match build(args, &b.steps[i].commit) {
        Ok(binary) => binary,
        Err(e) => return Mark::Skipped(format!("it does not build: {e}")),
    };
    let out = runs.join(format!("{}.json", short(&b.steps[i].commit)));
    let good_run = runs.join(format!("{}.json", short(&b.steps[0].commit)));
    let last = b.steps.len() - 1;
    let (bad_ratio, alpha) = (b.steps[last].value, b.step_alpha);
    let good_commit = b.steps[0].commit.clone();
    let step = &mut b.steps[i];
    let counted = Counted { args, binary: &binary, out: &out, good: (i > 0).then_some(good_run.as_path()) };
    let marked = match args.metric {
        Metric::Instructions => counted.instructions(step),
        Metric::Io => counted.io(step),
        Metric::Alloc => counted.alloc(step),
        Metric::Latency => return Mark::Skipped("bisect does not judge latency".into()),
        Metric::Throughput if i == 0 => Ok(Mark::Good),
        Metric::Throughput => {
            let good = match build(args, &good_commit) {
                Ok(binary) => binary,
                Err(e) => return Mark::Skipped(format!("GOOD does not build: {e}")),
            };
            // BAD is tested against the threshold; the commits between against the midpoint
            // between GOOD and BAD (BAD's ratio is known by then).
            let midpoint = if i == last { None } else { bad_ratio.map(f64::sqrt) };
            let band = midpoint.map_or(args.threshold, |m| 100.0 * (1.0 - m).abs());
            ab_against_good(args, alpha, band, (&binary, &good), &out).map(|ab| {
                step.value = Some(ab.ratio);
                step.interval = Some(ab.interval);
                throughput_mark(args.faster, midpoint, &ab)
            })
        }
    };
    marked.unwrap_or_else(Mark::Skipped)
}

/// A throughput step's mark: BAD (no midpoint yet) by its verdict, a commit between by where its
/// interval lies against the midpoint of GOOD's and BAD's ops/s.
fn throughput_mark(faster: bool, midpoint: Option<f64>, ab: &AbStep) -> Mark {
    let (lo, hi) = ab.interval;
    let Some(m) = midpoint else {
        let moved = if faster {
            matches!(ab.verdict, Verdict::Faster | Verdict::FasterSameInstructions)
        } else {
            matches!(ab.verdict, Verdict::Slower | Verdict::SlowerSameInstructions)
        };
        return if moved { Mark::Bad } else { Mark::Good };
    };
    let (beyond, short_of) = if faster { (lo > m, hi < m) } else { (hi < m, lo > m) };
    match (beyond, short_of) {
        (true, _) => Mark::Bad,
        (_, true) => Mark::Good,
        _ => Mark::Undecided,
    }
}

/// The commit's harness, built or reused, relinkable when the search spreads its pairs over layouts.
fn build(args: &BisectArgs, commit: &str) -> Result<PathBuf, String> {
    crate::layouts::builds::commit_binary(commit, args.layouts.is_some(), args.quiet)
}

/// A `harness run` of `binary` of the bisected case into `out`, with the child's defaults.
fn case_run(args: &BisectArgs, binary: &Path, out: &Path) -> ChildRun {
    let select = Selection {
        configs: args.select.config.clone(),
        filters: args.select.filter.clone(),
        params: args.select.params.clone(),
        hidden: args.select.hidden,
    };
    let urls = (args.database_url.as_str(), args.select.redis_url.as_str());
    ChildRun::new(binary, select, urls, out, "its case".into())
}

/// A counted step: the commit's `binary`, the report it writes to `out`, and GOOD's run to
/// judge it against (none for GOOD itself).
struct Counted<'a> {
    args: &'a BisectArgs,
    binary: &'a Path,
    out: &'a Path,
    good: Option<&'a Path>,
}

impl Counted<'_> {
    /// One counting fork of `counting` (no timed iterations to speak of; a few short ones when
    /// the timed forks count allocations); its report.
    fn run(&self, counting: Counting) -> Result<Report, String> {
        let mut run = case_run(self.args, self.binary, self.out);
        run.timing = if counting == Counting::Alloc { Timing::ALLOC_COUNT } else { Timing::BRIEF };
        run.counting = counting;
        run.run().map_err(|e| e.to_string())
    }

    /// The case's allocations per op, judged against GOOD's run as `compare --metric alloc`
    /// judges them, with the threshold for every case.
    fn alloc(&self, step: &mut Step) -> Result<Mark, String> {
        let report = self.run(Counting::Alloc)?;
        let counted = report.benchmarks.first().and_then(|b| b.allocations.as_ref());
        let counted = counted.ok_or("its timed fork counted no allocation")?;
        step.value = Some(counted.per_op);
        step.detail = Some(format!("{:.2} allocations, {:.1} bytes per op", counted.per_op, counted.bytes_per_op));
        let Some(good) = self.good else { return Ok(Mark::Good) };
        let good = read_report(good, "GOOD's allocation").map_err(|e| e.0)?;
        let thresholds =
            crate::compare::instructions::IoThresholds { default: Some(self.args.threshold), ..Default::default() };
        moved(self.args.faster, &crate::compare::alloc::compare(&good, &report, &thresholds))
    }

    /// The case's instructions per op, judged against GOOD's run as `compare --metric
    /// instructions` judges them, with the threshold for every case.
    fn instructions(&self, step: &mut Step) -> Result<Mark, String> {
        use crate::compare::instructions::{self, Limits, Thresholds};
        let report = self.run(Counting::Instructions { ops: None, cache_sim: false, keep: None })?;
        let counted = report.benchmarks.first().and_then(|b| b.instructions.as_ref());
        step.value = Some(counted.ok_or("its instruction fork failed")?.median());
        let Some(good) = self.good else { return Ok(Mark::Good) };
        let good = read_report(good, "GOOD's instruction").map_err(|e| e.0)?;
        let limits = Limits { deterministic_pct: self.args.threshold, varying_pct: self.args.threshold };
        moved(self.args.faster, &instructions::compare(&good, &report, limits, &Thresholds::default()))
    }

    /// The case's I/O counts, judged against GOOD's run as `compare --metric io` judges them:
    /// bad when an exact count grew, or bytes or rows beyond the threshold.
    fn io(&self, step: &mut Step) -> Result<Mark, String> {
        let report = self.run(Counting::Io)?;
        let io = report.benchmarks.first().and_then(|b| b.io.as_ref()).ok_or("its I/O fork counted nothing")?;
        step.value = Some(io.per_op.round_trips);
        step.detail = Some(format!(
            "{} round trip(s), {} statement(s), {} bytes per op",
            crate::format::si(io.per_op.round_trips),
            crate::format::si(io.per_op.statements),
            crate::format::si(io.per_op.bytes)
        ));
        let Some(good) = self.good else { return Ok(Mark::Good) };
        let good = read_report(good, "GOOD's I/O").map_err(|e| e.0)?;
        let threshold = self.args.threshold;
        let compared = crate::compare::io::compare(&good, &report, &|_, _| threshold);
        step.changes = compared.rows.first().map(|r| r.changes.clone()).unwrap_or_default();
        moved(self.args.faster, &compared)
    }
}

/// A counted step's mark from the comparer's move of its one case against GOOD.
fn moved(faster: bool, compared: &dyn crate::compare::Comparison) -> Result<Mark, String> {
    use crate::compare::Move;
    let (_, step) = compared.moves().into_iter().next().ok_or("its run compared no case")?;
    match step {
        Move::Worse if !faster => Ok(Mark::Bad),
        Move::Better if faster => Ok(Mark::Bad),
        Move::Worse | Move::Better | Move::Same => Ok(Mark::Good),
        Move::Unknown(why) => Err(format!("its run and GOOD's cannot be compared ({why})")),
    }
}

/// What a step's A/B run said.
struct AbStep {
    /// This commit's ops/s over GOOD's.
    ratio: f64,
    /// Its interval at the step's level.
    interval: (f64, f64),
    /// The comparison's verdict with `band` as its noise band.
    verdict: Verdict,
}

/// A paired A/B run of `builds.0` against GOOD's `builds.1`, with --forks auto deciding at
/// `alpha` against a noise band of ±`band` percent.
fn ab_against_good(
    args: &BisectArgs,
    alpha: f64,
    band: f64,
    builds: (&Path, &Path),
    out: &Path,
) -> Result<AbStep, String> {
    let mut run = case_run(args, builds.0, out);
    // No instruction forks for the decided case (an older harness has no layout check to drop).
    run.pairs = Some(Pairs {
        auto_max_forks: Some(args.max_forks),
        alpha: Some(alpha),
        noise_band: Some(band),
        layouts: args.layouts,
        ..Pairs::against(builds.1)
    });
    let report = run.run().map_err(|e| e.to_string())?;
    let options = Options { noise_band_pct: band, alpha };
    let row = compare_sides(&report, options).rows.into_iter().next().ok_or("its A/B run compared no case")?;
    let test = row.test.ok_or("its A/B run has too few fork pairs to test")?;
    Ok(AbStep { ratio: test.ratio, interval: (test.lower, test.upper), verdict: row.verdict })
}
