//! `harness bisect`'s command line.

use super::SelectArgs;
use super::values::{at_least_two, percentage, probability};
use clap::Args;

/// `harness bisect`.
#[derive(Debug, Args)]
pub struct BisectArgs {
    /// The last commit known good (a branch, tag or commit of the repository here).
    #[arg(value_name = "GOOD")]
    pub good: String,
    /// A later commit known bad; the first-parent commits from GOOD to BAD are searched.
    #[arg(value_name = "BAD")]
    pub bad: String,
    /// The one case to follow: configuration, filter and params as `harness run` takes them.
    #[command(flatten)]
    pub select: SelectArgs,
    /// What decides a step: `instructions` (one callgrind fork per build, exact: the fast path),
    /// `io` (one I/O fork per build: round trips, statements, bytes, rows, exact) or
    /// `throughput` (a paired A/B run against GOOD with --forks auto).
    #[arg(long, value_enum, default_value = "throughput")]
    pub metric: crate::metric::Metric,
    /// The chance of naming a wrong commit, over every test the search makes (each test runs
    /// at ALPHA / (⌈log2 n⌉ + 1), n the commits after GOOD).
    #[arg(long, value_name = "ALPHA", default_value_t = 0.05, value_parser = probability)]
    pub alpha: f64,
    /// A commit is bad when its case is slower than GOOD's beyond PCT% (instructions: more
    /// instructions per op by more than PCT%; io: bytes or rows per op grown by more than PCT%,
    /// any exact count grown at all; throughput: BAD's whole interval below -PCT%, and each
    /// commit between beyond the midpoint of GOOD's and BAD's ops/s).
    #[arg(long, value_name = "PCT", default_value_t = 1.0, value_parser = percentage)]
    pub threshold: f64,
    /// Look for the first commit that made the case faster (or do fewer instructions or less
    /// I/O) instead: the commit an improvement came with.
    #[arg(long)]
    pub faster: bool,
    /// Throughput: the budget of fork pairs of each step's A/B run.
    #[arg(long, value_name = "N", default_value_t = 30, value_parser = at_least_two)]
    pub max_forks: u32,
    /// Throughput: relink every build K times with its functions reordered and spread each
    /// step's fork pairs over the variants (as `ab --layouts K`), so that a step's verdict holds
    /// across code layouts; K at least --max-forks.
    #[arg(long, value_name = "K", value_parser = at_least_two)]
    pub layouts: Option<u32>,
    /// Print the search as JSON.
    #[arg(long)]
    pub json: bool,
    /// PostgreSQL server for `db=postgres` cases.
    #[arg(long, env = "DATABASE_URL", value_name = "URL", default_value = workloads::def::DEFAULT_DATABASE_URL, hide_env_values = true, value_parser = crate::server_url::postgres)]
    pub database_url: String,
    /// No progress output.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}
