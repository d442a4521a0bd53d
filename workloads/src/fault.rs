//! Hidden fault injectors: workloads that crash, hang or misbehave on purpose, so that tests can
//! prove the parent survives every way a worker can fail. They are never in a configuration and
//! `list` shows them only with `--hidden`.

pub mod io;

use crate::params::{ParamKind, ParamSpec};
use crate::{Phase, Prepared, SetupContext, Workload, WorkloadDef, blocking};
use std::io::Write;
use std::time::{Duration, Instant};

/// The worker's result channel (see the harness protocol): `fault/garbage` writes there.
const RESULT_FD: i32 = 3;

const AFTER_MS: ParamSpec = ParamSpec {
    name: "after_ms",
    about: "the fault strikes in the first op this many milliseconds after setup",
    kind: ParamKind::Int { min: 0, max: 3_600_000 },
    defaults: &["150"],
};

const FORK: ParamSpec = ParamSpec {
    name: "fork",
    about: "index of the fork that faults; -1 for every fork",
    kind: ParamKind::Int { min: -1, max: 1_000 },
    defaults: &["-1"],
};

const PARAMS: &[ParamSpec] = &[AFTER_MS, FORK];

macro_rules! fault {
    ($name:literal, $about:literal, $fault:expr) => {
        WorkloadDef::new($name, $about, PARAMS, |ctx| setup(ctx, $fault)).hidden()
    };
}

/// The fault group.
pub static WORKLOADS: &[WorkloadDef] = &[
    fault!("fault/panic", "panics in an op", Fault::Panic),
    fault!("fault/abort", "aborts the process in an op", Fault::Abort),
    fault!("fault/segfault", "dies of SIGSEGV in an op", Fault::Segfault),
    fault!("fault/hang", "sleeps forever in an op", Fault::Hang),
    fault!("fault/exit", "exits with status 0 in an op, before reporting done", Fault::Exit),
    fault!("fault/garbage", "writes a line that is not JSON on the result channel", Fault::Garbage),
    fault!("fault/stdout_flood", "writes 64 KiB to stdout and stderr per op, then ends normally", Fault::Flood),
    fault!("fault/setup_error", "setup returns an error", Fault::SetupError),
    fault!("fault/verify_error", "the correctness check after measuring fails", Fault::VerifyError),
    WorkloadDef::new(
        "fault/skips_statement",
        "sql/thread_select_by_id whose op commits an empty transaction: its checks pass, the server's counts do not",
        &[crate::sql::ROW_COUNT, crate::sql::POOL_SIZE, POSTGRES],
        |ctx| Ok(blocking(SkipsStatement(crate::sql::ThreadSelect::create(&crate::sql::SqlConfig::from(ctx)?)?))),
    )
    .served_by(crate::db::servers)
    .floor(crate::def::OpFloor::None)
    .hidden(),
];

/// `db` of `fault/skips_statement`: only a server keeps the counts that catch it.
const POSTGRES: ParamSpec = ParamSpec { defaults: &["postgres"], ..crate::db::DB };

/// `fault/skips_statement`: `BEGIN; COMMIT` per op, without the select its twin makes, yet the
/// same checks (made through the real select) and the same server counts.
struct SkipsStatement(crate::sql::ThreadSelect);

impl Workload for SkipsStatement {
    crate::workload::no_local_state!();
    type Output = i64;
    fn op(&self, _: &mut ()) -> i64 {
        let crate::db::Db::Postgres(pg) = &self.0.fixture().0 else { return 1 };
        let mut conn = pg.pool.get().expect("a pooled connection");
        conn.client.transaction().and_then(|tx| tx.commit()).expect("an empty transaction");
        1
    }
    fn verify(&self, phase: Phase) -> anyhow::Result<()> {
        Workload::verify(&self.0, phase)
    }
    fn teardown(&self) -> anyhow::Result<()> {
        Workload::teardown(&self.0)
    }
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        Workload::tally(&self.0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    Panic,
    Abort,
    Segfault,
    Hang,
    Exit,
    Garbage,
    Flood,
    SetupError,
    VerifyError,
}

fn setup(ctx: &SetupContext, fault: Fault) -> anyhow::Result<Box<dyn Prepared>> {
    let fork = ctx.params.int("fork")?;
    let armed = fork < 0 || fork == i64::from(ctx.fork_index);
    anyhow::ensure!(!(armed && fault == Fault::SetupError), "injected setup failure (fault/setup_error)");
    let after = Duration::from_millis(ctx.params.int("after_ms")? as u64);
    Ok(blocking(Injector { fault: armed.then_some(fault), strike_at: Instant::now() + after }))
}

struct Injector {
    fault: Option<Fault>,
    strike_at: Instant,
}

impl Workload for Injector {
    type Local = bool;
    type Output = ();
    fn local(&self, _: usize) -> anyhow::Result<bool> {
        Ok(false)
    }
    fn op(&self, struck: &mut bool) {
        let Some(fault) = self.fault else { return };
        if fault == Fault::Flood {
            let chunk = [b'x'; 64 * 1024];
            std::io::stdout().write_all(&chunk).expect("stdout");
            std::io::stderr().write_all(&chunk).expect("stderr");
            return;
        }
        if *struck || Instant::now() < self.strike_at {
            return;
        }
        *struck = true;
        match fault {
            Fault::Panic => panic!("injected panic (fault/panic)"),
            Fault::Abort => std::process::abort(),
            Fault::Segfault => segfault(),
            Fault::Hang => loop {
                std::thread::sleep(Duration::from_secs(3600));
            },
            Fault::Exit => std::process::exit(0),
            Fault::Garbage => garbage(),
            Fault::Flood | Fault::SetupError | Fault::VerifyError => {}
        }
    }
    fn verify(&self, phase: Phase) -> anyhow::Result<()> {
        let failing = self.fault == Some(Fault::VerifyError) && phase == Phase::After;
        anyhow::ensure!(!failing, "injected correctness failure (fault/verify_error)");
        Ok(())
    }
}

fn segfault() {
    // Rust's stack-overflow handler owns SIGSEGV; restore the default action so raising it kills
    // the process exactly as a wild pointer would.
    // SAFETY: plain libc calls with valid arguments.
    unsafe {
        libc::signal(libc::SIGSEGV, libc::SIG_DFL);
        libc::raise(libc::SIGSEGV);
    }
}

fn garbage() {
    let line = b"this is not a protocol message\n";
    // SAFETY: writes a valid buffer to a file descriptor; a bad fd only returns an error.
    unsafe {
        libc::write(RESULT_FD, line.as_ptr().cast(), line.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Params;

    fn ctx(fork: &str, fork_index: u32) -> SetupContext {
        let params = Params([("after_ms".into(), "0".into()), ("fork".into(), fork.into())].into());
        SetupContext { fork_index, ..SetupContext::new(params) }
    }

    #[test]
    fn setup_error_only_in_the_chosen_fork() {
        assert!(setup(&ctx("1", 1), Fault::SetupError).is_err());
        assert!(setup(&ctx("1", 0), Fault::SetupError).is_ok());
        assert!(setup(&ctx("-1", 3), Fault::SetupError).is_err());
    }

    #[test]
    fn unarmed_fork_runs_clean() {
        let p = setup(&ctx("1", 0), Fault::Panic).unwrap();
        p.bench(0).unwrap().run_batch(100);
        p.verify(Phase::After).unwrap();
    }

    #[test]
    fn verify_error_fails_after_only() {
        let p = setup(&ctx("-1", 0), Fault::VerifyError).unwrap();
        assert!(p.verify(Phase::Before).is_ok());
        assert!(p.verify(Phase::After).is_err());
    }
}
