//! `harness compare` as a gate on any metric (through [`Comparison`]), and the exit code a CI
//! job acts on.
//! A gate fails closed: a case it could not measure is an error (exit 2), never a pass; a case
//! missing from the new report fails (exit 3) unless `--allow-missing`; `--warn-only` turns a
//! failure into a warning.

use crate::compare::{Outcome, Policy, Settings, json};
use crate::error::{BadInput, Exit};
use crate::metric::Metric;
use crate::report::read::read_report;
use crate::report::{Report, write};
use std::process::ExitCode;

/// One side's reports, each file and each run once.
fn read_side(paths: &[std::path::PathBuf], side: &str) -> Result<Vec<Report>, BadInput> {
    refuse_repeated_files(paths, side)?;
    let reports = paths.iter().map(|p| read_report(p, side)).collect::<Result<Vec<_>, _>>()?;
    refuse_repeated_runs(paths, &reports, side)?;
    Ok(reports)
}

/// `harness compare`: prints the comparison, writes `--markdown`, and exits 0, 2 or 3.
pub(crate) fn compare(args: &crate::cli::CompareArgs) -> anyhow::Result<ExitCode> {
    if let Some(path) = &args.markdown {
        write::check_flag_writable("--markdown", path)?;
    }
    let (base_paths, new_paths) = args.sides();
    let (base, new) = (read_side(&base_paths, "base")?, read_side(&new_paths, "new")?);
    let every = || base_paths.iter().zip(&base).chain(new_paths.iter().zip(&new));
    if args.metric == Metric::Latency || (args.metric.is_count() && base.len() <= 1 && new.len() <= 1) {
        // Name the report that lacks the counts, before any table (runs by sides are refused
        // by the gate: counts compare one report per side).
        every().try_for_each(|(path, report)| args.metric.check_recorded(report, path))?;
    }
    check_alike(args, &base, &new)?;
    if !new.is_empty() {
        name_ab_reports(every());
    }
    if args.metric == Metric::Throughput && new.is_empty() && !base[0].is_ab() {
        return Err(BadInput(format!(
            "{} holds one build only: pass two reports (BASE.json NEW.json), or make an A/B report with `harness run --baseline-bin PATH`",
            base_paths[0].display()
        ))
        .into());
    }
    let mut c = crate::compare::compare(args.metric, &base, &new, &settings(args)?)?;
    let gate = c.outcome(&policy(args))?;
    let summary = c.summary_line();
    if args.only_changed {
        c.retain_changed();
    }
    gate.warnings.iter().for_each(|w| eprintln!("{w}"));
    let exit_code = match (gate.untested.is_empty(), gate.failing.is_empty() || args.warn_only) {
        (false, _) => Exit::BadInput.code(),
        (true, false) => Exit::Regression.code(),
        (true, true) => 0,
    };
    if args.json {
        let decision = json::Decision {
            exit_code,
            failing: gate.failing.clone(),
            untested: gate.untested.clone(),
            warn_only: args.warn_only,
        };
        println!("{}", serde_json::to_string_pretty(&c.json(decision))?);
    } else {
        println!("{}{summary}", c.text());
    }
    if let Some(path) = &args.markdown {
        write::write_bytes_atomic(path, c.markdown().as_bytes())?;
    }
    report_gate(args, &gate, c.metric())
}

/// The command line's gate, in domain terms.
fn policy(args: &crate::cli::CompareArgs) -> Policy {
    Policy {
        fail_on_regression: args.fail_on_regression,
        allow_missing: args.allow_missing,
        same_instructions: args.same_instructions,
    }
}

/// The command line's comparison settings, the thresholds file read and checked.
fn settings(args: &crate::cli::CompareArgs) -> Result<Settings, BadInput> {
    use crate::compare::instructions::Limits;
    Ok(Settings {
        throughput: crate::compare::throughput::Options { noise_band_pct: args.noise_band, alpha: args.alpha },
        limits: Limits { deterministic_pct: args.max_regression, varying_pct: args.max_regression_varying },
        thresholds: thresholds(args)?,
        latency: crate::compare::latency::Options {
            percentile: args.percentile,
            noise_band_pct: args.noise_band,
            alpha: args.alpha,
            method: args.latency_test,
        },
    })
}

/// The gate's last word on stderr and its exit: 2 untested, 3 failing, else 0.
fn report_gate(args: &crate::cli::CompareArgs, gate: &Outcome, metric: Metric) -> anyhow::Result<ExitCode> {
    if !gate.untested.is_empty() {
        return Err(BadInput(format!(
            "--fail-on-regression: {} case(s) could not be tested ({}): the gate cannot decide there; give each side at least 2 ok forks (--forks 5), confirm a case that looks slower with `harness ab REF` or 2+ runs per side (--base ... --new ...), or drop the cases with --filter",
            gate.untested.len(),
            gate.untested.join(", ")
        ))
        .into());
    }
    if gate.failing.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let what = format!(
        "{} case(s) fail the gate: {} (--metric {})",
        gate.failing.len(),
        gate.failing.join(", "),
        metric.name()
    );
    if args.warn_only {
        eprintln!("warning (--warn-only): {what}");
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("regression: {what}");
    Ok(ExitCode::from(Exit::Regression.code()))
}

/// One file given twice on one side (by another path or as a copy) would count one run as
/// two: bad input naming both.
fn refuse_repeated_files(paths: &[std::path::PathBuf], side: &str) -> Result<(), BadInput> {
    use std::os::unix::fs::MetadataExt;
    let mut seen: Vec<(&std::path::Path, (u64, u64), Vec<u8>)> = Vec::new();
    for path in paths {
        let Ok(meta) = std::fs::metadata(path) else { continue };
        let content = if meta.is_file() { std::fs::read(path).unwrap_or_default() } else { vec![] };
        let id = (meta.dev(), meta.ino());
        if let Some((first, ..)) = seen.iter().find(|(_, i, c)| *i == id || (!c.is_empty() && *c == content)) {
            return Err(BadInput(format!(
                "{side} reports {} and {} are the same run: give each run once (a run counted twice looks like twice the evidence)",
                first.display(),
                path.display()
            )));
        }
        seen.push((path, id, content));
    }
    Ok(())
}

/// Fails when two reports on one side hold forks of the same run (the same run id, or one
/// merged from the other): an edited copy counts once, as an identical one does.
fn refuse_repeated_runs(paths: &[std::path::PathBuf], reports: &[Report], side: &str) -> Result<(), BadInput> {
    for (i, report) in reports.iter().enumerate() {
        let ids = report.meta.run_ids();
        if let Some(j) =
            reports[..i].iter().position(|earlier| earlier.meta.run_ids().iter().any(|id| ids.contains(id)))
        {
            return Err(BadInput(format!(
                "{side} reports {} and {} hold forks of the same run (run id {}): give each run once (a run counted twice looks like twice the evidence)",
                paths[j].display(),
                paths[i].display(),
                reports[j].meta.run_ids().into_iter().find(|id| ids.contains(id)).unwrap_or_default()
            )));
        }
    }
    Ok(())
}

/// Says which of several reports are A/B reports, whose candidate's forks alone take part.
fn name_ab_reports<'a>(reports: impl Iterator<Item = (&'a std::path::PathBuf, &'a Report)>) {
    for (path, report) in reports {
        if report.is_ab() {
            eprintln!(
                "note: {} is an A/B report: its candidate build's forks are compared here, its baseline's are not (`compare {}` alone compares its two builds)",
                path.display(),
                path.display()
            );
        }
    }
}

/// Fails unless every report was made like the first base report (or `--force`), listing each
/// difference.
fn check_alike(args: &crate::cli::CompareArgs, base: &[Report], new: &[Report]) -> Result<(), BadInput> {
    let mut count = 0;
    let (first, others) = base.split_first().expect("clap requires a base report");
    let several = base.len() + new.len() > 2;
    for (i, other) in others.iter().chain(new).enumerate() {
        let which =
            if i < others.len() { format!("base run {}", i + 2) } else { format!("new run {}", i - others.len() + 1) };
        for d in crate::compare::differences(first, other, args.metric) {
            let d = if several { format!("{which}: {d}") } else { d };
            eprintln!("{}: {d}", if args.force { "warning: compared anyway" } else { "differs" });
            count += 1;
        }
    }
    if count > 0 && !args.force {
        return Err(BadInput(format!(
            "the reports differ in {count} way(s) listed above: compare runs made alike, or pass --force to compare anyway"
        )));
    }
    Ok(())
}

/// `--thresholds FILE`, read and checked, or the defaults.
fn thresholds(args: &crate::cli::CompareArgs) -> Result<crate::compare::instructions::Thresholds, BadInput> {
    let Some(path) = &args.thresholds else { return Ok(Default::default()) };
    let text = std::fs::read_to_string(path)
        .map_err(|e| BadInput(format!("cannot read --thresholds {}: {e}", path.display())))?;
    crate::compare::instructions::Thresholds::parse(&text)
        .map_err(|e| BadInput(format!("invalid --thresholds {}: {e}", path.display())))
}
