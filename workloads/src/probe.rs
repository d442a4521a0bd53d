//! Hidden probe workloads that test the harness's concurrency and latency measurement:
//! `probe/thread_in_flight` and `probe/task_in_flight` record how many of their ops were in
//! flight at once (N concurrent measurers must reach N), `probe/every_50th_sleeps` has a
//! known latency distribution (2% of ops take a millisecond more), and `probe/fixed_service`
//! takes a fixed time per op (with an optional stall once in a while), so that an open-loop
//! run of it is an M/D/1 (Poisson arrivals) or D/D/1 (constant) queue whose latencies theory gives.

use crate::params::{ParamKind, ParamSpec};
use crate::{AsyncWorkload, Workload, WorkloadDef, asynchronous, blocking};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long an in-flight op stays in flight.
const IN_FLIGHT: Duration = Duration::from_micros(200);

/// The probe group (hidden: `--hidden` lists them).
pub static WORKLOADS: &[WorkloadDef] = &[
    WorkloadDef::new(
        "probe/thread_in_flight",
        "blocking op that sleeps 200 µs and records how many ops were in flight at once",
        &[],
        |_| Ok(blocking(InFlight::default())),
    )
    .hidden(),
    WorkloadDef::new(
        "probe/task_in_flight",
        "async op that sleeps 200 µs on the runtime and records how many ops were in flight at once",
        &[],
        |_| Ok(asynchronous(TaskInFlight { runtime: crate::current_thread_runtime()?, counts: InFlight::default() })),
    )
    .hidden(),
    WorkloadDef::new(
        "probe/every_50th_sleeps",
        "2 µs of spinning; every 50th op also sleeps 1 ms (a known latency distribution)",
        &[],
        |_| Ok(blocking(Every50thSleeps::default())),
    )
    .hidden(),
    WorkloadDef::new(
        "probe/fixed_service",
        "spins a fixed time per op; with stall_ms, the first op after every stall_every_ms also sleeps stall_ms",
        &[SERVICE_US, STALL_MS, STALL_EVERY_MS],
        |ctx| {
            Ok(blocking(FixedService {
                service: Duration::from_micros(ctx.params.int("service_us")? as u64),
                stall: Duration::from_millis(ctx.params.int("stall_ms")? as u64),
                every: Duration::from_millis(ctx.params.int("stall_every_ms")? as u64),
                last_stall: std::sync::Mutex::new(Instant::now()),
            }))
        },
    )
    .hidden(),
];

const SERVICE_US: ParamSpec = ParamSpec {
    name: "service_us",
    about: "microseconds each op spins",
    kind: ParamKind::Int { min: 0, max: 1_000_000 },
    defaults: &["100"],
};

const STALL_MS: ParamSpec = ParamSpec {
    name: "stall_ms",
    about: "milliseconds of a stall (0: none)",
    kind: ParamKind::Int { min: 0, max: 10_000 },
    defaults: &["0"],
};

const STALL_EVERY_MS: ParamSpec = ParamSpec {
    name: "stall_every_ms",
    about: "milliseconds between two stalls",
    kind: ParamKind::Int { min: 1, max: 3_600_000 },
    defaults: &["1000"],
};

/// Spins on the clock until `at`: CPU work of a known length, whatever the CPU.
fn spin_until(at: Instant) {
    while Instant::now() < at {
        std::hint::spin_loop();
    }
}

/// An op of a fixed service time, spun on the clock; a stall of `stall` at most once every
/// `every` (the first op after it is due), as a server's pause would.
#[derive(Debug)]
pub struct FixedService {
    service: Duration,
    stall: Duration,
    every: Duration,
    last_stall: std::sync::Mutex<Instant>,
}

impl Workload for FixedService {
    crate::workload::no_local_state!();
    type Output = ();
    fn op(&self, _: &mut ()) {
        let start = Instant::now();
        if !self.stall.is_zero() {
            let mut last = self.last_stall.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if start.duration_since(*last) >= self.every {
                *last = start;
                drop(last);
                std::thread::sleep(self.stall);
            }
        }
        spin_until(start + self.service);
    }
    fn deterministic(&self) -> bool {
        false
    }
}

/// Ops in flight now and the most seen at once.
#[derive(Debug, Default)]
pub struct InFlight {
    now: AtomicI64,
    max: AtomicI64,
}

impl InFlight {
    fn enter(&self) {
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(n, Ordering::SeqCst);
    }
    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
    fn observe(&self) -> Vec<(&'static str, i64)> {
        vec![("max_in_flight", self.max.swap(0, Ordering::SeqCst))]
    }
}

impl Workload for InFlight {
    crate::workload::no_local_state!();
    type Output = ();
    fn op(&self, _: &mut ()) {
        self.enter();
        std::thread::sleep(IN_FLIGHT);
        self.leave();
    }
    fn observe(&self) -> anyhow::Result<Vec<(&'static str, i64)>> {
        Ok(InFlight::observe(self))
    }
    fn deterministic(&self) -> bool {
        false
    }
}

/// [`InFlight`] as an async op on a current-thread runtime.
pub struct TaskInFlight {
    runtime: tokio::runtime::Runtime,
    counts: InFlight,
}

impl AsyncWorkload for TaskInFlight {
    crate::workload::no_local_state!();
    type Output = ();
    fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.runtime
    }
    async fn op(&self, _: &mut ()) {
        self.counts.enter();
        tokio::time::sleep(IN_FLIGHT).await;
        self.counts.leave();
    }
    fn observe(&self) -> anyhow::Result<Vec<(&'static str, i64)>> {
        Ok(self.counts.observe())
    }
    fn deterministic(&self) -> bool {
        false
    }
}

/// 2 µs of spinning per op; every 50th op sleeps 1 ms more.
#[derive(Debug, Default)]
pub struct Every50thSleeps {
    ops: AtomicU64,
}

impl Workload for Every50thSleeps {
    crate::workload::no_local_state!();
    type Output = ();
    fn op(&self, _: &mut ()) {
        spin_until(Instant::now() + Duration::from_micros(2));
        if self.ops.fetch_add(1, Ordering::Relaxed) % 50 == 49 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    fn deterministic(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Prepared, SetupContext};

    #[test]
    fn in_flight_counts_overlapping_ops() {
        let w = std::sync::Arc::new(InFlight::default());
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let w = std::sync::Arc::clone(&w);
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        w.op(&mut ());
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        let max = Workload::observe(&*w).unwrap()[0].1;
        assert!((2..=3).contains(&max), "{max}");
        assert_eq!(Workload::observe(&*w).unwrap()[0].1, 0, "observing resets the maximum");
    }

    #[test]
    fn a_fixed_service_op_takes_its_time_and_stalls_once_per_period() {
        let w = FixedService {
            service: Duration::from_micros(200),
            stall: Duration::from_millis(20),
            every: Duration::from_millis(500),
            last_stall: std::sync::Mutex::new(Instant::now() - Duration::from_secs(1)),
        };
        let time = |w: &FixedService| {
            let t = Instant::now();
            w.op(&mut ());
            t.elapsed()
        };
        assert!(time(&w) >= Duration::from_millis(20), "the first op is due a stall");
        let next = time(&w);
        assert!(next >= Duration::from_micros(200) && next < Duration::from_millis(20), "{next:?}");
    }

    #[test]
    fn tasks_run_concurrently_on_one_runtime() {
        let def = WORKLOADS.iter().find(|d| d.name == "probe/task_in_flight").unwrap();
        let prepared: Box<dyn Prepared> = (def.setup)(&SetupContext::new(Default::default())).unwrap();
        let mut crew = prepared.concurrent(4).unwrap().expect("async workloads run tasks");
        let runs = crew.run(crate::IterationPlan { batch: 5, time: Duration::from_millis(20), sample: None });
        assert_eq!(runs.len(), 4);
        assert!(runs.iter().all(|r| r.ops > 0 && r.ops % 5 == 0));
        assert_eq!(prepared.observe().unwrap(), [("max_in_flight", 4)]);
    }
}
