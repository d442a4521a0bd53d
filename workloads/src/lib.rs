//! Declared persistence workloads: the [`Workload`] abstraction, the [`registry`] and the suite.
//!
//! A workload is built once per fork from its params ([`WorkloadDef::setup`]), verified, measured
//! and torn down by the harness worker. The measured operation lives in a generic trait so that
//! the timed loop is monomorphized per workload; the worker only makes one dynamic call per
//! *batch* of operations ([`Bench::run_batch`]), never one per operation.

pub mod baseline;
pub mod cache;
pub mod db;
pub mod fault;
pub mod ids;
pub mod params;
pub mod probe;
pub mod redact;
pub mod redis;
pub mod registry;
pub mod sql;

use std::future::Future;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use params::{ParamKind, ParamSpec, Params};
pub use registry::{Server, ServerFailed, SetupContext, WorkloadDef, server_failed};

/// The runtime async workloads own: current-thread, so the worker's measuring thread drives
/// every task of an op (no cross-thread wake-ups).
pub fn current_thread_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread().enable_all().build()?)
}

/// When a correctness check runs: before the first measured op, or after the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// After setup, before warmup and measurement.
    Before,
    /// After the last measured iteration, before teardown.
    After,
}

/// A workload whose operation is a plain (blocking) call on the measuring thread.
///
/// The state (`self`) is shared by every measuring thread of a fork; `Local` is what one
/// measuring thread owns (a round-robin cursor, a pooled connection).
pub trait Workload: Send + Sync + 'static {
    /// Per-measuring-thread state.
    type Local: Send;
    /// What one operation returns; consumed with [`std::hint::black_box`].
    type Output;
    /// Builds the state owned by measuring thread `thread`.
    fn local(&self, thread: usize) -> anyhow::Result<Self::Local>;
    /// The measured operation.
    fn op(&self, local: &mut Self::Local) -> Self::Output;
    /// Correctness check run by the worker before and after measuring.
    fn verify(&self, _phase: Phase) -> anyhow::Result<()> {
        Ok(())
    }
    /// Releases external resources (tables, keys) made by setup.
    fn teardown(&self) -> anyhow::Result<()> {
        Ok(())
    }
    /// True when every op needs [`Workload::reset`] before it, outside the measured time (JMH's
    /// `Level.Invocation`). The worker then times each op on its own, so only ops of a
    /// millisecond or more should ask for it.
    const RESET_PER_OP: bool = false;
    /// Restores the state an op expects (for example an empty table); never timed.
    fn reset(&self, _local: &mut Self::Local) -> anyhow::Result<()> {
        Ok(())
    }
    /// Numbers recorded with each iteration after it ends (for example the table size).
    fn observe(&self) -> anyhow::Result<Vec<(&'static str, i64)>> {
        Ok(vec![])
    }
    /// Whether an op executes the same instructions in every run: false when it reads a clock,
    /// hands work to another thread or talks to a server.
    fn deterministic(&self) -> bool {
        true
    }
}

/// A workload whose operation is a future, run on the workload's own tokio runtime.
///
/// The worker enters the runtime once per batch: the batch runs as one spawned task that awaits
/// the operations one after another, so no runtime entry is added per op. (A spawned task rather
/// than the `block_on` future itself: waking `block_on` from the connection's driver task makes
/// tokio poll its I/O driver once more per op, a syscall that a task woken from the run queue
/// does not pay.) A workload that *is* "one runtime entry per op" (a blocking caller of async
/// code) declares that shape by implementing [`Workload`] and calling `block_on` in its op.
pub trait AsyncWorkload: Send + Sync + 'static {
    /// Per-measuring-task state.
    type Local: Send + 'static;
    /// What one operation resolves to; consumed with [`std::hint::black_box`].
    type Output;
    /// The runtime the operations run on, owned by the workload state.
    fn runtime(&self) -> &tokio::runtime::Runtime;
    /// Builds the state owned by measuring task `task`.
    fn local(&self, task: usize) -> anyhow::Result<Self::Local>;
    /// The measured operation.
    fn op<'a>(&'a self, local: &'a mut Self::Local) -> impl Future<Output = Self::Output> + Send + 'a;
    /// Correctness check run by the worker before and after measuring.
    fn verify(&self, _phase: Phase) -> anyhow::Result<()> {
        Ok(())
    }
    /// Releases external resources made by setup.
    fn teardown(&self) -> anyhow::Result<()> {
        Ok(())
    }
    /// Whether an op executes the same instructions in every run (see [`Workload::deterministic`]).
    fn deterministic(&self) -> bool {
        true
    }
    /// Numbers recorded with each iteration (see [`Workload::observe`]).
    fn observe(&self) -> anyhow::Result<Vec<(&'static str, i64)>> {
        Ok(vec![])
    }
}

/// One measuring thread's handle on a workload: runs `n` operations per dynamic call.
pub trait Bench: Send {
    /// Runs the operation `n` times in a monomorphized loop.
    fn run_batch(&mut self, n: u64);
    /// Runs `n` ops, each after an untimed reset; returns the nanoseconds spent in the ops alone.
    fn run_reset_ops(&mut self, n: u64) -> u64 {
        let start = std::time::Instant::now();
        self.run_batch(n);
        start.elapsed().as_nanos() as u64
    }
    /// Runs `n` ops with `start` right before and `stop` right after them; for workloads that
    /// reset before every op, around each op, so that resets are never counted.
    fn run_ops_between(&mut self, n: u64, start: fn(), stop: fn()) {
        start();
        self.run_batch(n);
        stop();
    }
    /// Runs `samples` groups of `k` ops, pushing each group's elapsed nanoseconds to `out`
    /// (sample-time mode: the clock is read around every group).
    fn run_sampled(&mut self, samples: u64, k: u64, out: &mut Vec<u64>) {
        for _ in 0..samples {
            let start = Instant::now();
            self.run_batch(k);
            out.push(start.elapsed().as_nanos() as u64);
        }
    }
}

/// What one measuring task did in one iteration of [`Concurrent::run`].
#[derive(Debug, Clone)]
pub struct TaskRun {
    /// Ops completed.
    pub ops: u64,
    /// When the task started measuring.
    pub start: Instant,
    /// When it stopped.
    pub end: Instant,
    /// Sample-time mode: nanoseconds of each group of ops.
    pub samples: Vec<u64>,
}

/// N measuring tasks of an async workload on its runtime, started together each iteration.
pub trait Concurrent: Send {
    /// Runs every task until `time` has passed: in batches of `batch` ops, or, with
    /// `sample = Some(k)`, timing every group of `k` ops.
    fn run(&mut self, batch: u64, time: Duration, sample: Option<u64>) -> Vec<TaskRun>;
}

/// A workload after setup, as the worker sees it: object-safe, one dynamic call per batch.
pub trait Prepared: Send + Sync {
    /// The shape of the operation, recorded in the report.
    fn shape(&self) -> Shape;
    /// A handle for measuring thread (or task) `index`.
    fn bench(&self, index: usize) -> anyhow::Result<Box<dyn Bench>>;
    /// Correctness check.
    fn verify(&self, phase: Phase) -> anyhow::Result<()>;
    /// Releases external resources.
    fn teardown(&self) -> anyhow::Result<()>;
    /// Whether each op needs an untimed reset before it (see [`Workload::RESET_PER_OP`]).
    fn resets_per_op(&self) -> bool {
        false
    }
    /// Numbers recorded with each iteration (see [`Workload::observe`]).
    fn observe(&self) -> anyhow::Result<Vec<(&'static str, i64)>> {
        Ok(vec![])
    }
    /// Whether an op executes the same instructions in every run (see [`Workload::deterministic`]).
    fn deterministic(&self) -> bool;
    /// For async workloads, `n` measuring tasks on the workload's runtime; `None` for blocking
    /// workloads, whose concurrent measurers are OS threads each holding a [`Bench`].
    fn concurrent(&self, _n: usize) -> anyhow::Result<Option<Box<dyn Concurrent>>> {
        Ok(None)
    }
}

/// How the measured operation executes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A blocking call on the measuring thread.
    Blocking,
    /// A future awaited on the workload's runtime, one runtime entry per batch.
    Async,
}

impl Shape {
    /// The name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Shape::Blocking => "blocking",
            Shape::Async => "async",
        }
    }
}

/// Adapts a [`Workload`] to [`Prepared`].
pub struct Blocking<W>(pub Arc<W>);

/// Adapts an [`AsyncWorkload`] to [`Prepared`].
pub struct Async<W>(pub Arc<W>);

/// Boxes a blocking workload for the registry.
pub fn blocking<W: Workload>(w: W) -> Box<dyn Prepared> {
    Box::new(Blocking(Arc::new(w)))
}

/// Boxes an async workload for the registry.
pub fn asynchronous<W: AsyncWorkload>(w: W) -> Box<dyn Prepared> {
    Box::new(Async(Arc::new(w)))
}

struct BlockingBench<W: Workload> {
    workload: Arc<W>,
    local: W::Local,
}

impl<W: Workload> Bench for BlockingBench<W> {
    #[inline(never)]
    fn run_batch(&mut self, n: u64) {
        let workload = &*self.workload;
        for _ in 0..n {
            black_box(workload.op(&mut self.local));
        }
    }

    fn run_reset_ops(&mut self, n: u64) -> u64 {
        let workload = &*self.workload;
        let mut nanos = 0;
        for _ in 0..n {
            workload.reset(&mut self.local).unwrap_or_else(|e| panic!("reset before an op failed: {e:#}"));
            let start = std::time::Instant::now();
            black_box(workload.op(&mut self.local));
            nanos += start.elapsed().as_nanos() as u64;
        }
        nanos
    }

    fn run_sampled(&mut self, samples: u64, k: u64, out: &mut Vec<u64>) {
        let workload = &*self.workload;
        for _ in 0..samples {
            let start = Instant::now();
            for _ in 0..k {
                black_box(workload.op(&mut self.local));
            }
            out.push(start.elapsed().as_nanos() as u64);
        }
    }

    fn run_ops_between(&mut self, n: u64, start: fn(), stop: fn()) {
        let workload = &*self.workload;
        if !W::RESET_PER_OP {
            start();
            self.run_batch(n);
            stop();
            return;
        }
        for _ in 0..n {
            workload.reset(&mut self.local).unwrap_or_else(|e| panic!("reset before an op failed: {e:#}"));
            start();
            black_box(workload.op(&mut self.local));
            stop();
        }
    }
}

struct AsyncBench<W: AsyncWorkload> {
    workload: Arc<W>,
    /// Moved into the batch's task and back.
    local: Option<W::Local>,
}

impl<W: AsyncWorkload> Bench for AsyncBench<W> {
    #[inline(never)]
    fn run_batch(&mut self, n: u64) {
        let workload = Arc::clone(&self.workload);
        let mut local = self.local.take().expect("local state is back after every batch");
        let runtime = self.workload.runtime();
        let batch = runtime.spawn(async move {
            for _ in 0..n {
                black_box(workload.op(&mut local).await);
            }
            local
        });
        self.local = Some(join(runtime.block_on(batch)));
    }

    fn run_sampled(&mut self, samples: u64, k: u64, out: &mut Vec<u64>) {
        let workload = Arc::clone(&self.workload);
        let mut local = self.local.take().expect("local state is back after every batch");
        let runtime = self.workload.runtime();
        let task = runtime.spawn(async move {
            let mut times = Vec::with_capacity(samples as usize);
            for _ in 0..samples {
                let start = Instant::now();
                for _ in 0..k {
                    black_box(workload.op(&mut local).await);
                }
                times.push(start.elapsed().as_nanos() as u64);
            }
            (local, times)
        });
        let (local, times) = join(runtime.block_on(task));
        self.local = Some(local);
        out.extend(times);
    }
}

/// The value of a finished task, re-raising its panic on this thread.
fn join<T>(r: Result<T, tokio::task::JoinError>) -> T {
    match r {
        Ok(v) => v,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("measuring task failed: {e}"),
    }
}

/// N tasks of an async workload, each with its own local state.
struct AsyncCrew<W: AsyncWorkload> {
    workload: Arc<W>,
    locals: Vec<Option<W::Local>>,
}

impl<W: AsyncWorkload> Concurrent for AsyncCrew<W> {
    fn run(&mut self, batch: u64, time: Duration, sample: Option<u64>) -> Vec<TaskRun> {
        let runtime = self.workload.runtime();
        // Spawned first, polled together once block_on runs: they start at the same moment.
        let handles: Vec<_> = self
            .locals
            .iter_mut()
            .map(|slot| {
                let workload = Arc::clone(&self.workload);
                let mut local = slot.take().expect("local state is back after every iteration");
                runtime.spawn(async move {
                    let (mut ops, mut samples) = (0u64, vec![]);
                    let start = Instant::now();
                    loop {
                        match sample {
                            None => {
                                for _ in 0..batch {
                                    black_box(workload.op(&mut local).await);
                                }
                                ops += batch;
                            }
                            Some(k) => {
                                let t = Instant::now();
                                for _ in 0..k {
                                    black_box(workload.op(&mut local).await);
                                }
                                samples.push(t.elapsed().as_nanos() as u64);
                                ops += k;
                            }
                        }
                        if start.elapsed() >= time {
                            break;
                        }
                    }
                    (local, TaskRun { ops, start, end: Instant::now(), samples })
                })
            })
            .collect();
        let done = runtime.block_on(async {
            let mut done = Vec::with_capacity(handles.len());
            for h in handles {
                done.push(h.await);
            }
            done
        });
        done.into_iter()
            .zip(self.locals.iter_mut())
            .map(|(r, slot)| {
                let (local, run) = join(r);
                *slot = Some(local);
                run
            })
            .collect()
    }
}

impl<W: Workload> Prepared for Blocking<W> {
    fn shape(&self) -> Shape {
        Shape::Blocking
    }
    fn bench(&self, index: usize) -> anyhow::Result<Box<dyn Bench>> {
        let local = self.0.local(index)?;
        Ok(Box::new(BlockingBench { workload: Arc::clone(&self.0), local }))
    }
    fn verify(&self, phase: Phase) -> anyhow::Result<()> {
        self.0.verify(phase)
    }
    fn teardown(&self) -> anyhow::Result<()> {
        self.0.teardown()
    }
    fn resets_per_op(&self) -> bool {
        W::RESET_PER_OP
    }
    fn observe(&self) -> anyhow::Result<Vec<(&'static str, i64)>> {
        self.0.observe()
    }
    fn deterministic(&self) -> bool {
        self.0.deterministic()
    }
}

impl<W: AsyncWorkload> Prepared for Async<W> {
    fn shape(&self) -> Shape {
        Shape::Async
    }
    fn bench(&self, index: usize) -> anyhow::Result<Box<dyn Bench>> {
        let local = self.0.local(index)?;
        Ok(Box::new(AsyncBench { workload: Arc::clone(&self.0), local: Some(local) }))
    }
    fn concurrent(&self, n: usize) -> anyhow::Result<Option<Box<dyn Concurrent>>> {
        let locals = (0..n).map(|i| self.0.local(i).map(Some)).collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Some(Box::new(AsyncCrew { workload: Arc::clone(&self.0), locals })))
    }
    fn verify(&self, phase: Phase) -> anyhow::Result<()> {
        self.0.verify(phase)
    }
    fn teardown(&self) -> anyhow::Result<()> {
        self.0.teardown()
    }
    fn observe(&self) -> anyhow::Result<Vec<(&'static str, i64)>> {
        self.0.observe()
    }
    fn deterministic(&self) -> bool {
        self.0.deterministic()
    }
}
