//! Following one worker to its end: applying its messages to the fork record, enforcing the
//! timeout and the interrupt flag, and turning its exit status into the fork's outcome.

use super::ending::{clip, exit_failure, stop_reason, with_status};
use super::progress::Progress;
use super::spawn::{PipeEvent, Worker};
use crate::protocol::{Message, Task};
use crate::report::{Failure, FailureKind, Fork, ForkStatus};
use std::process::ExitStatus;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};
use workloads::redact::redact;

/// How often the parent looks at the interrupt flag while waiting.
const POLL: Duration = Duration::from_millis(50);
/// Lines of stderr kept in a failure.
const STDERR_LINES: usize = 40;

/// Follows `worker` until it ends or is killed; returns the fork record.
pub(crate) fn collect(
    worker: Worker,
    task: &Task,
    timeout: Duration,
    stop: &AtomicBool,
    on_message: &mut dyn FnMut(&Message),
) -> Fork {
    Collector::new(worker, task, timeout).finish(stop, on_message)
}

/// A worker being followed: its messages applied to its fork record as they arrive.
pub(crate) struct Collector<'a> {
    worker: Worker,
    p: Progress<'a>,
    started: Instant,
    deadline: Instant,
    timeout: Duration,
    /// The worker was killed (violation, timeout, interrupt).
    killed: bool,
    /// Its result pipe closed or it was killed: nothing more will come.
    ended: bool,
}

impl<'a> Collector<'a> {
    /// Starts following `worker`, which must finish within `timeout`.
    pub(crate) fn new(worker: Worker, task: &'a Task, timeout: Duration) -> Self {
        let started = Instant::now();
        let p = Progress::new(Fork::pending(task.fork_index, Some(worker.child.id())), task);
        Collector { worker, p, started, deadline: started + timeout, timeout, killed: false, ended: false }
    }

    /// Lockstep: lets the worker take its next step (false when it cannot be told).
    pub(crate) fn go(&mut self) -> bool {
        !self.ended && self.worker.go()
    }

    /// Applies messages until the worker says `ready` (then true, with `until_ready`) or nothing
    /// more will come: its pipe closed, a protocol violation, the timeout or an interrupt.
    pub(crate) fn pump(&mut self, stop: &AtomicBool, on_message: &mut dyn FnMut(&Message), until_ready: bool) -> bool {
        while !self.ended {
            if let Some(kind) = stop_reason(stop, self.deadline, self.timeout) {
                self.kill(kind);
                break;
            }
            let wait = POLL.min(self.deadline.saturating_duration_since(Instant::now()));
            match self.worker.events.recv_timeout(wait) {
                Ok(PipeEvent::Line(line)) => {
                    let applied = serde_json::from_str::<Message>(&line)
                        .map_err(|e| format!("not a protocol message ({e}): {}", clip(&line)))
                        .and_then(|m| {
                            on_message(&m);
                            self.p.apply(&m)?;
                            // A stepped fork's length is not known ahead: the timeout limits each step.
                            if self.p.fork.steps.is_some() && matches!(m, Message::Iteration { .. }) {
                                self.deadline = Instant::now() + self.timeout;
                            }
                            Ok(m == Message::Ready)
                        });
                    match applied {
                        Ok(true) if until_ready => return true,
                        Ok(_) => {}
                        Err(e) => self.kill((FailureKind::Protocol, e)),
                    }
                }
                Ok(PipeEvent::Garbled(why)) => {
                    self.kill((FailureKind::Protocol, format!("the result channel carried {why}")));
                }
                Ok(PipeEvent::Eof) | Err(RecvTimeoutError::Disconnected) => self.ended = true,
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
        false
    }

    fn kill(&mut self, failure: (FailureKind, String)) {
        self.p.failure = Some(failure);
        self.killed = true;
        self.ended = true;
    }

    /// Follows the worker to its end (messages, then its exit status, still under the timeout
    /// and the interrupt flag) and returns the fork record.
    pub(crate) fn finish(mut self, stop: &AtomicBool, on_message: &mut dyn FnMut(&Message)) -> Fork {
        self.pump(stop, on_message, false);
        let Collector { mut worker, mut p, started, deadline, timeout, killed, .. } = self;
        // A lockstep worker still waiting for a go ends quietly when its stdin closes.
        drop(worker.stdin.take());
        let status = if killed {
            worker.kill_group();
            worker.child.wait().ok()
        } else {
            loop {
                match worker.child.try_wait() {
                    Ok(Some(s)) => break Some(s),
                    Ok(None) => {}
                    Err(_) => break None,
                }
                if let Some(kind) = stop_reason(stop, deadline, timeout) {
                    p.failure.get_or_insert(kind);
                    worker.kill_group();
                    break worker.child.wait().ok();
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        };
        // Anything the worker started dies with it.
        worker.kill_group();
        outcome(p, status, killed, started, &worker)
    }
}

/// The fork record from what the worker said and how it ended.
fn outcome(p: Progress<'_>, status: Option<ExitStatus>, killed: bool, started: Instant, worker: &Worker) -> Fork {
    let expected = p.expected().1;
    let mut fork = p.fork;
    fork.wall_nanos = started.elapsed().as_nanos() as u64;
    if let Some((ops, deterministic)) = p.instrumented {
        fork.kind = crate::report::ForkKind::Instructions;
        fork.instructions = Some(crate::report::InstructionCount { ops, total: 0, deterministic });
    }
    if let Some(io) = p.io_counted {
        fork.kind = crate::report::ForkKind::Io;
        fork.io = Some(io);
    }
    let failure = match (p.failure, status) {
        (Some((kind, message)), status) => Some((kind, with_status(message, status, killed))),
        (None, None) => Some((FailureKind::Exit, "exit status unknown".into())),
        (None, Some(s)) => exit_failure(s, p.done, fork.iterations.len(), expected),
    };
    match failure {
        None => fork.status = ForkStatus::Ok,
        Some((kind, message)) => {
            fork.failure = Some(Failure {
                kind,
                message: redact(&message),
                stderr_tail: redact(&worker.stderr.text(STDERR_LINES)),
            });
        }
    }
    fork
}
