//! What a case's forks add up to: the throughput score, instructions per op and allocations
//! per op, each computed from the forks that finished ok.

use super::{Fork, ForkStatus, InstructionCount, Iteration};
use crate::stats::{self, CONFIDENCE};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Throughput score of a case: statistics over the per-iteration ops/s of every measured
/// iteration of every fork that finished ok.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub(crate) struct Score {
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
    pub(crate) fn from_forks(forks: &[Fork]) -> Option<Score> {
        let samples: Vec<f64> = forks
            .iter()
            .filter(|f| f.is_ok_timed())
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

/// Allocations per op of a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct AllocSummary {
    /// Allocations (and reallocations) per op, every thread of the worker.
    pub per_op: f64,
    /// Bytes requested per op.
    pub bytes_per_op: f64,
    /// What the counts cover, and what they cannot see (reports before this field: Rust's only).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub counted: String,
}

/// What `--alloc` counts in every worker.
pub(crate) const ALLOCATIONS_COUNTED: &str = "Rust's allocator and bundled SQLite's, every thread of the worker";
/// What it cannot see when the case talks to a server.
pub(crate) const ALLOCATIONS_NOT_SEEN: &str =
    "; not the server's work, nor other C libraries' (libpq under Diesel on PostgreSQL)";

impl AllocSummary {
    /// Totals over the measured iterations of ok timed forks; `None` without counts. `servers`:
    /// the case talks to a server, whose allocations the counts leave out.
    pub(crate) fn from_forks(forks: &[Fork], servers: bool) -> Option<AllocSummary> {
        let (mut ops, mut allocations, mut bytes) = (0u64, 0u64, 0u64);
        for it in forks.iter().filter(|f| f.is_ok_timed()).flat_map(|f| &f.iterations) {
            let a = it.allocs?;
            ops += it.ops;
            allocations += a.allocations;
            bytes += a.bytes;
        }
        let counted = format!("{ALLOCATIONS_COUNTED}{}", if servers { ALLOCATIONS_NOT_SEEN } else { "" });
        (ops > 0).then(|| AllocSummary {
            per_op: allocations as f64 / ops as f64,
            bytes_per_op: bytes as f64 / ops as f64,
            counted,
        })
    }
}

/// Instructions per op of a case, over its instruction forks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct InstructionSummary {
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
    pub(crate) fn median(&self) -> f64 {
        self.median_per_op.unwrap_or(self.per_op)
    }

    /// The summary of the ok instruction forks, if any counted.
    pub(crate) fn from_forks(forks: &[Fork]) -> Option<InstructionSummary> {
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
    fn allocation_counts_say_what_they_cover() {
        let mut f = fork(ForkStatus::Ok, &[(10, 1_000)]);
        f.iterations[0].allocs = Some(crate::protocol::AllocCount { allocations: 30, bytes: 640 });
        let local = AllocSummary::from_forks(std::slice::from_ref(&f), false).unwrap();
        assert_eq!((local.per_op, local.bytes_per_op), (3.0, 64.0));
        assert_eq!(local.counted, ALLOCATIONS_COUNTED);
        let served = AllocSummary::from_forks(&[f], true).unwrap();
        assert!(served.counted.ends_with("(libpq under Diesel on PostgreSQL)"), "{}", served.counted);
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
}
