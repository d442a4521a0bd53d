//! `harness history`'s command line.

use super::values::probability;
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// The store every history command reads and writes, when neither --history nor
/// HARNESS_HISTORY names one.
pub(crate) const DEFAULT_STORE: &str = "target/harness/history.sqlite";

/// `harness history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// What to do with the history.
    #[command(subcommand)]
    pub command: HistoryCommand,
    /// The store: an SQLite file (created if need be) or a `postgres://` URL that several CI
    /// runners share.
    #[arg(long = "history", global = true, env = "HARNESS_HISTORY", value_name = "FILE|URL", default_value = DEFAULT_STORE, hide_env_values = true)]
    pub store: String,
}

/// A history subcommand.
#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// Store reports of `harness run`: each run once (by its run id), each case's figures in
    /// the series of its case, figure, machine and settings.
    Add(HistoryAddArgs),
    /// Find the commits where a series' level changed: every change of an exact count, and the
    /// steps of throughput and latency at a stated false-alarm rate.
    Detect(HistoryDetectArgs),
}

/// `harness history add`.
#[derive(Debug, Args)]
pub struct HistoryAddArgs {
    /// The reports.
    #[arg(value_name = "REPORT.json", required = true)]
    pub reports: Vec<PathBuf>,
    /// The repository the reports' commits are in: their parents and commit times are read
    /// from it (the order of a series); without it, runs are ordered by their start.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,
}

/// How `history detect` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DetectFormat {
    /// A table.
    Text,
    /// A Markdown table, for a PR summary.
    Markdown,
    /// JSON.
    Json,
}

/// `harness history detect`.
#[derive(Debug, Args)]
pub struct HistoryDetectArgs {
    /// Only cases whose id matches this regex.
    #[arg(long, short = 'f', value_name = "REGEX")]
    pub filter: Option<String>,
    /// Only this figure (`throughput`, `instructions`, `io.round_trips`…) or figures starting
    /// with it followed by a dot (`io`, `latency`).
    #[arg(long, value_name = "FIGURE")]
    pub metric: Option<String>,
    /// The false-alarm rate of each split tested in a noisy series (Bonferroni over its splits).
    #[arg(long, value_name = "ALPHA", default_value_t = 0.001, value_parser = probability)]
    pub alpha: f64,
    /// Also use runs of builds with uncommitted edits (stored and flagged, left out by default).
    #[arg(long)]
    pub include_dirty: bool,
    /// Exit 3 when a series' newest change point is a regression (its head sits at the worse level).
    #[arg(long)]
    pub fail_on_regression: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: DetectFormat,
}
