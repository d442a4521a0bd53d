//! The parent: runs every case's forks one after another, each in a fresh worker process, and
//! rewrites the report after every fork so an interrupted run keeps everything that finished.
//! The parent never measures.

pub mod collect;
pub mod spawn;

use crate::plan::Case;
use crate::progress::Progress;
use crate::protocol::{Message, PROTOCOL_VERSION, Task};
use crate::report::{Benchmark, CaseSettings, Failure, FailureKind, Fork, ForkStatus, Report, RunStatus, Score, write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What the runner needs besides the cases.
#[derive(Debug)]
pub struct RunContext<'a> {
    /// Binary started in worker mode (normally this one).
    pub worker_exe: PathBuf,
    /// Report path.
    pub out: &'a Path,
    /// Settings every case runs with.
    pub settings: CaseSettings,
    /// PostgreSQL URL handed to the workers.
    pub database_url: String,
    /// Set by Ctrl-C / SIGTERM.
    pub stop: &'a AtomicBool,
}

/// Runs `cases` into `report`, writing it after every fork; returns the final report. A case
/// with a `skipped` reason is recorded without running.
pub fn run(
    cases: &[Case],
    skipped: &[Option<String>],
    mut report: Report,
    ctx: &RunContext<'_>,
    progress: &Progress,
) -> anyhow::Result<Report> {
    write::write_atomic(ctx.out, &report)?;
    let forks = ctx.settings.forks;
    'cases: for (case_index, case) in cases.iter().enumerate() {
        let label = case.label();
        if let Some(reason) = skipped.get(case_index).cloned().flatten() {
            report.benchmarks.push(Benchmark { skipped: Some(reason), ..benchmark(case, &ctx.settings) });
            write::write_atomic(ctx.out, &report)?;
            continue;
        }
        for fork_index in 0..forks {
            if ctx.stop.load(Ordering::SeqCst) {
                break 'cases;
            }
            progress.fork_started(&label, case_index, fork_index, forks);
            let task = task(case, fork_index, ctx);
            let mut shape = None;
            let fork = run_fork(ctx, &task, &mut |m| {
                if let Message::Calibrated { shape: s, .. } = m {
                    shape = Some(s.clone());
                }
                progress.message(&label, m);
            });
            if let Some(f) = &fork.failure {
                progress.warn(&format!("{label} fork {fork_index}: {:?}: {}", f.kind, f.message));
            }
            progress.fork_finished(&label, &fork, forks);
            record(&mut report, case, &ctx.settings, fork, shape);
            write::write_atomic(ctx.out, &report)?;
        }
    }
    report.status = if ctx.stop.load(Ordering::SeqCst) { RunStatus::Interrupted } else { RunStatus::Complete };
    report.meta.finish();
    write::write_atomic(ctx.out, &report)?;
    progress.finish();
    Ok(report)
}

fn task(case: &Case, fork_index: u32, ctx: &RunContext<'_>) -> Task {
    let s = &ctx.settings;
    Task {
        protocol: PROTOCOL_VERSION,
        workload: case.def.name.to_string(),
        params: case.params.0.clone(),
        fork_index,
        warmup_iterations: s.warmup_iterations,
        warmup_nanos: s.warmup_nanos,
        iterations: s.iterations,
        iteration_nanos: s.iteration_nanos,
        database_url: ctx.database_url.clone(),
    }
}

fn run_fork(ctx: &RunContext<'_>, task: &Task, on_message: &mut dyn FnMut(&Message)) -> Fork {
    let timeout = Duration::from_nanos(ctx.settings.fork_timeout_nanos);
    match spawn::spawn(&ctx.worker_exe, task) {
        Ok(worker) => collect::collect(worker, task, timeout, ctx.stop, on_message),
        Err(e) => Fork {
            failure: Some(Failure {
                kind: FailureKind::Spawn,
                message: format!("cannot start {}: {e}", ctx.worker_exe.display()),
                stderr_tail: String::new(),
            }),
            ..Fork::pending(task.fork_index, None)
        },
    }
}

/// Adds `fork` to the case's entry (creating it with the first fork) and rescores it.
fn record(report: &mut Report, case: &Case, settings: &CaseSettings, fork: Fork, shape: Option<String>) {
    if fork.index == 0 {
        report.benchmarks.push(benchmark(case, settings));
    }
    let b = report.benchmarks.last_mut().expect("entry exists");
    if b.shape.is_none() {
        b.shape = shape;
    }
    b.forks.push(fork);
    b.score = Score::from_forks(&b.forks);
}

/// A case's empty entry: params redacted, no forks yet.
fn benchmark(case: &Case, settings: &CaseSettings) -> Benchmark {
    Benchmark {
        name: case.def.name.to_string(),
        params: case.params_redacted(),
        shape: None,
        settings: settings.clone(),
        forks: vec![],
        score: None,
        skipped: None,
    }
}

/// True when any case was skipped or any fork of any case failed.
pub fn any_failed(report: &Report) -> bool {
    report.benchmarks.iter().any(|b| b.skipped.is_some() || b.forks.iter().any(|f| f.status != ForkStatus::Ok))
}
