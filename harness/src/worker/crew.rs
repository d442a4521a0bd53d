//! The measurers of one fork: the worker's own thread, N OS threads (blocking workloads) or N
//! tasks on the workload's runtime (async workloads), each running the op in its own loop with
//! its own local state, all starting an iteration together. In sample-time mode every group of
//! `k` ops is timed on its own; in open-loop mode (`--rate`) every op starts at its scheduled
//! time ([`super::open_loop`]).

use std::any::Any;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;

use super::open_loop::{self, OpenPlan, OpenRecord};
use workloads::{Bench, Concurrent, IterationPlan, TaskRun, run_iteration};

/// How every measurer runs one iteration.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Plan {
    /// As fast as it can, in batches (or timed groups) of ops.
    Closed(IterationPlan),
    /// Each op at its scheduled time.
    Open(OpenPlan),
}

/// One measurer's loop over one iteration, closed or open.
fn run_plan(bench: &mut dyn Bench, open: &mut open_loop::Measurer, plan: Plan) -> TaskRun {
    match plan {
        Plan::Closed(p) => run_iteration(bench, p),
        Plan::Open(p) => open.iteration(bench, p),
    }
}

/// What an iteration of every measurer added up to.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// Ops of all measurers.
    pub ops: u64,
    /// From the first measurer's start to the last one's end.
    pub nanos: u64,
    /// Ops per measurer, when there are several.
    pub thread_ops: Vec<u64>,
    /// Sample-time mode: nanoseconds of every timed group of ops.
    pub samples: Vec<u64>,
}

fn combine(runs: Vec<TaskRun>) -> Outcome {
    let first = runs.iter().map(|r| r.start).min();
    let last = runs.iter().map(|r| r.end).max();
    let nanos = match (first, last) {
        (Some(a), Some(b)) => b.duration_since(a).as_nanos() as u64,
        _ => 0,
    };
    let several = runs.len() > 1;
    Outcome {
        ops: runs.iter().map(|r| r.ops).sum(),
        nanos,
        thread_ops: if several { runs.iter().map(|r| r.ops).collect() } else { vec![] },
        samples: runs.into_iter().flat_map(|r| r.samples).collect(),
    }
}

type Reply = Result<TaskRun, Box<dyn Any + Send>>;

/// N OS threads, each holding a [`Bench`], parked between iterations.
pub(crate) struct Threads {
    orders: Vec<Sender<Option<Plan>>>,
    replies: Receiver<(usize, Reply)>,
    /// Each thread ends with what its open-loop iterations recorded.
    handles: Vec<JoinHandle<OpenRecord>>,
}

impl Threads {
    /// Starts one thread per bench.
    pub(crate) fn start(benches: Vec<Box<dyn Bench>>) -> Threads {
        let barrier = Arc::new(Barrier::new(benches.len()));
        let (reply_tx, replies) = channel();
        let (mut orders, mut handles) = (vec![], vec![]);
        for (i, mut bench) in benches.into_iter().enumerate() {
            let (tx, rx) = channel::<Option<Plan>>();
            let (barrier, reply_tx) = (Arc::clone(&barrier), reply_tx.clone());
            handles.push(
                std::thread::Builder::new()
                    .name(format!("measure-{i}"))
                    .spawn(move || {
                        let mut open = open_loop::Measurer::new(i);
                        while let Ok(Some(plan)) = rx.recv() {
                            barrier.wait();
                            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                run_plan(bench.as_mut(), &mut open, plan)
                            }));
                            let failed = run.is_err();
                            if reply_tx.send((i, run)).is_err() || failed {
                                break;
                            }
                        }
                        open.record
                    })
                    .expect("spawn a measuring thread"),
            );
            orders.push(tx);
        }
        Threads { orders, replies, handles }
    }

    fn run(&mut self, plan: Plan) -> Outcome {
        for o in &self.orders {
            o.send(Some(plan)).expect("measuring threads wait for orders");
        }
        let mut runs: Vec<Option<TaskRun>> = (0..self.orders.len()).map(|_| None).collect();
        for _ in 0..self.orders.len() {
            match self.replies.recv().expect("measuring threads reply") {
                (i, Ok(run)) => runs[i] = Some(run),
                // The panic hook already reported it; end the worker the same way.
                (_, Err(panic)) => std::panic::resume_unwind(panic),
            }
        }
        combine(runs.into_iter().map(|r| r.expect("every thread replied")).collect())
    }
}

impl Threads {
    /// Ends every thread and merges what their open-loop iterations recorded.
    fn finish(&mut self) -> OpenRecord {
        for o in &self.orders {
            let _ = o.send(None);
        }
        let mut all = OpenRecord::default();
        for h in self.handles.drain(..) {
            if let Ok(record) = h.join() {
                all.merge(&record);
            }
        }
        all
    }
}

impl Drop for Threads {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The measurers of a fork.
pub(crate) enum Crew {
    /// The worker's own thread.
    Single(Box<dyn Bench>, Box<open_loop::Measurer>),
    /// OS threads (blocking workloads).
    Threads(Threads),
    /// Tasks on the workload's runtime (async workloads), and their open loop.
    Tasks(Box<dyn Concurrent>, Box<open_loop::Spawner>),
}

impl Crew {
    /// The worker's own thread as the one measurer.
    pub(crate) fn single(bench: Box<dyn Bench>) -> Crew {
        Crew::Single(bench, Box::new(open_loop::Measurer::new(0)))
    }

    /// N tasks on the workload's runtime, with their open loop.
    pub(crate) fn tasks(tasks: Box<dyn Concurrent>) -> Crew {
        Crew::Tasks(tasks, Box::default())
    }

    /// Runs one iteration of every measurer. An open plan's rate is the fork's: N threads each
    /// take an Nth as their own stream, N tasks share one stream.
    pub(crate) fn run(&mut self, plan: Plan) -> Outcome {
        match (self, plan) {
            (Crew::Single(bench, open), plan) => combine(vec![run_plan(bench.as_mut(), open, plan)]),
            (Crew::Threads(t), Plan::Open(p)) => {
                let share = p.per_sec / t.orders.len() as f64;
                t.run(Plan::Open(OpenPlan { per_sec: share, ..p }))
            }
            (Crew::Threads(t), plan) => t.run(plan),
            (Crew::Tasks(c, _), Plan::Closed(plan)) => combine(c.run(plan)),
            (Crew::Tasks(c, spawner), Plan::Open(p)) => combine(vec![spawner.iteration(c.as_mut(), p)]),
        }
    }

    /// Ends the measurers and merges what their open-loop iterations recorded.
    pub(crate) fn finish(self) -> OpenRecord {
        match self {
            Crew::Single(_, open) => open.record,
            Crew::Threads(mut t) => t.finish(),
            Crew::Tasks(_, spawner) => spawner.record,
        }
    }
}

/// Ops per timed sample: 1 for ops of a microsecond or more, else a group lasting about one.
pub(crate) fn ops_per_sample(op_nanos: f64, batch: u64) -> u64 {
    if !op_nanos.is_finite() || op_nanos >= 1000.0 {
        return 1;
    }
    ((1000.0 / op_nanos.max(0.01)).ceil() as u64).clamp(1, batch.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    struct Counter(Arc<std::sync::atomic::AtomicU64>);
    impl Bench for Counter {
        fn run_batch(&mut self, n: u64) {
            self.0.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    #[test]
    fn threads_each_run_and_their_ops_sum_to_the_total() {
        let total = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let benches: Vec<Box<dyn Bench>> =
            (0..3).map(|_| Box::new(Counter(Arc::clone(&total))) as Box<dyn Bench>).collect();
        let mut crew = Crew::Threads(Threads::start(benches));
        let plan = Plan::Closed(IterationPlan { batch: 10, time: Duration::from_millis(5), sample: None });
        for _ in 0..2 {
            let before = total.load(std::sync::atomic::Ordering::Relaxed);
            let o = crew.run(plan);
            assert_eq!(o.thread_ops.len(), 3);
            assert!(o.thread_ops.iter().all(|&n| n > 0));
            assert_eq!(o.ops, o.thread_ops.iter().sum::<u64>());
            assert_eq!(o.ops, total.load(std::sync::atomic::Ordering::Relaxed) - before);
            assert!(o.nanos >= 5_000_000);
        }
    }

    struct Plain(u64);
    impl Bench for Plain {
        fn run_batch(&mut self, n: u64) {
            self.0 += n;
        }
    }

    #[test]
    fn iteration_counts_every_op_it_ran() {
        let mut c = Plain(0);
        let run = run_iteration(&mut c, IterationPlan { batch: 1000, time: Duration::from_millis(5), sample: None });
        let (ops, nanos) = (run.ops, run.end.duration_since(run.start).as_nanos() as u64);
        assert_eq!(ops, c.0);
        assert!(ops % 1000 == 0 && ops > 0);
        assert!(nanos >= 5_000_000);
    }

    #[test]
    fn sampling_times_every_group() {
        let total = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let mut crew = Crew::single(Box::new(Counter(total)));
        let o = crew.run(Plan::Closed(IterationPlan { batch: 8, time: Duration::from_millis(2), sample: Some(4) }));
        assert_eq!(o.samples.len() as u64 * 4, o.ops);
        assert!(o.samples.iter().all(|&s| s >= 50_000), "each group sleeps 50 µs");
        assert!(o.thread_ops.is_empty());
    }

    #[test]
    fn open_loop_threads_share_the_rate_and_hand_back_their_records() {
        // A thread the machine starves past twice the iteration's time stops starting ops (and
        // its fork is marked as missing the rate): a loaded machine gets three tries.
        for attempt in 1..=3 {
            let benches: Vec<Box<dyn Bench>> = (0..2).map(|_| Box::new(Plain(0)) as Box<dyn Bench>).collect();
            let mut crew = Crew::Threads(Threads::start(benches));
            let plan = OpenPlan {
                per_sec: 2000.0,
                arrivals: crate::rate::Arrivals::Constant,
                time: Duration::from_millis(20),
                record: true,
                fork: 0,
            };
            let o = crew.run(Plan::Open(plan));
            let record = crew.finish();
            // The fork's 2,000/s shared: each thread one op a millisecond, 20 in 20 ms, all recorded.
            assert_eq!(record.scheduled, 40);
            assert!(o.thread_ops.iter().all(|&n| n <= 20), "{:?}", o.thread_ops);
            assert_eq!((record.ran, record.corrected.len()), (o.ops, o.ops));
            if o.ops == 40 || attempt == 3 {
                assert_eq!((o.ops, o.thread_ops), (40, vec![20, 20]), "attempt {attempt}");
                return;
            }
        }
    }

    #[test]
    fn groups_only_for_sub_microsecond_ops() {
        assert_eq!(ops_per_sample(2500.0, 100), 1);
        assert_eq!(ops_per_sample(10.0, 1000), 100);
        assert_eq!(ops_per_sample(0.3, 500), 500);
    }
}
