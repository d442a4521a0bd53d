//! `harness run`: from the command line to the settings, the checks and the runner.

use super::Selected;
use crate::cli::{ForkCount, RunArgs};
use crate::error::{BadInput, Exit};
use crate::layouts::Variants;
use crate::machine::collect_meta;
use crate::plan::{self, Case, Configuration};
use crate::progress::Progress;
use crate::report::meta::{RunSettings, SequentialSettings};
use crate::report::{CaseSettings, Meta, Report, RunStatus, SCHEMA_VERSION, write};
use crate::runner::{self, InstructionSettings, RunContext};
use crate::stats::sequential::SequentialPlan;
use crate::summary;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Fork pairs of an A/B run when `--forks` is not given: enough for the paired test to answer.
const DEFAULT_AB_FORKS: u32 = 5;
/// `--min-forks` and `--max-forks` when not given.
pub(super) const DEFAULT_AUTO_FORKS: (u32, u32) = (5, 30);

/// `--forks auto`: the recorded budget and the plan its looks test by.
type Sequential = (SequentialSettings, SequentialPlan);

/// The forks per case (the budget with `--forks auto`) and the sequential plan of an A/B run
/// (`ab`) or a plain one, checked.
fn forks(args: &RunArgs, ab: bool) -> Result<(u32, Option<Sequential>), BadInput> {
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

/// The layout variants of an A/B run: those `harness ab` prepared, else (`run --baseline-bin B
/// --layouts K`) the links beside both binaries.
fn layout_variants(args: &RunArgs, prepared: Option<Variants>) -> Result<Option<Variants>, BadInput> {
    let (Some(count), None) = (args.layouts, &prepared) else { return Ok(prepared) };
    let Some(baseline) = &args.baseline_bin else {
        return Err(BadInput(format!(
            "--layouts {count} spreads the fork pairs of an A/B run over code layouts: use `harness ab REF --layouts {count}`, or add --baseline-bin PATH"
        )));
    };
    check_layouts(args, count)?;
    let current = std::env::current_exe().map_err(|e| BadInput(format!("--layouts: cannot find this binary: {e}")))?;
    Ok(Some(Variants {
        count,
        baseline: crate::layouts::beside(baseline, "the baseline")?,
        current: crate::layouts::beside(&current, "this build")?,
    }))
}

/// `--layouts K`: with `--forks auto`, every look must test pairs that ran layouts of their
/// own (the sequential plan's level holds for independent pairs), so K covers the budget.
pub(super) fn check_layouts(args: &RunArgs, layouts: u32) -> Result<(), BadInput> {
    match forks(args, true)? {
        (budget, Some(_)) if layouts < budget => Err(BadInput(format!(
            "--layouts {layouts} with --forks auto: every look's pairs must run layouts of their own, so give at least --max-forks ({budget}) layouts, or lower --max-forks"
        ))),
        _ => Ok(()),
    }
}

/// Resolves settings: flag (or HARNESS_* env) first, then the configuration, then (A/B runs)
/// [`plan::AB_DEFAULTS`], then the release defaults. An iteration time given by flag or
/// configuration is also the warmup's unless that is given too.
fn settings(args: &RunArgs, config: &Configuration, forks: u32, ab: bool) -> CaseSettings {
    let d = &config.defaults;
    let a = if ab { plan::AB_DEFAULTS } else { plan::SettingDefaults::default() };
    let given_time = args.time.or(d.time);
    let time = given_time.or(a.time).unwrap_or(plan::DEFAULT_TIME);
    let warmup_time = args.warmup_time.or(d.warmup_time).or(given_time).or(a.warmup_time).unwrap_or(time);
    let warmup_iterations = args.warmup.or(d.warmup_iterations).or(a.warmup_iterations).unwrap_or(plan::DEFAULT_WARMUP);
    let iterations = args.iterations.or(d.iterations).or(a.iterations).unwrap_or(plan::DEFAULT_ITERATIONS);
    let planned = warmup_time * warmup_iterations + time * iterations;
    let fork_timeout = args.fork_timeout.or(d.fork_timeout).unwrap_or(Duration::from_secs(60) + planned * 3);
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
    let stamp: String = crate::machine::now_rfc3339().chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    PathBuf::from("target/harness").join(format!("{config}-{stamp}.json"))
}

/// The valgrind executable on PATH, for `--instructions`.
/// `--instructions` and its options: valgrind found, the `--callgrind-dir` created.
fn instruction_settings(args: &RunArgs) -> Result<Option<InstructionSettings>, BadInput> {
    if !args.instructions {
        return Ok(None);
    }
    if let Some(dir) = &args.callgrind_dir {
        std::fs::create_dir_all(dir).map_err(|e| {
            BadInput(format!("cannot create --callgrind-dir '{}': {e}; choose a writable directory", dir.display()))
        })?;
    }
    Ok(Some(InstructionSettings {
        valgrind: find_valgrind()?,
        ops: args.instr_ops,
        forks: args.instr_forks,
        keep: args.callgrind_dir.clone(),
        simulate: args.cache_sim,
    }))
}

/// A/B runs: the instruction fork each build runs for a decided case (`--layout-check auto`,
/// where valgrind is found; else a note says the verdicts go unlabelled).
fn layout_check(args: &RunArgs) -> Option<runner::LayoutCheck> {
    if args.baseline_bin.is_none() || args.layout_check == crate::cli::LayoutCheckMode::Off || args.instructions {
        return None;
    }
    let valgrind = find_valgrind()
        .map_err(|_| {
            say!("note: valgrind is not on PATH: decided A/B cases are not checked for a change of instructions (`same instructions: layout?`); install valgrind, or pass --layout-check off to silence this");
        })
        .ok()?;
    Some(runner::LayoutCheck {
        instructions: InstructionSettings { valgrind, ops: None, forks: 1, keep: None, simulate: false },
        options: crate::compare::throughput::Options { noise_band_pct: args.noise_band, alpha: args.alpha },
    })
}

/// valgrind on PATH, or the line that says who needs it (`needs`: `--instructions`, `harness
/// explain`) and the fix (`otherwise`).
pub(super) fn find_valgrind_for(needs: &str, otherwise: &str) -> Result<PathBuf, BadInput> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|dir| dir.join("valgrind"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            BadInput(format!(
                "{needs} needs valgrind (callgrind), which is not on PATH: install it (apt-get install valgrind) or {otherwise}"
            ))
        })
}

/// valgrind for `--instructions`.
fn find_valgrind() -> Result<PathBuf, BadInput> {
    find_valgrind_for("--instructions", "drop --instructions")
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
            "--threads {n}: {} cannot share its state between measuring threads (it resets shared state before every op, or grows one table in steps): run it with --threads 1 or leave it out with --filter",
            case.def.name
        )));
    }
    Ok(cases
        .into_iter()
        .flat_map(|c| counts.iter().map(move |&threads| Case::new(c.def, c.params.clone(), threads)))
        .collect())
}

/// `--rate`: every case once per rate, open-loop; refused where it cannot mean what it says
/// (sample mode, an A/B run's sequential plan, a workload whose ops cannot arrive independently).
fn with_rates(cases: Vec<Case>, args: &RunArgs, ab: bool) -> Result<Vec<Case>, BadInput> {
    use crate::rate::Load;
    let Some(&first) = args.rate.first() else { return Ok(cases) };
    if args.mode == crate::cli::Mode::Sample {
        return Err(BadInput(format!(
            "--rate {first} with --mode sample: an open-loop fork times every op from its intended start already; drop --mode sample"
        )));
    }
    if ab && args.forks == Some(ForkCount::Auto) {
        return Err(BadInput(format!(
            "--rate {first} with --forks auto: the sequential plan stops on throughput, which an open-loop fork holds at its rate; give a fixed count (--forks 5)"
        )));
    }
    if let Some(case) = cases.iter().find(|c| !c.def.shareable) {
        return Err(BadInput(format!(
            "--rate {first}: {} is measured in steps or resets its state before every op, so its ops cannot arrive at a rate: leave it out with --filter",
            case.def.name
        )));
    }
    let arrivals = match args.arrivals {
        crate::cli::ArrivalsArg::Poisson => crate::rate::Arrivals::Poisson,
        crate::cli::ArrivalsArg::Constant => crate::rate::Arrivals::Constant,
    };
    let mut loads: Vec<Load> = vec![];
    for &r in &args.rate {
        if !loads.contains(&r) {
            loads.push(r);
        }
    }
    // A share is of the case's own closed-loop throughput: that case runs first.
    let closed_first = loads.iter().any(|l| matches!(l, Load::Share(_)));
    if closed_first && args.shard.is_some() {
        return Err(BadInput(
            "--rate with a share (80%) and --shard: a share is of its case's closed-loop run, which another runner may measure; give rates in ops per second".into(),
        ));
    }
    Ok(cases
        .into_iter()
        .flat_map(|c| {
            let at_loads = loads.iter().map(|&load| match load {
                Load::PerSec(per_sec) => c.clone().with_rate(Some(crate::rate::Rate { per_sec, arrivals })),
                Load::Share(pct) => c.clone().with_share(pct, arrivals),
            });
            closed_first.then(|| c.clone()).into_iter().chain(at_loads.collect::<Vec<_>>())
        })
        .collect())
}

/// `harness run`: selects and checks everything, then measures; the exit code says how it went.
/// What a run checks of its inputs before it measures anything, for `harness ab` to check
/// before it builds: the cases the filters and params select, their server URLs, the fork
/// count and the `--out` path.
pub(super) fn check_inputs(args: &RunArgs) -> Result<(), BadInput> {
    let cases = with_rates(with_threads(super::select(&args.select)?.cases, &args.threads)?, args, true)?;
    crate::preflight::check_urls(&cases, &args.database_url, args.io)?;
    forks(args, true)?;
    match &args.out {
        Some(out) => write::check_flag_writable("--out", out),
        None => Ok(()),
    }
}

pub(super) fn run_benchmarks(args: &RunArgs, prepared: Option<Variants>) -> anyhow::Result<ExitCode> {
    let Selected { config, name: config_name, params, cases } = super::select(&args.select)?;
    let cases = with_rates(with_threads(cases, &args.threads)?, args, args.baseline_bin.is_some())?;
    crate::preflight::check_urls(&cases, &args.database_url, args.io)?;
    let (fork_count, sequential) = forks(args, args.baseline_bin.is_some())?;
    let settings = settings(args, config, fork_count, args.baseline_bin.is_some());
    let cases = shard_cases(cases, args.shard, &settings);
    let out = args.out.clone().unwrap_or_else(|| default_out(&config_name));
    write::check_flag_writable("--out", &out)?;
    let baseline = args.baseline_bin.as_deref().map(runner::baseline::probe).transpose()?;
    if let Some(pin) = &args.pin {
        pin.check_available().map_err(BadInput)?;
    }
    let instructions = instruction_settings(args)?;
    let layouts = layout_variants(args, prepared)?;
    let layout_check = layout_check(args);
    let stop = crate::interrupt::install()?;
    let sides = if baseline.is_some() { 2 } else { 1 };
    let io = args.io.then_some(runner::IoSettings { ops: args.io_ops, forks: 1 });
    let counting = instructions.as_ref().map_or(0, |i| u64::from(i.forks)) + u64::from(args.io);
    let forks_per_case = (u64::from(settings.forks) + counting) * sides;
    let progress = Progress::new(args.quiet(), cases.len() as u64 * forks_per_case);
    let run_settings = RunSettings {
        params: params.iter().map(|p| p.raw.clone()).collect(),
        baseline_bin: baseline.as_ref().map(|b| b.path.clone()),
        sequential: sequential.as_ref().map(|s| s.0.clone()),
        layouts: layouts.as_ref().map(|v| v.count),
        layout_check: layout_check.is_some(),
        ..run_settings(args, &settings)
    };
    let report = Report {
        schema_version: SCHEMA_VERSION,
        status: RunStatus::Running,
        meta: Meta { baseline: baseline.clone(), ..collect_meta(Some(config_name), Some(run_settings)) },
        benchmarks: vec![],
    };
    let warned = warn_before_measuring(&progress, &report, fork_count);
    let report_file = write::ReportFile::new(&out);
    let ctx = RunContext {
        worker_exe: std::env::current_exe()?,
        baseline_exe: args.baseline_bin.clone(),
        lockstep: args.interleave == crate::cli::Interleave::Iterations,
        pin: args.pin.clone(),
        out: &report_file,
        settings,
        database_url: args.database_url.clone(),
        count_allocations: args.alloc,
        sample: args.mode == crate::cli::Mode::Sample,
        instructions,
        io,
        sequential: sequential.map(|(s, plan)| (plan, s.noise_band_pct / 100.0)),
        layouts,
        layout_check,
        stop: &stop,
    };
    let skipped = crate::preflight::check(&cases, &args.database_url);
    let report = runner::run(&cases, &skipped, report, &ctx, &progress)?;
    Ok(finish(args, &report, &report_file, &warned))
}

/// What is worth knowing before the run starts: an A/B run that cannot answer, a debug build,
/// and the machine's own warnings (returned, so the end of the run does not repeat them).
fn warn_before_measuring(progress: &Progress, report: &Report, fork_count: u32) -> Vec<String> {
    if report.meta.baseline.is_some() && fork_count < 2 {
        progress.warn(&format!(
            "--forks {fork_count} with --baseline-bin: one fork pair cannot be tested, the comparison will not answer; use --forks 5 (2 at the very least) or --forks auto"
        ));
    }
    if cfg!(debug_assertions) {
        progress.warn(
            "this is a DEBUG build: its numbers are meaningless. Use `cargo run --release -p harness -- run ...`",
        );
    }
    let machine = crate::report::system::warnings(&report.meta);
    for w in machine.iter().filter(|w| !w.starts_with("debug build")) {
        progress.warn(w);
    }
    machine
}

/// Prints the summary, the noise report, warnings and (A/B runs) the comparison; the exit code.
fn finish(args: &RunArgs, report: &Report, out: &write::ReportFile, warned: &[String]) -> ExitCode {
    if !args.silent() {
        show!("{}", summary::render(report));
        show!("{}", crate::noise::render(&crate::noise::diagnose_all(report, 0.01), 0.01));
    }
    for w in report.meta.system.warnings.iter().filter(|w| !warned.contains(w)) {
        say!("warning: {w}");
    }
    if let Some(path) = args.baseline_bin.as_ref().filter(|_| !args.silent()) {
        show_ab(args, report, path);
    }
    let moved = out.moved_from().map(Path::to_path_buf);
    if moved.is_none() {
        say!("report: {}", out.path().display());
    }
    let exit = match report.status {
        RunStatus::Interrupted => {
            say!("interrupted: the report keeps every finished fork");
            Exit::Interrupted
        }
        _ if runner::any_failed(report) => Exit::Failed,
        // A step that reads --out next would fail somewhere else: this run fails here, and its
        // last line says where the report is.
        _ if moved.is_some() => Exit::Failed,
        _ => Exit::Success,
    };
    if let Some(requested) = moved {
        say!("error: --out {} could not be written: the report is at {}", requested.display(), out.path().display());
    }
    ExitCode::from(exit)
}

/// An A/B run's comparison: throughput for the closed-loop cases, latency for the open-loop ones.
fn show_ab(args: &RunArgs, report: &Report, baseline: &std::path::Path) {
    use crate::compare::{Comparison, latency, throughput};
    show!("\nA/B: baseline {} (new = this build)\n", baseline.display());
    if report.benchmarks.iter().any(|b| b.rate.is_none()) {
        let options = throughput::Options { noise_band_pct: args.noise_band, alpha: args.alpha };
        show!("{}", throughput::compare_sides(report, options).text());
    }
    if report.benchmarks.iter().any(|b| b.rate.is_some()) {
        let options = latency::Options {
            percentile: args.percentile,
            noise_band_pct: args.noise_band,
            alpha: args.alpha,
            method: latency::Method::T,
        };
        if let Ok(c) = latency::comparison(std::slice::from_ref(report), &[], options) {
            show!("{}", c.text());
        }
    }
}

/// `--shard K/N`: this runner's share of `cases`, dealt by planned time.
fn shard_cases(cases: Vec<Case>, shard: Option<crate::shard::Shard>, settings: &CaseSettings) -> Vec<Case> {
    let Some(shard) = shard else { return cases };
    let planned = u64::from(settings.forks) * settings.planned_nanos();
    crate::shard::assign(&vec![planned; cases.len()], shard).into_iter().map(|i| cases[i].clone()).collect()
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
        database_url: workloads::redact::redact(&args.database_url),
        redis_url: workloads::redact::redact(&args.select.redis_url),
        instructions: args.instructions,
        instr_ops: args.instr_ops,
        cache_sim: args.cache_sim,
        io: args.io,
        io_ops: args.io_ops,
        alloc: args.alloc,
        pin: args.pin.as_ref().map(|p| p.text.clone()),
        threads: args.threads.clone(),
        mode: if args.mode == crate::cli::Mode::Sample { "sample" } else { "throughput" }.into(),
        baseline_bin: None,
        sequential: None,
        layouts: None,
        layout_check: false,
        shard: args.shard.map(|s| s.to_string()),
        interleave: args
            .baseline_bin
            .as_ref()
            .map(|_| if args.interleave == crate::cli::Interleave::Iterations { "iterations" } else { "forks" }.into()),
    }
}
