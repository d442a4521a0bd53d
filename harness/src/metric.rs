//! The metrics a report records and a comparison judges, named once: each one's flag value,
//! what a fork of it records and the `harness run` flag that makes it.
//! `compare`, `bisect` and `export` take a [`Metric`]; a new metric is a variant here and its
//! comparer under `compare/`.

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
}

impl Metric {
    /// The metric as `--metric` names it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Metric::Throughput => "throughput",
            Metric::Instructions => "instructions",
            Metric::Io => "io",
        }
    }

    /// What a report holds of it, in words (`instruction counts`).
    pub(crate) fn recorded(self) -> &'static str {
        match self {
            Metric::Throughput => "timed forks",
            Metric::Instructions => "instruction counts",
            Metric::Io => "I/O counts",
        }
    }

    /// The `harness run` flag that adds its fork (`None`: every run has it).
    pub(crate) fn run_flag(self) -> Option<&'static str> {
        match self {
            Metric::Throughput => None,
            Metric::Instructions => Some("--instructions"),
            Metric::Io => Some("--io"),
        }
    }

    /// Whether it is a count (judged against a threshold) rather than a timing (a statistical test).
    pub(crate) fn is_count(self) -> bool {
        self.run_flag().is_some()
    }

    /// Whether the case recorded it.
    pub(crate) fn in_case(self, b: &Benchmark) -> bool {
        match self {
            Metric::Throughput => b.forks_ok() > 0,
            Metric::Instructions => b.instructions.is_some(),
            Metric::Io => b.io.is_some(),
        }
    }

    /// `report` (read from `path`) refused when no case of it recorded the metric.
    pub(crate) fn check_recorded(self, report: &Report, path: &Path) -> Result<(), BadInput> {
        if report.benchmarks.iter().any(|b| self.in_case(b)) {
            return Ok(());
        }
        let make = self.run_flag().map_or("`harness run`".to_string(), |f| format!("`harness run {f}`"));
        Err(BadInput(format!("{} has no {}: make it with {make}", path.display(), self.recorded())))
    }
}

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
            assert_eq!(m.is_count(), m != Metric::Throughput, "{}", m.name());
        }
    }
}
