//! What the parent knows of a fork while its worker runs: each protocol message checked for
//! its order and applied to the fork record.

use crate::protocol::{IterationKind, Message, PROTOCOL_VERSION, Stage, Task, VerifyPhase};
use crate::report::open_loop::ForkOpenLoop;
use crate::report::{FailureKind, Fork, Iteration, latency::ForkLatency};

/// What the fork record knows while the worker runs.
pub(super) struct Progress<'a> {
    pub(super) fork: Fork,
    pub(super) task: &'a Task,
    pub(super) hello: bool,
    pub(super) verified_after: bool,
    pub(super) done: bool,
    pub(super) instrumented: Option<(u64, bool)>,
    /// An I/O fork's counted ops, with the SQLite statements and rows the worker traced.
    pub(super) io_counted: Option<crate::report::io::IoCount>,
    pub(super) failure: Option<(FailureKind, String)>,
}

/// The failure kind a worker's error stage becomes in the report.
fn failure_kind(stage: Stage) -> FailureKind {
    match stage {
        Stage::Task => FailureKind::Task,
        Stage::Setup => FailureKind::Setup,
        Stage::Verify => FailureKind::Verify,
        Stage::Teardown => FailureKind::Teardown,
        Stage::Panic => FailureKind::Panic,
        Stage::Server => FailureKind::Server,
    }
}

impl<'a> Progress<'a> {
    /// Nothing heard yet of the worker that runs `task` into `fork`.
    pub(super) fn new(fork: Fork, task: &'a Task) -> Progress<'a> {
        Progress {
            fork,
            task,
            hello: false,
            verified_after: false,
            done: false,
            instrumented: None,
            io_counted: None,
            failure: None,
        }
    }

    /// Applies one message; an error is a protocol violation.
    pub(super) fn apply(&mut self, m: &Message) -> Result<(), String> {
        match (self.hello, m) {
            (false, Message::Hello { protocol, pid, harness_version }) => {
                self.hello(*protocol, *pid, harness_version)?;
            }
            (false, other) => {
                return Err(format!("first message must be hello, got {}", kind(other)));
            }
            (true, Message::Hello { .. }) => return Err("a second hello".into()),
            (true, Message::Verified { phase: VerifyPhase::Before }) => {}
            (true, Message::Calibrated { .. }) => self.calibrated(m)?,
            (true, Message::Counters { available, detail }) => {
                self.fork.hardware_counters =
                    Some(if *available { detail.clone() } else { format!("unavailable: {detail}") });
            }
            (true, Message::Iteration { kind, index, ops, nanos, observed, hw, allocs, thread_ops }) => {
                let iteration = Iteration {
                    ops: *ops,
                    nanos: *nanos,
                    observed: observed.clone(),
                    hw: *hw,
                    allocs: *allocs,
                    thread_ops: thread_ops.clone(),
                };
                self.iteration(*kind, *index, iteration)?;
            }
            (true, Message::Latency { .. }) => self.latency(m)?,
            (true, Message::OpenLoop { .. }) => self.open_loop(m)?,
            (true, Message::Instrumented { ops, deterministic }) => {
                if self.task.instructions.is_none() || self.instrumented.is_some() {
                    return Err("an unexpected instrumented message".into());
                }
                self.instrumented = Some((*ops, *deterministic));
            }
            (true, Message::Tallied { observed }) => {
                if !self.fork.observed.is_empty() {
                    return Err("a second tallied message".into());
                }
                self.fork.observed = observed.clone();
            }
            (true, Message::Verified { phase: VerifyPhase::After }) => self.verified_after = true,
            (true, Message::IoCounted { ops, sqlite_statements, sqlite_rows, sqlite_traced }) => {
                if self.task.io.is_none() || self.io_counted.is_some() {
                    return Err("an unexpected io_counted message".into());
                }
                let mut io = crate::report::io::IoCount::traced(*ops, sqlite_statements, *sqlite_rows);
                io.sqlite_traced = *sqlite_traced;
                self.io_counted = Some(io);
            }
            (true, Message::Ready) if self.task.lockstep || self.task.io.is_some() => {}
            (true, Message::Ready) => return Err("a ready message from a worker not run in lockstep".into()),
            (true, Message::Done) => self.done()?,
            (true, Message::Error { stage, message }) => {
                self.failure.get_or_insert((failure_kind(*stage), message.clone()));
            }
        }
        Ok(())
    }

    /// A sample-mode fork's latency histogram.
    fn latency(&mut self, m: &Message) -> Result<(), String> {
        let Message::Latency { ops_per_sample, histogram } = m else {
            return Ok(());
        };
        if !self.task.sample || self.fork.latency.is_some() {
            return Err("an unexpected latency message".into());
        }
        self.fork.latency = Some(ForkLatency { ops_per_sample: *ops_per_sample, histogram: histogram.clone() });
        Ok(())
    }

    /// An open-loop fork's schedule and histograms, judged against the task's rate.
    fn open_loop(&mut self, m: &Message) -> Result<(), String> {
        let Message::OpenLoop { scheduled, ran, nanos, corrected, uncorrected, lag } = m else {
            return Ok(());
        };
        let Some(rate) = self.task.rate.filter(|_| self.fork.open_loop.is_none()) else {
            return Err("an unexpected open_loop message".into());
        };
        let planned = self.task.iteration_nanos * u64::from(self.task.iterations);
        self.fork.open_loop = Some(ForkOpenLoop::judged(
            rate,
            planned,
            (*scheduled, *ran, *nanos),
            (corrected.clone(), uncorrected.clone(), lag.clone()),
        ));
        Ok(())
    }

    /// The calibration: the batch, and for a stepped workload the steps that replace the
    /// task's iterations.
    fn calibrated(&mut self, m: &Message) -> Result<(), String> {
        let Message::Calibrated { batch_size, clock_read_nanos, per_op_reset, shape, steps } = m else {
            return Ok(());
        };
        self.fork.steps.clone_from(steps);
        self.fork.shape = Some(shape.clone());
        self.fork.batch_size = Some(*batch_size);
        self.fork.clock_read_nanos = Some(*clock_read_nanos);
        self.fork.per_op_reset = *per_op_reset;
        Ok(())
    }

    /// Warmup and measured iterations to expect: the task's, or a stepped workload's steps.
    pub(super) fn expected(&self) -> (u32, u32) {
        match &self.fork.steps {
            Some(steps) => (0, u32::try_from(steps.len()).unwrap_or(u32::MAX)),
            None => (self.task.warmup_iterations, self.task.iterations),
        }
    }

    /// The worker's hello: it must speak this harness's protocol.
    fn hello(&mut self, protocol: u32, pid: u32, harness_version: &str) -> Result<(), String> {
        if protocol != PROTOCOL_VERSION {
            return Err(format!(
                "worker speaks protocol {protocol} (harness {harness_version}), this harness speaks {PROTOCOL_VERSION}: rebuild both binaries from the same protocol version"
            ));
        }
        self.hello = true;
        self.fork.pid = Some(pid);
        Ok(())
    }

    /// An iteration, which must be the next one of its kind and within the task's count.
    fn iteration(&mut self, kind: IterationKind, index: u32, iteration: Iteration) -> Result<(), String> {
        let (warmup, measured) = self.expected();
        let (list, expected) = match kind {
            IterationKind::Warmup => (&mut self.fork.warmup, warmup),
            IterationKind::Measure => (&mut self.fork.iterations, measured),
        };
        if index as usize != list.len() || index >= expected {
            return Err(format!("unexpected {kind:?} iteration {index}"));
        }
        list.push(iteration);
        Ok(())
    }

    /// `done`: only after every iteration (or the instrumented ops) and the closing check.
    pub(super) fn done(&mut self) -> Result<(), String> {
        let measured = match (self.task.instructions, self.task.io) {
            (Some(_), _) => self.instrumented.is_some(),
            (None, Some(_)) => self.io_counted.is_some(),
            (None, None) => {
                self.fork.iterations.len() == self.expected().1 as usize
                    && (!self.task.sample || self.fork.latency.is_some())
            }
        };
        if !self.verified_after || !measured {
            return Err("done before every iteration and check was reported".into());
        }
        if self.task.rate.is_some() && self.fork.open_loop.is_none() {
            return Err(
                "the worker measured closed-loop: its build predates --rate; build both sides from a commit that has it"
                    .into(),
            );
        }
        self.done = true;
        Ok(())
    }
}

fn kind(m: &Message) -> &'static str {
    match m {
        Message::Hello { .. } => "hello",
        Message::Verified { .. } => "verified",
        Message::Calibrated { .. } => "calibrated",
        Message::Iteration { .. } => "iteration",
        Message::Latency { .. } => "latency",
        Message::OpenLoop { .. } => "open_loop",
        Message::Instrumented { .. } => "instrumented",
        Message::IoCounted { .. } => "io_counted",
        Message::Tallied { .. } => "tallied",
        Message::Counters { .. } => "counters",
        Message::Ready => "ready",
        Message::Done => "done",
        Message::Error { .. } => "error",
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A small task for protocol tests.
    pub(in crate::runner) fn task() -> Task {
        Task::timed("baseline/noop", (1, 1), (2, 1))
    }

    fn progress(t: &Task) -> Progress<'_> {
        Progress::new(Fork::pending(0, None), t)
    }

    fn hello(protocol: u32) -> Message {
        Message::Hello { protocol, pid: 42, harness_version: "x".into() }
    }

    #[test]
    fn protocol_mismatch_is_named() {
        let t = task();
        let e = progress(&t).apply(&hello(PROTOCOL_VERSION + 1)).unwrap_err();
        assert!(e.contains(&format!("worker speaks protocol {}", PROTOCOL_VERSION + 1)), "{e}");
    }

    #[test]
    fn messages_must_come_in_order() {
        let t = task();
        let mut p = progress(&t);
        assert!(p.apply(&Message::Done).unwrap_err().contains("first message must be hello"));
        p.apply(&hello(PROTOCOL_VERSION)).unwrap();
        assert_eq!(p.fork.pid, Some(42));
        let it = |kind, index| Message::Iteration {
            kind,
            index,
            ops: 1,
            nanos: 1,
            observed: Default::default(),
            hw: None,
            allocs: None,
            thread_ops: vec![],
        };
        assert!(p.apply(&it(IterationKind::Measure, 1)).is_err());
        p.apply(&it(IterationKind::Warmup, 0)).unwrap();
        assert!(p.apply(&it(IterationKind::Warmup, 1)).is_err(), "only one warmup iteration was asked for");
        p.apply(&it(IterationKind::Measure, 0)).unwrap();
        assert!(p.apply(&Message::Done).is_err());
        p.apply(&it(IterationKind::Measure, 1)).unwrap();
        p.apply(&Message::Verified { phase: VerifyPhase::After }).unwrap();
        p.apply(&Message::Done).unwrap();
        assert!(p.done);
    }

    #[test]
    fn an_open_loop_fork_needs_its_open_loop_message_and_a_closed_one_refuses_it() {
        let open = Message::OpenLoop {
            scheduled: 2,
            ran: 2,
            nanos: 2,
            corrected: vec![(5, 2)],
            uncorrected: vec![(4, 2)],
            lag: vec![(1, 2)],
        };
        let closed = task();
        let mut p = progress(&closed);
        p.apply(&hello(PROTOCOL_VERSION)).unwrap();
        assert!(p.apply(&open).unwrap_err().contains("unexpected open_loop"));
        // A worker that ignored the rate (an older build) ends without one.
        let t = Task {
            warmup_iterations: 0,
            iterations: 0,
            rate: Some(crate::rate::Rate { per_sec: 2, arrivals: crate::rate::Arrivals::Poisson }),
            ..task()
        };
        let mut p = progress(&t);
        p.apply(&hello(PROTOCOL_VERSION)).unwrap();
        p.apply(&Message::Verified { phase: VerifyPhase::After }).unwrap();
        assert!(p.apply(&Message::Done).unwrap_err().contains("its build predates --rate"));
        let mut p = progress(&t);
        p.apply(&hello(PROTOCOL_VERSION)).unwrap();
        p.apply(&open).unwrap();
        assert!(p.apply(&open).is_err(), "one open_loop message per fork");
        p.apply(&Message::Verified { phase: VerifyPhase::After }).unwrap();
        p.apply(&Message::Done).unwrap();
        assert_eq!(p.fork.open_loop.as_ref().map(|o| o.ran), Some(2));
    }

    #[test]
    fn a_stepped_worker_sets_the_iterations_to_expect() {
        let t = task();
        let mut p = progress(&t);
        p.apply(&hello(PROTOCOL_VERSION)).unwrap();
        let calibrated = Message::Calibrated {
            shape: "blocking".into(),
            batch_size: 1,
            clock_read_nanos: 20.0,
            per_op_reset: false,
            steps: Some(vec![1, 1, 3]),
        };
        p.apply(&calibrated).unwrap();
        assert_eq!(p.fork.steps.as_deref(), Some(&[1, 1, 3][..]));
        let iteration = |kind, index, ops| Message::Iteration {
            kind,
            index,
            ops,
            nanos: 1,
            observed: Default::default(),
            hw: None,
            allocs: None,
            thread_ops: vec![],
        };
        let step = |index, ops| iteration(IterationKind::Measure, index, ops);
        assert!(p.apply(&iteration(IterationKind::Warmup, 0, 1)).is_err(), "a stepped fork has no warmup");
        for i in 0..3 {
            p.apply(&step(i, 1)).unwrap();
        }
        assert!(p.apply(&step(3, 1)).is_err(), "three steps were announced, not the task's two iterations");
        p.apply(&Message::Verified { phase: VerifyPhase::After }).unwrap();
        p.apply(&Message::Done).unwrap();
    }
}
