//! Sample-time mode in the report: each fork's latency histogram, and the case's percentiles
//! over the merged histograms of its ok forks.

use super::Fork;
use crate::protocol::{MAX_NANOS, new_histogram};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One fork's latency samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ForkLatency {
    /// Ops per timed sample: 1, or a small group for ops under about a microsecond (each
    /// recorded value is then the group's mean per op).
    pub ops_per_sample: u64,
    /// Recorded values in nanoseconds per op and their counts (HDR buckets, 3 significant digits).
    pub histogram: Vec<(u64, u64)>,
}

/// Latency percentiles of a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct LatencySummary {
    /// Always `ns/op`.
    pub unit: String,
    /// Timed samples over every measured iteration of the ok forks.
    pub samples: u64,
    /// Ops per sample (the largest over the forks).
    pub ops_per_sample: u64,
    /// Mean.
    pub mean: f64,
    /// Percentiles keyed `p50`, `p90`, `p99`, `p99.9`, `p99.99`.
    pub percentiles: std::collections::BTreeMap<String, u64>,
    /// Slowest sample.
    pub max: u64,
    /// Cost of one clock read in the worker (mean over the forks).
    pub clock_read_nanos: Option<f64>,
    /// Set when an op takes less than ten clock reads: the clock dominates the sample.
    pub clock_warning: Option<String>,
}

/// The percentiles reported, as (key, quantile).
pub(crate) const PERCENTILES: [(&str, f64); 5] =
    [("p50", 0.50), ("p90", 0.90), ("p99", 0.99), ("p99.9", 0.999), ("p99.99", 0.9999)];

impl LatencySummary {
    /// Merges the ok timed forks' histograms; `None` without samples.
    pub(crate) fn from_forks(forks: &[Fork]) -> Option<LatencySummary> {
        let ok: Vec<&Fork> = forks.iter().filter(|f| f.is_ok_timed()).collect();
        let mut h = new_histogram();
        let mut ops_per_sample = 0;
        for l in ok.iter().filter_map(|f| f.latency.as_ref()) {
            ops_per_sample = ops_per_sample.max(l.ops_per_sample);
            for &(value, count) in &l.histogram {
                h.record_n(value.clamp(1, MAX_NANOS), count).ok()?;
            }
        }
        if h.is_empty() {
            return None;
        }
        let clocks: Vec<f64> = ok.iter().filter_map(|f| f.clock_read_nanos).collect();
        let clock = (!clocks.is_empty()).then(|| clocks.iter().sum::<f64>() / clocks.len() as f64);
        let p50 = h.value_at_quantile(0.5);
        let clock_warning = clock.filter(|c| (p50 as f64) < 10.0 * c).map(|c| {
            if ops_per_sample > 1 {
                format!(
                    "the median op ({p50} ns) is faster than ten clock reads ({c:.0} ns each): samples time groups of {ops_per_sample} ops, so percentiles are of group means, not of single ops"
                )
            } else {
                format!(
                    "the median op ({p50} ns) is faster than ten clock reads ({c:.0} ns each): the clock dominates these samples; use throughput mode"
                )
            }
        });
        Some(LatencySummary {
            unit: "ns/op".into(),
            samples: h.len(),
            ops_per_sample,
            mean: h.mean(),
            percentiles: PERCENTILES.iter().map(|(k, q)| (k.to_string(), h.value_at_quantile(*q))).collect(),
            max: h.max(),
            clock_read_nanos: clock,
            clock_warning,
        })
    }
}

/// Concurrency of a case: how many measurers, of which kind, on how many cores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Concurrency {
    /// Measuring threads or tasks (`--threads`).
    pub count: u32,
    /// Cores this process could use when the run started.
    pub cores: usize,
    /// `threads` (OS threads, blocking workloads) or `tasks` (on the workload's runtime).
    pub kind: Option<String>,
    /// What each measurer did.
    pub each: Option<String>,
}

impl Concurrency {
    /// Names the measurers once the op's shape is known: tasks for an async op, else threads.
    pub(crate) fn describe(&mut self, shape: &str) {
        let tasks = shape == "async" && self.count > 1;
        self.kind = Some(if tasks { "tasks" } else { "threads" }.into());
        self.each = Some(if tasks {
            format!(
                "{} tasks on the workload's current-thread runtime, each awaiting the op in its own loop with its own local state; spawned together each iteration",
                self.count
            )
        } else {
            format!(
                "{} OS thread(s), each running the op in its own loop with its own local state; released together by a barrier each iteration",
                self.count
            )
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::buckets;
    use crate::report::ForkStatus;

    fn fork(values: &[(u64, u64)]) -> Fork {
        Fork {
            status: ForkStatus::Ok,
            clock_read_nanos: Some(20.0),
            latency: Some(ForkLatency { ops_per_sample: 1, histogram: values.to_vec() }),
            ..Fork::pending(0, Some(1))
        }
    }

    #[test]
    fn percentiles_of_merged_forks() {
        // 98 fast samples at 1000 ns and 2 slow at 1 ms, split over two forks.
        let l = LatencySummary::from_forks(&[fork(&[(1000, 49), (1_000_000, 1)]), fork(&[(1000, 49), (1_000_000, 1)])])
            .unwrap();
        assert_eq!(l.samples, 100);
        assert_eq!(l.percentiles["p50"], 1000);
        assert_eq!(l.percentiles["p90"], 1000);
        assert!(l.percentiles["p99"] >= 999_000, "{l:?}");
        assert!(l.max >= 999_000 && l.max <= 1_001_000);
        assert!((l.mean - (98.0 * 1000.0 + 2.0 * 1e6) / 100.0).abs() / l.mean < 0.001, "{}", l.mean);
        assert!(l.clock_warning.is_none());
    }

    #[test]
    fn ops_near_the_clock_cost_are_flagged_and_round_trip() {
        let l = LatencySummary::from_forks(&[fork(&[(50, 10)])]).unwrap();
        assert!(l.clock_warning.unwrap().contains("faster than ten clock reads"));
        let mut h = new_histogram();
        h.record_n(1234, 3).unwrap();
        h.record(99).unwrap();
        assert_eq!(buckets(&h).iter().map(|b| b.1).sum::<u64>(), 4);
        assert!(LatencySummary::from_forks(&[Fork { status: ForkStatus::Ok, ..Fork::pending(0, None) }]).is_none());
    }
}
