//! `harness compare` as a gate: throughput or instructions, and the exit code a CI job acts on.
//! A gate fails closed: a case it could not measure is an error (exit 2), never a pass; a case
//! missing from the new report fails (exit 3) unless `--allow-missing`; `--warn-only` turns a
//! failure into a warning.

use crate::cli::SameInstructions;
use crate::compare::{CountComparison, json};
use crate::error::{BadInput, Exit};
use crate::report::read::read_report;
use crate::report::{Report, write};
use std::process::ExitCode;

/// What a comparison shows and what the gate found.
struct Gate {
    text: String,
    /// The `--json` document (its decision filled in by [`compare`]).
    document: json::Document,
    markdown: String,
    /// Labels of the cases that fail the gate (regressed, or missing from NEW).
    failing: Vec<String>,
    /// Labels of the cases `--fail-on-regression` could not test.
    untested: Vec<String>,
}

/// One side's reports, each file and each run once.
fn read_side(paths: &[std::path::PathBuf], side: &str) -> Result<Vec<Report>, BadInput> {
    refuse_repeated_files(paths, side)?;
    let reports = paths.iter().map(|p| read_report(p, side)).collect::<Result<Vec<_>, _>>()?;
    refuse_repeated_runs(paths, &reports, side)?;
    Ok(reports)
}

/// `harness compare`: prints the comparison, writes `--markdown`, and exits 0, 2 or 3.
pub(crate) fn compare(args: &crate::cli::CompareArgs) -> anyhow::Result<ExitCode> {
    use crate::metric::Metric;
    if let Some(path) = &args.markdown {
        write::check_flag_writable("--markdown", path)?;
    }
    let (base_paths, new_paths) = args.sides();
    let (base, new) = (read_side(&base_paths, "base")?, read_side(&new_paths, "new")?);
    let every = || base_paths.iter().zip(&base).chain(new_paths.iter().zip(&new));
    if args.metric.is_count() && base.len() <= 1 && new.len() <= 1 {
        // Name the report that lacks the counts, before any table (runs by sides are refused
        // by the gate: counts compare one report per side).
        every().try_for_each(|(path, report)| args.metric.check_recorded(report, path))?;
    }
    check_alike(args, &base, &new)?;
    if !new.is_empty() {
        name_ab_reports(every());
    }
    let mut gate = match args.metric {
        Metric::Throughput => throughput_gate(args, &base, &new)?,
        Metric::Instructions => instruction_gate(args, &base, &new)?,
        Metric::Io => io_gate(args, &base, &new)?,
    };
    let exit_code = match (gate.untested.is_empty(), gate.failing.is_empty() || args.warn_only) {
        (false, _) => Exit::BadInput.code(),
        (true, false) => Exit::Regression.code(),
        (true, true) => 0,
    };
    if args.json {
        gate.document.decision = json::Decision {
            exit_code,
            failing: gate.failing.clone(),
            untested: gate.untested.clone(),
            warn_only: args.warn_only,
        };
        println!("{}", serde_json::to_string_pretty(&gate.document)?);
    } else {
        print!("{}", gate.text);
    }
    if let Some(path) = &args.markdown {
        write::write_bytes_atomic(path, gate.markdown.as_bytes())?;
    }
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
    let what = format!("{} case(s) fail the gate: {}", gate.failing.len(), gate.failing.join(", "));
    if args.warn_only {
        eprintln!("warning (--warn-only): {what}");
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("regression: {what}");
    Ok(ExitCode::from(exit_code))
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

/// Labels of cases only in BASE, unless `--allow-missing`.
fn missing_cases<'a>(args: &crate::cli::CompareArgs, labels: impl Iterator<Item = &'a str>) -> Vec<String> {
    if args.allow_missing { vec![] } else { labels.map(|l| format!("{l} (missing in new)")).collect() }
}

fn throughput_gate(args: &crate::cli::CompareArgs, base: &[Report], new: &[Report]) -> Result<Gate, BadInput> {
    use crate::compare::throughput;
    let options = throughput::Options { noise_band_pct: args.noise_band, alpha: args.alpha };
    let c = match base {
        _ if !new.is_empty() => throughput::compare(base, new, options),
        [one] if !one.is_ab() => {
            return Err(BadInput(format!(
                "{} holds one build only: pass two reports (BASE.json NEW.json), or make an A/B report with `harness run --baseline-bin PATH`",
                args.sides().0[0].display()
            )));
        }
        [one] => throughput::compare_sides(one, options),
        _ => unreachable!("clap gives --base runs with --new runs"),
    };
    let summary = throughput::summary_line(&c);
    let mut shown = c.clone();
    if args.only_changed {
        shown.retain_changed();
    }
    let text = format!("{}{summary}\n", throughput::render_text(&shown));
    let (failing, untested) = throughput_failures(args, &c)?;
    let document = throughput::to_json(&shown, no_decision());
    Ok(Gate { text, document, markdown: throughput::render_markdown(&shown), failing, untested })
}

/// Under `--fail-on-regression`, the throughput cases that fail the gate and those it could not
/// test; a comparison of no shared case is bad input (a gate that measured nothing).
fn throughput_failures(
    args: &crate::cli::CompareArgs,
    c: &crate::compare::throughput::Comparison,
) -> Result<(Vec<String>, Vec<String>), BadInput> {
    use crate::compare::throughput::Verdict;
    let (mut failing, mut untested) = (vec![], vec![]);
    if !args.fail_on_regression {
        return Ok((failing, untested));
    }
    if c.rows.iter().all(|r| matches!(r.verdict, Verdict::Missing | Verdict::Extra)) {
        return Err(BadInput(
            "--fail-on-regression: the reports share no case, so nothing was compared: a gate that measured nothing cannot pass; compare reports of the same cases".into(),
        ));
    }
    untested.extend(
        c.rows.iter().filter(|r| matches!(r.verdict, Verdict::NoData | Verdict::TooFewForks)).map(|r| r.label.clone()),
    );
    untested.extend(
        c.rows
            .iter()
            .filter(|r| r.verdict == Verdict::LooksSlower)
            .map(|r| format!("{} (slower? in one run per side)", r.label)),
    );
    failing.extend(c.rows.iter().filter(|r| r.verdict == Verdict::Slower).map(|r| r.label.clone()));
    let layout_suspects = c.rows.iter().filter(|r| r.verdict == Verdict::SlowerSameInstructions);
    match args.same_instructions {
        SameInstructions::Fail => {
            failing.extend(layout_suspects.map(|r| format!("{} (same instructions: layout?)", r.label)));
        }
        SameInstructions::Warn => {
            for r in layout_suspects {
                eprintln!(
                    "warning (--same-instructions warn): {} is slower with the same instructions per op: passed as a layout suspect",
                    r.label
                );
            }
        }
    }
    failing
        .extend(missing_cases(args, c.rows.iter().filter(|r| r.verdict == Verdict::Missing).map(|r| r.label.as_str())));
    Ok((failing, untested))
}

/// The decision before it is made.
fn no_decision() -> json::Decision {
    json::Decision { exit_code: 0, failing: vec![], untested: vec![], warn_only: false }
}

/// `--thresholds FILE`, read and checked, or the defaults.
fn thresholds(args: &crate::cli::CompareArgs) -> Result<crate::compare::instructions::Thresholds, BadInput> {
    let Some(path) = &args.thresholds else { return Ok(Default::default()) };
    let text = std::fs::read_to_string(path)
        .map_err(|e| BadInput(format!("cannot read --thresholds {}: {e}", path.display())))?;
    crate::compare::instructions::Thresholds::parse(&text)
        .map_err(|e| BadInput(format!("invalid --thresholds {}: {e}", path.display())))
}

/// The one report of each side that a gate on exact counts compares (`metric` names it).
fn one_each<'a>(metric: &str, base: &'a [Report], new: &'a [Report]) -> Result<(&'a Report, &'a Report), BadInput> {
    match (base, new) {
        ([base], [new]) => Ok((base, new)),
        (_, []) => Err(BadInput(format!(
            "--metric {metric} needs two reports (BASE.json NEW.json): an A/B report's two builds are shown beside its time ratios by `compare AB.json`"
        ))),
        _ => Err(BadInput(format!(
            "--metric {metric} compares one report per side: counts are exact, so pass BASE.json NEW.json instead of --base/--new runs"
        ))),
    }
}

fn instruction_gate(args: &crate::cli::CompareArgs, base: &[Report], new: &[Report]) -> Result<Gate, BadInput> {
    use crate::compare::instructions::{self, Limits};
    let (base, new) = one_each("instructions", base, new)?;
    let thresholds = thresholds(args)?;
    let limits = Limits { deterministic_pct: args.max_regression, varying_pct: args.max_regression_varying };
    count_gate(args, instructions::compare(base, new, limits, &thresholds), ("instructions", "instruction counts"))
}

fn io_gate(args: &crate::cli::CompareArgs, base: &[Report], new: &[Report]) -> Result<Gate, BadInput> {
    let (base, new) = one_each("io", base, new)?;
    let thresholds = thresholds(args)?;
    count_gate(
        args,
        crate::compare::io::compare(base, new, &|name, label| thresholds.io.for_case(name, label)),
        ("io", "I/O counts"),
    )
}

/// The gate on a comparison of counts (`(flag, what)`: `--metric FLAG`, made with `run
/// --FLAG`): fails closed without counts, fails on a regressed or missing case.
fn count_gate(
    args: &crate::cli::CompareArgs,
    c: impl CountComparison,
    (flag, what): (&str, &str),
) -> Result<Gate, BadInput> {
    use crate::compare::Verdict;
    let no_counts = c.labels(Verdict::NoData);
    if !no_counts.is_empty() || c.verdicts().iter().all(|(_, _, counted)| !counted) {
        let shown = if no_counts.is_empty() { "every case".to_string() } else { no_counts.join(", ") };
        return Err(BadInput(format!(
            "--metric {flag}: no {what} for {shown} in one or both reports: make both with `harness run --{flag}`; a gate that measured nothing cannot pass"
        )));
    }
    let mut failing: Vec<String> = c.labels(Verdict::Regressed).into_iter().map(String::from).collect();
    failing.extend(missing_cases(args, c.labels(Verdict::Missing).into_iter()));
    let summary = c.summary_line();
    let mut shown = c;
    if args.only_changed {
        shown.retain_changed();
    }
    let text = format!("{}{summary}\n", shown.text());
    Ok(Gate { text, document: shown.json(no_decision()), markdown: shown.markdown(), failing, untested: vec![] })
}
