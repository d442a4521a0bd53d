//! Baseline workloads: they measure the harness itself, not a persistence path.
//!
//! `baseline/noop` is the cost of the measuring loop; `baseline/busy_loop` is CPU work of a known
//! size; `baseline/async_noop` and `baseline/block_on_noop` are the floor of the two async shapes
//! (awaiting inside one runtime entry per batch, and one runtime entry per op), and
//! `baseline/spawn_blocking_noop` the floor of handing work to the blocking pool.

use crate::params::{ParamKind, ParamSpec};
use crate::{AsyncWorkload, Prepared, SetupContext, Workload, WorkloadDef, asynchronous, blocking};
use std::hint::black_box;

/// The baseline group.
pub static WORKLOADS: &[WorkloadDef] = &[
    WorkloadDef::new("baseline/noop", "empty operation: the measuring loop's own cost per op", &[], |_| {
        Ok(blocking(Noop))
    })
    .floor(crate::def::OpFloor::Nothing),
    WorkloadDef::new(
        "baseline/busy_loop",
        "`work` steps of an xorshift generator: CPU work of a known size",
        &[WORK],
        setup_busy_loop,
    ),
    WorkloadDef::new(
        "baseline/canary",
        "the harness's drift canary: 1,000 xorshift steps per op, untouched by the calibration features",
        &[],
        |_| Ok(blocking(BusyLoop { work: 1000 })),
    )
    .hidden(),
    WorkloadDef::new(
        "baseline/async_noop",
        "empty future awaited on a current-thread runtime, one runtime entry per batch",
        &[],
        |_| Ok(asynchronous(AsyncNoop { runtime: crate::current_thread_runtime()? })),
    )
    .floor(crate::def::OpFloor::Nothing),
    WorkloadDef::new(
        "baseline/block_on_noop",
        "empty future with one runtime entry (block_on) per op: the floor of that shape",
        &[],
        |_| Ok(blocking(BlockOnNoop { runtime: crate::current_thread_runtime()? })),
    ),
    WorkloadDef::new(
        "baseline/other_thread_busy",
        "`work` xorshift steps done on a helper thread while the measuring thread waits",
        &[WORK],
        |ctx| Ok(blocking(OtherThreadBusy { work: ctx.params.int("work")? as u64 })),
    ),
    WorkloadDef::new(
        "baseline/spawn_blocking_noop",
        "empty closure through tokio spawn_blocking, awaited: the floor of that dispatch",
        &[],
        |_| Ok(asynchronous(SpawnBlockingNoop { runtime: crate::current_thread_runtime()? })),
    ),
];

const WORK: ParamSpec = ParamSpec {
    name: "work",
    about: "xorshift steps per op",
    kind: ParamKind::Int { min: 1, max: 1_000_000 },
    defaults: &["100"],
};

/// The empty operation.
pub struct Noop;

impl Workload for Noop {
    crate::workload::no_local_state!();
    type Output = ();
    #[inline(always)]
    fn op(&self, _: &mut ()) {}
}

/// `work` xorshift64 steps per op.
pub struct BusyLoop {
    work: u64,
}

/// Extra work per op, in percent, of a calibration build: the known slowdown that
/// `scripts/calibrate` must detect. 0 in every other build.
pub const CALIBRATION_SLOWDOWN_PCT: u64 = if cfg!(feature = "calibration-slow-5pct") {
    5
} else if cfg!(feature = "calibration-slow-3pct") {
    3
} else if cfg!(feature = "calibration-slow-1pct") {
    1
} else {
    0
};

fn setup_busy_loop(ctx: &SetupContext) -> anyhow::Result<Box<dyn Prepared>> {
    let work = ctx.params.int("work")? as u64;
    Ok(blocking(BusyLoop { work: work * (100 + CALIBRATION_SLOWDOWN_PCT) / 100 }))
}

/// The busy loop: `steps` xorshift64 steps. Never inlined, so that a profile names it.
#[inline(never)]
fn busy_loop(mut x: u64, steps: u64) -> u64 {
    for _ in 0..steps {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

impl Workload for BusyLoop {
    type Local = u64;
    type Output = u64;
    fn local(&self, thread: usize) -> anyhow::Result<u64> {
        Ok(0x9E37_79B9_7F4A_7C15 ^ thread as u64)
    }
    fn op(&self, state: &mut u64) -> u64 {
        *state = busy_loop(black_box(*state), black_box(self.work));
        *state
    }
    fn verify(&self, _: crate::Phase) -> anyhow::Result<()> {
        // Known value: one step from 1 is 8257 * 131073, computed by hand.
        anyhow::ensure!(busy_loop(1, 1) == 1082269761, "xorshift step is wrong");
        Ok(())
    }
}

/// An empty future awaited on a current-thread runtime.
pub struct AsyncNoop {
    runtime: tokio::runtime::Runtime,
}

impl AsyncWorkload for AsyncNoop {
    crate::workload::no_local_state!();
    type Output = ();
    fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.runtime
    }
    async fn op(&self, _: &mut ()) {}
}

/// One `block_on` of an empty future per op.
pub struct BlockOnNoop {
    runtime: tokio::runtime::Runtime,
}

impl Workload for BlockOnNoop {
    crate::workload::no_local_state!();
    type Output = ();
    fn op(&self, _: &mut ()) {
        self.runtime.block_on(async {})
    }
}

/// `work` xorshift steps on a helper thread (one per measuring thread), answered over channels:
/// proof that instruction counts include work done on threads other than the measuring one.
pub struct OtherThreadBusy {
    work: u64,
}

/// A measuring thread's channels to its helper thread.
pub struct Helper {
    to_helper: std::sync::mpsc::Sender<u64>,
    from_helper: std::sync::mpsc::Receiver<u64>,
    state: u64,
}

impl Workload for OtherThreadBusy {
    type Local = Helper;
    type Output = u64;
    fn local(&self, thread: usize) -> anyhow::Result<Helper> {
        let (to_helper, requests) = std::sync::mpsc::channel::<u64>();
        let (answers, from_helper) = std::sync::mpsc::channel();
        let work = self.work;
        // The helper ends when the measuring thread drops its sender.
        std::thread::Builder::new().name(format!("helper-{thread}")).spawn(move || {
            for x in requests {
                if answers.send(busy_loop(x, work)).is_err() {
                    break;
                }
            }
        })?;
        Ok(Helper { to_helper, from_helper, state: 0x9E37_79B9_7F4A_7C15 ^ thread as u64 })
    }
    fn op(&self, h: &mut Helper) -> u64 {
        h.to_helper.send(h.state).expect("helper thread alive");
        h.state = h.from_helper.recv().expect("helper thread answers");
        h.state
    }
    /// Threads meet through futexes whose spinning depends on timing.
    fn deterministic(&self) -> bool {
        false
    }
}

/// An empty closure handed to tokio's blocking pool and awaited.
pub struct SpawnBlockingNoop {
    runtime: tokio::runtime::Runtime,
}

impl AsyncWorkload for SpawnBlockingNoop {
    /// Hands work to another thread.
    fn deterministic(&self) -> bool {
        false
    }
    crate::workload::no_local_state!();
    type Output = ();
    fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.runtime
    }
    async fn op(&self, _: &mut ()) {
        tokio::task::spawn_blocking(|| ()).await.expect("blocking task")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Params, Phase};

    fn ctx(params: &[(&str, &str)]) -> SetupContext {
        let params = Params(params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        SetupContext::new(params)
    }

    #[test]
    fn every_baseline_sets_up_verifies_and_runs_a_batch() {
        for def in WORKLOADS {
            let defaults: Vec<_> = def.params.iter().map(|p| (p.name, p.defaults[0])).collect();
            let prepared = (def.setup)(&ctx(&defaults)).unwrap();
            prepared.verify(Phase::Before).unwrap();
            prepared.bench(0).unwrap().run_batch(10);
            prepared.verify(Phase::After).unwrap();
            prepared.teardown().unwrap();
        }
    }

    #[test]
    fn busy_loop_depends_on_work_and_thread() {
        let w = BusyLoop { work: 3 };
        let (mut a, mut b) = (w.local(0).unwrap(), w.local(1).unwrap());
        assert_ne!(w.op(&mut a), w.op(&mut b));
        assert_eq!(busy_loop(7, 0), 7);
        assert_ne!(busy_loop(7, 2), busy_loop(7, 3));
    }

    #[test]
    fn busy_loop_rejects_missing_param() {
        let def = WORKLOADS.iter().find(|w| w.name == "baseline/busy_loop").unwrap();
        assert!((def.setup)(&ctx(&[])).is_err());
    }
}
