//! The counting modes of a fork: instructions between callgrind's start and stop, and I/O inside
//! windows whose edges the parent hears (it reads its relays' counts there). Nothing is timed.

use super::{Channel, send_without_channel, tally_after, wait_for_go};
use crate::callgrind::requests as callgrind;
use crate::protocol::{Message, Stage};
use std::process::ExitCode;
use workloads::{Bench, Prepared};

/// Instruction mode: a short warmup, then the task's ops between callgrind's start and stop.
pub(super) fn count_instructions(
    ch: &mut Channel,
    case: &str,
    instr: crate::protocol::InstructionTask,
    prepared: &dyn Prepared,
    mut bench: Box<dyn Bench>,
) -> Result<(), ExitCode> {
    if !callgrind::running_on_valgrind() {
        let err = anyhow::anyhow!("an instruction fork must run under valgrind --tool=callgrind");
        return Err(ch.fail(Stage::Task, &err));
    }
    if prepared.steps().is_some() {
        let err = anyhow::anyhow!(
            "this workload is measured in steps of table size: an instruction count of its first ops would describe an empty table; run it without --instructions"
        );
        return Err(ch.fail(Stage::Task, &err));
    }
    let ops = instr.ops.unwrap_or(if prepared.resets_per_op() { 20 } else { 1000 });
    bench.run_batch((ops / 10).max(1));
    let build = option_env!("HARNESS_GIT_COMMIT").filter(|c| !c.is_empty()).unwrap_or("unknown");
    callgrind::name_measurements(crate::callgrind::measure_reason(case, build));
    callgrind::zero();
    bench.run_ops_between(ops, callgrind::start_instrumentation, callgrind::dump_measure_and_stop);
    ch.send(&Message::Instrumented { ops, deterministic: prepared.deterministic() });
    Ok(())
}

/// I/O mode: a short warmup, then the task's ops inside windows whose edges the parent
/// hears (it reads its relays' counts there); nothing is timed. The servers' counts are read
/// as in time mode, around every op the fork ran (the warmup's included, as `ops_run` says).
pub(super) fn count_io(
    ch: &mut Channel,
    io: crate::protocol::IoTask,
    prepared: &dyn Prepared,
    mut bench: Box<dyn Bench>,
    tallied_before: &[workloads::Tally],
) -> Result<(), ExitCode> {
    if prepared.steps().is_some() {
        let err = anyhow::anyhow!(
            "this workload is measured in steps of table size: an I/O count of its first ops would describe an empty table; run it without --io"
        );
        return Err(ch.fail(Stage::Task, &err));
    }
    let ops = io.ops.unwrap_or(if prepared.resets_per_op() { 20 } else { 1000 });
    let warmup = (ops / 10).max(1);
    bench.run_batch(warmup);
    workloads::db::sqlite_trace::take();
    bench.run_ops_between(ops, io_window_opens, io_window_closes);
    let traced = workloads::db::sqlite_trace::take();
    let (sqlite_statements, sqlite_rows) = (traced.statements, traced.rows);
    ch.send(&Message::IoCounted { ops, sqlite_statements, sqlite_rows, sqlite_traced: true });
    drop(bench);
    tally_after(ch, prepared, tallied_before, warmup + ops)
}

/// An I/O fork's window opens: the parent reads its relays, then SQLite's statements count.
fn io_window_opens() {
    io_window_edge();
    workloads::db::sqlite_trace::set_counting(true);
}

/// An I/O fork's window closes: SQLite's statements stop counting, then the parent reads.
fn io_window_closes() {
    workloads::db::sqlite_trace::set_counting(false);
    io_window_edge();
}

/// An edge of an I/O fork's window: says `ready` and waits for the parent's go (a plain
/// function, as `run_ops_between` takes; it writes to the result pipe as the panic hook does).
fn io_window_edge() {
    if send_without_channel(&Message::Ready).is_err() {
        std::process::exit(4);
    }
    wait_for_go();
}
