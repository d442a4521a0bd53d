//! `harness run`'s command line (also flattened into `harness ab`).

use super::SelectArgs;
use super::values::{
    at_least_one, at_least_one_u64, at_least_two, count, duration, fork_count, percentage, probability, rate,
    thread_count,
};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// `harness run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Selection.
    #[command(flatten)]
    pub select: SelectArgs,
    /// Fresh worker processes per case [default: 1; 5 pairs with --baseline-bin]; `auto` (A/B
    /// runs only) adds fork pairs until each case is decided or --max-forks is reached.
    #[arg(long, env = "HARNESS_FORKS", value_name = "N|auto", value_parser = fork_count, allow_negative_numbers = true)]
    pub forks: Option<ForkCount>,
    /// With --forks auto: fork pairs before the first look [default: 5].
    #[arg(long, value_name = "N", value_parser = at_least_two)]
    pub min_forks: Option<u32>,
    /// With --forks auto: the budget of fork pairs per case [default: 30].
    #[arg(long, value_name = "N", value_parser = at_least_two)]
    pub max_forks: Option<u32>,
    /// A/B runs: ratios within ±PCT% are "no change"; with --forks auto, the band a case's
    /// interval must clear (or fall inside) to be decided.
    #[arg(long, value_name = "PCT", default_value_t = 1.0, value_parser = percentage)]
    pub noise_band: f64,
    /// A/B runs with --rate: the percentile of the corrected open-loop latency compared.
    #[arg(long, value_enum, value_name = "P", default_value = "p99")]
    pub percentile: crate::compare::latency::Percentile,
    /// A/B runs: the false-alarm rate of the comparison (over all looks with --forks auto).
    #[arg(long, value_name = "ALPHA", default_value_t = 0.05, value_parser = probability)]
    pub alpha: f64,
    /// Warmup iterations per fork, not scored [default: the configuration's, else 1].
    #[arg(long, env = "HARNESS_WARMUP", value_name = "N", value_parser = count, allow_negative_numbers = true)]
    pub warmup: Option<u32>,
    /// Measured iterations per fork [default: the configuration's, else 10 in A/B runs, 3 otherwise].
    #[arg(long, env = "HARNESS_ITERATIONS", value_name = "N", value_parser = at_least_one, allow_negative_numbers = true)]
    pub iterations: Option<u32>,
    /// Duration of one measured iteration, e.g. 500ms, 2s [default: the configuration's, else 25ms
    /// in A/B runs (the fork pair is the test's unit: short forks decide sooner), 1s otherwise].
    #[arg(long, env = "HARNESS_TIME", value_name = "DURATION", value_parser = duration)]
    pub time: Option<Duration>,
    /// Duration of one warmup iteration [default: the configuration's, else --time, else 50ms in
    /// A/B runs, 1s otherwise].
    #[arg(long, env = "HARNESS_WARMUP_TIME", value_name = "DURATION", value_parser = duration)]
    pub warmup_time: Option<Duration>,
    /// Kill a fork still running after this long [default: 60s + 3 x its planned iteration time].
    #[arg(long, env = "HARNESS_FORK_TIMEOUT", value_name = "DURATION", value_parser = duration)]
    pub fork_timeout: Option<Duration>,
    /// Report path [default: target/harness/CONFIG-TIMESTAMP.json].
    #[arg(long, short = 'o', env = "HARNESS_OUT", value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// PostgreSQL server for `db=postgres` cases.
    #[arg(long, env = "DATABASE_URL", value_name = "URL", default_value = workloads::def::DEFAULT_DATABASE_URL, hide_env_values = true, value_parser = crate::server_url::postgres)]
    pub database_url: String,
    /// Add one fork per case that counts instructions per op under valgrind's callgrind
    /// (exact and repeatable; every thread of the worker counted).
    #[arg(long)]
    pub instructions: bool,
    /// Ops counted by an instruction fork [default: 1000, or 20 for workloads that reset before every op].
    #[arg(long, value_name = "N", value_parser = at_least_one_u64, requires = "instructions")]
    pub instr_ops: Option<u64>,
    /// Instruction forks per case with --instructions (more than one shows the spread of
    /// workloads that are not deterministic).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = at_least_one, allow_negative_numbers = true, requires = "instructions")]
    pub instr_forks: u32,
    /// Keep each instruction fork's callgrind output in DIR (`callgrind_annotate` reads it), named
    /// after the case and fork.
    #[arg(long, value_name = "DIR", requires = "instructions")]
    pub callgrind_dir: Option<PathBuf>,
    /// With --instructions: also simulate the caches and the branch predictor (callgrind's
    /// --cache-sim=yes --branch-sim=yes), so the kept dumps carry L1 and last-level misses and
    /// mispredicted branches (`harness explain` shows them per op). Slower under valgrind.
    #[arg(long, requires = "instructions")]
    pub cache_sim: bool,
    /// Add one fork per case that counts, per op, the round trips, bytes, messages and
    /// statements between the worker and its servers, through counting relays on loopback
    /// (never timed: the relay adds a hop). `compare --metric io` gates on the counts.
    #[arg(long)]
    pub io: bool,
    /// Ops counted by an I/O fork [default: 1000, or 20 for workloads that reset before every op].
    #[arg(long, value_name = "N", value_parser = at_least_one_u64, requires = "io")]
    pub io_ops: Option<u64>,
    /// Count allocations and bytes per op in the timed forks (a counting global allocator).
    #[arg(long)]
    pub alloc: bool,
    /// A/B run: alternate every fork with one of this other harness build (A B A B ...), for
    /// example the target branch built in another worktree; the comparison is printed at the end.
    #[arg(long, value_name = "PATH")]
    pub baseline_bin: Option<PathBuf>,
    /// A/B runs: relink each build K times with its functions reordered (seeds 1..=K) and run
    /// fork pair j on variant j mod K + 1 of both, the variant being the test's unit, so that a
    /// verdict holds across code layouts (`harness ab` builds the links; `run` needs a
    /// BINARY.link.tar beside each binary). With --forks auto, K must be at least --max-forks.
    #[arg(long, value_name = "K", value_parser = at_least_two)]
    pub layouts: Option<u32>,
    /// A/B runs: count both builds' instructions per op (one callgrind fork each) for every case
    /// the timed pairs call faster or slower, so that a difference whose instructions did not
    /// change is labelled `(same instructions: layout?)`; `auto` does it where valgrind is on PATH.
    #[arg(long, value_enum, value_name = "WHEN", default_value = "auto")]
    pub layout_check: LayoutCheckMode,
    /// A/B runs: `iterations` runs each fork pair side by side and alternates their iterations
    /// (one worker measures at a time), so the machine's drift weighs on both builds alike;
    /// `forks` runs one fork of the pair after the other.
    #[arg(long, value_enum, default_value = "iterations", requires = "baseline_bin")]
    pub interleave: Interleave,
    /// Pin every worker to these CPUs (sched_setaffinity), e.g. 1 or 0,2-3.
    #[arg(long, value_name = "CPUS", value_parser = crate::pin::parse_cpus)]
    pub pin: Option<crate::pin::CpuList>,
    /// Measuring threads (blocking workloads) or tasks (async workloads) per fork; a list such
    /// as 1,4,16 makes it a dimension of the case matrix.
    #[arg(long, value_name = "N[,N...]", value_delimiter = ',', value_parser = thread_count, default_value = "1")]
    pub threads: Vec<u32>,
    /// `throughput` (ops/s) or `sample` (also time individual ops into latency percentiles).
    #[arg(long, value_enum, default_value = "throughput")]
    pub mode: Mode,
    /// Open loop: start each op at its scheduled time, OPS per second per fork (shared by its
    /// measurers), and time it from that intended start (coordinated omission corrected); a
    /// list such as 1k,5k makes it a dimension of the case matrix; a share such as 50%,80%
    /// is of the case's own closed-loop ops/s, measured first in the same run (the
    /// latency–throughput curve). Instruction and I/O forks count per op and run closed-loop.
    #[arg(long, visible_alias = "rates", value_name = "OPS|PCT%[,...]", value_delimiter = ',', value_parser = rate)]
    pub rate: Vec<crate::rate::Load>,
    /// With --rate: how ops arrive, `poisson` (exponential gaps, as independent clients
    /// arrive) or `constant` (one every 1/OPS seconds, as wrk2 sends them).
    #[arg(long, value_enum, default_value = "poisson", requires = "rate")]
    pub arrivals: ArrivalsArg,
    /// Run one deterministic, balanced share of the cases (K of N), e.g. on one runner of a CI
    /// matrix; join the parts with `harness merge`.
    #[arg(long, value_name = "K/N", value_parser = crate::shard::parse)]
    pub shard: Option<crate::shard::Shard>,
    /// No progress output; failures, warnings and the summary are still printed. Twice (`-qq`):
    /// no summary either, stdout stays empty (the report holds it all).
    #[arg(long, short = 'q', action = clap::ArgAction::Count)]
    pub quiet: u8,
}

impl RunArgs {
    /// `-q`: no progress output.
    pub fn quiet(&self) -> bool {
        self.quiet > 0
    }

    /// `-qq`: no summary on stdout either.
    pub fn silent(&self) -> bool {
        self.quiet > 1
    }
}

/// Whether an A/B run counts the instructions of its decided cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LayoutCheckMode {
    /// Where valgrind is on PATH (a note says so where it is not).
    Auto,
    /// Never.
    Off,
}

/// `--interleave`: what alternates between the two builds of an A/B run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Interleave {
    /// Iterations: each fork pair runs side by side in lockstep.
    Iterations,
    /// Whole forks: one fork of the pair, then the other.
    Forks,
}

/// `--forks`: a number, or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForkCount {
    /// This many forks (fork pairs in A/B runs).
    Fixed(u32),
    /// Fork pairs until decided (A/B runs).
    Auto,
}

/// `--arrivals`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ArrivalsArg {
    /// Exponential gaps between ops (the default).
    Poisson,
    /// Even gaps.
    Constant,
}

/// What a timed fork measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Ops per second over each iteration.
    Throughput,
    /// Throughput, plus the latency of individual ops (or small groups) as percentiles.
    Sample,
}
