//! The drift canary: a fixed CPU loop (`baseline/canary`, 1,000 xorshift steps per op) timed
//! in a fresh worker at the start and at the end of every run. Two runs made minutes apart see
//! different machines; the canary is what `harness compare` uses to tell a change of the
//! machine's speed from a change of the code. It needs no server and takes well under a second.

use super::{RunContext, collect};
use crate::progress::Progress;
use crate::protocol::Task;
use crate::report::meta::{Canary, CanaryReading};
use crate::report::{ForkStatus, Iteration, Report};
use std::time::Duration;

/// The reference workload.
const WORKLOAD: &str = "baseline/canary";
/// Measured iterations per canary fork: many short ones, whose median shrugs off the 100 ms
/// stalls a shared host inflicts.
const ITERATIONS: u32 = 12;
/// Length of each measured iteration.
const ITERATION: Duration = Duration::from_millis(25);
/// Length of the one warmup iteration.
const WARMUP: Duration = Duration::from_millis(50);

fn task() -> Task {
    Task::timed(WORKLOAD, (1, WARMUP.as_nanos() as u64), (ITERATIONS, ITERATION.as_nanos() as u64))
}

/// Times the canary once (`at` is `start` or `end`) with this build, on the run's CPUs, and
/// adds the reading to `report.meta.canary`; a failed canary is a warning, not a failed run.
pub(super) fn measure(report: &mut Report, ctx: &RunContext<'_>, progress: &Progress, at: &str) {
    let task = task();
    let fork = match ctx.start_worker(vec![], ctx.worker_exe.clone(), &task) {
        Ok(worker) => collect::collect(worker, &task, Duration::from_secs(60), ctx.stop, &mut |_| {}),
        Err(e) => return progress.warn(&format!("drift canary ({at}): {e}")),
    };
    let rates: Vec<f64> = fork.iterations.iter().map(Iteration::ops_per_sec).filter(|r| r.is_finite()).collect();
    if fork.status != ForkStatus::Ok || rates.is_empty() {
        let why = fork.failure.map_or_else(|| "no iteration".to_string(), |f| f.message);
        return progress.warn(&format!(
            "drift canary ({at}) failed: {why}; `harness compare` cannot tell machine drift for this run"
        ));
    }
    let median = crate::stats::summarize(&rates).map_or(f64::NAN, |s| s.median);
    let reading = CanaryReading { at: at.into(), ops_per_sec: median, iterations: rates };
    report
        .meta
        .canary
        .get_or_insert_with(|| Canary { workload: WORKLOAD.into(), readings: vec![] })
        .readings
        .push(reading);
}
