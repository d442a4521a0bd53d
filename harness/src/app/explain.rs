//! `harness explain`: why two builds differ, per op, from an instruction fork of each build
//! (rerun from an A/B report, or two kept callgrind dumps), with flame graphs.

use crate::cli::ExplainArgs;
use crate::compare::throughput::{Options, Row, compare_sides};
use crate::error::BadInput;
use crate::explain::{self, Counted, Explained};
use crate::report::read::read_report;
use crate::report::{Benchmark, Report, write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// The options an A/B report's verdicts are read with (those `compare` uses by default).
const VERDICT_OPTIONS: Options = Options { noise_band_pct: 1.0, alpha: 0.05 };

/// `harness explain`.
pub(super) fn explain(args: &ExplainArgs) -> anyhow::Result<ExitCode> {
    let explained = match (&args.report, &args.base_dump, &args.new_dump) {
        (_, Some(base), Some(new)) => vec![explain_dumps(args, base, new)?],
        (Some(path), _, _) => explain_report(args, path)?,
        _ => return Err(BadInput("give an A/B report, or --base-dump FILE --new-dump FILE".into()).into()),
    };
    if args.json {
        show!("{}\n", serde_json::to_string_pretty(&explained)?);
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints one explained case (unless `--json` prints them all at the end).
fn print(args: &ExplainArgs, e: &Explained) {
    if !args.json {
        show!("{}\n", explain::render(e));
    }
}

/// `--base-dump A --new-dump B [--ops N]`: the flame graphs go to `--out-dir` (default: the
/// current directory), named after the new dump.
fn explain_dumps(args: &ExplainArgs, base: &Path, new: &Path) -> anyhow::Result<Explained> {
    let (base_ops, new_ops) = args.ops.unwrap_or((1, 1));
    let read = |p: &Path, flag: &str| {
        crate::callgrind::read_dumps(&[p.to_path_buf()]).map_err(|e| BadInput(format!("{flag} {}: {e}", p.display())))
    };
    crate::callgrind::same_workload(&[base.to_path_buf()], &[new.to_path_buf()])
        .map_err(|e| BadInput(e.to_string()))?;
    let base = Counted { profile: read(base, "--base-dump")?, ops: base_ops };
    let counted = Counted { profile: read(new, "--new-dump")?, ops: new_ops };
    let name = new.file_name().map_or("explained".into(), |n| n.to_string_lossy().into_owned());
    let dir = args.out_dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let graphs = explain::write_graphs(&base, &counted, &dir, &name)?;
    let e = Explained {
        case: name,
        verdict: None,
        time_moved: false,
        diff: explain::diff(&base, &counted, args.top),
        io: vec![],
        graphs: graphs.iter().map(|p| p.display().to_string()).collect(),
    };
    print(args, &e);
    Ok(e)
}

/// `explain AB.json`: every chosen case rerun under callgrind in both builds, then explained.
fn explain_report(args: &ExplainArgs, path: &Path) -> anyhow::Result<Vec<Explained>> {
    let report = read_report(path, "the A/B")?;
    let baseline = baseline_binary(&report, args, path)?;
    super::measure::find_valgrind_for(
        "harness explain AB.json",
        "explain two dumps kept where valgrind ran (run --instructions --callgrind-dir DIR, then --base-dump/--new-dump)",
    )?;
    let rows = compare_sides(&report, VERDICT_OPTIONS).rows;
    let cases = chosen(&report, &rows, args)?;
    let dir = args.out_dir.clone().unwrap_or_else(|| beside(path));
    std::fs::create_dir_all(&dir)
        .map_err(|e| e.to_string())
        .and_then(|()| write::check_writable(&dir.join("explain.json")))
        .map_err(|e| {
            BadInput(format!("cannot write the explanation to '{}': {e}; pass --out-dir DIR", dir.display()))
        })?;
    let mut explained = vec![];
    for b in cases {
        let row = rows.iter().find(|r| r.id == b.id());
        let e = explain_case(args, &report, b, row, (&baseline, &dir)).map_err(|e| on_full_disk(e, &dir))?;
        print(args, &e);
        explained.push(e);
        write::write_bytes_atomic(&dir.join("explain.json"), serde_json::to_string_pretty(&explained)?.as_bytes())
            .map_err(|e| on_full_disk(e, &dir))?;
    }
    say!("wrote {} (the flame graphs and explain.json)", dir.display());
    Ok(explained)
}

/// A failure on a full disk, said as that in one line with the fix (the rest of its text, the
/// instruction forks' stderr among it, only repeats it); any other failure as it is.
fn on_full_disk(e: anyhow::Error, dir: &Path) -> anyhow::Error {
    match write::disk_full(dir, &format!("{e:#}")) {
        Some(full) => anyhow::anyhow!(
            "{full}: the callgrind dumps and flame graphs of explain need room there; free some, or pass --out-dir DIR on another disk"
        ),
        None => e,
    }
}

/// `REPORT.explain/` beside `REPORT.json`.
pub(super) fn beside(report: &Path) -> PathBuf {
    let stem = report.file_stem().map_or("report".into(), |s| s.to_string_lossy().into_owned());
    report.with_file_name(format!("{stem}.explain"))
}

/// The report's baseline binary (or `--baseline-bin`), checked to exist.
fn baseline_binary(report: &Report, args: &ExplainArgs, path: &Path) -> Result<PathBuf, BadInput> {
    if let Some(bin) = &args.baseline_bin {
        return bin.is_file().then(|| bin.clone()).ok_or_else(|| {
            BadInput(format!("--baseline-bin {} is not a file: pass the baseline's harness binary", bin.display()))
        });
    }
    let Some(recorded) = report.meta.baseline.as_ref().map(|b| PathBuf::from(&b.path)) else {
        return Err(BadInput(format!(
            "{} is not an A/B report (it has no baseline build): make one with `harness ab REF` or `run --baseline-bin PATH`, or pass --base-dump and --new-dump",
            path.display()
        )));
    };
    if recorded.is_file() {
        return Ok(recorded);
    }
    Err(BadInput(format!(
        "the baseline binary {} that {} names is gone: pass --baseline-bin PATH (a build of the same commit)",
        recorded.display(),
        path.display()
    )))
}

/// The cases to explain: those `--filter` names, else those the timed forks call different,
/// else (none is) every case.
fn chosen<'a>(report: &'a Report, rows: &[Row], args: &ExplainArgs) -> Result<Vec<&'a Benchmark>, BadInput> {
    let measured: Vec<&Benchmark> = report.benchmarks.iter().filter(|b| b.skipped.is_none()).collect();
    if !args.filter.is_empty() {
        let filters = args
            .filter
            .iter()
            .map(|f| regex::Regex::new(f).map_err(|e| BadInput(format!("invalid --filter '{f}': {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        let named: Vec<&Benchmark> =
            measured.into_iter().filter(|b| filters.iter().any(|f| f.is_match(&b.name))).collect();
        if named.is_empty() {
            return Err(BadInput(format!(
                "--filter {} matches no case of the report: see its cases with `harness compare REPORT`",
                args.filter.join(" ")
            )));
        }
        return Ok(named);
    }
    let differ = |b: &&Benchmark| rows.iter().any(|r| r.id == b.id() && r.verdict.is_apparent_difference());
    let different: Vec<&Benchmark> = measured.iter().copied().filter(differ).collect();
    if different.is_empty() {
        say!("note: the timed forks call no case different: explaining every case ({})", measured.len());
        return Ok(measured);
    }
    Ok(different)
}

/// Reruns one case's instruction fork in both builds and explains it; `paths` are the baseline
/// binary and the output directory.
fn explain_case(
    args: &ExplainArgs,
    report: &Report,
    b: &Benchmark,
    row: Option<&Row>,
    paths: (&Path, &Path),
) -> anyhow::Result<Explained> {
    let label = b.id().to_string();
    let stem = crate::callgrind::file_stem(&label);
    let dumps = paths.1.join("dumps").join(&stem);
    let _ = std::fs::remove_dir_all(&dumps);
    std::fs::create_dir_all(&dumps).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dumps.display()))?;
    let rerun = paths.1.join("dumps").join(format!("{stem}.json"));
    let counted = rerun_case(args, report, b, paths.0, (&dumps, &rerun))?;
    let again = counted.benchmarks.first().ok_or_else(|| anyhow::anyhow!("the rerun of {label} measured nothing"))?;
    let ops = |c: Option<&crate::report::InstructionSummary>, build: &str| {
        c.map(|c| c.ops).ok_or_else(|| {
            anyhow::anyhow!("the {build} build's instruction fork of {label} failed: see {}", rerun.display())
        })
    };
    let (base_files, new_files) = split_dumps(&dumps)?;
    crate::callgrind::same_workload(&base_files, &new_files)?;
    let base = Counted {
        profile: crate::callgrind::read_dumps(&base_files)?,
        ops: ops(again.baseline_instructions.as_ref(), "baseline")?,
    };
    let new =
        Counted { profile: crate::callgrind::read_dumps(&new_files)?, ops: ops(again.instructions.as_ref(), "new")? };
    let graphs = explain::write_graphs(&base, &new, paths.1, &label)?;
    let io = b.baseline_io.as_ref().zip(b.io.as_ref()).map(|(bi, ni)| explain::io_changes(&bi.count, &ni.count));
    Ok(Explained {
        case: label,
        verdict: row.map(verdict_text),
        time_moved: row.is_some_and(|r| r.verdict.is_apparent_difference()),
        diff: explain::diff(&base, &new, args.top),
        io: io.unwrap_or_default(),
        graphs: graphs.iter().map(|p| p.display().to_string()).collect(),
    })
}

/// What the A/B report's timed forks said of a case: `SLOWER 0.971x [0.962, 0.980]`.
fn verdict_text(row: &Row) -> String {
    let verdict = row.verdict.text(VERDICT_OPTIONS.noise_band_pct);
    match &row.test {
        Some(t) => format!(
            "{verdict}, {:.3}x [{:.3}, {:.3}] (this build's ops/s over the baseline's)",
            t.ratio, t.lower, t.upper
        ),
        None => verdict,
    }
}

/// The kept dumps of a rerun: the baseline's and this build's.
fn split_dumps(dir: &Path) -> anyhow::Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    files.sort();
    let (base, new): (Vec<PathBuf>, Vec<PathBuf>) = files
        .into_iter()
        .partition(|p| p.file_name().is_some_and(|n| crate::callgrind::kept_by_baseline(&n.to_string_lossy())));
    anyhow::ensure!(
        !base.is_empty() && !new.is_empty(),
        "the rerun kept no callgrind dump of one build in {}",
        dir.display()
    );
    Ok((base, new))
}

/// `harness run` of this binary for the one case: one short timed fork pair (the run needs
/// one) and one instruction fork of each build, its dumps kept in `out.0`, its report `out.1`.
fn rerun_case(
    args: &ExplainArgs,
    report: &Report,
    b: &Benchmark,
    baseline: &Path,
    out: (&Path, &Path),
) -> Result<Report, crate::child::ChildError> {
    use crate::child::{ChildRun, Counting, Pairs, Selection, Timing};
    let settings = report.meta.settings.as_ref();
    let select = Selection {
        configs: vec![report.meta.configuration.clone().unwrap_or_else(|| "all".into())],
        filters: vec![format!("^{}$", regex::escape(&b.name))],
        // The report's URLs are redacted; the rerun takes this command's.
        params: b.params.iter().filter(|(_, v)| !v.contains("://")).map(|(k, v)| format!("{k}={v}")).collect(),
        hidden: true,
    };
    let exe = std::env::current_exe().unwrap_or_else(|_| "harness".into());
    let urls = (args.database_url.as_str(), args.redis_url.as_str());
    let mut run = ChildRun::new(&exe, select, urls, out.1, format!("the instruction forks of {}", b.id()));
    run.timing = Timing { threads: Some(b.threads()), warmup_time: Some(Duration::from_millis(1)), ..Timing::BRIEF };
    let ops = args.instr_ops.or(settings.and_then(|s| s.instr_ops));
    run.counting = Counting::Instructions { ops, cache_sim: args.cache_sim, keep: Some(out.0.to_path_buf()) };
    run.pairs = Some(Pairs::against(baseline));
    say!("explain: counting {} under callgrind in both builds", b.id());
    run.run()
}
