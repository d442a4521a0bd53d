//! `harness explain`'s command line.

use clap::Args;
use std::path::PathBuf;

/// `harness explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// An A/B report (`harness ab`, `run --baseline-bin`): an instruction fork of each build (its
    /// baseline binary and this one) is run again, under callgrind, for every case its timed forks
    /// call different (every case when none is), or the cases --filter names.
    #[arg(value_name = "AB.json", required_unless_present = "base_dump", conflicts_with = "base_dump")]
    pub report: Option<PathBuf>,
    /// Explain two callgrind dumps instead (files kept by `run --instructions --callgrind-dir`):
    /// the baseline's, with --new-dump.
    #[arg(long, value_name = "FILE", requires = "new_dump")]
    pub base_dump: Option<PathBuf>,
    /// This build's callgrind dump, with --base-dump.
    #[arg(long, value_name = "FILE", requires = "base_dump")]
    pub new_dump: Option<PathBuf>,
    /// With --base-dump: the ops each dump counted, `N` for both or `BASE,NEW` (figures are per op).
    #[arg(long, value_name = "N[,N]", requires = "base_dump", value_parser = ops_pair)]
    pub ops: Option<(u64, u64)>,
    /// Explain only the cases whose workload matches one of these regular expressions.
    #[arg(long, short = 'f', value_name = "REGEX")]
    pub filter: Vec<String>,
    /// The baseline binary, when the one the report names has moved.
    #[arg(long, value_name = "PATH")]
    pub baseline_bin: Option<PathBuf>,
    /// Ops each instruction fork counts [default: the report's --instr-ops, else 1000, or 20
    /// for workloads that reset before every op].
    #[arg(long, value_name = "N", value_parser = super::values::at_least_one_u64)]
    pub instr_ops: Option<u64>,
    /// Also simulate the caches and the branch predictor (callgrind's --cache-sim=yes
    /// --branch-sim=yes): L1 and last-level misses and mispredicted branches per op, per build.
    #[arg(long)]
    pub cache_sim: bool,
    /// Functions shown in each list.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
    /// Where the flame graphs and the dumps go [default: beside the report, REPORT.explain/].
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Print the explanation as JSON.
    #[arg(long)]
    pub json: bool,
    /// PostgreSQL server for `db=postgres` cases.
    #[arg(long, env = "DATABASE_URL", value_name = "URL", default_value = workloads::def::DEFAULT_DATABASE_URL, hide_env_values = true, value_parser = crate::server_url::postgres)]
    pub database_url: String,
    /// Redis server for Redis cases.
    #[arg(long, env = "REDIS_URL", value_name = "URL", default_value = workloads::redis::DEFAULT_REDIS_URL, hide_env_values = true, value_parser = crate::server_url::redis)]
    pub redis_url: String,
}

/// `--ops N` or `--ops BASE,NEW`, each at least one.
fn ops_pair(text: &str) -> Result<(u64, u64), String> {
    let one = |t: &str| match t.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("'{t}' is not a count of ops: give a whole number of at least 1, or BASE,NEW")),
    };
    match text.split_once(',') {
        Some((b, n)) => Ok((one(b)?, one(n)?)),
        None => one(text).map(|n| (n, n)),
    }
}
