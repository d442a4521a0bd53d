//! The subcommands, one small function each (`run` in [`measure`], `compare` in
//! [`compare`]). Everything is checked before anything is measured.

mod ab;
mod bisect;
mod compare;
mod explain;
mod history;
mod measure;

use crate::cli::{Cli, Command, EnvArgs, ListArgs, SelectArgs};
use crate::error::{BadInput, Classify, Exit};
use crate::plan::{self, Case, Configuration, ParamOverride, Selection};
use crate::report::read::read_report;
use crate::report::{Report, write};
use std::process::ExitCode;

/// The exit a command's error ends it with: an interrupt's; else bad input and each layer's
/// typed error say their own; anything else is a failure.
pub fn exit_of(error: &anyhow::Error) -> Exit {
    if crate::interrupt::requested() {
        // Whatever else went wrong after it, the user stopped the command.
        return Exit::Interrupted;
    }
    for cause in error.chain() {
        if cause.downcast_ref::<BadInput>().is_some() {
            return Exit::BadInput;
        }
        if let Some(e) = cause.downcast_ref::<crate::callgrind::DumpError>() {
            return e.exit();
        }
        if let Some(e) = cause.downcast_ref::<crate::child::ChildError>() {
            return e.exit();
        }
        if let Some(e) = cause.downcast_ref::<crate::history::store::StoreError>() {
            return e.exit();
        }
    }
    Exit::Failed
}

/// Runs one parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    crate::format::set_colour(cli.color.is_on());
    match cli.command {
        Command::List(args) => list(&args),
        Command::Run(args) => measure::run_benchmarks(&args, None),
        Command::Ab(args) => ab::ab(*args),
        Command::Env(args) => env(&args),
        Command::Compare(args) => compare::compare(&args),
        Command::Explain(args) => explain::explain(&args),
        Command::Bisect(args) => bisect::bisect(&args),
        Command::Noise(args) => noise(&args),
        Command::Export(args) => export(&args),
        Command::Docs(args) => docs(&args),
        Command::Merge(args) => merge(&args),
        Command::History(args) => history::history(&args),
        Command::Completions(args) => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(args.shell, &mut command, "harness", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn export(args: &crate::cli::ExportArgs) -> anyhow::Result<ExitCode> {
    use crate::metric::Metric;
    if args.metric.is_some() && args.format != crate::export::Format::Gab {
        return Err(BadInput("--metric picks the series of --format gab: drop it, or use --format gab".into()).into());
    }
    let report = one_side(read_report(&args.report, "the")?, args)?;
    let metric = args.metric.unwrap_or(Metric::Throughput);
    metric.check_recorded(&report, &args.report)?;
    let report =
        Report { benchmarks: report.benchmarks.iter().flat_map(crate::report::growth::per_step).collect(), ..report };
    let text = crate::export::exporter(args.format, metric).export(&report)?;
    match &args.out {
        Some(path) => {
            write::check_flag_writable("--out", path)?;
            write::write_bytes_atomic(path, text.as_bytes())?;
        }
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// The build of an A/B report that `--side` names, as a plain report; a plain report as it is.
/// An A/B report without `--side` is refused: exporting one build silently drops the other.
fn one_side(mut report: Report, args: &crate::cli::ExportArgs) -> Result<Report, BadInput> {
    use crate::cli::ExportSide;
    let ab = report.is_ab() || report.meta.baseline.is_some();
    let shown = args.report.display();
    match (ab, args.side) {
        (true, None) => Err(BadInput(format!(
            "{shown} is an A/B report of two builds: pass --side new (the build that ran it) or --side base (its baseline) to export one of them whole"
        ))),
        (false, Some(_)) => {
            Err(BadInput(format!("--side picks a build of an A/B report, and {shown} has one build: drop --side")))
        }
        (false, None) => Ok(report),
        (true, Some(side)) => {
            let baseline = side == ExportSide::Base;
            report.benchmarks = report.benchmarks.iter().map(|b| b.one_build(baseline)).collect();
            Ok(report)
        }
    }
}

fn docs(args: &crate::cli::DocsArgs) -> anyhow::Result<ExitCode> {
    let reports = args
        .reports
        .iter()
        .map(|p| Ok((p.display().to_string(), read_report(p, "the")?)))
        .collect::<Result<Vec<_>, BadInput>>()?;
    write::out_dir(&args.out_dir, "README.md")?;
    let intro = match &args.intro {
        Some(p) => std::fs::read_to_string(p)
            .map_err(|e| BadInput(format!("cannot read --intro {}: {e}; pass a Markdown file", p.display())))?,
        None => String::new(),
    };
    let explanations = args.reports.iter().map(|p| explained_beside(p)).collect::<Result<Vec<_>, BadInput>>()?;
    let files = crate::page::render(&reports, &intro, &explanations.into_iter().flatten().collect::<Vec<_>>())?;
    for (name, text) in &files {
        let path = args.out_dir.join(name);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
        }
        write::write_bytes_atomic(&path, text.as_bytes())?;
    }
    say!("wrote {} file(s) to {}", files.len(), args.out_dir.display());
    Ok(ExitCode::SUCCESS)
}

/// What `harness explain` wrote beside a report (`REPORT.explain/explain.json` and its flame
/// graphs), if it did.
fn explained_beside(report: &std::path::Path) -> Result<Option<crate::page::explained::Explanation>, BadInput> {
    let dir = explain::beside(report);
    let index = dir.join("explain.json");
    if !index.is_file() {
        return Ok(None);
    }
    let bad = |e: String| {
        BadInput(format!("{}: {e}; run `harness explain` on the report again, or delete it", index.display()))
    };
    let text = std::fs::read_to_string(&index).map_err(|e| bad(e.to_string()))?;
    let cases: Vec<crate::explain::Explained> = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let mut graphs = vec![];
    for name in cases.iter().flat_map(|c| &c.graphs).filter_map(|g| g.rsplit('/').next()) {
        let svg = std::fs::read_to_string(dir.join(name)).map_err(|e| bad(format!("{name}: {e}")))?;
        graphs.push((name.to_string(), svg));
    }
    Ok(Some(crate::page::explained::Explanation { source: dir.display().to_string(), cases, graphs }))
}

fn merge(args: &crate::cli::MergeArgs) -> anyhow::Result<ExitCode> {
    write::check_flag_writable("--out", &args.out)?;
    let parts = args
        .parts
        .iter()
        .map(|p| Ok((p.display().to_string(), read_report(p, "part")?)))
        .collect::<Result<Vec<_>, BadInput>>()?;
    let merged = crate::shard::merge(parts, args.allow_differences, args.allow_partial)?;
    if !args.force {
        refuse_to_replace(&args.out, &merged)?;
    }
    write::write_atomic(&args.out, &merged)?;
    say!("merged {} part(s), {} case(s) into {}", args.parts.len(), merged.benchmarks.len(), args.out.display());
    Ok(ExitCode::SUCCESS)
}

/// An existing `out` that is not an earlier merge of `merged`'s commit is kept: bad input
/// naming it (`--force` replaces it).
fn refuse_to_replace(out: &std::path::Path, merged: &Report) -> Result<(), BadInput> {
    if !out.exists() {
        return Ok(());
    }
    let why = match read_report(out, "the existing --out") {
        Ok(old) if old.meta.merged.is_some() && old.meta.git.commit == merged.meta.git.commit => return Ok(()),
        Ok(_) => "it is not a merge of this run's commit".to_string(),
        Err(BadInput(e)) => e,
    };
    Err(BadInput(format!(
        "--out {} exists and would be replaced ({why}): choose another path, or pass --force to replace it",
        out.display()
    )))
}

fn noise(args: &crate::cli::NoiseArgs) -> anyhow::Result<ExitCode> {
    let report = read_report(&args.report, "the")?;
    let precision = args.precision / 100.0;
    let cases = crate::noise::diagnose_all(&report, precision);
    if cases.is_empty() {
        return Err(BadInput(format!(
            "{} has no case with ok timed iterations: nothing to diagnose",
            args.report.display()
        ))
        .into());
    }
    print!("{}", crate::noise::render(&cases, precision));
    print!("{}", crate::noise::render_system(&report));
    Ok(ExitCode::SUCCESS)
}

/// What `list` and `run` select.
pub(super) struct Selected {
    /// The first configuration; all selected ones share its setting defaults.
    config: &'static Configuration,
    /// The name to record, e.g. `cache+redis`.
    name: String,
    /// The `-p` overrides.
    params: Vec<ParamOverride>,
    /// The cases, without duplicates.
    pub(super) cases: Vec<Case>,
}

/// One `-p` per name: a second would silently replace the first.
fn refuse_repeated_params(params: &[ParamOverride]) -> Result<(), BadInput> {
    for (i, p) in params.iter().enumerate() {
        if let Some(first) = params[..i].iter().find(|q| q.name == p.name) {
            let both = [first.values.as_slice(), p.values.as_slice()].concat().join(",");
            return Err(BadInput(format!(
                "-p {} is given twice ({} and {}): give it once, with every value, e.g. -p {}={both}",
                p.name, first.raw, p.raw, p.name
            )));
        }
    }
    Ok(())
}

/// The cases of one or more configurations.
pub(super) fn select(args: &SelectArgs) -> Result<Selected, BadInput> {
    let configs = args.config.iter().map(|c| plan::configuration(c)).collect::<Result<Vec<_>, _>>()?;
    let first = configs[0];
    if let Some(other) = configs.iter().find(|c| c.defaults != first.defaults) {
        return Err(BadInput(format!(
            "configurations '{}' and '{}' have different default settings: run them separately",
            first.name, other.name
        )));
    }
    let params = args
        .params
        .iter()
        .map(|raw| plan::parse_param(raw).map_err(|e| BadInput(format!("invalid -p {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    refuse_repeated_params(&params)?;
    let settings = [("redis_url".to_string(), args.redis_url.clone())].into();
    let mut cases: Vec<Case> = vec![];
    let mut first_error = None;
    for config in &configs {
        let selection =
            Selection { config, filters: &args.filter, hidden: args.hidden, params: &params, settings: &settings };
        match plan::plan(&selection) {
            Ok(found) => {
                for case in found {
                    if !cases.iter().any(|c| c.id() == case.id()) {
                        cases.push(case);
                    }
                }
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if cases.is_empty() {
        return Err(first_error.expect("every configuration was planned"));
    }
    let name = configs.iter().map(|c| c.name).collect::<Vec<_>>().join("+");
    Ok(Selected { config: first, name, params, cases })
}

fn list(args: &ListArgs) -> anyhow::Result<ExitCode> {
    let cases = select(&args.select)?.cases;
    if args.json {
        let rows: Vec<serde_json::Value> = cases
            .iter()
            .map(|c| {
                let ctx = workloads::SetupContext::new(c.params.clone());
                let servers: Vec<&str> = (c.def.servers)(&ctx).iter().map(|(s, _)| s.name()).collect();
                serde_json::json!({
                    "label": c.id().to_string(),
                    "workload": c.def.name,
                    "params": c.id().params(),
                    "threads": c.threads(),
                    "servers": servers,
                    "about": c.def.about,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    let width = cases.iter().map(|c| c.id().to_string().len()).max().unwrap_or(0);
    for case in &cases {
        println!("{:<width$}  {}", case.id().to_string(), case.def.about);
    }
    Ok(ExitCode::SUCCESS)
}

fn env(args: &EnvArgs) -> anyhow::Result<ExitCode> {
    let meta = crate::machine::collect_meta(None, None);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&meta)?);
        return Ok(ExitCode::SUCCESS);
    }
    let lines = [
        ("harness", meta.harness_version.clone()),
        ("protocol", meta.protocol_version.to_string()),
        ("commit", meta.git.commit.clone().unwrap_or_else(|| "unknown".into())),
        ("dirty", meta.git.dirty.map_or("unknown".into(), |d| d.to_string())),
        ("built", meta.git.built_at.clone().unwrap_or_else(|| "unknown".into())),
        ("rustc", meta.rustc.clone()),
        ("profile", meta.build_profile.clone()),
        ("target", meta.target.clone()),
        ("os", format!("{} (kernel {}, {})", meta.os.name, meta.os.kernel, meta.os.arch)),
        (
            "cpu",
            format!(
                "{} ({} logical, {} available)",
                meta.cpu.model, meta.cpu.logical_cpus, meta.cpu.available_parallelism
            ),
        ),
        ("cgroup cpu", meta.cgroup.cpu_quota.clone()),
        ("cgroup memory", meta.cgroup.memory_limit.clone()),
        ("load average", meta.load_average_start.map_or("unknown".into(), |l| format!("{} {} {}", l[0], l[1], l[2]))),
    ];
    for (k, v) in lines {
        println!("{k:<14} {v}");
    }
    Ok(ExitCode::SUCCESS)
}
