//! Command-line interface (clap derive). Every option is documented here; `--help` shows it.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use values::positive_percentage;

mod bisect;
mod compare;
mod explain;
mod history;
mod run;
mod values;

pub(crate) use bisect::BisectArgs;
pub(crate) use compare::CompareArgs;
pub(crate) use explain::ExplainArgs;
pub(crate) use history::{
    DetectFormat, DetectSelect, HistoryAddArgs, HistoryArgs, HistoryCommand, HistoryConfirmArgs, HistoryDetectArgs,
    HistoryDocsArgs, HistoryRunArgs,
};
pub(crate) use run::{ArrivalsArg, ForkCount, Interleave, LayoutCheckMode, Mode, RunArgs};

/// The text under `--help`: the exit codes, and the configurations from the list the runs use.
fn after_help() -> String {
    let configurations: Vec<String> =
        crate::plan::CONFIGURATIONS.iter().map(|c| format!("  {:<7}{}", c.name, c.about)).collect();
    format!("{}\n\nConfigurations:\n{}", crate::error::Exit::table(), configurations.join("\n"))
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
    /// The history of runs: store reports (`add`) and find the commits where a case's figures
    /// changed (`detect`), e.g. `harness history add report.json && harness history detect`.
    #[command(after_help = after_help())]
    History(HistoryArgs),
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
    /// Merge even when the parts' commits, settings or machines differ (recorded in the report).
    #[arg(long)]
    pub allow_differences: bool,
    /// Replace an existing `--out` that is not an earlier merge of the same commit.
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
    pub metric: Option<crate::metric::Metric>,
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

/// `harness env`.
#[derive(Debug, Args)]
pub struct EnvArgs {
    /// Print JSON instead of `key: value` lines.
    #[arg(long)]
    pub json: bool,
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
