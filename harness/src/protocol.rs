//! The versioned messages between the parent and a worker.
//!
//! The parent writes one [`Task`] as a line of JSON to the worker's stdin. The worker answers
//! on a dedicated pipe at fd [`RESULT_FD`] (never stdout), one JSON [`Message`] per line:
//! `hello` · `verified(before)` · `calibrated` · `iteration`… · `verified(after)` · `done`,
//! or an `error` at the stage that failed. One message per finished iteration means a crash
//! keeps every iteration that finished before it.
//!
//! A [`Task::lockstep`] worker (the two builds of an A/B pair, run side by side) says `ready`
//! and waits for one byte on stdin before calibrating, before every iteration and before its
//! closing check, so the parent can alternate the two workers' iterations.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The first argument that starts the harness binary as a worker (hidden from `--help`).
pub const WORKER_ARG: &str = "__worker";

/// Bumped whenever a message or the task changes shape.
pub(crate) const PROTOCOL_VERSION: u32 = 3;

/// The worker's end of the result pipe.
pub(crate) const RESULT_FD: i32 = 3;

/// What one worker is asked to do.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct Task {
    /// Protocol version of the parent.
    pub protocol: u32,
    /// Workload name (`group/name`).
    pub workload: String,
    /// Parameter values of the case.
    pub params: BTreeMap<String, String>,
    /// Fork index within the case.
    pub fork_index: u32,
    /// Number of warmup iterations.
    pub warmup_iterations: u32,
    /// Duration of one warmup iteration.
    pub warmup_nanos: u64,
    /// Number of measured iterations.
    pub iterations: u32,
    /// Duration of one measured iteration.
    pub iteration_nanos: u64,
    /// PostgreSQL URL for `db=postgres` cases (sent on stdin, never on the command line).
    pub database_url: String,
    /// Present for an instruction-count fork: the worker runs under callgrind, runs a tenth of
    /// `ops` uninstrumented, then exactly `ops` ops with collection on, instead of timed
    /// iterations.
    #[serde(default)]
    pub instructions: Option<InstructionTask>,
    /// Count allocations during timed iterations (`--alloc`).
    #[serde(default)]
    pub count_allocations: bool,
    /// Measuring threads (blocking workloads) or tasks (async workloads), 1 or more.
    pub threads: u32,
    /// Sample-time mode: time individual ops (or small groups) into a latency histogram.
    pub sample: bool,
    /// Wait for the parent's go (one byte on stdin, after a `ready`) before each step.
    #[serde(default)]
    pub lockstep: bool,
    /// Present for an I/O fork: the worker's servers are reached through the parent's counting
    /// relays; it runs a tenth of `ops` as warmup, then exactly `ops` ops inside windows that
    /// it opens and closes with a `ready` each, waiting for the parent's go (the parent reads
    /// the relays' counts there). Never timed. Absent from the JSON otherwise, so that a worker
    /// of an older build is never sent a field it cannot read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<IoTask>,
    /// Present for an open-loop fork (`--rate`): its timed iterations start each op at its
    /// scheduled time and send an `open_loop` message after the last. A worker of an older
    /// build ignores the field and sends none, which the parent refuses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<crate::rate::Rate>,
}

impl Task {
    /// A timed fork 0 of `workload` with its default params: one measurer, `warmup` and
    /// `measured` iterations as (count, nanoseconds each), nothing counted, no rate.
    pub(crate) fn timed(workload: &str, warmup: (u32, u64), measured: (u32, u64)) -> Task {
        Task {
            protocol: PROTOCOL_VERSION,
            workload: workload.into(),
            params: BTreeMap::new(),
            fork_index: 0,
            warmup_iterations: warmup.0,
            warmup_nanos: warmup.1,
            iterations: measured.0,
            iteration_nanos: measured.1,
            database_url: String::new(),
            instructions: None,
            count_allocations: false,
            threads: 1,
            sample: false,
            lockstep: false,
            io: None,
            rate: None,
        }
    }
}

/// What an I/O fork runs.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct IoTask {
    /// Ops counted (default: as for instruction forks).
    pub ops: Option<u64>,
}

/// What an instruction-count fork runs.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct InstructionTask {
    /// Ops run with collection on (default: 1000, or 20 for workloads that reset before every
    /// op, whose ops are long).
    pub ops: Option<u64>,
}

/// Hardware counter readings over one iteration (every thread started after they opened).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
pub(crate) struct HwCount {
    /// Instructions retired (hardware, varies run to run; callgrind's count is the exact one).
    pub inst_retired: u64,
    /// CPU cycles.
    pub cycles: u64,
}

/// Allocations over one iteration, every thread of the worker.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
pub(crate) struct AllocCount {
    /// Allocations and reallocations.
    pub allocations: u64,
    /// Bytes requested.
    pub bytes: u64,
}

/// Warmup or measurement.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum IterationKind {
    /// Not part of the score.
    Warmup,
    /// Part of the score.
    Measure,
}

/// Where in the worker's life something failed.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Stage {
    /// Reading or checking the task.
    Task,
    /// Building the workload state.
    Setup,
    /// A correctness check.
    Verify,
    /// Releasing resources after measuring.
    Teardown,
    /// A panic anywhere in the worker (setup, an op, a check).
    Panic,
    /// A server failed an op (connection lost, server error); the message names the server.
    Server,
}

/// Before or after measuring.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum VerifyPhase {
    /// Before warmup.
    Before,
    /// After the last measured iteration.
    After,
}

/// One line on the result pipe.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Message {
    /// First message: who answers and in which protocol.
    Hello {
        /// Protocol version of the worker.
        protocol: u32,
        /// The worker's process id.
        pid: u32,
        /// The worker build's harness version.
        harness_version: String,
    },
    /// A correctness check passed.
    Verified {
        /// Which check.
        phase: VerifyPhase,
    },
    /// The batch size chosen for the timed loop.
    Calibrated {
        /// `blocking` or `async`.
        shape: String,
        /// Ops between two clock reads.
        batch_size: u64,
        /// Measured cost of one clock read.
        clock_read_nanos: f64,
        /// Each op follows an untimed reset and is timed alone; `nanos` then sums op times only.
        #[serde(default)]
        per_op_reset: bool,
        /// A workload measured in steps: the ops of each measured iteration, which replace the
        /// task's warmup and measured iterations (each op is timed alone).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        steps: Option<Vec<u64>>,
    },
    /// One finished iteration.
    Iteration {
        /// Warmup or measurement.
        kind: IterationKind,
        /// 0-based index within its kind.
        index: u32,
        /// Operations completed.
        ops: u64,
        /// Elapsed wall-clock time (op time only for per-op-reset workloads).
        nanos: u64,
        /// What the workload observed after the iteration (for example `table_rows`).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        observed: BTreeMap<String, i64>,
        /// Hardware counters over the iteration, where they exist.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hw: Option<HwCount>,
        /// Allocations during the iteration, with `--alloc`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        allocs: Option<AllocCount>,
        /// Ops of each measuring thread or task, when there are several.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        thread_ops: Vec<u64>,
    },
    /// Sample-time mode, after the last measured iteration: the latency histogram of every
    /// measured iteration of every thread.
    Latency {
        /// Ops per timed sample (1, or a small group for ops under about a microsecond).
        ops_per_sample: u64,
        /// Recorded values (nanoseconds per op) and their counts.
        histogram: Vec<(u64, u64)>,
    },
    /// Open-loop mode (`--rate`), after the last measured iteration: what the schedules of every
    /// measurer started and the three histograms of the measured iterations.
    OpenLoop {
        /// Ops the schedules started in the measured iterations.
        scheduled: u64,
        /// Of those, the ops that ran (an iteration past twice its time stops starting ops).
        ran: u64,
        /// Wall clock of the measured iterations, summed.
        nanos: u64,
        /// Nanoseconds from each op's intended start to its end, and their counts.
        corrected: Vec<(u64, u64)>,
        /// Nanoseconds from each op's actual start to its end.
        uncorrected: Vec<(u64, u64)>,
        /// Nanoseconds each op started late while the measurer was free.
        lag: Vec<(u64, u64)>,
    },
    /// Whether hardware counters are available, and why not (once per fork, before iterations).
    Counters {
        /// Counters opened.
        available: bool,
        /// Why not, or which.
        detail: String,
    },
    /// After the last timed op: what the servers counted of the fork's work (deltas by name,
    /// with `ops_run`, every op the worker ran, calibration and warmup included).
    Tallied {
        /// The deltas.
        observed: BTreeMap<String, i64>,
    },
    /// The instrumented ops ran and callgrind dumped their counts (instruction forks only).
    Instrumented {
        /// Ops run with collection on.
        ops: u64,
        /// Whether the workload declares its ops deterministic (same instructions every run).
        #[serde(default)]
        deterministic: bool,
    },
    /// The counted ops of an I/O fork ran (I/O forks only), inside their windows.
    IoCounted {
        /// Ops run inside the windows.
        ops: u64,
        /// SQLite statement runs inside the windows, by text as prepared (the worker traces
        /// every SQLite connection of an I/O fork).
        #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
        sqlite_statements: std::collections::BTreeMap<String, u64>,
        /// Rows those statements returned.
        #[serde(default)]
        sqlite_rows: u64,
        /// The worker traced SQLite (false from a worker older than the trace).
        #[serde(default)]
        sqlite_traced: bool,
    },
    /// Lockstep, and the window edges of an I/O fork: the worker waits for one byte on stdin
    /// before its next step.
    Ready,
    /// Everything finished, teardown included.
    Done,
    /// The worker failed at `stage` and will exit non-zero.
    Error {
        /// Where.
        stage: Stage,
        /// What, in one line.
        message: String,
    },
}

/// Latency histograms on the wire (`Message::Latency`), also merged into the report.
/// Highest latency a histogram holds, in nanoseconds (one hour).
pub(crate) const MAX_NANOS: u64 = 3_600_000_000_000;

/// A histogram of nanoseconds per op with three significant digits (HDR).
pub(crate) fn new_histogram() -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new_with_bounds(1, MAX_NANOS, 3).expect("valid histogram bounds")
}

/// The non-empty buckets of `h`, for the wire and the report.
pub(crate) fn buckets(h: &hdrhistogram::Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_tagged_json_lines() {
        let m = Message::Iteration {
            kind: IterationKind::Measure,
            index: 2,
            ops: 10,
            nanos: 99,
            observed: BTreeMap::new(),
            hw: None,
            allocs: None,
            thread_ops: vec![],
        };
        let line = serde_json::to_string(&m).unwrap();
        assert_eq!(line, r#"{"type":"iteration","kind":"measure","index":2,"ops":10,"nanos":99}"#);
        assert_eq!(serde_json::from_str::<Message>(&line).unwrap(), m);
        assert!(serde_json::from_str::<Message>(r#"{"type":"bogus"}"#).is_err());
    }
}
