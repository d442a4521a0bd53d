//! Open-loop iterations (`--rate`): each op starts at its scheduled time, whatever the ops
//! before it did, and its latency is counted from that intended start, so a stall is charged
//! to every op that would have queued behind it (coordinated omission corrected, as wrk2 and
//! HdrHistogram do). One measurer has at most one op in flight: a fork's in-flight bound is
//! its measurer count (`--threads`).
//!
//! Three histograms per measurer: corrected (end − intended start), uncorrected (end − actual
//! start: what a closed loop would report) and the scheduling lag, how late the generator
//! started an op it was free to start (actual start − the later of the intended start and the
//! previous op's end). Queueing behind a slow op is latency, not lag; lag is the generator's
//! own error.

use crate::rate::{Arrivals, Schedule};
use hdrhistogram::Histogram;
use std::time::{Duration, Instant};
use workloads::{Bench, TaskRun};

/// How long before an op's intended start the measurer stops sleeping and spins on the clock.
const SPIN: Duration = workloads::OPEN_LOOP_SPIN;

/// One open-loop iteration of one measurer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct OpenPlan {
    /// This measurer's share of the fork's rate, in ops per second.
    pub per_sec: f64,
    /// How the ops arrive.
    pub arrivals: Arrivals,
    /// Ops are scheduled over this long.
    pub time: Duration,
    /// Measured (recorded into the histograms) or warmup.
    pub record: bool,
    /// The fork's index, which seeds the schedules.
    pub fork: u32,
}

/// What the open-loop iterations of one or more measurers recorded.
#[derive(Debug, Clone)]
pub(crate) struct OpenRecord {
    /// End − intended start, per op.
    pub corrected: Histogram<u64>,
    /// End − actual start, per op.
    pub uncorrected: Histogram<u64>,
    /// Actual start − the later of the intended start and the previous op's end.
    pub lag: Histogram<u64>,
    /// Ops the schedules started in the measured iterations.
    pub scheduled: u64,
    /// Of those, the ops that ran (the rest were cut off when the iteration ran past twice its
    /// time).
    pub ran: u64,
}

impl Default for OpenRecord {
    fn default() -> OpenRecord {
        let h = crate::protocol::new_histogram;
        OpenRecord { corrected: h(), uncorrected: h(), lag: h(), scheduled: 0, ran: 0 }
    }
}

impl OpenRecord {
    /// Adds another measurer's record.
    pub(crate) fn merge(&mut self, other: &OpenRecord) {
        // The histograms share bounds and precision, so adding cannot fail.
        let _ = self.corrected.add(&other.corrected);
        let _ = self.uncorrected.add(&other.uncorrected);
        let _ = self.lag.add(&other.lag);
        self.scheduled += other.scheduled;
        self.ran += other.ran;
    }

    fn record(&mut self, intended: Instant, started: Instant, ended: Instant, free_at: Instant) {
        let nanos = |d: Duration| (d.as_nanos() as u64).clamp(1, crate::protocol::MAX_NANOS);
        let _ = self.corrected.record(nanos(ended.saturating_duration_since(intended)));
        let _ = self.uncorrected.record(nanos(ended.saturating_duration_since(started)));
        let _ = self.lag.record(nanos(started.saturating_duration_since(intended.max(free_at))));
    }
}

/// One measurer's schedule, kept across its iterations so the arrivals continue one stream.
#[derive(Debug)]
pub(crate) struct Measurer {
    schedule: Option<Schedule>,
    index: usize,
    /// What the measured iterations recorded.
    pub record: OpenRecord,
}

impl Measurer {
    /// Measurer `index` of its fork.
    pub(crate) fn new(index: usize) -> Measurer {
        Measurer { schedule: None, index, record: OpenRecord::default() }
    }

    /// Runs one iteration: every op scheduled within `plan.time` of its start, each started at
    /// its intended time (or as soon as the op before it ends); it lasts at least its time, so
    /// that ops per second are the rate kept. An iteration that runs past twice its time stops
    /// starting ops, and the ops it did not start count as scheduled.
    pub(crate) fn iteration(&mut self, bench: &mut dyn Bench, plan: OpenPlan) -> TaskRun {
        let index = self.index;
        let schedule = self
            .schedule
            .get_or_insert_with(|| Schedule::new(plan.per_sec, plan.arrivals, crate::rate::seed(plan.fork, index)));
        schedule.start(plan.time.as_nanos() as u64);
        precise_sleeps();
        let scheduled = schedule.count();
        let mut ran = 0u64;
        let start = Instant::now();
        let cutoff = start + plan.time * 2;
        let mut free_at = start;
        while let Some(offset) = schedule.next_offset() {
            let intended = start + Duration::from_nanos(offset);
            let started = wait_until(intended);
            if started >= cutoff {
                break;
            }
            bench.run_batch(1);
            let ended = Instant::now();
            ran += 1;
            if plan.record {
                self.record.record(intended, started, ended, free_at);
            }
            free_at = ended;
        }
        wait_until(start + plan.time);
        if plan.record {
            self.record.scheduled += scheduled;
            self.record.ran += ran;
        }
        TaskRun { ops: ran, start, end: Instant::now(), samples: vec![] }
    }
}

/// The open loop of an async fork's N tasks: one schedule at the fork's whole rate, each op
/// started as a task at its intended time with at most N in flight
/// ([`workloads::Concurrent::run_open`]), so the tasks are one queue with N servers where N
/// threads are N queues of one. Recorded as a measurer's ops are.
#[derive(Debug, Default)]
pub(crate) struct Spawner {
    schedule: Option<Schedule>,
    /// What the measured iterations recorded.
    pub record: OpenRecord,
}

impl Spawner {
    /// Runs one iteration of `tasks` at `plan.per_sec` (the fork's rate), as
    /// [`Measurer::iteration`] does for one measurer.
    pub(crate) fn iteration(&mut self, tasks: &mut dyn workloads::Concurrent, plan: OpenPlan) -> TaskRun {
        let schedule = self
            .schedule
            .get_or_insert_with(|| Schedule::new(plan.per_sec, plan.arrivals, crate::rate::seed(plan.fork, 0)));
        schedule.start(plan.time.as_nanos() as u64);
        precise_sleeps();
        let scheduled = schedule.count();
        let start = Instant::now();
        let record = &mut self.record;
        let mut next = || schedule.next_offset().map(|offset| start + Duration::from_nanos(offset));
        let mut landed = |l: workloads::Landed| {
            if plan.record {
                record.record(l.intended, l.started, l.ended, l.free_at);
            }
        };
        let ran = tasks.run_open(start + plan.time * 2, &mut next, &mut landed);
        wait_until(start + plan.time);
        if plan.record {
            self.record.scheduled += scheduled;
            self.record.ran += ran;
        }
        TaskRun { ops: ran, start, end: Instant::now(), samples: vec![] }
    }
}

/// Asks the kernel to wake this thread's sleeps on time (a timer slack of 1 ns, not 50 µs).
fn precise_sleeps() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer and changes only this thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}

/// Sleeps until shortly before `at`, then spins until it; returns the clock when done (at or
/// after `at`, or now if `at` has passed).
fn wait_until(at: Instant) -> Instant {
    loop {
        let now = Instant::now();
        if now >= at {
            return now;
        }
        let left = at - now;
        if left > SPIN {
            std::thread::sleep(left - SPIN);
        } else {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An op of a fixed time, spun on the clock.
    struct Fixed(Duration);
    impl Bench for Fixed {
        fn run_batch(&mut self, n: u64) {
            for _ in 0..n {
                let t = Instant::now();
                while t.elapsed() < self.0 {
                    std::hint::spin_loop();
                }
            }
        }
    }

    fn plan(per_sec: f64, arrivals: Arrivals, millis: u64) -> OpenPlan {
        OpenPlan { per_sec, arrivals, time: Duration::from_millis(millis), record: true, fork: 0 }
    }

    #[test]
    fn a_constant_schedule_runs_every_op_it_scheduled_and_records_each() {
        let mut m = Measurer::new(0);
        let run = m.iteration(&mut Fixed(Duration::from_micros(10)), plan(2000.0, Arrivals::Constant, 50));
        // Ops at 0.25 ms, 0.75 ms, ... 49.75 ms; the iteration lasts its 50 ms.
        assert_eq!((run.ops, m.record.scheduled, m.record.ran), (100, 100, 100));
        assert_eq!(m.record.corrected.len(), 100);
        assert_eq!(m.record.lag.len(), 100);
        assert!(run.end.duration_since(run.start) >= Duration::from_millis(50));
        assert!(m.record.uncorrected.min() >= 10_000, "an op spins 10 µs");
        assert!(m.record.corrected.value_at_quantile(0.5) >= m.record.uncorrected.value_at_quantile(0.5));
    }

    #[test]
    fn an_op_slower_than_the_gap_queues_the_next_in_corrected_latency_not_in_lag() {
        // 1 ms ops every 0.5 ms: each op waits longer than the last; the generator is never late.
        let mut m = Measurer::new(0);
        m.iteration(&mut Fixed(Duration::from_millis(1)), plan(2000.0, Arrivals::Constant, 10));
        let (c, u) = (&m.record.corrected, &m.record.uncorrected);
        // Against the median op (a preempted op raises the uncorrected maximum, never the queue's).
        let alone = u.value_at_quantile(0.5);
        assert!(c.max() > 5 * alone, "the queue grows: corrected max {} vs uncorrected median {alone}", c.max());
        assert!(m.record.lag.value_at_quantile(0.5) < 1_000_000, "queueing is not lag");
    }

    #[test]
    fn an_iteration_past_twice_its_time_stops_and_counts_what_it_did_not_start() {
        // 5 ms ops at 1,000/s for 20 ms: 20 scheduled, about 40 ms of room, so some are cut off.
        let mut m = Measurer::new(0);
        let run = m.iteration(&mut Fixed(Duration::from_millis(5)), plan(1000.0, Arrivals::Constant, 20));
        assert_eq!(m.record.scheduled, 20);
        assert!(m.record.ran < 20 && m.record.ran == run.ops, "{}", m.record.ran);
    }

    #[test]
    fn warmup_iterations_record_nothing() {
        let mut m = Measurer::new(0);
        let run =
            m.iteration(&mut Fixed(Duration::ZERO), OpenPlan { record: false, ..plan(1000.0, Arrivals::Poisson, 20) });
        assert!(run.ops > 0);
        assert_eq!((m.record.scheduled, m.record.corrected.len()), (0, 0));
    }

    #[test]
    fn records_merge() {
        let mut a = OpenRecord::default();
        let mut b = OpenRecord::default();
        let t = Instant::now();
        a.record(t, t, t + Duration::from_micros(5), t);
        b.record(t, t + Duration::from_micros(1), t + Duration::from_micros(3), t);
        b.scheduled = 2;
        a.merge(&b);
        assert_eq!((a.corrected.len(), a.scheduled), (2, 2));
    }
}
