//! `harness history`: `add` stores reports, `detect` finds the change points of every series,
//! `run` backfills a range of commits ([`backfill`]).

mod backfill;

use crate::cli::{DetectFormat, HistoryArgs, HistoryCommand};
use crate::cli::{HistoryAddArgs, HistoryDetectArgs};
use crate::error::{BadInput, Exit};
use crate::history::store::{Added, Location, Store};
use crate::history::{self, ChangePoint, Options, detect::Evidence};
use crate::report::read::read_report;
use std::process::ExitCode;

/// Runs one history subcommand on the store `--history` names.
pub(super) fn history(args: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let location = Location::parse(&args.store);
    match &args.command {
        HistoryCommand::Add(a) => add(&location, a),
        HistoryCommand::Detect(a) => detect(&location, a),
        HistoryCommand::Run(a) => backfill::run(&location, a),
    }
}

/// Checks every report first (nothing is stored when one is bad), then adds each in its own
/// transaction, saying for each whether it was new.
fn add(location: &Location, args: &HistoryAddArgs) -> anyhow::Result<ExitCode> {
    let git = |commit: &str| commit_facts(&args.repo, commit);
    let mut ingested = vec![];
    for path in &args.reports {
        let shown = path.display().to_string();
        let report = read_report(path, "the")?;
        let (run, points) = history::ingest::ingest(&report, &shown, git)?;
        ingested.push((shown, run, points));
    }
    let mut store = Store::open(location)?;
    for (shown, run, points) in &ingested {
        let commit = run.commit.as_deref().map_or("an unknown commit".into(), |c| format!("commit {}", short(c)));
        match store.add(run, points, shown)? {
            Added::New(n) => {
                let dirty = if run.dirty {
                    " (a build with uncommitted edits: stored and flagged, left out of detection unless --include-dirty)"
                } else {
                    ""
                };
                show!("stored {shown}: run {} of {commit}, {n} figures{dirty}\n", run.run_id);
            }
            Added::Already => {
                show!("{shown}: run {} is stored already (the same run is stored once): nothing added\n", run.run_id);
            }
        }
    }
    show!("{location} holds {} runs\n", store.run_count()?);
    Ok(ExitCode::SUCCESS)
}

/// A commit's first parent and committer time, from the repository at `repo`; unknown when
/// it is not a repository or lacks the commit.
fn commit_facts(repo: &std::path::Path, commit: &str) -> (Option<String>, Option<i64>) {
    let Ok(line) = crate::machine::git(repo, &["show", "-s", "--format=%ct %P", commit, "--"]) else {
        return (None, None);
    };
    let mut words = line.split_whitespace();
    let time = words.next().and_then(|t| t.parse().ok());
    (words.next().map(str::to_string), time)
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// Finds and prints the change points of every series the filters keep.
fn detect(location: &Location, args: &HistoryDetectArgs) -> anyhow::Result<ExitCode> {
    let filter = args
        .filter
        .as_deref()
        .map(regex::Regex::new)
        .transpose()
        .map_err(|e| BadInput(format!("--filter is not a regex ({e}); pass one such as '^sql/'")))?;
    let mut store = Store::open(location)?;
    let points = store.points()?;
    if points.is_empty() {
        return Err(BadInput(format!(
            "the history store {location} holds no runs: add reports with `harness history add REPORT.json`"
        ))
        .into());
    }
    let options = Options { alpha: args.alpha, include_dirty: args.include_dirty };
    if !args.include_dirty && points.iter().all(|p| p.run.dirty) {
        return Err(BadInput(format!(
            "every run in {location} is of a build with uncommitted edits (or of unknown state), which detection leaves out: pass --include-dirty, or add runs of committed builds"
        ))
        .into());
    }
    let metric_kept = |m: &str| {
        args.metric.as_deref().is_none_or(|want| m == want || m.strip_prefix(want).is_some_and(|r| r.starts_with('.')))
    };
    let series: Vec<history::Series> = history::series(points, &options)
        .into_iter()
        .filter(|s| filter.as_ref().is_none_or(|f| f.is_match(&s.key.case_id)) && metric_kept(&s.key.metric))
        .collect();
    if series.is_empty() {
        return Err(BadInput(format!(
            "no series of {location} matches --filter {} --metric {}: run `harness history detect` without them to see every series",
            args.filter.as_deref().unwrap_or("(none)"),
            args.metric.as_deref().unwrap_or("(any)")
        ))
        .into());
    }
    let found: Vec<ChangePoint> = series.iter().flat_map(|s| history::change_points(s, args.alpha)).collect();
    let summary = summary(&series, &found);
    match args.format {
        DetectFormat::Text => show!("{}", text(&found, &summary)),
        DetectFormat::Markdown => show!("{}", markdown(&found, &summary)),
        DetectFormat::Json => show!("{}\n", json(&found)),
    }
    let at_head: Vec<&ChangePoint> = found.iter().filter(|c| c.at_head && c.regression).collect();
    if args.fail_on_regression && !at_head.is_empty() {
        say!(
            "error: {} series sit at a regressed level at their head (unconfirmed: no A/B has re-run them), first {} at {}",
            at_head.len(),
            at_head[0].key,
            short(&at_head[0].first_bad)
        );
        return Ok(ExitCode::from(Exit::Regression.code()));
    }
    Ok(ExitCode::SUCCESS)
}

/// One line on what was searched and found.
fn summary(series: &[history::Series], found: &[ChangePoint]) -> String {
    let machines: std::collections::BTreeSet<&str> = series.iter().map(|s| s.key.machine.as_str()).collect();
    let regressions = found.iter().filter(|c| c.regression).count();
    format!(
        "{} series on {} machine(s): {} change point(s), {regressions} regression(s), {} of them at a series' head\n",
        series.len(),
        machines.len(),
        found.len(),
        found.iter().filter(|c| c.at_head && c.regression).count()
    )
}

/// The cells of a change point's row, shared by the text and Markdown tables.
fn cells(c: &ChangePoint) -> [String; 6] {
    let range = match c.adjacent {
        Some(false) => format!("{}..{} (commits between not stored)", short(&c.last_good), short(&c.first_bad)),
        _ => format!("{}..{}", short(&c.last_good), short(&c.first_bad)),
    };
    let change = match c.change.interval {
        Some((lo, hi)) => format!("{:+.2}% [{:+.2}%, {:+.2}%]", c.change.ratio() * 100.0, lo * 100.0, hi * 100.0),
        None => format!("{:+.2}%", c.change.ratio() * 100.0),
    };
    let evidence = match c.change.evidence {
        Evidence::PValue(p) => format!("p = {p:.1e}"),
        Evidence::Counts(a, b) => format!("{} → {}", count(a), count(b)),
    };
    let verdict =
        format!("{}{}", if c.regression { "regression" } else { "improvement" }, if c.at_head { ", head" } else { "" });
    [format!("{} {}", c.key.case_id, c.key.metric), range, change, evidence, verdict, c.key.machine.clone()]
}

/// A count as it reads: whole when it is, else to two decimals.
fn count(x: f64) -> String {
    if x.fract() == 0.0 { format!("{x:.0}") } else { format!("{x:.2}") }
}

fn text(found: &[ChangePoint], summary: &str) -> String {
    let header = ["case and figure", "last good..first bad", "change", "evidence", "verdict"];
    let mut rows = vec![header.map(String::from).to_vec()];
    rows.extend(found.iter().map(|c| cells(c)[..5].to_vec()));
    let table = if found.is_empty() { String::new() } else { crate::format::table(&rows, |_| false) };
    table + summary
}

fn markdown(found: &[ChangePoint], summary: &str) -> String {
    if found.is_empty() {
        return format!("No change points.\n\n{summary}");
    }
    let mut out = String::from("| case and figure | last good..first bad | change | evidence | verdict | machine |\n");
    out += "|---|---|---|---|---|---|\n";
    for c in found {
        out += &format!("| {} |\n", cells(c).join(" | "));
    }
    format!("{out}\n{summary}")
}

fn json(found: &[ChangePoint]) -> String {
    let rows: Vec<serde_json::Value> = found
        .iter()
        .map(|c| {
            let (p, counts) = match c.change.evidence {
                Evidence::PValue(p) => (Some(p), None),
                Evidence::Counts(a, b) => (None, Some([a, b])),
            };
            serde_json::json!({
                "case": c.key.case_id, "metric": c.key.metric, "machine": c.key.machine, "settings": c.key.settings,
                "last_good": c.last_good, "first_bad": c.first_bad, "adjacent": c.adjacent,
                "before": c.change.before, "after": c.change.after, "change": c.change.ratio(),
                "interval": c.change.interval.map(|(lo, hi)| [lo, hi]), "p_value": p, "counts": counts,
                "regression": c.regression, "at_head": c.at_head, "confirmation": "unconfirmed",
            })
        })
        .collect();
    serde_json::to_string_pretty(&rows).unwrap_or_default()
}
