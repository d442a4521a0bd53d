//! The child: reads its task from stdin, measures, answers on the result pipe, exits.
//!
//! It never writes files and never reads the clock outside the timed loop's batch boundaries.
//! Every failure becomes one `error` message naming the stage, then a non-zero exit.

pub(crate) mod counters;
mod counting;
pub(crate) mod crew;
pub(crate) mod measure;
mod open_loop;

use crate::protocol::{
    AllocCount, HwCount, IterationKind, Message, PROTOCOL_VERSION, RESULT_FD, Stage, Task, VerifyPhase,
};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::process::ExitCode;
use std::time::Duration;
use workloads::{Bench, Params, Phase, Prepared, SetupContext, registry};

/// The result pipe.
struct Channel(File);

impl Channel {
    fn send(&mut self, m: &Message) {
        let mut line = serde_json::to_vec(m).expect("messages serialize");
        line.push(b'\n');
        // A parent that is gone cannot be told anything; the exit code still says it.
        if self.0.write_all(&line).is_err() {
            std::process::exit(3);
        }
    }

    fn fail(&mut self, stage: Stage, err: &anyhow::Error) -> ExitCode {
        let message = format!("{err:#}").replace('\n', " ");
        self.send(&Message::Error { stage, message });
        ExitCode::from(1)
    }
}

/// Runs the worker; the process exit code is its result.
pub fn main() -> ExitCode {
    // SAFETY: fcntl on an fd number only queries it.
    if unsafe { libc::fcntl(RESULT_FD, libc::F_GETFD) } < 0 {
        eprintln!(
            "error: `harness __worker` is started by `harness run`, which passes the result pipe as fd {RESULT_FD}"
        );
        return ExitCode::from(2);
    }
    // SAFETY: the parent passes fd RESULT_FD open and owned by nobody else in this process.
    let mut ch = Channel(unsafe { File::from_raw_fd(RESULT_FD) });
    report_panics();
    ch.send(&Message::Hello {
        protocol: PROTOCOL_VERSION,
        pid: std::process::id(),
        harness_version: env!("CARGO_PKG_VERSION").into(),
    });
    let task = match read_task() {
        Ok(t) => t,
        Err(e) => return ch.fail(Stage::Task, &e),
    };
    run(&mut ch, &task)
}

/// Sends a panic's message and location as an `error` message before the default hook prints
/// it (with any backtrace) to stderr, so the fork's failure names the panic even when a long
/// backtrace pushes it out of the kept stderr tail. A server that failed an op (a
/// [`workloads::ServerFailed`] payload) is a server error, named as such, without a backtrace.
fn report_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let (stage, message) = match info.payload().downcast_ref::<workloads::ServerFailed>() {
            Some(f) => (
                Stage::Server,
                format!(
                    "{} failed an op: {}: check that the server is up and reachable ({}), then run again",
                    f.server.name(),
                    f.detail,
                    f.server.flag()
                ),
            ),
            None => (Stage::Panic, panic_message(info)),
        };
        let _ = send_without_channel(&Message::Error { stage, message: message.replace('\n', " ") });
        if stage == Stage::Panic {
            default(info);
        }
    }));
}

/// `panicked at FILE:LINE: MESSAGE`.
fn panic_message(info: &std::panic::PanicHookInfo<'_>) -> String {
    let what = info
        .payload()
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| info.payload().downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string payload".into());
    let place = info.location().map_or(String::new(), |l| format!(" at {}:{}", l.file(), l.line()));
    format!("panicked{place}: {what}")
}

/// The task: the first line on stdin (a lockstep worker's stdin stays open for its go bytes).
fn read_task() -> anyhow::Result<Task> {
    let mut raw = String::new();
    std::io::stdin().read_line(&mut raw)?;
    let value: serde_json::Value = serde_json::from_str(&raw)?;
    let protocol = value.get("protocol").and_then(serde_json::Value::as_u64);
    anyhow::ensure!(
        protocol == Some(u64::from(PROTOCOL_VERSION)),
        "task speaks protocol {protocol:?}, this worker speaks {PROTOCOL_VERSION}"
    );
    Ok(serde_json::from_value(value)?)
}

/// Sets the workload up, checks it, and runs the task's mode: instruction counting or timing.
fn run(ch: &mut Channel, task: &Task) -> ExitCode {
    let Some(def) = registry::find(&task.workload) else {
        return ch.fail(Stage::Task, &anyhow::anyhow!("no workload '{}' in this build", task.workload));
    };
    let ctx = SetupContext {
        params: Params(task.params.clone()),
        fork_index: task.fork_index,
        database_url: task.database_url.clone(),
        threads: task.threads.max(1) as usize,
    };
    // SQLite's own allocations, counted from its first: before setup opens a database.
    if task.count_allocations
        && let Err(e) = workloads::db::sqlite_alloc::count_allocations(crate::alloc::count_foreign)
    {
        return ch.fail(Stage::Setup, &e.context("counting SQLite's allocations (--alloc)"));
    }
    // An I/O fork sees every SQLite statement, its driver's included: traced from the first
    // connection setup opens, counted inside the windows only.
    if task.io.is_some()
        && let Err(e) = workloads::db::sqlite_trace::trace_every_connection()
    {
        return ch.fail(Stage::Setup, &e);
    }
    let prepared = match (def.setup)(&ctx) {
        Ok(p) => p,
        Err(e) => return ch.fail(Stage::Setup, &e),
    };
    if let Err(e) = prepared.verify(Phase::Before) {
        return ch.fail(Stage::Verify, &e.context("check before measuring"));
    }
    ch.send(&Message::Verified { phase: VerifyPhase::Before });
    // Before any measurer holds a connection, so that every one can flush its counts.
    let tallied_before = match task.instructions {
        Some(_) => vec![],
        None => match prepared.tally() {
            Ok(t) => t,
            Err(e) => return ch.fail(Stage::Verify, &e.context("server counts before the first op")),
        },
    };
    let bench = match prepared.bench(0) {
        Ok(b) => b,
        Err(e) => return ch.fail(Stage::Setup, &e),
    };
    let outcome = match (task.instructions, task.io) {
        (Some(instr), _) => {
            let case = crate::report::CaseId::new(task.workload.clone(), task.params.clone(), 1).to_string();
            counting::count_instructions(ch, &case, instr, prepared.as_ref(), bench)
        }
        (None, Some(io)) => counting::count_io(ch, io, prepared.as_ref(), bench, &tallied_before),
        (None, None) => time_iterations(ch, task, prepared.as_ref(), bench, &tallied_before),
    };
    match outcome {
        Ok(()) => finish(ch, prepared.as_ref()),
        Err(code) => code,
    }
}

/// Writes one message to the result pipe where no [`Channel`] is at hand (a panic hook, a
/// plain function).
fn send_without_channel(m: &Message) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(m).unwrap_or_default();
    line.push(b'\n');
    // SAFETY: fd RESULT_FD stays open for the worker's life; ManuallyDrop never closes it.
    let mut pipe = std::mem::ManuallyDrop::new(unsafe { File::from_raw_fd(RESULT_FD) });
    pipe.write_all(&line)
}

/// Blocks until the parent's go byte on stdin; a closed stdin (the parent gave up on this
/// worker) ends the process quietly.
fn wait_for_go() {
    let mut go = [0u8; 1];
    if !matches!(std::io::stdin().lock().read(&mut go), Ok(1)) {
        std::process::exit(4);
    }
}

/// Time mode: calibrates the batch, assembles the measurers, runs the warmup and measured
/// iterations (each after the parent's go in lockstep), sends the latency histogram, and holds
/// the servers' counts against every op run.
fn time_iterations(
    ch: &mut Channel,
    task: &Task,
    prepared: &dyn Prepared,
    mut bench: Box<dyn Bench>,
    tallied_before: &[workloads::Tally],
) -> Result<(), ExitCode> {
    await_go(ch, task);
    let iteration_time = Duration::from_nanos(task.iteration_nanos);
    let steps = prepared.steps();
    let (batch, per_op_reset, mut ops_run) = match &steps {
        Some(steps) => announce_steps(ch, task, prepared, steps)?,
        None => calibrate(ch, prepared, bench.as_mut(), iteration_time),
    };
    let hw = open_counters(ch);
    // Sample-time mode: groups of ops lasting about a microsecond, from the calibrated batch;
    // a stepped fork times every op.
    let sample = (task.sample && !per_op_reset).then(|| match steps {
        Some(_) => 1,
        None => {
            let start = std::time::Instant::now();
            bench.run_batch(batch);
            ops_run += batch;
            crew::ops_per_sample(start.elapsed().as_nanos() as f64 / batch as f64, batch)
        }
    });
    if let Some(why) = open_loop_refused(task, steps.is_some() || per_op_reset) {
        return Err(ch.fail(Stage::Task, &anyhow::anyhow!(why)));
    }
    let crew = assemble_crew(prepared, bench, task.threads.max(1) as usize).map_err(|e| ch.fail(Stage::Setup, &e))?;
    if task.count_allocations {
        crate::alloc::enable();
    }
    let mut m = Measurer { crew, hw, batch, sample, per_op_reset, histogram: crate::protocol::new_histogram() };
    let mut measured_nanos = 0;
    for (kind, lengths) in phases(task, steps) {
        for (index, length) in (0u32..).zip(lengths) {
            await_go(ch, task);
            let message = m.iteration(task, prepared, kind, index, length).map_err(|e| ch.fail(Stage::Verify, &e))?;
            if let Message::Iteration { ops, nanos, .. } = &message {
                ops_run += ops;
                measured_nanos += if kind == IterationKind::Measure { *nanos } else { 0 };
            }
            ch.send(&message);
        }
    }
    if task.sample {
        ch.send(&Message::Latency {
            ops_per_sample: m.sample.unwrap_or(1),
            histogram: crate::protocol::buckets(&m.histogram),
        });
    }
    let record = m.crew.finish();
    if task.rate.is_some() {
        ch.send(&Message::OpenLoop {
            scheduled: record.scheduled,
            ran: record.ran,
            nanos: measured_nanos,
            corrected: crate::protocol::buckets(&record.corrected),
            uncorrected: crate::protocol::buckets(&record.uncorrected),
            lag: crate::protocol::buckets(&record.lag),
        });
    }
    tally_after(ch, prepared, tallied_before, ops_run)?;
    await_go(ch, task);
    Ok(())
}

/// Why this fork cannot run open-loop (`--rate`), if it cannot: its ops are not independent
/// arrivals (a stepped workload, or one that resets before every op).
fn open_loop_refused(task: &Task, stepped_or_reset: bool) -> Option<String> {
    let rate = task.rate?;
    stepped_or_reset.then(|| {
        format!(
            "--rate {}: {} is measured in steps or resets its state before every op, so its ops cannot arrive at a rate: leave it out with --filter",
            rate.per_sec, task.workload
        )
    })
}

/// How long each iteration runs: the task's warmup and measured iterations of fixed time, or
/// a stepped workload's measured steps of fixed ops.
fn phases(task: &Task, steps: Option<Vec<u64>>) -> Vec<(IterationKind, Vec<measure::Length>)> {
    use measure::Length;
    match steps {
        Some(steps) => vec![(IterationKind::Measure, steps.into_iter().map(Length::Ops).collect())],
        None => vec![
            (
                IterationKind::Warmup,
                vec![Length::Time(Duration::from_nanos(task.warmup_nanos)); task.warmup_iterations as usize],
            ),
            (
                IterationKind::Measure,
                vec![Length::Time(Duration::from_nanos(task.iteration_nanos)); task.iterations as usize],
            ),
        ],
    }
}

/// A stepped workload: no calibration (every op is timed alone); tells the parent the steps.
fn announce_steps(
    ch: &mut Channel,
    task: &Task,
    prepared: &dyn Prepared,
    steps: &[u64],
) -> Result<(u64, bool, u64), ExitCode> {
    if task.threads > 1 {
        let err = anyhow::anyhow!("a workload measured in steps runs on one thread: drop --threads");
        return Err(ch.fail(Stage::Task, &err));
    }
    ch.send(&Message::Calibrated {
        shape: prepared.shape().as_str().into(),
        batch_size: 1,
        clock_read_nanos: measure::clock_read_nanos(),
        per_op_reset: false,
        steps: Some(steps.to_vec()),
    });
    Ok((1, false, 0))
}

/// Every measurer's local state dropped: reads the servers' counts again, sends the deltas and
/// fails the fork when they do not match the ops run.
fn tally_after(
    ch: &mut Channel,
    prepared: &dyn Prepared,
    before: &[workloads::Tally],
    ops_run: u64,
) -> Result<(), ExitCode> {
    if before.is_empty() {
        return Ok(());
    }
    let after = prepared.tally().map_err(|e| ch.fail(Stage::Verify, &e.context("server counts after the last op")))?;
    ch.send(&Message::Tallied { observed: workloads::tally::deltas(before, &after, ops_run) });
    workloads::tally::check(before, &after, ops_run).map_err(|e| ch.fail(Stage::Verify, &anyhow::anyhow!(e)))
}

/// Finds the batch of ops between two clock reads (1 for workloads that reset before every op)
/// and says so to the parent; also returns the ops the calibration ran.
fn calibrate(ch: &mut Channel, prepared: &dyn Prepared, bench: &mut dyn Bench, time: Duration) -> (u64, bool, u64) {
    let clock = measure::clock_read_nanos();
    let per_op_reset = prepared.resets_per_op();
    let (batch, ran) =
        if per_op_reset { (1, 0) } else { measure::calibrate(bench, measure::batch_target(time, clock)) };
    ch.send(&Message::Calibrated {
        shape: prepared.shape().as_str().into(),
        batch_size: batch,
        clock_read_nanos: clock,
        per_op_reset,
        steps: None,
    });
    (batch, per_op_reset, ran)
}

/// The hardware counters, if this machine has them; the parent hears either way.
fn open_counters(ch: &mut Channel) -> Option<counters::HwCounters> {
    match counters::HwCounters::open() {
        Ok(c) => {
            ch.send(&Message::Counters { available: true, detail: "instructions retired and cycles".into() });
            Some(c)
        }
        Err(reason) => {
            ch.send(&Message::Counters { available: false, detail: reason });
            None
        }
    }
}

/// The measurers of `--threads N`: this thread, N tasks on the workload's runtime (async), or
/// N OS threads each with its own local state (blocking).
fn assemble_crew(prepared: &dyn Prepared, bench: Box<dyn Bench>, threads: usize) -> anyhow::Result<crew::Crew> {
    if threads == 1 {
        return Ok(crew::Crew::single(bench));
    }
    if prepared.shape() == workloads::Shape::Async {
        // The calibration's measurer lets go of its local state (a held connection) first.
        drop(bench);
        let tasks = prepared.concurrent(threads).map_err(|e| e.context("local state of the tasks"))?;
        return Ok(crew::Crew::tasks(tasks.expect("an async workload runs tasks")));
    }
    let mut benches = vec![bench];
    for i in 1..threads {
        benches.push(prepared.bench(i).map_err(|e| e.context(format!("local state of thread {i}")))?);
    }
    Ok(crew::Crew::Threads(crew::Threads::start(benches)))
}

/// What the timed iterations of a fork share.
struct Measurer {
    crew: crew::Crew,
    hw: Option<counters::HwCounters>,
    batch: u64,
    sample: Option<u64>,
    per_op_reset: bool,
    histogram: hdrhistogram::Histogram<u64>,
}

impl Measurer {
    /// How every measurer runs a timed iteration of `time`: open-loop at its share of the
    /// task's rate, or closed in calibrated batches.
    fn plan(task: &Task, kind: IterationKind, time: Duration, batch: u64, sample: Option<u64>) -> crew::Plan {
        match task.rate {
            Some(rate) => crew::Plan::Open(open_loop::OpenPlan {
                per_sec: rate.per_sec as f64,
                arrivals: rate.arrivals,
                time,
                record: kind == IterationKind::Measure,
                fork: task.fork_index,
            }),
            None => crew::Plan::Closed(workloads::IterationPlan { batch, time, sample }),
        }
    }

    /// Runs one iteration and returns its message; fails when observing afterwards fails.
    fn iteration(
        &mut self,
        task: &Task,
        prepared: &dyn Prepared,
        kind: IterationKind,
        index: u32,
        length: measure::Length,
    ) -> anyhow::Result<Message> {
        let allocs_before = crate::alloc::snapshot();
        if let Some(c) = self.hw.as_mut() {
            c.start();
        }
        let (batch, sample) = (self.batch, self.sample);
        let outcome = match (&mut self.crew, self.per_op_reset, length) {
            (crew::Crew::Single(bench, _), _, measure::Length::Ops(n)) => measure::step(bench.as_mut(), n),
            (crew::Crew::Single(bench, _), true, measure::Length::Time(time)) => {
                let mut samples = vec![];
                let (ops, nanos) = measure::reset_iteration(bench.as_mut(), time, &mut samples);
                crew::Outcome { ops, nanos, thread_ops: vec![], samples }
            }
            (crew, _, measure::Length::Time(time)) => crew.run(Self::plan(task, kind, time, batch, sample)),
            (_, _, measure::Length::Ops(_)) => unreachable!("a stepped fork has one measurer"),
        };
        let hw = self.hw.as_mut().and_then(|c| c.stop()).map(|(i, c)| HwCount { inst_retired: i, cycles: c });
        let allocs = task.count_allocations.then(|| {
            let after = crate::alloc::snapshot();
            AllocCount { allocations: after.0 - allocs_before.0, bytes: after.1 - allocs_before.1 }
        });
        if task.sample && kind == IterationKind::Measure {
            let k = self.sample.unwrap_or(1);
            for s in &outcome.samples {
                let _ = self.histogram.record((s / k).clamp(1, crate::protocol::MAX_NANOS));
            }
        }
        let observed = prepared.observe().map_err(|e| e.context("observing after an iteration"))?;
        Ok(Message::Iteration {
            kind,
            index,
            ops: outcome.ops,
            nanos: outcome.nanos,
            observed: observed.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            hw,
            allocs,
            thread_ops: outcome.thread_ops,
        })
    }
}

/// Lockstep: says `ready`, then blocks until the parent's go byte; a closed stdin (the parent
/// gave up on this worker) ends the process quietly.
fn await_go(ch: &mut Channel, task: &Task) {
    if !task.lockstep {
        return;
    }
    ch.send(&Message::Ready);
    wait_for_go();
}

/// After measuring (every measurer's local state dropped first): the check, teardown, `done`.
fn finish(ch: &mut Channel, prepared: &dyn Prepared) -> ExitCode {
    if let Err(e) = prepared.verify(Phase::After) {
        return ch.fail(Stage::Verify, &e.context("check after measuring"));
    }
    ch.send(&Message::Verified { phase: VerifyPhase::After });
    if let Err(e) = prepared.teardown() {
        return ch.fail(Stage::Teardown, &e);
    }
    ch.send(&Message::Done);
    ExitCode::SUCCESS
}
