//! The timed loops: a workload after setup as the worker sees it ([`Prepared`]), one dynamic
//! call per batch of ops ([`Bench`]), and N async measuring tasks ([`Concurrent`]).

use crate::workload::{AsyncWorkload, Phase, Workload};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One measuring thread's handle on a workload: runs `n` operations per dynamic call.
pub trait Bench: Send {
    /// Runs the operation `n` times in a monomorphized loop.
    fn run_batch(&mut self, n: u64);
    /// Runs `n` ops, each after an untimed reset; returns the nanoseconds spent in the ops alone.
    /// `window(true)` is called right before each op and `window(false)` right after it (the
    /// worker's allocation count leaves the resets out).
    fn run_reset_ops(&mut self, n: u64, _window: fn(bool)) -> u64 {
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

/// How one measurer runs an iteration.
#[derive(Debug, Clone, Copy)]
pub struct IterationPlan {
    /// Ops between two clock reads (throughput mode).
    pub batch: u64,
    /// Length of the iteration.
    pub time: Duration,
    /// Sample-time mode: ops per timed group.
    pub sample: Option<u64>,
}

/// One measurer's loop over one iteration: batches of ops between clock reads until `time`
/// has passed.
pub fn run_iteration(bench: &mut dyn Bench, plan: IterationPlan) -> TaskRun {
    let (mut ops, mut samples) = (0u64, vec![]);
    let start = Instant::now();
    loop {
        match plan.sample {
            None => {
                bench.run_batch(plan.batch);
                ops += plan.batch;
            }
            Some(k) => {
                // Check the clock about as often as in throughput mode.
                let groups = (plan.batch / k).max(1);
                bench.run_sampled(groups, k, &mut samples);
                ops += groups * k;
            }
        }
        if start.elapsed() >= plan.time {
            return TaskRun { ops, start, end: Instant::now(), samples };
        }
    }
}

/// N measuring tasks of an async workload on its runtime, started together each iteration.
pub trait Concurrent: Send {
    /// Runs every task until the plan's time has passed: in batches of `batch` ops, or, with
    /// `sample = Some(k)`, timing every group of `k` ops.
    fn run(&mut self, plan: IterationPlan) -> Vec<TaskRun>;
    /// The open loop (`--rate`): starts an op as a task on the runtime at each instant `next`
    /// gives, until it gives none or the clock passes `cutoff`, with at most one op in flight
    /// per task's local state (an op due while all are busy waits for the first to end: it
    /// queues), and hands each op to `landed` once it ended; returns the ops it started, every
    /// one of them landed. A panicking op ends the loop with its panic.
    fn run_open(
        &mut self,
        cutoff: Instant,
        next: &mut dyn FnMut() -> Option<Instant>,
        landed: &mut dyn FnMut(crate::open::Landed),
    ) -> u64;
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
    /// The counts a server keeps of the ops' work (see [`Workload::tally`]).
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        Ok(vec![])
    }
    /// Whether an op executes the same instructions in every run (see [`Workload::deterministic`]).
    fn deterministic(&self) -> bool;
    /// The ops of each measured step, for a workload measured in steps (see [`Workload::steps`]).
    fn steps(&self) -> Option<Vec<u64>> {
        None
    }
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

    fn run_reset_ops(&mut self, n: u64, window: fn(bool)) -> u64 {
        let workload = &*self.workload;
        let mut nanos = 0;
        for _ in 0..n {
            workload.reset(&mut self.local).unwrap_or_else(|e| panic!("reset before an op failed: {e:#}"));
            window(true);
            let start = std::time::Instant::now();
            black_box(workload.op(&mut self.local));
            nanos += start.elapsed().as_nanos() as u64;
            window(false);
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

/// One task's local state, moved into the task that uses it and back.
type Slot<L> = Arc<std::sync::Mutex<Option<L>>>;

/// The local state in `slot`, taken out (a slot is used by one task at a time).
fn take<L>(slot: &Slot<L>) -> L {
    let mut held = slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    held.take().expect("local state is back after every iteration and every op")
}

/// Puts `local` back in `slot`.
fn put_back<L>(slot: &Slot<L>, local: L) {
    *slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(local);
}

/// N tasks of an async workload, each with its own local state.
struct AsyncCrew<W: AsyncWorkload> {
    workload: Arc<W>,
    locals: Vec<Slot<W::Local>>,
}

impl<W: AsyncWorkload> Concurrent for AsyncCrew<W> {
    fn run_open(
        &mut self,
        cutoff: Instant,
        next: &mut dyn FnMut() -> Option<Instant>,
        landed: &mut dyn FnMut(crate::open::Landed),
    ) -> u64 {
        let runtime = self.workload.runtime();
        let mut open = crate::open::OpenTasks::new(self.locals.len());
        runtime.block_on(open.run(cutoff, next, landed, |slot, done| {
            let (workload, cell) = (Arc::clone(&self.workload), Arc::clone(&self.locals[slot]));
            let op = runtime.spawn(async move {
                let mut local = take(&cell);
                black_box(workload.op(&mut local).await);
                let ended = Instant::now();
                put_back(&cell, local);
                ended
            });
            // A second task hands the op's end, or its panic, to the loop: a panicking task
            // sends nothing itself.
            runtime.spawn(async move {
                let _ = done.send((slot, op.await.map_err(crate::open::panic_of)));
            });
        }))
    }

    fn run(&mut self, plan: IterationPlan) -> Vec<TaskRun> {
        let IterationPlan { batch, time, sample } = plan;
        let runtime = self.workload.runtime();
        // Spawned first, polled together once block_on runs: they start at the same moment.
        let handles: Vec<_> = self
            .locals
            .iter()
            .map(|slot| {
                let workload = Arc::clone(&self.workload);
                let mut local = take(slot);
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
            .zip(self.locals.iter())
            .map(|(r, slot)| {
                let (local, run) = join(r);
                put_back(slot, local);
                run
            })
            .collect()
    }
}

/// The [`Prepared`] methods a shape's wrapper (`self.0` the workload) hands to its workload
/// as they are: the checks, the release, the observations, the tallies and determinism.
macro_rules! hands_checks_to_its_workload {
    () => {
        fn verify(&self, phase: Phase) -> anyhow::Result<()> {
            self.0.verify(phase)
        }
        fn teardown(&self) -> anyhow::Result<()> {
            self.0.teardown()
        }
        fn observe(&self) -> anyhow::Result<Vec<(&'static str, i64)>> {
            self.0.observe()
        }
        fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
            self.0.tally()
        }
        fn deterministic(&self) -> bool {
            self.0.deterministic()
        }
    };
}

impl<W: Workload> Prepared for Blocking<W> {
    fn shape(&self) -> Shape {
        Shape::Blocking
    }
    fn bench(&self, index: usize) -> anyhow::Result<Box<dyn Bench>> {
        let local = self.0.local(index)?;
        Ok(Box::new(BlockingBench { workload: Arc::clone(&self.0), local }))
    }
    fn resets_per_op(&self) -> bool {
        W::RESET_PER_OP
    }
    hands_checks_to_its_workload!();
    fn steps(&self) -> Option<Vec<u64>> {
        self.0.steps()
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
        let locals = (0..n)
            .map(|i| self.0.local(i).map(|l| Arc::new(std::sync::Mutex::new(Some(l)))))
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Some(Box::new(AsyncCrew { workload: Arc::clone(&self.0), locals })))
    }
    hands_checks_to_its_workload!();
}
