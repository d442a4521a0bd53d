//! The subcommands: `list`, `run` and `env`. Everything is checked before anything is measured.

use crate::cli::{Cli, Command, EnvArgs, ForkCount, ListArgs, RunArgs, SelectArgs};
use crate::plan::{self, Case, Configuration, ParamOverride, Selection};
use crate::progress::Progress;
use crate::report::meta::{RunSettings, SequentialSettings};
use crate::report::{CaseSettings, Meta, Report, RunStatus, SCHEMA_VERSION, write};
use crate::runner::{self, InstructionSettings, RunContext};
use crate::stats::sequential::SequentialPlan;
use crate::{BadInput, EXIT_FAILED, EXIT_INTERRUPTED, summary};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Runs one parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    crate::format::set_colour(cli.color);
    match cli.command {
        Command::List(args) => list(&args),
        Command::Run(args) => run_benchmarks(&args),
        Command::Ab(args) => ab(*args),
        Command::Env(args) => env(&args),
        Command::Compare(args) => crate::gate::compare(&args),
        Command::Noise(args) => noise(&args),
        Command::Export(args) => export(&args),
        Command::Docs(args) => docs(&args),
        Command::Merge(args) => merge(&args),
        Command::Completions(args) => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(args.shell, &mut command, "harness", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Reads a report file; a missing or foreign file is bad input naming it.
pub(crate) fn read_report(path: &std::path::Path, which: &str) -> Result<Report, BadInput> {
    let shown = path.display();
    let text =
        std::fs::read_to_string(path).map_err(|e| BadInput(format!("cannot read {which} report {shown}: {e}")))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        BadInput(format!("{which} report {shown} is not JSON ({e}): pass a JSON report written by `harness run`"))
    })?;
    match value.get("schema_version").and_then(serde_json::Value::as_u64) {
        Some(v) if v == u64::from(SCHEMA_VERSION) => {}
        Some(v) => {
            return Err(BadInput(format!(
                "{which} report {shown} has schema version {v}; this harness reads version {SCHEMA_VERSION} only: read it with the harness that wrote it, or measure again"
            )));
        }
        None => {
            return Err(BadInput(format!(
                "{which} report {shown} is not a harness report (it has no schema_version): pass a JSON report written by `harness run`"
            )));
        }
    }
    serde_json::from_value(value).map_err(|e| {
        BadInput(format!(
            "{which} report {shown} says schema version {SCHEMA_VERSION} but does not have its shape ({e}): it was edited or cut short; measure again"
        ))
    })
}

fn export(args: &crate::cli::ExportArgs) -> anyhow::Result<ExitCode> {
    use crate::compare::Metric;
    if args.metric.is_some() && args.format != crate::export::Format::Gab {
        return Err(BadInput("--metric picks the series of --format gab: drop it, or use --format gab".into()).into());
    }
    let report = read_report(&args.report, "the")?;
    let metric = args.metric.unwrap_or(Metric::Throughput);
    if metric == Metric::Instructions && report.benchmarks.iter().all(|b| b.instructions.is_none()) {
        return Err(BadInput(format!(
            "{} has no instruction counts: make it with `harness run --instructions`",
            args.report.display()
        ))
        .into());
    }
    let text = crate::export::exporter(args.format, metric).export(&report)?;
    match &args.out {
        Some(path) => {
            write::check_writable(path).map_err(|e| {
                BadInput(format!("cannot write --out '{}': {e}; choose a writable path", path.display()))
            })?;
            write::write_bytes_atomic(path, text.as_bytes())?;
        }
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

fn docs(args: &crate::cli::DocsArgs) -> anyhow::Result<ExitCode> {
    let reports = args
        .reports
        .iter()
        .map(|p| Ok((p.display().to_string(), read_report(p, "the")?)))
        .collect::<Result<Vec<_>, BadInput>>()?;
    std::fs::create_dir_all(&args.out_dir)
        .map_err(|e| e.to_string())
        .and_then(|()| write::check_writable(&args.out_dir.join("README.md")))
        .map_err(|e| {
            BadInput(format!(
                "cannot write to --out-dir '{}': {e}; choose a writable directory",
                args.out_dir.display()
            ))
        })?;
    let intro = match &args.intro {
        Some(p) => std::fs::read_to_string(p)
            .map_err(|e| BadInput(format!("cannot read --intro {}: {e}; pass a Markdown file", p.display())))?,
        None => String::new(),
    };
    let files = crate::docs::render(&reports, &intro)?;
    for (name, text) in &files {
        write::write_bytes_atomic(&args.out_dir.join(name), text.as_bytes())?;
    }
    eprintln!("wrote {} file(s) to {}", files.len(), args.out_dir.display());
    Ok(ExitCode::SUCCESS)
}

fn merge(args: &crate::cli::MergeArgs) -> anyhow::Result<ExitCode> {
    write::check_writable(&args.out)
        .map_err(|e| BadInput(format!("cannot write --out '{}': {e}; choose a writable path", args.out.display())))?;
    let parts = args
        .parts
        .iter()
        .map(|p| Ok((p.display().to_string(), read_report(p, "part")?)))
        .collect::<Result<Vec<_>, BadInput>>()?;
    let merged = crate::shard::merge(parts, args.force)?;
    write::write_atomic(&args.out, &merged)?;
    eprintln!("merged {} part(s), {} case(s) into {}", args.parts.len(), merged.benchmarks.len(), args.out.display());
    Ok(ExitCode::SUCCESS)
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
struct Selected {
    /// The first configuration; all selected ones share its setting defaults.
    config: &'static Configuration,
    /// The name to record, e.g. `cache+redis`.
    name: String,
    /// The `-p` overrides.
    params: Vec<ParamOverride>,
    /// The cases, without duplicates.
    cases: Vec<Case>,
}

/// The cases of one or more configurations.
fn select(args: &SelectArgs) -> Result<Selected, BadInput> {
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
    let settings = [("redis_url".to_string(), args.redis_url.clone())].into();
    let mut cases: Vec<Case> = vec![];
    let mut first_error = None;
    for config in &configs {
        let selection =
            Selection { config, filters: &args.filter, hidden: args.hidden, params: &params, settings: &settings };
        match plan::plan(&selection) {
            Ok(found) => {
                for case in found {
                    if !cases.iter().any(|c| c.label() == case.label()) {
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
                    "label": crate::redact::redact(&c.label()),
                    "workload": c.def.name,
                    "params": c.params_redacted(),
                    "threads": c.threads,
                    "servers": servers,
                    "about": c.def.about,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    let width = cases.iter().map(|c| c.label().len()).max().unwrap_or(0);
    for case in &cases {
        println!("{:<width$}  {}", case.label(), case.def.about);
    }
    Ok(ExitCode::SUCCESS)
}

/// `harness ab REF`: builds (or reuses) REF's harness and runs this build against it.
fn ab(mut args: crate::cli::AbArgs) -> anyhow::Result<ExitCode> {
    if args.run.baseline_bin.is_some() {
        return Err(BadInput(
            "harness ab builds its baseline from REF: drop --baseline-bin, or use `harness run --baseline-bin PATH`"
                .into(),
        )
        .into());
    }
    let baseline = crate::ab::prepare(&args.rev, args.run.quiet)?;
    if !args.run.quiet {
        let how = if baseline.built { "built" } else { "reusing the build of" };
        eprintln!("harness ab: baseline {} = {how} {}", args.rev, baseline.binary.display());
    }
    if crate::report::meta::build_git().dirty == Some(true) {
        eprintln!(
            "warning: this build (the candidate) was made from uncommitted changes; its report records dirty: true"
        );
    }
    args.run.baseline_bin = Some(baseline.binary);
    run_benchmarks(&args.run)
}

fn env(args: &EnvArgs) -> anyhow::Result<ExitCode> {
    let meta = Meta::collect(None, None);
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

/// Fork pairs of an A/B run when `--forks` is not given: enough for the paired test to answer.
const DEFAULT_AB_FORKS: u32 = 5;
/// `--min-forks` and `--max-forks` when not given.
const DEFAULT_AUTO_FORKS: (u32, u32) = (5, 30);

/// `--forks auto`: the recorded budget and the plan its looks test by.
type Sequential = (SequentialSettings, SequentialPlan);

/// The forks per case (the budget with `--forks auto`) and the sequential plan, checked.
fn forks(args: &RunArgs) -> Result<(u32, Option<Sequential>), BadInput> {
    let ab = args.baseline_bin.is_some();
    if args.forks != Some(ForkCount::Auto) && (args.min_forks.is_some() || args.max_forks.is_some()) {
        return Err(BadInput("--min-forks and --max-forks set the budget of --forks auto: add --forks auto".into()));
    }
    match args.forks {
        Some(ForkCount::Auto) if !ab => Err(BadInput(
            "--forks auto adds fork pairs until an A/B comparison is decided: add --baseline-bin PATH, or give --forks a number"
                .into(),
        )),
        Some(ForkCount::Auto) => {
            let min_forks = args.min_forks.unwrap_or(DEFAULT_AUTO_FORKS.0);
            let max_forks = args.max_forks.unwrap_or(DEFAULT_AUTO_FORKS.1);
            if max_forks < min_forks {
                return Err(BadInput(format!(
                    "--max-forks {max_forks} is below --min-forks {min_forks}: raise --max-forks"
                )));
            }
            let plan = SequentialPlan::new(args.alpha, min_forks as usize, max_forks as usize);
            let settings = SequentialSettings {
                min_forks,
                max_forks,
                alpha: args.alpha,
                nominal_alpha: plan.nominal_alpha,
                noise_band_pct: args.noise_band,
            };
            Ok((max_forks, Some((settings, plan))))
        }
        Some(ForkCount::Fixed(n)) => Ok((n, None)),
        None if ab => Ok((DEFAULT_AB_FORKS, None)),
        None => Ok((plan::DEFAULT_FORKS, None)),
    }
}

/// Resolves settings: flag (or HARNESS_* env) first, then the configuration, then release defaults.
fn settings(args: &RunArgs, config: &Configuration, forks: u32) -> CaseSettings {
    let d = &config.defaults;
    let time = args.time.or(d.time).unwrap_or(plan::DEFAULT_TIME);
    let warmup_time = args.warmup_time.or(d.warmup_time).unwrap_or(time);
    let warmup_iterations = args.warmup.or(d.warmup_iterations).unwrap_or(plan::DEFAULT_WARMUP);
    let iterations = args.iterations.or(d.iterations).unwrap_or(plan::DEFAULT_ITERATIONS);
    let planned = warmup_time * warmup_iterations + time * iterations;
    let fork_timeout = args.fork_timeout.unwrap_or(Duration::from_secs(60) + planned * 3);
    CaseSettings {
        forks,
        warmup_iterations,
        warmup_nanos: nanos(warmup_time),
        iterations,
        iteration_nanos: nanos(time),
        fork_timeout_nanos: nanos(fork_timeout),
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn default_out(config: &str) -> PathBuf {
    let stamp: String = crate::report::meta::now_rfc3339().chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    PathBuf::from("target/harness").join(format!("{config}-{stamp}.json"))
}

/// The valgrind executable on PATH, for `--instructions`.
fn find_valgrind() -> Result<PathBuf, BadInput> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|dir| dir.join("valgrind"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            BadInput(
                "--instructions needs valgrind (callgrind), which is not on PATH: install it (apt-get install valgrind) or drop --instructions"
                    .into(),
            )
        })
}

/// Every case once per `--threads` value; refuses workloads that cannot share their state.
fn with_threads(cases: Vec<Case>, threads: &[u32]) -> Result<Vec<Case>, BadInput> {
    let mut counts: Vec<u32> = vec![];
    for &n in threads {
        if !counts.contains(&n) {
            counts.push(n);
        }
    }
    if let Some(&n) = counts.iter().find(|&&n| n > 1)
        && let Some(case) = cases.iter().find(|c| !c.def.shareable)
    {
        return Err(BadInput(format!(
            "--threads {n}: {} cannot share its state between measuring threads (it resets shared state before every op): run it with --threads 1 or leave it out with --filter",
            case.def.name
        )));
    }
    Ok(cases.into_iter().flat_map(|c| counts.iter().map(move |&threads| Case { threads, ..c.clone() })).collect())
}

fn run_benchmarks(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let Selected { config, name: config_name, params, cases } = select(&args.select)?;
    let cases = with_threads(cases, &args.threads)?;
    crate::preflight::check_urls(&cases, &args.database_url)?;
    let (fork_count, sequential) = forks(args)?;
    let settings = settings(args, config, fork_count);
    let cases = shard_cases(cases, args.shard, &settings);
    let out = args.out.clone().unwrap_or_else(|| default_out(&config_name));
    write::check_writable(&out)
        .map_err(|e| BadInput(format!("cannot write --out '{}': {e}; choose a writable path", out.display())))?;
    let worker_exe = std::env::current_exe()?;
    let baseline = args.baseline_bin.as_deref().map(runner::baseline::probe).transpose()?;
    if let Some(pin) = &args.pin {
        pin.check_available().map_err(BadInput)?;
    }
    let instructions = match args.instructions {
        true => Some(InstructionSettings { valgrind: find_valgrind()?, ops: args.instr_ops, forks: args.instr_forks }),
        false => None,
    };

    let stop = stop_on_signals()?;
    let sides = if baseline.is_some() { 2 } else { 1 };
    let forks_per_case = u64::from(settings.forks) * sides + instructions.as_ref().map_or(0, |i| u64::from(i.forks));
    let progress = Progress::new(args.quiet, cases.len() as u64 * forks_per_case);
    if baseline.is_some() && fork_count < 2 {
        progress.warn(&format!(
            "--forks {fork_count} with --baseline-bin: one fork pair cannot be tested, the comparison will not answer; use --forks 5 (2 at the very least) or --forks auto"
        ));
    }
    if cfg!(debug_assertions) {
        progress.warn(
            "this is a DEBUG build: its numbers are meaningless. Use `cargo run --release -p harness -- run ...`",
        );
    }
    let run_settings = RunSettings {
        params: params.iter().map(|p| p.raw.clone()).collect(),
        baseline_bin: baseline.as_ref().map(|b| b.path.clone()),
        sequential: sequential.as_ref().map(|s| s.0.clone()),
        ..run_settings(args, &settings)
    };
    let report = Report {
        schema_version: SCHEMA_VERSION,
        status: RunStatus::Running,
        meta: Meta { baseline: baseline.clone(), ..Meta::collect(Some(config_name), Some(run_settings)) },
        benchmarks: vec![],
    };
    for w in crate::report::system::warnings(&report.meta) {
        if !w.starts_with("debug build") {
            progress.warn(&w);
        }
    }
    let database_url = args.database_url.clone();
    let ctx = RunContext {
        worker_exe,
        baseline_exe: args.baseline_bin.clone(),
        lockstep: args.interleave == crate::cli::Interleave::Iterations,
        pin: args.pin.clone(),
        out: &out,
        settings,
        database_url,
        count_allocations: args.alloc,
        sample: args.mode == crate::cli::Mode::Sample,
        instructions,
        sequential: sequential.map(|(s, plan)| (plan, s.noise_band_pct / 100.0)),
        stop: &stop,
    };
    let skipped = crate::preflight::check(&cases, &args.database_url);
    let report = runner::run(&cases, &skipped, report, &ctx, &progress)?;

    Ok(finish(args, &report, &out))
}

/// Prints the summary, the noise report, warnings and (A/B runs) the comparison; the exit code.
fn finish(args: &RunArgs, report: &Report, out: &std::path::Path) -> ExitCode {
    print!("{}", summary::render(report));
    print!("{}", crate::noise::render(&crate::noise::diagnose_all(report, 0.01), 0.01));
    for w in &report.meta.system.warnings {
        eprintln!("warning: {w}");
    }
    if let Some(path) = &args.baseline_bin {
        use crate::compare::throughput;
        println!("\nA/B: baseline {} (new = this build)", path.display());
        let options = throughput::Options { noise_band_pct: args.noise_band, alpha: args.alpha };
        print!("{}", throughput::render_text(&throughput::compare_sides(report, options)));
    }
    eprintln!("report: {}", out.display());
    match report.status {
        RunStatus::Interrupted => {
            eprintln!("interrupted: the report keeps every finished fork");
            ExitCode::from(EXIT_INTERRUPTED)
        }
        _ if runner::any_failed(report) => ExitCode::from(EXIT_FAILED),
        _ => ExitCode::SUCCESS,
    }
}

/// `--shard K/N`: this runner's share of `cases`, dealt by planned time.
fn shard_cases(cases: Vec<Case>, shard: Option<crate::shard::Shard>, settings: &CaseSettings) -> Vec<Case> {
    let Some(shard) = shard else { return cases };
    let planned = u64::from(settings.forks)
        * (settings.warmup_nanos * u64::from(settings.warmup_iterations)
            + settings.iteration_nanos * u64::from(settings.iterations));
    crate::shard::assign(&vec![planned; cases.len()], shard).into_iter().map(|i| cases[i].clone()).collect()
}

/// Ctrl-C, SIGTERM and SIGHUP set the returned flag; a second signal ends the parent at once
/// (workers die with it: parent-death signal).
fn stop_on_signals() -> anyhow::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register_conditional_shutdown(sig, i32::from(EXIT_INTERRUPTED), Arc::clone(&stop))?;
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    Ok(stop)
}

/// The settings a report records, from the command line and the resolved case settings
/// (the parsed params, the probed baseline and the sequential plan filled in by the caller).
fn run_settings(args: &RunArgs, settings: &CaseSettings) -> RunSettings {
    RunSettings {
        forks: settings.forks,
        warmup_iterations: settings.warmup_iterations,
        warmup_nanos: settings.warmup_nanos,
        iterations: settings.iterations,
        iteration_nanos: settings.iteration_nanos,
        fork_timeout_nanos: settings.fork_timeout_nanos,
        filters: args.select.filter.clone(),
        params: vec![],
        database_url: crate::redact::redact(&args.database_url),
        redis_url: crate::redact::redact(&args.select.redis_url),
        instructions: args.instructions,
        instr_ops: args.instr_ops,
        alloc: args.alloc,
        pin: args.pin.as_ref().map(|p| p.text.clone()),
        threads: args.threads.clone(),
        mode: if args.mode == crate::cli::Mode::Sample { "sample" } else { "throughput" }.into(),
        baseline_bin: None,
        sequential: None,
        shard: args.shard.map(|s| s.to_string()),
        interleave: args
            .baseline_bin
            .as_ref()
            .map(|_| if args.interleave == crate::cli::Interleave::Iterations { "iterations" } else { "forks" }.into()),
    }
}
