//! The versioned JSON report: schema types, scores and atomic writing.
//!
//! One version number ([`SCHEMA_VERSION`]) covers the whole document; `harness/schema/` holds the
//! JSON Schema generated from these types (a test keeps the two equal).

pub mod latency;
pub mod meta;
pub mod system;
pub mod write;

use crate::stats::{self, CONFIDENCE};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use meta::Meta;

/// Version of the report document; bump it on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// A whole run: metadata and one entry per benchmark case.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Report {
    /// Version of this document's shape.
    pub schema_version: u32,
    /// Whether the run finished, is still going, or was interrupted.
    pub status: RunStatus,
    /// Environment and run settings.
    pub meta: Meta,
    /// Benchmark cases in the order they ran; a case appears once its first fork has ended.
    pub benchmarks: Vec<Benchmark>,
}

/// State of the run when the report was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Still measuring; the report is rewritten after every fork.
    Running,
    /// Every case ran (some forks may have failed).
    Complete,
    /// Stopped by a signal (Ctrl-C); finished forks are kept.
    Interrupted,
}

/// One benchmark case: a workload with one set of param values.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Benchmark {
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
    /// The fastest an op can plausibly be, as the workload declares it (for example a network
    /// round trip); a faster score is flagged as implausible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op_floor_nanos: Option<u64>,
    /// How many threads or tasks measured concurrently, on how many cores, doing what.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<latency::Concurrency>,
    /// Sample-time mode (`--mode sample`): latency percentiles over the ok forks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<latency::LatencySummary>,
    /// `--forks auto`: why the case stopped adding fork pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential_stop: Option<SequentialStop>,
}

/// Why a `--forks auto` case stopped adding fork pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SequentialStop {
    /// The interval of the ratio lay wholly outside the noise band: a difference.
    OutsideBand,
    /// The interval lay wholly inside the noise band: no change.
    InsideBand,
    /// `--max-forks` pairs ran without a decision.
    BudgetSpent,
}

impl SequentialStop {
    /// The stop a decision means; `None` to go on.
    pub fn from_decision(d: crate::stats::sequential::Decision) -> Option<SequentialStop> {
        use crate::stats::sequential::Decision;
        match d {
            Decision::Continue => None,
            Decision::Outside => Some(SequentialStop::OutsideBand),
            Decision::Inside => Some(SequentialStop::InsideBand),
            Decision::Undecided => Some(SequentialStop::BudgetSpent),
        }
    }
}

/// Allocations per op of a case.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AllocSummary {
    /// Allocations (and reallocations) per op, every thread of the worker.
    pub per_op: f64,
    /// Bytes requested per op.
    pub bytes_per_op: f64,
}

impl AllocSummary {
    /// Totals over the measured iterations of ok timed forks; `None` without counts.
    pub fn from_forks(forks: &[Fork]) -> Option<AllocSummary> {
        let (mut ops, mut allocations, mut bytes) = (0u64, 0u64, 0u64);
        for it in
            forks.iter().filter(|f| f.status == ForkStatus::Ok && f.kind == ForkKind::Time).flat_map(|f| &f.iterations)
        {
            let a = it.allocs?;
            ops += it.ops;
            allocations += a.allocations;
            bytes += a.bytes;
        }
        (ops > 0)
            .then(|| AllocSummary { per_op: allocations as f64 / ops as f64, bytes_per_op: bytes as f64 / ops as f64 })
    }
}

/// What a fork measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ForkKind {
    /// Wall-clock iterations (throughput).
    #[default]
    Time,
    /// Instructions under callgrind.
    Instructions,
}

/// The instructions an instruction fork counted.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InstructionCount {
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
    pub fn per_op(&self) -> f64 {
        self.total as f64 / self.ops.max(1) as f64
    }
}

/// Instructions per op of a case, over its instruction forks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InstructionSummary {
    /// Instruction forks that counted.
    pub forks: usize,
    /// Ops per fork.
    pub ops: u64,
    /// Instructions of the first fork (u64, exact).
    pub total: u64,
    /// `total / ops`.
    pub per_op: f64,
    /// Smallest per-op count over the forks.
    pub min_per_op: f64,
    /// Largest per-op count over the forks.
    pub max_per_op: f64,
    /// Median per-op count over the forks (what `compare --metric instructions` compares).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_per_op: Option<f64>,
    /// Whether every fork counted exactly the same; null with a single fork (not known).
    pub identical: Option<bool>,
    /// The workload declares its ops deterministic. When false (clock reads, other threads,
    /// servers) the count varies run to run: run `--instr-forks 3` to see the spread.
    pub deterministic: bool,
}

impl InstructionSummary {
    /// The median per-op count, or the first fork's in reports that predate the median.
    pub fn median(&self) -> f64 {
        self.median_per_op.unwrap_or(self.per_op)
    }

    /// The summary of the ok instruction forks, if any counted.
    pub fn from_forks(forks: &[Fork]) -> Option<InstructionSummary> {
        let counts: Vec<InstructionCount> =
            forks.iter().filter(|f| f.status == ForkStatus::Ok).filter_map(|f| f.instructions).collect();
        let first = *counts.first()?;
        let per_op: Vec<f64> = counts.iter().map(InstructionCount::per_op).collect();
        Some(InstructionSummary {
            forks: counts.len(),
            ops: first.ops,
            total: first.total,
            per_op: first.per_op(),
            min_per_op: per_op.iter().copied().fold(f64::INFINITY, f64::min),
            max_per_op: per_op.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            median_per_op: stats::summarize(&per_op).map(|s| s.median),
            identical: (counts.len() > 1).then(|| counts.iter().all(|c| c.total == first.total)),
            deterministic: first.deterministic,
        })
    }
}

/// Settings of one case.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct CaseSettings {
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

/// One worker process.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Fork {
    /// 0-based fork index within the case.
    pub index: u32,
    /// Position in the order the case's forks ran (both builds counted in A/B runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<u32>,
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
    /// Throughput or instruction count.
    #[serde(default)]
    pub kind: ForkKind,
    /// What an instruction fork counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<InstructionCount>,
    /// Whether hardware counters were available to this fork, and why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware_counters: Option<String>,
    /// Sample-time mode: this fork's latency histogram.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<latency::ForkLatency>,
    /// The op's shape as the worker reported it (recorded on the case, not per fork).
    #[serde(skip)]
    #[schemars(skip)]
    pub shape: Option<String>,
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
pub enum ForkStatus {
    /// All iterations finished, checks passed, the worker exited 0.
    Ok,
    /// See `failure`.
    Failed,
}

/// Why a fork failed.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Failure {
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
pub enum FailureKind {
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
    /// The run was interrupted while this fork ran; killed.
    Interrupted,
}

/// One iteration's raw data.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Iteration {
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
    pub fn ops_per_sec(&self) -> f64 {
        if self.nanos == 0 { f64::NAN } else { self.ops as f64 * 1e9 / self.nanos as f64 }
    }
}

/// Throughput score of a case: statistics over the per-iteration ops/s of every measured
/// iteration of every fork that finished ok.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Score {
    /// Always `ops/s`.
    pub unit: String,
    /// Number of iterations.
    pub n: usize,
    /// Mean of the iteration throughputs.
    pub mean: f64,
    /// Median.
    pub median: f64,
    /// Sample standard deviation; null when n < 2.
    pub stdev: Option<f64>,
    /// Slowest iteration.
    pub min: f64,
    /// Fastest iteration.
    pub max: f64,
    /// Half-width of the Student-t interval at `confidence` (JMH's scoreError); null when n <= 2.
    pub error: Option<f64>,
    /// Confidence level of `error`.
    pub confidence: f64,
}

impl Score {
    /// The score over the ok forks, or `None` when no ok fork measured anything.
    pub fn from_forks(forks: &[Fork]) -> Option<Score> {
        let samples: Vec<f64> = forks
            .iter()
            .filter(|f| f.status == ForkStatus::Ok && f.kind == ForkKind::Time)
            .flat_map(|f| f.iterations.iter().map(Iteration::ops_per_sec))
            .collect();
        let s = stats::summarize(&samples)?;
        Some(Score {
            unit: "ops/s".into(),
            n: s.n,
            mean: s.mean,
            median: s.median,
            stdev: Some(s.stdev).filter(|x| x.is_finite()),
            min: s.min,
            max: s.max,
            error: stats::mean_error(&s, CONFIDENCE),
            confidence: CONFIDENCE,
        })
    }
}

impl Fork {
    /// A fork that has not reported anything yet: failed until proven ok.
    pub fn pending(index: u32, pid: Option<u32>) -> Fork {
        Fork {
            index,
            sequence: None,
            pid,
            status: ForkStatus::Failed,
            failure: None,
            batch_size: None,
            clock_read_nanos: None,
            per_op_reset: false,
            kind: ForkKind::Time,
            instructions: None,
            hardware_counters: None,
            latency: None,
            shape: None,
            warmup: vec![],
            iterations: vec![],
            wall_nanos: 0,
        }
    }
}

impl Benchmark {
    /// A case with no fork yet.
    pub fn empty(name: String, params: BTreeMap<String, String>, settings: CaseSettings) -> Benchmark {
        Benchmark {
            name,
            params,
            shape: None,
            settings,
            forks: vec![],
            score: None,
            skipped: None,
            instructions: None,
            allocations: None,
            baseline_forks: vec![],
            baseline_score: None,
            op_floor_nanos: None,
            concurrency: None,
            latency: None,
            sequential_stop: None,
        }
    }

    /// Number of timed forks that finished ok (instruction forks are not forks of the score).
    pub fn forks_ok(&self) -> usize {
        self.forks.iter().filter(|f| f.status == ForkStatus::Ok && f.kind == ForkKind::Time).count()
    }

    /// Number of timed forks that ran, ok or not.
    pub fn timed_forks(&self) -> usize {
        self.forks.iter().filter(|f| f.kind == ForkKind::Time).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fork(status: ForkStatus, its: &[(u64, u64)]) -> Fork {
        Fork {
            status,
            iterations: its.iter().map(|&(ops, nanos)| Iteration { ops, nanos, ..Iteration::default() }).collect(),
            ..Fork::pending(0, Some(1))
        }
    }

    #[test]
    fn score_pools_ok_forks_and_ignores_failed_ones() {
        let forks = [
            fork(ForkStatus::Ok, &[(100, 1_000_000_000), (200, 1_000_000_000)]),
            fork(ForkStatus::Ok, &[(300, 1_000_000_000)]),
            fork(ForkStatus::Failed, &[(9_000, 1_000_000_000)]),
        ];
        let s = Score::from_forks(&forks).unwrap();
        assert_eq!(s.n, 3);
        assert_eq!((s.mean, s.median, s.min, s.max), (200.0, 200.0, 100.0, 300.0));
        assert_eq!(s.stdev, Some(100.0));
        // t(0.9995, 2) = 31.5991 ; 31.5991 * 100 / sqrt(3) = 1824.37
        assert!((s.error.unwrap() - 1824.37).abs() < 0.05, "{:?}", s.error);
    }

    #[test]
    fn score_is_absent_without_ok_iterations_and_error_null_when_small() {
        assert!(Score::from_forks(&[fork(ForkStatus::Failed, &[(1, 1)])]).is_none());
        let s = Score::from_forks(&[fork(ForkStatus::Ok, &[(5, 1_000_000_000)])]).unwrap();
        assert_eq!((s.n, s.stdev, s.error), (1, None, None));
        let json = serde_json::to_value(&s).unwrap();
        assert!(json["error"].is_null() && json["stdev"].is_null());
    }

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
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/report.v1.json");
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
