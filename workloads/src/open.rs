//! The open loop of an async workload's tasks (`--rate` with `--threads N`): one arrival
//! stream at the fork's rate, each op started as a task on the workload's runtime at its
//! intended time, with at most N in flight (one per task's local state), so N tasks at a rate
//! are one queue with N servers, as a service's requests are.
//!
//! The runtime is current-thread: the loop runs inside it and lets the ops in flight run while
//! it waits for the next start, yielding (the runtime polls its I/O driver on each yield) and
//! reading the clock, never a timer (tokio's are millisecond-grained). With nothing in flight it
//! sleeps the thread until shortly before the start, then spins, as a measuring thread does.

use std::any::Any;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

/// One op of the open loop, as it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Landed {
    /// When the schedule said it should start.
    pub intended: Instant,
    /// When it was started.
    pub started: Instant,
    /// When it ended.
    pub ended: Instant,
    /// When the local state it ran with became free (its previous op's end).
    pub free_at: Instant,
}

/// How long before an op's intended start an open loop stops sleeping and spins on the clock
/// (here with nothing in flight, and in the harness's measuring threads): a sleep on a VM wakes
/// tens of microseconds late even with a timer slack of 1 ns.
pub const SPIN: Duration = Duration::from_micros(200);

/// An op's end as its watcher sends it: the slot it used and when it ended, or its panic.
pub(crate) type Ended = (usize, Result<Instant, Box<dyn Any + Send>>);

/// The panic of a finished task (or why it did not finish), as a panic payload.
pub(crate) fn panic_of(e: tokio::task::JoinError) -> Box<dyn Any + Send> {
    match e.try_into_panic() {
        Ok(panic) => panic,
        Err(e) => Box::new(format!("measuring task failed: {e}")),
    }
}

/// The slots of one open loop: which are free, since when, and what each op in flight is.
pub(crate) struct OpenTasks {
    /// Free slots with the moment each became free, the last freed on top.
    free: Vec<(usize, Instant)>,
    /// Per slot: the op in flight's intended start, its start and its slot's free moment.
    flying: Vec<Option<(Instant, Instant, Instant)>>,
}

impl OpenTasks {
    /// `slots` slots, free from now.
    pub(crate) fn new(slots: usize) -> OpenTasks {
        let now = Instant::now();
        OpenTasks { free: (0..slots).rev().map(|s| (s, now)).collect(), flying: vec![None; slots] }
    }

    /// Ops in flight: every slot is free or flying.
    fn in_flight(&self) -> usize {
        self.flying.len() - self.free.len()
    }

    /// Frees the slot of an op that ended and hands it to `landed`; re-raises its panic.
    fn land(&mut self, (slot, ended): Ended, landed: &mut dyn FnMut(Landed)) {
        let ended = ended.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        let (intended, started, free_at) = self.flying[slot].take().expect("an op ends once");
        self.free.push((slot, ended));
        landed(Landed { intended, started, ended, free_at });
    }

    /// See [`crate::Concurrent::run_open`]; `start(slot, done)` spawns one op with the slot's
    /// state, whose end is sent to `done`.
    pub(crate) async fn run(
        &mut self,
        cutoff: Instant,
        next: &mut dyn FnMut() -> Option<Instant>,
        landed: &mut dyn FnMut(Landed),
        mut start: impl FnMut(usize, UnboundedSender<Ended>),
    ) -> u64 {
        let (done, mut ends) = unbounded_channel::<Ended>();
        let mut started = 0u64;
        while let Some(intended) = next() {
            loop {
                while let Ok(end) = ends.try_recv() {
                    self.land(end, landed);
                }
                let now = Instant::now();
                if now >= intended {
                    break;
                }
                match intended - now {
                    left if left > SPIN && self.in_flight() == 0 => std::thread::sleep(left - SPIN),
                    _ => tokio::task::yield_now().await,
                }
            }
            while self.free.is_empty() {
                let end = ends.recv().await.expect("the loop holds a sender");
                self.land(end, landed);
            }
            let now = Instant::now();
            if now >= cutoff {
                break;
            }
            let (slot, free_at) = self.free.pop().expect("a slot is free");
            self.flying[slot] = Some((intended, now, free_at));
            start(slot, done.clone());
            started += 1;
        }
        while self.in_flight() > 0 {
            let end = ends.recv().await.expect("the loop holds a sender");
            self.land(end, landed);
        }
        started
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the loop on a current-thread runtime with ops that sleep `op` (a timer: no CPU).
    fn run_with(slots: usize, starts: Vec<Duration>, op: Duration) -> (u64, Vec<Landed>) {
        let runtime = crate::current_thread_runtime().unwrap();
        let t0 = Instant::now() + Duration::from_millis(5);
        let mut starts = starts.into_iter().map(|d| t0 + d);
        let mut next = || starts.next();
        let mut seen = vec![];
        let mut landed = |l| seen.push(l);
        let mut open = OpenTasks::new(slots);
        let handle = runtime.handle().clone();
        let started = runtime.block_on(open.run(t0 + Duration::from_secs(10), &mut next, &mut landed, |slot, done| {
            let op = handle.spawn(async move {
                tokio::time::sleep(op).await;
                Instant::now()
            });
            handle.spawn(async move {
                let _ = done.send((slot, op.await.map_err(panic_of)));
            });
        }));
        (started, seen)
    }

    #[test]
    fn ops_start_at_their_time_and_queue_only_when_every_slot_is_busy() {
        let ms = Duration::from_millis;
        // Two slots, ops of 20 ms (a timer's grain is a millisecond) due at 0, 1 and 2 ms: the
        // third waits for the first to end, about 20 ms later.
        let (started, landed) = run_with(2, vec![ms(0), ms(1), ms(2)], ms(20));
        assert_eq!((started, landed.len()), (3, 3));
        for l in &landed[..2] {
            assert!(l.started - l.intended < ms(2), "started on time: {l:?}");
        }
        let third = landed.iter().find(|l| l.started - l.intended > ms(10)).expect("the third op queued");
        assert!(third.started >= third.free_at && third.free_at >= third.intended, "{third:?}");
        assert!(third.ended - third.intended >= ms(38), "its latency counts the wait: {third:?}");
    }

    #[test]
    fn a_panicking_op_ends_the_loop_with_its_panic() {
        let runtime = crate::current_thread_runtime().unwrap();
        let handle = runtime.handle().clone();
        let mut once = Some(Instant::now());
        let (mut next, mut landed) = (move || once.take(), |_| {});
        let mut open = OpenTasks::new(1);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            runtime.block_on(open.run(Instant::now() + Duration::from_secs(5), &mut next, &mut landed, |slot, done| {
                let op = handle.spawn(async { panic!("planted") });
                handle.spawn(async move {
                    let _ = done.send((slot, op.await.map(|()| Instant::now()).map_err(panic_of)));
                });
            }))
        }));
        let panic = caught.expect_err("the op's panic ends the loop");
        assert_eq!(panic.downcast_ref::<&str>(), Some(&"planted"));
    }
}
