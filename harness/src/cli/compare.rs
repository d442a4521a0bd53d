//! `harness compare`'s command line.

use super::values::{percentage, probability};
use clap::Args;
use std::path::PathBuf;

/// `harness compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// BASE.json NEW.json: the baseline report (e.g. from the target branch) and the candidate's;
    /// or one A/B report from `run --baseline-bin`, whose two builds are compared.
    #[arg(value_name = "REPORT.json", num_args = 1..=2, required_unless_present = "base_runs")]
    pub reports: Vec<PathBuf>,
    /// Several runs of the baseline (with --new): with two or more on each side, made
    /// alternately, the run is the unit of the test and a verdict can be trusted.
    #[arg(long = "base", value_name = "RUN.json", num_args = 1.., requires = "new_runs", conflicts_with = "reports")]
    pub base_runs: Vec<PathBuf>,
    /// Several runs of the candidate (with --base).
    #[arg(long = "new", value_name = "RUN.json", num_args = 1.., requires = "base_runs")]
    pub new_runs: Vec<PathBuf>,
    /// What to compare.
    #[arg(long, value_enum, default_value = "throughput")]
    pub metric: crate::metric::Metric,
    /// Latency: the percentile of the corrected open-loop latency compared.
    #[arg(long, value_enum, value_name = "P", default_value = "p99")]
    pub percentile: crate::compare::latency::Percentile,
    /// Latency, A/B reports: the test of the fork pairs' log ratios, the paired t-test or the
    /// percentile bootstrap (reports/calibration.md measures both).
    #[arg(long, value_enum, value_name = "TEST", default_value = "t")]
    pub latency_test: crate::compare::latency::Method,
    /// Throughput and latency: ratios within ±PCT% are "no change" even when significant.
    #[arg(long, value_name = "PCT", default_value_t = 1.0, value_parser = percentage)]
    pub noise_band: f64,
    /// Throughput and latency: significance level of the fork-level test (the interval is at 1 - ALPHA).
    #[arg(long, value_name = "ALPHA", default_value_t = 0.05, value_parser = probability)]
    pub alpha: f64,
    /// Throughput: exit 3 when a case is significantly slower beyond the noise band or missing
    /// from NEW, exit 2 when a case could not be tested (instruction comparisons always gate).
    #[arg(long)]
    pub fail_on_regression: bool,
    /// A case present in BASE and missing from NEW does not fail the gate.
    #[arg(long)]
    pub allow_missing: bool,
    /// Throughput, A/B reports: how `--fail-on-regression` treats a case called slower whose
    /// builds ran the same instructions per op (`SLOWER (same instructions: layout?)`): `fail`
    /// like any slower case, or `warn` (name it on stderr, pass).
    #[arg(long, value_enum, value_name = "ACTION", default_value = "fail")]
    pub same_instructions: crate::compare::SameInstructions,
    /// Print the same table but exit 0 on a regression (a warning names the failing cases).
    #[arg(long)]
    pub warn_only: bool,
    /// Compare even when the reports' settings, params, machine or toolchain differ (every
    /// difference is still printed).
    #[arg(long)]
    pub force: bool,
    /// Instructions: a case regresses when its count grows by more than this percentage.
    #[arg(long, value_name = "PCT", default_value_t = 1.0, value_parser = percentage)]
    pub max_regression: f64,
    /// Instructions: the threshold of workloads whose counts vary run to run (marked ~).
    #[arg(long, value_name = "PCT", default_value_t = crate::compare::instructions::DEFAULT_VARYING_PCT, value_parser = percentage)]
    pub max_regression_varying: f64,
    /// TOML file of per-benchmark thresholds: `default = PCT`, `varying = PCT` and
    /// `[benchmarks]` entries keyed by workload name or case label.
    #[arg(long, value_name = "FILE")]
    pub thresholds: Option<PathBuf>,
    /// Print the comparison as JSON instead of a table (throughput).
    #[arg(long)]
    pub json: bool,
    /// Show only the cases that changed or could not be compared (the summary line still
    /// counts every case).
    #[arg(long)]
    pub only_changed: bool,
    /// Also write the comparison as Markdown (for a CI job summary).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

impl CompareArgs {
    /// The base reports and the new reports (empty for one A/B report).
    pub fn sides(&self) -> (Vec<PathBuf>, Vec<PathBuf>) {
        if self.base_runs.is_empty() {
            (self.reports[..1].to_vec(), self.reports[1..].to_vec())
        } else {
            (self.base_runs.clone(), self.new_runs.clone())
        }
    }
}
