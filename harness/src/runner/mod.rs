//! The parent: runs every case's forks one after another, each in a fresh worker process, and
//! rewrites the report after every fork so an interrupted run keeps everything that finished.
//! The parent never measures.

pub(crate) mod baseline;
mod canary;
pub(crate) mod cleanup;
pub(crate) mod collect;
mod ending;
mod io;
mod lockstep;
mod progress;
pub(crate) mod spawn;

use crate::plan::Case;
use crate::progress::Progress;
use crate::protocol::{InstructionTask, PROTOCOL_VERSION, Task};
use crate::report::{Benchmark, CaseSettings, Failure, FailureKind, Fork, ForkStatus, Report, RunStatus, write};
use crate::stats::sequential::{self, SequentialPlan};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use workloads::redact::redact;

pub(crate) use io::IoSettings;

/// What the runner needs besides the cases.
#[derive(Debug)]
pub(crate) struct RunContext<'a> {
    /// Binary started in worker mode (normally this one).
    pub worker_exe: PathBuf,
    /// A/B runs: the other build, whose forks alternate with this one's.
    pub baseline_exe: Option<PathBuf>,
    /// A/B runs: run each fork pair side by side, alternating iterations (`--interleave
    /// iterations`), instead of one fork after the other.
    pub lockstep: bool,
    /// `--pin`: the CPUs every worker runs on.
    pub pin: Option<crate::pin::CpuList>,
    /// Where the report goes (`--out`, or its fallback once that cannot be written).
    pub out: &'a write::ReportFile,
    /// Settings every case runs with.
    pub settings: CaseSettings,
    /// PostgreSQL URL handed to the workers.
    pub database_url: String,
    /// Count allocations in timed forks (`--alloc`).
    pub count_allocations: bool,
    /// Sample-time mode (`--mode sample`).
    pub sample: bool,
    /// Add an instruction-count fork per case (`--instructions`).
    pub instructions: Option<InstructionSettings>,
    /// Add an I/O fork per case (`--io`), on every build of the run.
    pub io: Option<IoSettings>,
    /// `--forks auto`: the sequential plan and the noise band (a fraction) that decide when a
    /// case has enough fork pairs; `settings.forks` is then the budget.
    pub sequential: Option<(SequentialPlan, f64)>,
    /// A/B runs with `--layouts K`: the code-layout variants the timed fork pairs run.
    pub layouts: Option<crate::layouts::Variants>,
    /// A/B runs: an instruction fork of each build for every case the timed pairs decided, to
    /// tell a change of code from one of layout (`--layout-check`).
    pub layout_check: Option<LayoutCheck>,
    /// Set by Ctrl-C / SIGTERM.
    pub stop: &'a AtomicBool,
}

/// How an A/B run checks the code of its decided cases.
#[derive(Debug, Clone)]
pub(crate) struct LayoutCheck {
    /// The instruction fork each build runs.
    pub instructions: InstructionSettings,
    /// How the comparison decides.
    pub options: crate::compare::throughput::Options,
}

impl RunContext<'_> {
    /// Starts `exe` as the worker of `task` (behind `wrapper`, valgrind's command line, when
    /// given) on the run's CPUs: the one way every fork, canary and I/O fork starts its
    /// worker. The error names what could not start.
    pub(crate) fn start_worker(
        &self,
        wrapper: Vec<OsString>,
        exe: PathBuf,
        task: &Task,
    ) -> Result<spawn::Worker, String> {
        let mut command = wrapper;
        command.push(exe.into());
        command.push(crate::protocol::WORKER_ARG.into());
        spawn::spawn(&command, task, self.pin.as_ref().map(crate::pin::CpuList::cpu_set))
            .map_err(|e| format!("cannot start {}: {e}", command[0].to_string_lossy()))
    }

    /// The binary a fork of `side` runs, and its layout variant: with `--layouts`, a timed fork
    /// of pair `pair` runs its build's variant for that pair; every other fork the build itself.
    pub(crate) fn exe(&self, side: Side, pair: Option<u32>) -> Result<(PathBuf, Option<u32>), String> {
        if let (Some(v), Some(pair)) = (&self.layouts, pair) {
            let seed = v.seed(pair);
            let build = if side == Side::Baseline { &v.baseline } else { &v.current };
            return Ok((build.variant(seed).map_err(|e| e.to_string())?, Some(seed)));
        }
        let exe = match side {
            Side::Baseline => self.baseline_exe.clone().ok_or("an A/B fork without a baseline binary")?,
            Side::Current => self.worker_exe.clone(),
        };
        Ok((exe, None))
    }

    /// The level the A/B comparison tests each case at: alpha, or the sequential plan's own.
    fn level(&self, options: crate::compare::throughput::Options) -> f64 {
        self.sequential.as_ref().map_or(options.alpha, |(plan, _)| plan.nominal_alpha)
    }
}

/// How instruction forks run.
#[derive(Debug, Clone)]
pub(crate) struct InstructionSettings {
    /// The valgrind executable.
    pub valgrind: PathBuf,
    /// `--instr-ops`.
    pub ops: Option<u64>,
    /// Instruction forks per case.
    pub forks: u32,
    /// `--callgrind-dir`: where each instruction fork's measurement dumps are kept.
    pub keep: Option<PathBuf>,
    /// `--cache-sim`: callgrind also simulates the caches and the branch predictor.
    pub simulate: bool,
}

/// Runs `cases` into `report`, writing it after every fork; returns the final report. A case
/// with a `skipped` reason is recorded without running. The drift canary runs first and last.
pub(crate) fn run(
    cases: &[Case],
    skipped: &[Option<String>],
    mut report: Report,
    ctx: &RunContext<'_>,
    progress: &Progress,
) -> anyhow::Result<Report> {
    save(ctx, &report, progress)?;
    cleanup::sweep_stale(cases, skipped, ctx, progress);
    canary::measure(&mut report, ctx, progress, "start");
    save(ctx, &report, progress)?;
    // Servers that failed an op, with the reason every later case that needs one is skipped.
    let mut lost: Vec<((workloads::Server, String), String)> = vec![];
    for (case_index, case) in cases.iter().enumerate() {
        if ctx.stop.load(Ordering::SeqCst) {
            break;
        }
        let needs = servers(case, ctx);
        let gone = lost.iter().find(|(server, _)| needs.contains(server)).map(|(_, why)| why.clone());
        if let Some(reason) = skipped.get(case_index).cloned().flatten().or(gone) {
            report.benchmarks.push(Benchmark { skipped: Some(reason), ..benchmark(case, ctx) });
            save(ctx, &report, progress)?;
            continue;
        }
        let case = match at_share(case, &report) {
            Ok(case) => case,
            Err(why) => {
                // Not recorded: it has no rate, so no identity of its own.
                progress.warn(&format!("skipped: {why}"));
                continue;
            }
        };
        let case = case.as_ref();
        report.benchmarks.push(benchmark(case, ctx));
        run_case(&mut report, case, ctx, progress)?;
        if report.benchmarks.last().is_some_and(server_failed) && !needs.is_empty() {
            let rest = cases[case_index + 1..].iter().filter(|c| servers(c, ctx).iter().any(|s| needs.contains(s)));
            let names: Vec<String> = needs.iter().map(|(s, url)| format!("{} at {}", s.name(), redact(url))).collect();
            let why = format!("{} failed during {}: check the server and run again", names.join(" and "), case.id());
            progress.warn(&format!("{why}; skipping the {} remaining case(s) that need it", rest.count()));
            lost.extend(needs.into_iter().map(|need| (need, why.clone())));
        }
    }
    if !ctx.stop.load(Ordering::SeqCst) {
        canary::measure(&mut report, ctx, progress, "end");
    }
    report.status = if ctx.stop.load(Ordering::SeqCst) { RunStatus::Interrupted } else { RunStatus::Complete };
    crate::machine::finish_meta(&mut report.meta);
    save(ctx, &report, progress)?;
    progress.finish();
    Ok(report)
}

/// A case at a share of its closed-loop throughput (`--rate 80%`) given the rate from that
/// case's score, measured earlier in this run; any other case as it is. Why not, when the
/// closed-loop case has no score.
fn at_share<'a>(case: &'a Case, report: &Report) -> Result<std::borrow::Cow<'a, Case>, String> {
    let Some(pct) = case.share_pct() else { return Ok(std::borrow::Cow::Borrowed(case)) };
    let closed = report.benchmarks.iter().find(|b| b.id() == *case.id()).and_then(|b| b.score.as_ref());
    closed.and_then(|s| case.at_share_of(s.mean)).map(std::borrow::Cow::Owned).ok_or_else(|| {
        format!("--rate {pct}% is a share of {}'s closed-loop throughput, which this run did not measure (its forks failed or were skipped)", case.id())
    })
}

/// Writes the report where it goes, saying so when that has to change.
fn save(ctx: &RunContext<'_>, report: &Report, progress: &Progress) -> anyhow::Result<()> {
    ctx.out.save(report, &|line| progress.warn(line))
}

/// The order of the two builds in fork pair `pair` of an A/B run: A B, then B A, then A B…
/// (ABBA), so that a drift linear in time weighs on both builds alike.
pub(crate) fn pair_order(pair: u32) -> [Side; 2] {
    if pair.is_multiple_of(2) { [Side::Baseline, Side::Current] } else { [Side::Current, Side::Baseline] }
}

/// Runs the last case's forks: its timed forks (in ABBA pairs for A/B runs, until decided with
/// `--forks auto`), then its instruction forks, then its I/O forks.
fn run_case(report: &mut Report, case: &Case, ctx: &RunContext<'_>, progress: &Progress) -> anyhow::Result<()> {
    let label = case.id().to_string();
    let stopped = || ctx.stop.load(Ordering::SeqCst);
    let started = std::time::Instant::now();
    for pair in 0..ctx.settings.forks {
        if ctx.lockstep && ctx.baseline_exe.is_some() {
            if stopped() {
                return Ok(());
            }
            for (side, fork) in lockstep::run_pair(ctx, case, pair, progress, &label) {
                record(report, fork, side);
            }
            save(ctx, report, progress)?;
        } else {
            let sides: &[Side] = if ctx.baseline_exe.is_some() { &pair_order(pair) } else { &[Side::Current] };
            for &side in sides {
                if stopped() {
                    return Ok(());
                }
                record(report, run_fork(ctx, case, pair, None, side, progress, &label), side);
                save(ctx, report, progress)?;
            }
        }
        if report.benchmarks.last().is_some_and(server_failed) {
            return Ok(());
        }
        if let Some(stop) = look(report, ctx, progress, &label, started.elapsed() / (pair + 1)) {
            report.benchmarks.last_mut().expect("entry exists").sequential_stop = Some(stop);
            save(ctx, report, progress)?;
            break;
        }
    }
    counting_forks(report, case, ctx, progress, &label)
}

/// The last case's untimed forks, on every build: instruction forks (see
/// [`instruction_forks`]), then I/O forks (`--io`). Stops at an interrupt or a failed server.
fn counting_forks(
    report: &mut Report,
    case: &Case,
    ctx: &RunContext<'_>,
    progress: &Progress,
    label: &str,
) -> anyhow::Result<()> {
    let sides = if ctx.baseline_exe.is_some() { vec![Side::Baseline, Side::Current] } else { vec![Side::Current] };
    let instr = instruction_forks(report, ctx);
    let instr_forks = instr.as_ref().map_or(0, |(i, _)| i.forks);
    let io_forks = ctx.io.as_ref().map_or(0, |io| io.forks);
    let first = ctx.settings.forks;
    let total = first + instr_forks + io_forks;
    for index in first..total {
        let on = if index < first + instr_forks { instr.as_ref().map_or(&sides, |(_, s)| s) } else { &sides };
        for &side in on {
            if ctx.stop.load(Ordering::SeqCst) {
                return Ok(());
            }
            let fork = match (&instr, &ctx.io) {
                (Some((i, _)), _) if index < first + instr_forks => {
                    run_fork(ctx, case, index, Some(i), side, progress, label)
                }
                (_, Some(io)) => {
                    io::run_io_fork(ctx, case, (index, total), io, side, progress, &side_label(label, side))
                }
                _ => unreachable!("the loop runs only the forks asked for"),
            };
            record(report, fork, side);
            save(ctx, report, progress)?;
            if report.benchmarks.last().is_some_and(server_failed) {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// `--forks auto`: the look after a fork pair of the last case, shown with the time the case
/// likely has left at `per_pair`; whether (and why) to stop.
fn look(
    report: &Report,
    ctx: &RunContext<'_>,
    progress: &Progress,
    label: &str,
    per_pair: std::time::Duration,
) -> Option<sequential::SequentialStop> {
    let (plan, band) = ctx.sequential.as_ref()?;
    let b = report.benchmarks.last()?;
    let ratios = crate::compare::throughput::pair_units(&b.baseline_forks, &b.forks);
    let (test, stop) = sequential::decide(&ratios, plan, *band);
    let left = crate::progress::TimeLeft {
        pairs: sequential::pairs_left(test.as_ref(), ratios.len(), plan, *band),
        budget: plan.max_pairs.saturating_sub(ratios.len()),
        per_pair,
    };
    let standing = crate::progress::Standing { label, pairs: ratios.len(), test: test.as_ref(), stop, left: &left };
    progress.interval(&standing);
    stop
}

/// The instruction forks the last case runs after its timed forks, and on which builds:
/// `--instructions` on every build of the run; else, in an A/B run with the layout check, one
/// of each build when the timed pairs decided the case (faster or slower).
fn instruction_forks(report: &Report, ctx: &RunContext<'_>) -> Option<(InstructionSettings, Vec<Side>)> {
    let ab = ctx.baseline_exe.is_some();
    if let Some(instr) = &ctx.instructions {
        let sides = if ab { vec![Side::Baseline, Side::Current] } else { vec![Side::Current] };
        return Some((instr.clone(), sides));
    }
    let check = ctx.layout_check.as_ref().filter(|_| ab)?;
    let b = report.benchmarks.last()?;
    let row = crate::compare::throughput::compare_benchmark(b, check.options, ctx.level(check.options));
    if !row.verdict.is_difference() {
        return None;
    }
    Some((check.instructions.clone(), vec![Side::Baseline, Side::Current]))
}

fn task(case: &Case, fork_index: u32, ctx: &RunContext<'_>, instr: Option<&InstructionSettings>) -> Task {
    let s = &ctx.settings;
    let timed = instr.is_none();
    Task {
        protocol: PROTOCOL_VERSION,
        workload: case.def.name.to_string(),
        params: case.params.0.clone(),
        fork_index,
        warmup_iterations: if timed { s.warmup_iterations } else { 0 },
        warmup_nanos: s.warmup_nanos,
        iterations: if timed { s.iterations } else { 0 },
        iteration_nanos: s.iteration_nanos,
        database_url: ctx.database_url.clone(),
        instructions: instr.map(|i| InstructionTask { ops: i.ops }),
        count_allocations: timed && ctx.count_allocations,
        threads: if timed { case.threads() } else { 1 },
        sample: timed && ctx.sample,
        lockstep: false,
        io: None,
        rate: if timed { case.rate() } else { None },
    }
}

/// How a fork's case is named in progress lines: the baseline build's forks say so.
fn side_label(label: &str, side: Side) -> String {
    if side == Side::Baseline { format!("{label}{}", crate::callgrind::BASELINE_SUFFIX) } else { label.to_string() }
}

/// Shows a fork's end: its failure as a warning, then the progress step.
fn report_fork_end(progress: &Progress, label: &str, fork: &Fork, forks: u32) {
    if let Some(f) = &fork.failure {
        let kind = serde_json::to_value(f.kind).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
        progress.warn(&format!("{label} fork {}: {kind}: {}", fork.index, f.message));
    }
    progress.fork_finished(label, fork, forks);
}

/// Which build a fork ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// This harness binary.
    Current,
    /// `--baseline-bin`.
    Baseline,
}

/// Runs one fork (timed, or counting instructions under callgrind) and reports its progress.
fn run_fork(
    ctx: &RunContext<'_>,
    case: &Case,
    fork_index: u32,
    instr: Option<&InstructionSettings>,
    side: Side,
    progress: &Progress,
    label: &str,
) -> Fork {
    let forks = ctx.settings.forks + instr.map_or(0, |i| i.forks);
    let shown = side_label(label, side);
    let kept_as = crate::callgrind::kept_name(label, side == Side::Baseline, fork_index);
    let label = shown.as_str();
    progress.fork_started(label, fork_index, forks);
    let task = task(case, fork_index, ctx, instr);
    let out_dir = match instr.map(|_| tempfile::Builder::new().prefix("harness-callgrind-").tempdir()).transpose() {
        Ok(dir) => dir,
        Err(e) => return spawn_failed(&task, format!("cannot create a directory for callgrind output: {e}")),
    };
    let command: Vec<OsString> = match (instr, &out_dir) {
        (Some(instr), Some(dir)) => crate::callgrind::command(&instr.valgrind, dir.path(), instr.simulate),
        _ => vec![],
    };
    let (exe, layout) = match ctx.exe(side, instr.is_none().then_some(fork_index)) {
        Ok(found) => found,
        Err(e) => return spawn_failed(&task, e),
    };
    // Under valgrind the worker runs tens of times slower: give it at least ten minutes.
    let mut timeout = Duration::from_nanos(ctx.settings.fork_timeout_nanos);
    if instr.is_some() {
        timeout = timeout.max(Duration::from_secs(600));
    }
    let mut fork = match ctx.start_worker(command, exe, &task) {
        Ok(worker) => collect::collect(worker, &task, timeout, ctx.stop, &mut |m| progress.message(label, m)),
        Err(e) => return spawn_failed(&task, e),
    };
    fork.layout = layout;
    if fork.status != ForkStatus::Ok {
        cleanup::clean_up_after(ctx, case, &fork, progress);
    }
    if let (Some(dir), Some(count)) = (&out_dir, fork.instructions.as_mut()) {
        let kept = match instr.and_then(|i| i.keep.as_deref()) {
            Some(keep) => crate::callgrind::keep_dumps(dir.path(), keep, &kept_as),
            None => Ok(()),
        };
        match crate::callgrind::total(dir.path()).and_then(|total| kept.map(|()| total)) {
            Ok(total) => count.total = total,
            Err(e) => {
                fork.status = ForkStatus::Failed;
                fork.instructions = None;
                fork.failure =
                    Some(Failure { kind: FailureKind::Protocol, message: e.to_string(), stderr_tail: String::new() });
            }
        }
    }
    report_fork_end(progress, label, &fork, forks);
    fork
}

fn spawn_failed(task: &Task, message: String) -> Fork {
    Fork {
        failure: Some(Failure { kind: FailureKind::Spawn, message, stderr_tail: String::new() }),
        ..Fork::pending(task.fork_index, None)
    }
}

/// Adds `fork` to the last case's entry, on its build's side, numbered in the order the case's
/// forks ran, and rescores it.
fn record(report: &mut Report, mut fork: Fork, side: Side) {
    if report.meta.hardware_counters.is_none() {
        report.meta.hardware_counters = fork.hardware_counters.clone();
    }
    let b = report.benchmarks.last_mut().expect("entry exists");
    fork.sequence = Some((b.forks.len() + b.baseline_forks.len()) as u32);
    match side {
        Side::Baseline => b.add_baseline_fork(fork),
        Side::Current => b.add_fork(fork),
    }
}

fn benchmark(case: &Case, ctx: &RunContext<'_>) -> Benchmark {
    let setup = workloads::SetupContext {
        database_url: ctx.database_url.clone(),
        ..workloads::SetupContext::new(case.params.clone())
    };
    Benchmark {
        op_floor_nanos: case.def.op_floor_nanos(&setup),
        servers: (case.def.servers)(&setup).into_iter().map(|(s, _)| s.name().to_string()).collect(),
        ops_ceiling: (case.def.ops_ceiling)(&setup)
            .map(|c| crate::report::OpsCeiling { ops_per_sec: c.ops_per_sec, why: c.why.into() }),
        concurrency: Some(crate::report::latency::Concurrency {
            count: case.threads(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kind: None,
            each: None,
        }),
        rate_share_pct: case.share_pct(),
        ..Benchmark::empty(case.id(), ctx.settings.clone())
    }
}

/// The servers (and URLs) a case talks to.
fn servers(case: &Case, ctx: &RunContext<'_>) -> Vec<(workloads::Server, String)> {
    let setup = workloads::SetupContext {
        database_url: ctx.database_url.clone(),
        ..workloads::SetupContext::new(case.params.clone())
    };
    (case.def.servers)(&setup)
}

/// Whether a server failed an op of any of the case's forks.
fn server_failed(b: &Benchmark) -> bool {
    b.forks.iter().chain(&b.baseline_forks).any(|f| f.failure.as_ref().is_some_and(|x| x.kind == FailureKind::Server))
}

/// True when any case was skipped or any fork of any case failed.
pub(crate) fn any_failed(report: &Report) -> bool {
    report
        .benchmarks
        .iter()
        .any(|b| b.skipped.is_some() || b.forks.iter().chain(&b.baseline_forks).any(|f| f.status != ForkStatus::Ok))
}
