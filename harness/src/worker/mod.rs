//! The child: reads its task from stdin, measures, answers on the result pipe, exits.
//!
//! It never writes files and never reads the clock outside the timed loop's batch boundaries.
//! Every failure becomes one `error` message naming the stage, then a non-zero exit.

pub mod callgrind;
pub mod counters;
pub mod crew;
pub mod measure;

use crate::protocol::{
    AllocCount, HwCount, IterationKind, Message, PROTOCOL_VERSION, RESULT_FD, Stage, Task, VerifyPhase,
};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::process::ExitCode;
use std::time::Duration;
use workloads::{Params, Phase, SetupContext, registry};

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
        let mut line =
            serde_json::to_vec(&Message::Error { stage, message: message.replace('\n', " ") }).unwrap_or_default();
        line.push(b'\n');
        // SAFETY: fd RESULT_FD stays open for the worker's life; ManuallyDrop never closes it.
        let mut pipe = std::mem::ManuallyDrop::new(unsafe { File::from_raw_fd(RESULT_FD) });
        let _ = pipe.write_all(&line);
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
    let prepared = match (def.setup)(&ctx) {
        Ok(p) => p,
        Err(e) => return ch.fail(Stage::Setup, &e),
    };
    if let Err(e) = prepared.verify(Phase::Before) {
        return ch.fail(Stage::Verify, &e.context("check before measuring"));
    }
    ch.send(&Message::Verified { phase: VerifyPhase::Before });
    let mut bench = match prepared.bench(0) {
        Ok(b) => b,
        Err(e) => return ch.fail(Stage::Setup, &e),
    };

    if let Some(instr) = task.instructions {
        if !callgrind::running_on_valgrind() {
            return ch
                .fail(Stage::Task, &anyhow::anyhow!("an instruction fork must run under valgrind --tool=callgrind"));
        }
        let ops = instr.ops.unwrap_or(if prepared.resets_per_op() { 20 } else { 1000 });
        bench.run_batch(instr.warmup_ops.unwrap_or((ops / 10).max(1)));
        callgrind::zero();
        bench.run_ops_between(ops, callgrind::start_instrumentation, callgrind::dump_measure_and_stop);
        ch.send(&Message::Instrumented { ops, deterministic: prepared.deterministic() });
        drop(bench);
        return finish(ch, prepared.as_ref());
    }

    await_go(ch, task);
    let clock = measure::clock_read_nanos();
    let iteration_time = Duration::from_nanos(task.iteration_nanos);
    let per_op_reset = prepared.resets_per_op();
    let batch =
        if per_op_reset { 1 } else { measure::calibrate(bench.as_mut(), measure::batch_target(iteration_time, clock)) };
    ch.send(&Message::Calibrated {
        shape: prepared.shape().as_str().into(),
        batch_size: batch,
        clock_read_nanos: clock,
        per_op_reset,
    });

    let mut hw = match counters::HwCounters::open() {
        Ok(c) => {
            ch.send(&Message::Counters { available: true, detail: "instructions retired and cycles".into() });
            Some(c)
        }
        Err(reason) => {
            ch.send(&Message::Counters { available: false, detail: reason });
            None
        }
    };
    // Sample-time mode: groups of ops lasting about a microsecond, from the calibrated batch.
    let sample = (task.sample && !per_op_reset).then(|| {
        let start = std::time::Instant::now();
        bench.run_batch(batch);
        crew::ops_per_sample(start.elapsed().as_nanos() as f64 / batch as f64, batch)
    });
    let threads = ctx.threads;
    let mut crew = if threads == 1 {
        crew::Crew::Single(bench)
    } else {
        match prepared.concurrent(threads) {
            Ok(Some(tasks)) => {
                drop(bench);
                crew::Crew::Tasks(tasks)
            }
            Ok(None) => {
                let mut benches = vec![bench];
                for i in 1..threads {
                    match prepared.bench(i) {
                        Ok(b) => benches.push(b),
                        Err(e) => return ch.fail(Stage::Setup, &e.context(format!("local state of thread {i}"))),
                    }
                }
                crew::Crew::Threads(crew::Threads::start(benches))
            }
            Err(e) => return ch.fail(Stage::Setup, &e.context("local state of the tasks")),
        }
    };
    let mut histogram = crate::report::latency::new_histogram();
    if task.count_allocations {
        crate::alloc::enable();
    }
    let phases = [
        (IterationKind::Warmup, task.warmup_iterations, Duration::from_nanos(task.warmup_nanos)),
        (IterationKind::Measure, task.iterations, iteration_time),
    ];
    for (kind, count, time) in phases {
        for index in 0..count {
            await_go(ch, task);
            let allocs_before = crate::alloc::snapshot();
            if let Some(c) = hw.as_mut() {
                c.start();
            }
            let outcome = match (&mut crew, per_op_reset) {
                (crew::Crew::Single(bench), true) => {
                    let mut samples = vec![];
                    let (ops, nanos) = measure::reset_iteration(bench.as_mut(), time, &mut samples);
                    crew::Outcome { ops, nanos, thread_ops: vec![], samples }
                }
                (crew, _) => crew.run(workloads::IterationPlan { batch, time, sample }),
            };
            let hw_count = hw.as_mut().and_then(|c| c.stop()).map(|(i, c)| HwCount { inst_retired: i, cycles: c });
            let allocs = task.count_allocations.then(|| {
                let after = crate::alloc::snapshot();
                AllocCount { allocations: after.0 - allocs_before.0, bytes: after.1 - allocs_before.1 }
            });
            if task.sample && kind == IterationKind::Measure {
                let k = sample.unwrap_or(1);
                for s in &outcome.samples {
                    let _ = histogram.record((s / k).clamp(1, crate::report::latency::MAX_NANOS));
                }
            }
            let observed = match prepared.observe() {
                Ok(o) => o.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
                Err(e) => return ch.fail(Stage::Verify, &e.context("observing after an iteration")),
            };
            ch.send(&Message::Iteration {
                kind,
                index,
                ops: outcome.ops,
                nanos: outcome.nanos,
                observed,
                hw: hw_count,
                allocs,
                thread_ops: outcome.thread_ops,
            });
        }
    }
    if task.sample {
        ch.send(&Message::Latency {
            ops_per_sample: sample.unwrap_or(1),
            histogram: crate::report::latency::buckets(&histogram),
        });
    }
    drop(crew);
    await_go(ch, task);
    finish(ch, prepared.as_ref())
}

/// Lockstep: says `ready`, then blocks until the parent's go byte; a closed stdin (the parent
/// gave up on this worker) ends the process quietly.
fn await_go(ch: &mut Channel, task: &Task) {
    if !task.lockstep {
        return;
    }
    ch.send(&Message::Ready);
    let mut go = [0u8; 1];
    if !matches!(std::io::stdin().lock().read(&mut go), Ok(1)) {
        std::process::exit(4);
    }
}

/// After measuring (every measurer's local state dropped first): the check, teardown, `done`.
fn finish(ch: &mut Channel, prepared: &dyn workloads::Prepared) -> ExitCode {
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
