//! What a workload implements: the measured operation, blocking ([`Workload`]) or async
//! ([`AsyncWorkload`]), with its checks, resets and observations.

use std::future::Future;

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
    /// The counts a server keeps of the ops' work, read before the first op and after the last
    /// (every measurer's local state dropped): see [`crate::tally`].
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        Ok(vec![])
    }
    /// Whether an op executes the same instructions in every run: false when it reads a clock,
    /// hands work to another thread or talks to a server.
    fn deterministic(&self) -> bool {
        true
    }
    /// For a workload measured in fixed steps rather than timed iterations (JMH's single-shot
    /// mode with a batch size): the ops of each measured iteration, in order. Such a fork has
    /// no warmup, times every op, and ends after its last step; `None` (the default): iterations
    /// last the configured time.
    fn steps(&self) -> Option<Vec<u64>> {
        None
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
    /// The counts a server keeps of the ops' work (see [`Workload::tally`]).
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        Ok(vec![])
    }
}

/// `type Local = ()` and its `local`, in a [`Workload`] or [`AsyncWorkload`] impl whose
/// measurers keep no state of their own.
macro_rules! no_local_state {
    () => {
        type Local = ();
        fn local(&self, _: usize) -> anyhow::Result<()> {
            Ok(())
        }
    };
}
pub(crate) use no_local_state;
