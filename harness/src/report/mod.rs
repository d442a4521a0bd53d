//! The versioned JSON report: schema types, scores and atomic writing.
//!
//! One version number ([`SCHEMA_VERSION`]) covers the whole document, and every change to the
//! document bumps it (gungraun's practice): `harness/schema/report.vN.json` is the JSON Schema of
//! version N, the newest generated from these types (a test keeps the two equal), every older one
//! kept as it was and still read ([`READABLE_VERSIONS`]; a test reads the committed reports).

mod case;
mod case_id;
pub(crate) mod growth;
pub(crate) mod io;
pub(crate) mod latency;
pub(crate) mod meta;
pub(crate) mod open_loop;
pub(crate) mod read;
mod score;
pub(crate) mod system;
pub(crate) mod write;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub(crate) use crate::stats::sequential::SequentialStop;
pub(crate) use case_id::CaseId;
pub(crate) use meta::Meta;
pub(crate) use score::{AllocSummary, InstructionSummary, Score};

/// Version of the report document; bump it on any incompatible change.
pub(crate) const SCHEMA_VERSION: u32 = 3;

/// The versions a report may have to be read: every version since 1. Version 2 added
/// `meta.run_id`, `meta.merged.part_run_ids` and `meta.merged.missing_shards`, version 3 a
/// case's `rate` and `open_loop` and a fork's `open_loop` (`--rate`), all optional, so older
/// reports read into the same types.
pub(crate) const READABLE_VERSIONS: [u32; 3] = [1, 2, 3];

/// A whole run: metadata and one entry per benchmark case.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Report {
    /// Version of this document's shape.
    pub schema_version: u32,
    /// Whether the run finished, is still going, or was interrupted.
    pub status: RunStatus,
    /// Environment and run settings.
    pub meta: Meta,
    /// Benchmark cases in the order they ran; a case appears once its first fork has ended.
    pub benchmarks: Vec<Benchmark>,
}

impl Report {
    /// Whether it is an A/B report: some case holds forks of a baseline build.
    pub(crate) fn is_ab(&self) -> bool {
        self.benchmarks.iter().any(|b| !b.baseline_forks.is_empty())
    }
}

/// State of the run when the report was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RunStatus {
    /// Still measuring; the report is rewritten after every fork.
    Running,
    /// Every case ran (some forks may have failed).
    Complete,
    /// Stopped by a signal (Ctrl-C); finished forks are kept.
    Interrupted,
}

/// One benchmark case: a workload with one set of param values.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Benchmark {
    /// Workload name, `group/name`.
    pub name: String,
    /// Param values of this case.
    pub params: BTreeMap<String, String>,
    /// How the op executes (`blocking`, `async`), as the worker reported it.
    pub shape: Option<String>,
    /// Settings this case ran with.
    pub settings: CaseSettings,
    /// Every fork, ok or failed.
    pub forks: Vec<Fork>,
    /// Throughput over all measured iterations of the forks that finished ok; absent when none did.
    pub score: Option<Score>,
    /// Why the case was not run at all (a server it needs was unreachable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Instructions per op from the instruction-count forks (`--instructions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<InstructionSummary>,
    /// Round trips, bytes, messages and statements per op from the I/O forks (`--io`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<io::IoSummary>,
    /// A/B runs: the baseline build's I/O counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_io: Option<io::IoSummary>,
    /// Allocations per op over the measured iterations of the ok forks (`--alloc`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocations: Option<AllocSummary>,
    /// A/B runs (`--baseline-bin`): the forks of the baseline build, run alternately with
    /// `forks` (baseline fork i just before this build's fork i; see each fork's `sequence`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub baseline_forks: Vec<Fork>,
    /// Throughput of the baseline build's ok forks (A/B runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_score: Option<Score>,
    /// A/B runs: instructions per op of the baseline build (its instruction forks, run with
    /// `--instructions` or to check a decided case's code: see `compare`'s layout label).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_instructions: Option<InstructionSummary>,
    /// The fastest an op can plausibly be, as the workload declares it (for example a network
    /// round trip); a faster score is flagged as implausible. 0: the op does nothing by design
    /// (`baseline/noop`), so no speed is flagged; absent: the general floor of 1 ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op_floor_nanos: Option<u64>,
    /// The most ops per second the scheme behind the case allows (Snowflake's 4,096 ids per
    /// millisecond per worker id): a score near it measures the limit, not the cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops_ceiling: Option<OpsCeiling>,
    /// The servers each op talks to (`PostgreSQL`, `Redis`): their work is not in the
    /// instruction counts, which are the client's only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<String>,
    /// How many threads or tasks measured concurrently, on how many cores, doing what.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<latency::Concurrency>,
    /// Sample-time mode (`--mode sample`): latency percentiles over the ok forks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<latency::LatencySummary>,
    /// Open-loop mode (`--rate`): the arrival rate every timed fork was scheduled at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<crate::rate::Rate>,
    /// `--rate PCT%`: the rate was this percent of the case's closed-loop ops/s in the same run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_share_pct: Option<u32>,
    /// Open-loop mode: latency from the intended and the actual start, and scheduling lag,
    /// over the forks that kept the rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<open_loop::OpenLoopSummary>,
    /// `--forks auto`: why the case stopped adding fork pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential_stop: Option<SequentialStop>,
}

/// What a fork measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ForkKind {
    /// Wall-clock iterations (throughput).
    #[default]
    Time,
    /// Instructions under callgrind.
    Instructions,
    /// Traffic with the servers, through the parent's counting relays (`--io`).
    Io,
}

/// The instructions an instruction fork counted.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct InstructionCount {
    /// Ops run with collection on.
    pub ops: u64,
    /// Instructions executed by those ops, every thread of the process included.
    pub total: u64,
    /// The workload declares its ops deterministic: the count repeats exactly run to run.
    #[serde(default)]
    pub deterministic: bool,
}

impl InstructionCount {
    /// Instructions per op.
    pub(crate) fn per_op(&self) -> f64 {
        self.total as f64 / self.ops.max(1) as f64
    }
}

/// Settings of one case.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub(crate) struct CaseSettings {
    /// Forks requested.
    pub forks: u32,
    /// Warmup iterations per fork.
    pub warmup_iterations: u32,
    /// Duration of one warmup iteration.
    pub warmup_nanos: u64,
    /// Measured iterations per fork.
    pub iterations: u32,
    /// Duration of one measured iteration.
    pub iteration_nanos: u64,
    /// A fork still running after this long is killed.
    pub fork_timeout_nanos: u64,
}

impl CaseSettings {
    /// The iteration time one fork plans: its warmup and measured iterations.
    pub(crate) fn planned_nanos(&self) -> u64 {
        self.warmup_nanos * u64::from(self.warmup_iterations) + self.iteration_nanos * u64::from(self.iterations)
    }
}

/// One worker process.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Fork {
    /// 0-based fork index within the case.
    pub index: u32,
    /// Position in the order the case's forks ran (both builds counted in A/B runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<u32>,
    /// A/B runs with `--interleave iterations`: ran side by side with the other build's fork of
    /// its pair, the two workers' iterations alternating.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lockstep: bool,
    /// A/B runs with `--layouts K`: the code-layout variant (order seed) of the binary that ran
    /// it; both forks of a pair run the same variant number of their build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<u32>,
    /// Process id of the worker.
    pub pid: Option<u32>,
    /// Outcome.
    pub status: ForkStatus,
    /// Why the fork failed.
    pub failure: Option<Failure>,
    /// Ops run between two clock reads.
    pub batch_size: Option<u64>,
    /// Cost of one clock read in the worker.
    pub clock_read_nanos: Option<f64>,
    /// Each op followed an untimed reset and was timed alone (JMH's `Level.Invocation`).
    #[serde(default)]
    pub per_op_reset: bool,
    /// A workload measured in steps (`growth/*`): the ops each step was planned to run. Its
    /// `iterations` are the steps it finished, in order, with no warmup; each op was timed alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<u64>>,
    /// Throughput or instruction count.
    #[serde(default)]
    pub kind: ForkKind,
    /// What an instruction fork counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<InstructionCount>,
    /// What an I/O fork counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<io::IoCount>,
    /// Whether hardware counters were available to this fork, and why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware_counters: Option<String>,
    /// Sample-time mode: this fork's latency histogram.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<latency::ForkLatency>,
    /// Open-loop mode: this fork's schedule, its three histograms and whether it kept the rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<open_loop::ForkOpenLoop>,
    /// The op's shape as the worker reported it (recorded on the case, not per fork).
    #[serde(skip)]
    #[schemars(skip)]
    pub shape: Option<String>,
    /// What the servers counted of the fork's work, from before its first op to after its last
    /// (for example `pg_table_scans`, `pg_xact_commit`, `redis_get_calls`), with `ops_run`: every
    /// op the worker ran, calibration and warmup included. The fork fails when they disagree.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub observed: BTreeMap<String, i64>,
    /// Warmup iterations (not scored).
    pub warmup: Vec<Iteration>,
    /// Measured iterations.
    pub iterations: Vec<Iteration>,
    /// Wall time of the whole fork, seen from the parent (start-up, setup and teardown included).
    pub wall_nanos: u64,
}

/// Outcome of a fork.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ForkStatus {
    /// All iterations finished, checks passed, the worker exited 0.
    Ok,
    /// See `failure`.
    Failed,
}

/// Why a fork failed.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Failure {
    /// Category.
    pub kind: FailureKind,
    /// One line, e.g. `killed by SIGSEGV`.
    pub message: String,
    /// Last lines of the worker's stderr.
    pub stderr_tail: String,
}

/// Category of a fork failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FailureKind {
    /// The worker could not be started.
    Spawn,
    /// Killed by a signal (crash, abort).
    Signal,
    /// Exited non-zero, or exited 0 before reporting done.
    Exit,
    /// Still running at the fork timeout; killed.
    Timeout,
    /// Spoke something other than the protocol (garbage, wrong version, wrong order).
    Protocol,
    /// The worker rejected its task.
    Task,
    /// Workload setup failed.
    Setup,
    /// A correctness check failed.
    Verify,
    /// Teardown failed.
    Teardown,
    /// The workload panicked; the message says where.
    Panic,
    /// A server the workload talks to failed an op (connection lost, server error).
    Server,
    /// The run was interrupted while this fork ran; killed.
    Interrupted,
}

/// One iteration's raw data.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
pub(crate) struct Iteration {
    /// Operations completed.
    pub ops: u64,
    /// Elapsed wall-clock time; for per-op-reset workloads the summed time of the ops alone.
    pub nanos: u64,
    /// What the workload observed after the iteration (for example `table_rows`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub observed: BTreeMap<String, i64>,
    /// Hardware counters over the iteration, where the machine has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hw: Option<crate::protocol::HwCount>,
    /// Allocations during the iteration (`--alloc`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocs: Option<crate::protocol::AllocCount>,
    /// Ops of each measuring thread or task (`--threads` above 1); they sum to `ops`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thread_ops: Vec<u64>,
}

impl Iteration {
    /// Throughput of this iteration.
    pub(crate) fn ops_per_sec(&self) -> f64 {
        if self.nanos == 0 { f64::NAN } else { self.ops as f64 * 1e9 / self.nanos as f64 }
    }
}

/// A hard limit on a case's throughput that comes from the scheme it measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct OpsCeiling {
    /// The most ops per second the scheme allows.
    pub ops_per_sec: f64,
    /// Why.
    pub why: String,
}

/// Share of the ceiling from which a score is said to sit at its limit.
pub(crate) const AT_CEILING: f64 = 0.95;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_duration_iteration_is_not_a_number() {
        assert!(Iteration { ops: 1, nanos: 0, ..Iteration::default() }.ops_per_sec().is_nan());
        assert_eq!(Iteration { ops: 3, nanos: 1_500_000_000, ..Iteration::default() }.ops_per_sec(), 2.0);
    }
}

#[cfg(test)]
mod schema_tests {
    use super::Report;
    use std::path::Path;

    /// The committed JSON Schema must equal the one generated from these types.
    /// Regenerate with `UPDATE_SCHEMA=1 cargo test -p harness schema`.
    #[test]
    fn committed_schema_matches_the_types() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("schema/report.v{}.json", super::SCHEMA_VERSION));
        let generated = serde_json::to_string_pretty(&schemars::schema_for!(Report)).unwrap() + "\n";
        if std::env::var_os("UPDATE_SCHEMA").is_some() {
            std::fs::write(&path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "{} is stale: run UPDATE_SCHEMA=1 cargo test -p harness schema",
            path.display()
        );
    }
}
