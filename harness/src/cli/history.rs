//! `harness history`'s command line.

use super::SelectArgs;
use super::values::{at_least_one, at_least_two, count, duration, probability};
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
    /// Backfill: build each first-parent commit of FROM..TO (as `ab` builds a baseline, cached;
    /// a commit that does not build is skipped), run it with its own harness and store the
    /// report; run again, it resumes where it stopped.
    Run(HistoryRunArgs),
    /// Re-run each change point's two commits: a throughput step as a paired A/B across code
    /// layouts (`confirmed`, `layout` or `not reproduced`), a range narrowed by `bisect`, an
    /// exact count's change named by its commit; every decision is stored and not re-run.
    Confirm(HistoryConfirmArgs),
    /// Write a static site: per series a chart over commits (the forks' spread as a band,
    /// change points marked by their confirmation) with its change points, and an index of the
    /// open ones newest first.
    Docs(HistoryDocsArgs),
}

/// `harness history docs`.
#[derive(Debug, Args)]
pub struct HistoryDocsArgs {
    /// Which series, and how their change points are found, as `history detect` takes it.
    #[command(flatten)]
    pub found: DetectSelect,
    /// Where the site is written (`index.html` and one SVG per series).
    #[arg(long, value_name = "DIR", default_value = "target/harness/history-site")]
    pub out_dir: PathBuf,
    /// A URL to which `LAST_GOOD...FIRST_BAD` is appended to show a change point's commits
    /// (e.g. `https://github.com/OWNER/REPO/compare/`).
    #[arg(long, value_name = "URL")]
    pub compare_url: Option<String>,
}

/// `harness history confirm`.
#[derive(Debug, Args)]
pub struct HistoryConfirmArgs {
    /// Which change points, and how they were found, as `history detect` takes it.
    #[command(flatten)]
    pub found: DetectSelect,
    /// The budget of fork pairs of each A/B run (`--forks auto`).
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = at_least_two)]
    pub max_forks: u32,
    /// Relink both builds K times with their functions reordered and spread the pairs over the
    /// variants, so that a confirmed change holds across code layouts (default: --max-forks).
    #[arg(long, value_name = "K", value_parser = at_least_two)]
    pub layouts: Option<u32>,
    /// After each throughput A/B, run `harness explain` on it with the first bad commit's
    /// build (an instruction fork of each build under callgrind, with flame graphs), kept
    /// beside the A/B's report; `history docs` links its flame graphs.
    #[arg(long)]
    pub explain: bool,
    /// PostgreSQL server for `db=postgres` cases.
    #[arg(long, env = "DATABASE_URL", value_name = "URL", default_value = workloads::def::DEFAULT_DATABASE_URL, hide_env_values = true, value_parser = crate::server_url::postgres)]
    pub database_url: String,
    /// Redis server for the `redis` workloads.
    #[arg(long, env = "REDIS_URL", value_name = "URL", default_value = workloads::redis::DEFAULT_REDIS_URL, hide_env_values = true, value_parser = crate::server_url::redis)]
    pub redis_url: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: DetectFormat,
    /// No progress output.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// `harness history run`.
#[derive(Debug, Args)]
pub struct HistoryRunArgs {
    /// The commits, as git reads `FROM..TO`: the first-parent commits after FROM up to TO
    /// (`FROM~1..TO` includes FROM).
    #[arg(value_name = "FROM..TO")]
    pub range: String,
    /// The cases each commit runs: configuration, filters and params as `harness run` takes them.
    #[command(flatten)]
    pub select: SelectArgs,
    /// Forks per case (each commit's default when not given).
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub forks: Option<u32>,
    /// Warmup iterations per fork.
    #[arg(long, value_name = "N", value_parser = count)]
    pub warmup: Option<u32>,
    /// Measured iterations per fork.
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub iterations: Option<u32>,
    /// Duration of each measured iteration (`500ms`, `2s`).
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    pub time: Option<std::time::Duration>,
    /// Duration of each warmup iteration.
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    pub warmup_time: Option<std::time::Duration>,
    /// Also count each case's instructions per op (one callgrind fork per case).
    #[arg(long)]
    pub instructions: bool,
    /// Also count each case's I/O per op (round trips, statements, bytes, rows).
    #[arg(long)]
    pub io: bool,
    /// Where each commit's report is kept (`<commit>-<settings>.json`; default
    /// `target/harness/history-runs/` of the checkout): a report already there and complete is
    /// stored, not run again.
    #[arg(long, value_name = "DIR")]
    pub reports: Option<PathBuf>,
    /// PostgreSQL server for `db=postgres` cases.
    #[arg(long, env = "DATABASE_URL", value_name = "URL", default_value = workloads::def::DEFAULT_DATABASE_URL, hide_env_values = true, value_parser = crate::server_url::postgres)]
    pub database_url: String,
    /// No progress output.
    #[arg(long, short = 'q')]
    pub quiet: bool,
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

/// Which series and change points `detect` and `confirm` read.
#[derive(Debug, Args)]
pub struct DetectSelect {
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
}

/// `harness history detect`.
#[derive(Debug, Args)]
pub struct HistoryDetectArgs {
    /// Which series.
    #[command(flatten)]
    pub found: DetectSelect,
    /// Exit 3 when a series' newest change point is a regression (its head sits at the worse level).
    #[arg(long)]
    pub fail_on_regression: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: DetectFormat,
}
