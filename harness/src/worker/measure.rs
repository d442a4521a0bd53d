//! The timed loop: batches of ops between clock reads, and the calibration of the batch size.
//!
//! The clock is read once per batch, and a batch is calibrated to last long enough that one
//! clock read costs under 1% of it; the op loop inside a batch is monomorphized per workload
//! (see [`workloads::Bench`]), so the only dynamic call is one per batch.

use std::hint::black_box;
use std::time::{Duration, Instant};
use workloads::Bench;

/// Largest batch the calibration will choose.
const MAX_BATCH: u64 = 1 << 40;

/// Measures the cost of one `Instant::now()` (the best of several rounds).
pub(crate) fn clock_read_nanos() -> f64 {
    const READS: u32 = 1000;
    (0..5)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..READS {
                black_box(Instant::now());
            }
            start.elapsed().as_nanos() as f64 / f64::from(READS + 1)
        })
        .fold(f64::INFINITY, f64::min)
}

/// How long one batch should last: a thousandth of the iteration, at least 100 clock reads (so the
/// clock costs under 1%) and at most a tenth of the iteration.
pub(crate) fn batch_target(iteration: Duration, clock_read_nanos: f64) -> Duration {
    let floor = Duration::from_nanos((clock_read_nanos.max(1.0) * 100.0).ceil() as u64);
    let ceiling = (iteration / 10).max(floor);
    (iteration / 1000).clamp(floor, ceiling)
}

/// The batch size whose run lasts at least `target`, grown from one op until a batch does, and
/// the ops the calibration ran.
pub(crate) fn calibrate(bench: &mut dyn Bench, target: Duration) -> (u64, u64) {
    let (mut n, mut ran): (u64, u64) = (1, 0);
    let mut timed = |bench: &mut dyn Bench, n: u64| {
        let start = Instant::now();
        bench.run_batch(n);
        ran += n;
        start.elapsed()
    };
    loop {
        let mut elapsed = timed(bench, n);
        // One slow batch (a cold first op: lazy initialization, page faults, a preemption)
        // must not fix the batch size for the whole fork: confirm with a second run.
        if elapsed >= target {
            elapsed = elapsed.min(timed(bench, n));
        }
        if elapsed >= target || n >= MAX_BATCH {
            return (n, ran);
        }
        let factor =
            if elapsed.is_zero() { 16.0 } else { (target.as_secs_f64() / elapsed.as_secs_f64()).clamp(2.0, 16.0) };
        n = ((n as f64 * factor).ceil() as u64).min(MAX_BATCH);
    }
}

/// For workloads that reset before every op: runs reset-then-op until `time` of wall clock has
/// passed; returns `(ops, nanos spent in the ops alone)`. Each op's time goes to `samples`.
/// With `--alloc`, only the ops' allocations are counted, never the resets'.
pub(crate) fn reset_iteration(bench: &mut dyn Bench, time: Duration, samples: &mut Vec<u64>) -> (u64, u64) {
    let (mut ops, mut nanos) = (0u64, 0u64);
    let start = Instant::now();
    crate::alloc::op_window(false);
    loop {
        let op = bench.run_reset_ops(1, crate::alloc::op_window);
        samples.push(op);
        nanos += op;
        ops += 1;
        if start.elapsed() >= time {
            crate::alloc::op_window(true);
            return (ops, nanos);
        }
    }
}

/// How long one iteration runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Length {
    /// Until this much wall clock has passed.
    Time(Duration),
    /// Exactly this many ops (a stepped workload's step).
    Ops(u64),
}

/// A stepped workload's step: exactly `ops` ops, each timed alone (its time goes to the
/// outcome's samples); the step's time is the wall clock from its first op to its last.
pub(crate) fn step(bench: &mut dyn Bench, ops: u64) -> super::crew::Outcome {
    let mut samples = Vec::with_capacity(ops as usize);
    let start = Instant::now();
    bench.run_sampled(ops, 1, &mut samples);
    let nanos = start.elapsed().as_nanos() as u64;
    super::crew::Outcome { ops, nanos, thread_ops: vec![], samples }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Sleepy(Duration);
    impl Bench for Sleepy {
        fn run_batch(&mut self, n: u64) {
            std::thread::sleep(self.0 * n as u32);
        }
    }

    #[test]
    fn batch_target_respects_clock_floor_and_iteration() {
        assert_eq!(batch_target(Duration::from_secs(1), 25.0), Duration::from_millis(1));
        assert_eq!(batch_target(Duration::from_millis(100), 25.0), Duration::from_micros(100));
        // Tiny iterations still keep the clock under 1% of a batch.
        assert_eq!(batch_target(Duration::from_micros(10), 25.0), Duration::from_nanos(2500));
    }

    #[test]
    fn slow_ops_get_batch_of_one() {
        // One op, run twice: the slow batch is confirmed before it is chosen.
        assert_eq!(calibrate(&mut Sleepy(Duration::from_millis(2)), Duration::from_millis(1)), (1, 2));
    }

    /// The first op is slow (cold start), every later one is fast.
    struct ColdStart(bool);
    impl Bench for ColdStart {
        fn run_batch(&mut self, n: u64) {
            if !self.0 {
                self.0 = true;
                std::thread::sleep(Duration::from_millis(5));
            }
            std::hint::black_box(n);
        }
    }

    #[test]
    fn a_cold_first_op_does_not_fix_the_batch_size() {
        assert!(calibrate(&mut ColdStart(false), Duration::from_millis(1)).0 > 1);
    }

    #[test]
    fn a_step_runs_exactly_its_ops_and_times_each() {
        let out = step(&mut Sleepy(Duration::from_millis(1)), 3);
        assert_eq!((out.ops, out.samples.len()), (3, 3));
        assert!(out.samples.iter().all(|&s| s >= 1_000_000), "{:?}", out.samples);
        assert!(out.nanos >= out.samples.iter().sum::<u64>(), "the step's wall clock holds its ops");
    }

    #[test]
    fn clock_cost_is_positive_and_small() {
        let c = clock_read_nanos();
        assert!(c > 0.0 && c < 100_000.0, "{c}");
    }
}
