//! The metrics a report records and a comparison judges, named once: each one's flag value,
//! what a fork of it records, the `harness run` flag that makes it and the figures the exports
//! carry of it. `compare`, `bisect` and `export` take a [`Metric`]; a new metric is a variant
//! here and its comparer under `compare/` (registered in `compare::comparison::compare`).

use crate::error::BadInput;
use crate::report::{Benchmark, Report};
use std::path::Path;

/// What to compare (`--metric`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Ops/s of the timed forks, with a rank test and a confidence interval; higher is better.
    Throughput,
    /// Instructions per op (`harness run --instructions`); lower is better.
    Instructions,
    /// Round trips, statements, messages, bytes and rows per op (`harness run --io`); lower
    /// is better, and any more round trips, statements or messages regress.
    Io,
    /// A percentile of open-loop latency, coordinated omission corrected (`harness run --rate`),
    /// fork pair by fork pair at the same rate; lower is better.
    Latency,
    /// Allocations and bytes requested per op over the timed forks (`harness run --alloc`);
    /// lower is better, and either growing by more than a threshold regresses.
    Alloc,
}

impl Metric {
    /// The metric as `--metric` names it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Metric::Throughput => "throughput",
            Metric::Instructions => "instructions",
            Metric::Io => "io",
            Metric::Latency => "latency",
            Metric::Alloc => "alloc",
        }
    }

    /// What a report holds of it, in words (`instruction counts`).
    pub(crate) fn recorded(self) -> &'static str {
        match self {
            Metric::Throughput => "timed forks",
            Metric::Instructions => "instruction counts",
            Metric::Io => "I/O counts",
            Metric::Latency => "open-loop latency",
            Metric::Alloc => "allocation counts",
        }
    }

    /// The `harness run` flag that adds its fork (`None`: every run has it).
    pub(crate) fn run_flag(self) -> Option<&'static str> {
        match self {
            Metric::Throughput => None,
            Metric::Instructions => Some("--instructions"),
            Metric::Io => Some("--io"),
            Metric::Latency => Some("--rate OPS"),
            Metric::Alloc => Some("--alloc"),
        }
    }

    /// Whether it is a count (judged against a threshold) rather than a timing (a statistical test).
    pub(crate) fn is_count(self) -> bool {
        matches!(self, Metric::Instructions | Metric::Io | Metric::Alloc)
    }

    /// Whether the case recorded it.
    pub(crate) fn in_case(self, b: &Benchmark) -> bool {
        match self {
            Metric::Throughput => b.forks_ok() > 0,
            Metric::Instructions => b.instructions.is_some(),
            Metric::Io => b.io.is_some(),
            Metric::Latency => b.open_loop.as_ref().is_some_and(|o| o.corrected.is_some()),
            Metric::Alloc => b.allocations.is_some(),
        }
    }

    /// `report` (read from `path`) refused when no case of it recorded the metric.
    pub(crate) fn check_recorded(self, report: &Report, path: &Path) -> Result<(), BadInput> {
        if self == Metric::Io {
            for b in &report.benchmarks {
                if let Some(why) = b.io.as_ref().and_then(crate::report::io::IoSummary::inconsistency) {
                    return Err(BadInput(format!(
                        "{} is corrupt: the I/O count of {} {why}; count it again with `harness run --io`",
                        path.display(),
                        b.id()
                    )));
                }
            }
        }
        if report.benchmarks.iter().any(|b| self.in_case(b)) {
            return Ok(());
        }
        let make = self.run_flag().map_or("`harness run`".to_string(), |f| format!("`harness run {f}`"));
        Err(BadInput(format!("{} has no {}: make it with {make}", path.display(), self.recorded())))
    }
}

/// One figure of a case as the exports carry it: a name, a value per op, a range, a unit.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Measure {
    /// Its name in the exports (`instructions`, `round_trips`).
    pub name: &'static str,
    /// Per op.
    pub value: f64,
    /// The smallest and largest over the forks, where several ran.
    pub range: Option<(f64, f64)>,
    /// Its unit (`instructions/op`).
    pub unit: &'static str,
}

impl Metric {
    /// The metrics whose figures are secondary to a case's score (each export's primary figure
    /// is its throughput). Allocations are not among them: each export names them as its
    /// consumers do (BMF `allocations`, JMH `gc.alloc.count.norm` and `gc.alloc.rate.norm`).
    pub(crate) const SECONDARY: [Metric; 3] = [Metric::Instructions, Metric::Io, Metric::Latency];

    /// The case's figures of this metric, every one it recorded (none for throughput, which
    /// each export carries as its score).
    pub(crate) fn measures(self, b: &Benchmark) -> Vec<Measure> {
        let m = |name, value, range, unit| Measure { name, value, range, unit };
        match self {
            Metric::Throughput => vec![],
            Metric::Latency => latency_measures(b),
            Metric::Alloc => b
                .allocations
                .iter()
                .flat_map(|a| {
                    [m("allocations", a.per_op, None, "allocations/op"), m("bytes", a.bytes_per_op, None, "B/op")]
                })
                .collect(),
            Metric::Instructions => b
                .instructions
                .iter()
                .map(|i| m("instructions", i.median(), Some((i.min_per_op, i.max_per_op)), "instructions/op"))
                .collect(),
            Metric::Io => {
                let mut out = match &b.io {
                    Some(io) => vec![
                        m("round_trips", io.per_op.round_trips, None, "round trips/op"),
                        m("statements", io.per_op.statements, None, "statements/op"),
                        m("messages", io.per_op.messages, None, "messages/op"),
                        m("bytes", io.per_op.bytes, None, "B/op"),
                        m("rows_returned", io.per_op.rows_returned, None, "rows/op"),
                    ],
                    None => vec![],
                };
                // Rows read come from a timed fork's server counts where the case has no I/O fork.
                out.extend(b.rows_read_per_op().map(|r| m("rows_read", r, None, "rows/op")));
                out
            }
        }
    }
}

/// An open-loop case's corrected percentiles (JMH `SampleTime`-like), in nanoseconds, each
/// with its range over the forks that kept the rate.
fn latency_measures(b: &Benchmark) -> Vec<Measure> {
    let Some(corrected) = b.open_loop.as_ref().and_then(|o| o.corrected.as_ref()) else { return vec![] };
    LATENCY_MEASURES
        .iter()
        .filter_map(|&(key, name)| {
            let value = corrected.at(key)? as f64;
            let forks: Vec<f64> = b.kept_open_forks().filter_map(|f| f.corrected_at(key)).map(|v| v as f64).collect();
            let range = forks.iter().copied().reduce(f64::min).zip(forks.iter().copied().reduce(f64::max));
            Some(Measure { name, value, range, unit: "ns" })
        })
        .collect()
}

/// The percentiles an export carries of an open-loop case: the report's key and the export's name.
pub(crate) const LATENCY_MEASURES: [(&str, &str); 3] =
    [("p50", "latency_p50"), ("p99", "latency_p99"), ("p99.9", "latency_p99_9")];

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn each_metric_is_named_once_as_the_flag_and_the_resume_file_spell_it() {
        for &m in Metric::value_variants() {
            let flag = m.to_possible_value().unwrap();
            assert_eq!(flag.get_name(), m.name());
            assert_eq!(serde_json::to_value(m).unwrap(), m.name());
            assert_eq!(m.is_count(), !matches!(m, Metric::Throughput | Metric::Latency), "{}", m.name());
        }
    }
}
