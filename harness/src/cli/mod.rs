//! Command-line interface (clap derive). Every option is documented here; `--help` shows it.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;
use values::{
    at_least_one, at_least_one_u64, at_least_two, count, duration, fork_count, percentage, positive_percentage,
    probability, thread_count,
};

mod bisect;
mod explain;
mod values;

pub(crate) use bisect::{BisectArgs, BisectMetric};
pub(crate) use explain::ExplainArgs;

const EXIT_CODES: &str = "\
Exit codes:
  0    every fork of every case finished and passed its checks
  1    a fork or benchmark failed (crash, timeout, failed check); the report keeps the rest
  2    bad input (unknown configuration, filter that matches nothing, bad param, count or duration,
       unwritable --out); nothing was measured
  3    `harness compare` found a regression past its threshold
  4    `harness bisect`: no regression from GOOD to BAD (nothing to find)
  5    `harness bisect`: undecided: the first bad commit is one of a range it names
  130  interrupted (Ctrl-C / SIGTERM); the report keeps every finished fork";

/// The text under `--help`: the exit codes, and the configurations from the list the runs use.
fn after_help() -> String {
    let configurations: Vec<String> =
        crate::plan::CONFIGURATIONS.iter().map(|c| format!("  {:<7}{}", c.name, c.about)).collect();
    format!("{EXIT_CODES}\n\nConfigurations:\n{}", configurations.join("\n"))
}

/// Measures declared persistence workloads, one fresh child process per fork.
#[derive(Debug, Parser)]
#[command(name = "harness", version = crate::machine::long_version(), about, after_help = after_help())]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Colour verdicts: `auto` (on a terminal, unless NO_COLOR is set), `always` or `never`.
    #[arg(long, global = true, value_enum, default_value = "auto", value_name = "WHEN")]
    pub color: ColorChoice,
}

impl Cli {
    /// Whether the command measures (runs forks, writes a report as it goes): a closed pipe
    /// must not kill it mid-run. The others only print, and may end as `head` closes their
    /// output, as Unix tools do.
    pub fn measures(&self) -> bool {
        matches!(self.command, Command::Run(_) | Command::Ab(_) | Command::Explain(_) | Command::Bisect(_))
    }
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

impl ColorChoice {
    /// Whether verdicts are coloured: decided once, here at the edge (`NO_COLOR`, whether stdout
    /// is a terminal), so that the formatting code never sees a command-line type.
    pub(crate) fn is_on(self) -> bool {
        use std::io::IsTerminal;
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => !no_color && std::io::stdout().is_terminal(),
        }
    }
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the benchmark cases of a configuration, with their params.
    List(ListArgs),
    /// Measure the benchmark cases of a configuration and write a JSON report.
    #[command(after_help = after_help())]
    Run(Box<RunArgs>),
    /// Build REF (a branch, tag or commit of the repository in the current directory) and run
    /// an A/B comparison of it (the baseline) against this build, e.g. `harness ab main -f '^cache/'`.
    #[command(after_help = after_help())]
    Ab(Box<AbArgs>),
    /// Print the environment metadata a report records.
    Env(EnvArgs),
    /// Compare two reports case by case (or the two builds of one A/B report).
    #[command(after_help = after_help())]
    Compare(CompareArgs),
    /// Why two builds differ: per op, the instructions each function, component and statement
    /// gained or lost, from an instruction fork of each build, with flame graphs (SVG).
    Explain(Box<ExplainArgs>),
    /// Find the first commit between GOOD and BAD that made a case slower, with a stated
    /// chance of naming a wrong one, e.g. `harness bisect v1.2 main smoke -f '^baseline/busy_loop$' --metric instructions`.
    #[command(after_help = after_help())]
    Bisect(Box<BisectArgs>),
    /// Where a report's noise comes from, per case, and what to change.
    Noise(NoiseArgs),
    /// Export a report for other tools: JMH JSON, Bencher Metric Format, CSV, Markdown or
    /// github-action-benchmark's custom format.
    Export(ExportArgs),
    /// Write a Markdown page with tables and SVG charts from one or more reports.
    Docs(DocsArgs),
    /// Join the reports of `run --shard K/N` parts into one report.
    Merge(MergeArgs),
    /// Print a shell completion script, e.g. `harness completions bash > /etc/bash_completion.d/harness`.
    Completions(CompletionsArgs),
}

/// `harness ab`.
#[derive(Debug, Args)]
pub struct AbArgs {
    /// The baseline's git ref; built with this binary's profile in a worktree under
    /// target/harness/baselines/<commit>/ and reused by the next call for the same commit.
    #[arg(value_name = "REF")]
    pub rev: String,
    /// Everything `harness run` takes (except --baseline-bin).
    #[command(flatten)]
    pub run: RunArgs,
}

/// `harness completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `harness merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The parts, one report per shard.
    #[arg(value_name = "PART.json", required = true)]
    pub parts: Vec<PathBuf>,
    /// The merged report.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: PathBuf,
    /// Merge even when the parts' commits, settings or machines differ (recorded in the report),
    /// and replace an existing `--out` that is not an earlier merge of the same commit.
    #[arg(long)]
    pub force: bool,
    /// Merge the parts given although some of the run's shards are missing (recorded).
    #[arg(long)]
    pub allow_partial: bool,
}

/// `harness export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// A report written by `harness run`.
    #[arg(value_name = "REPORT.json")]
    pub report: PathBuf,
    /// Output format.
    #[arg(long, value_enum)]
    pub format: crate::export::Format,
    /// `--format gab` only: throughput (customBiggerIsBetter) or instructions
    /// (customSmallerIsBetter).
    #[arg(long, value_enum)]
    pub metric: Option<crate::compare::Metric>,
    /// Write here instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// An A/B report holds two builds: export the candidate's forks (`new`, the build that ran
    /// the report) or the baseline's (`base`). Required for A/B reports, refused for others.
    #[arg(long, value_enum, value_name = "BUILD")]
    pub side: Option<ExportSide>,
}

/// `harness export --side`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportSide {
    /// The baseline build (`--baseline-bin`, `ab REF`).
    Base,
    /// The build that ran the report.
    New,
}

/// `harness docs`.
#[derive(Debug, Args)]
pub struct DocsArgs {
    /// Reports written by `harness run`.
    #[arg(value_name = "REPORT.json", required = true)]
    pub reports: Vec<PathBuf>,
    /// Directory for README.md and the charts.
    #[arg(long, value_name = "DIR", default_value = "reports")]
    pub out_dir: PathBuf,
    /// A Markdown file whose text goes right after the page title (how the run was made,
    /// what it does not prove).
    #[arg(long, value_name = "FILE")]
    pub intro: Option<PathBuf>,
}

/// `harness noise`.
#[derive(Debug, Args)]
pub struct NoiseArgs {
    /// A report written by `harness run`.
    #[arg(value_name = "REPORT.json")]
    pub report: PathBuf,
    /// Precision to size the fork count for, in percent of the mean (at 95% confidence).
    #[arg(long, value_name = "PCT", default_value_t = 1.0, value_parser = positive_percentage)]
    pub precision: f64,
}

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
    pub metric: crate::compare::Metric,
    /// Throughput: ratios within ±PCT% are "no change" even when significant.
    #[arg(long, value_name = "PCT", default_value_t = 1.0, value_parser = percentage)]
    pub noise_band: f64,
    /// Throughput: significance level of the fork-level test (the interval is at 1 - ALPHA).
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
    pub same_instructions: SameInstructions,
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

/// Whether an A/B run counts the instructions of its decided cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LayoutCheckMode {
    /// Where valgrind is on PATH (a note says so where it is not).
    Auto,
    /// Never.
    Off,
}

/// What the throughput gate does with a slowdown whose instructions did not change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SameInstructions {
    /// Fail the gate, like any slower case.
    Fail,
    /// Warn on stderr and pass.
    Warn,
}

/// Which cases.
#[derive(Debug, Args)]
pub struct SelectArgs {
    /// Configurations (listed at the end of `harness --help`); several run the union of their
    /// cases.
    #[arg(value_name = "CONFIG", default_value = "main")]
    pub config: Vec<String>,
    /// Keep workloads whose name matches this regular expression (repeatable; any may match).
    #[arg(long, short = 'f', value_name = "PATTERN")]
    pub filter: Vec<String>,
    /// Set a param for the workloads that declare it; several values make several cases.
    #[arg(short = 'p', long = "param", value_name = "NAME=V1,V2")]
    pub params: Vec<String>,
    /// Include hidden fault-injecting workloads (for testing the harness).
    #[arg(long)]
    pub hidden: bool,
    /// Redis server for the `redis` workloads (the default of their `redis_url` param).
    #[arg(long, env = "REDIS_URL", value_name = "URL", default_value = workloads::redis::DEFAULT_REDIS_URL, hide_env_values = true, value_parser = crate::server_url::redis)]
    pub redis_url: String,
}

/// `harness list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Selection.
    #[command(flatten)]
    pub select: SelectArgs,
    /// Print a JSON array of the cases (label, workload, params with passwords redacted, the
    /// servers each needs, what it measures) instead of a table.
    #[arg(long)]
    pub json: bool,
}

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
    /// A/B runs: relink each build K times with its code sections shuffled (seeds 1..=K) and run
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
    /// Run one deterministic, balanced share of the cases (K of N), e.g. on one runner of a CI
    /// matrix; join the parts with `harness merge`.
    #[arg(long, value_name = "K/N", value_parser = crate::shard::parse)]
    pub shard: Option<crate::shard::Shard>,
    /// No progress output (failures and the summary are still printed).
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// `harness env`.
#[derive(Debug, Args)]
pub struct EnvArgs {
    /// Print JSON instead of `key: value` lines.
    #[arg(long)]
    pub json: bool,
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

/// What a timed fork measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Ops per second over each iteration.
    Throughput,
    /// Throughput, plus the latency of individual ops (or small groups) as percentiles.
    Sample,
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn help_lists_every_configuration_from_the_plan() {
        let help = Cli::command().render_long_help().to_string();
        for c in crate::plan::CONFIGURATIONS {
            assert!(help.contains(&format!("{:<7}{}", c.name, c.about)), "{} missing from:\n{help}", c.name);
        }
    }
}
