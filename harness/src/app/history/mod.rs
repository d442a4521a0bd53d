//! `harness history`: `add` stores reports, `detect` finds the change points of every series,
//! `run` backfills a range of commits ([`backfill`]).

mod backfill;
mod confirm;

use crate::cli::{DetectFormat, DetectSelect, HistoryArgs, HistoryCommand};
use crate::cli::{HistoryAddArgs, HistoryDetectArgs, HistoryDocsArgs};
use crate::error::{BadInput, Exit};
use crate::history::store::{Added, Confirmation, Location, Outcome, Store};
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
        HistoryCommand::Confirm(a) => confirm::confirm(&location, a),
        HistoryCommand::Docs(a) => site(&location, a),
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

/// What detection found in a store: the series the filters keep, their change points, and
/// each case's configuration (the newest run's), for a command that re-runs a case.
pub(super) struct Found {
    series: Vec<history::Series>,
    points: Vec<ChangePoint>,
    configurations: std::collections::HashMap<String, String>,
}

/// The change points of every series of `store` that `select` keeps; a store with nothing to
/// search, or filters that keep nothing, is an error naming the way out.
fn find(store: &mut Store, location: &Location, select: &DetectSelect) -> anyhow::Result<Found> {
    let filter = select
        .filter
        .as_deref()
        .map(regex::Regex::new)
        .transpose()
        .map_err(|e| BadInput(format!("--filter is not a regex ({e}); pass one such as '^sql/'")))?;
    let points = store.points()?;
    if points.is_empty() {
        return Err(BadInput(format!(
            "the history store {location} holds no runs: add reports with `harness history add REPORT.json`"
        ))
        .into());
    }
    let options = Options { alpha: select.alpha, include_dirty: select.include_dirty };
    if !select.include_dirty && points.iter().all(|p| p.run.dirty) {
        return Err(BadInput(format!(
            "every run in {location} is of a build with uncommitted edits (or of unknown state), which detection leaves out: pass --include-dirty, or add runs of committed builds"
        ))
        .into());
    }
    let mut newest: Vec<&history::store::StoredPoint> = points.iter().collect();
    newest.sort_by(|a, b| a.run.started_at.cmp(&b.run.started_at));
    let configurations = newest.iter().map(|p| (p.point.case_id.clone(), p.run.configuration.clone())).collect();
    let metric_kept = |m: &str| {
        select
            .metric
            .as_deref()
            .is_none_or(|want| m == want || m.strip_prefix(want).is_some_and(|r| r.starts_with('.')))
    };
    let series: Vec<history::Series> = history::series(points, &options)
        .into_iter()
        .filter(|s| filter.as_ref().is_none_or(|f| f.is_match(&s.key.case_id)) && metric_kept(&s.key.metric))
        .collect();
    if series.is_empty() {
        return Err(BadInput(format!(
            "no series of {location} matches --filter {} --metric {}: run `harness history detect` without them to see every series",
            select.filter.as_deref().unwrap_or("(none)"),
            select.metric.as_deref().unwrap_or("(any)")
        ))
        .into());
    }
    let points = series.iter().flat_map(|s| history::change_points(s, select.alpha)).collect();
    Ok(Found { series, points, configurations })
}

/// The stored decision on `c`, if `history confirm` made one.
fn decision<'a>(c: &ChangePoint, decided: &'a [Confirmation]) -> Option<&'a Confirmation> {
    decided.iter().find(|d| d.key == c.key && d.last_good == c.last_good && d.first_bad == c.first_bad)
}

/// Finds and prints the change points of every series the filters keep, with what `confirm`
/// decided about each; the gate leaves out a regression the A/B rejected.
fn detect(location: &Location, args: &HistoryDetectArgs) -> anyhow::Result<ExitCode> {
    let mut store = Store::open(location)?;
    // Nothing to search is not an error until a gate asks (a gate that saw nothing fails closed).
    let runs = store.run_count()?;
    if !args.fail_on_regression && !args.found.include_dirty && runs > 0 && store.clean_run_count()? == 0 {
        show!(
            "0 series searched: every one of the {runs} runs in {location} is of a build with uncommitted edits, which detection leaves out; pass --include-dirty to search them\n"
        );
        return Ok(ExitCode::SUCCESS);
    }
    let found = find(&mut store, location, &args.found)?;
    let decided = store.confirmations()?;
    let rows: Vec<(&ChangePoint, Option<&Confirmation>)> =
        found.points.iter().map(|c| (c, decision(c, &decided))).collect();
    let summary = summary(&found.series, &found.points);
    match args.format {
        DetectFormat::Text => show!("{}", text(&rows, &summary)),
        DetectFormat::Markdown => show!("{}", markdown(&rows, &summary)),
        DetectFormat::Json => show!("{}\n", json(&rows)),
    }
    let rejected =
        |d: Option<&Confirmation>| d.is_some_and(|d| matches!(d.outcome, Outcome::Layout | Outcome::NotReproduced));
    let at_head: Vec<_> = rows.iter().filter(|(c, d)| c.at_head && c.regression && !rejected(*d)).collect();
    if args.fail_on_regression && !at_head.is_empty() {
        let confirmed = at_head.iter().filter(|(_, d)| d.is_some()).count();
        say!(
            "error: {} series sit at a regressed level at their head ({confirmed} confirmed by an A/B or their exact counts, {} unconfirmed: `harness history confirm` re-runs them), first {} at {}",
            at_head.len(),
            at_head.len() - confirmed,
            at_head[0].0.key,
            short(&at_head[0].0.first_bad)
        );
        return Ok(ExitCode::from(Exit::Regression.code()));
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the history's static site into `--out-dir`, each file atomically.
fn site(location: &Location, args: &HistoryDocsArgs) -> anyhow::Result<ExitCode> {
    use crate::report::write;
    let mut store = Store::open(location)?;
    let found = find(&mut store, location, &args.found)?;
    let decided = store.confirmations()?;
    let site = crate::page::history::Site {
        store: location.to_string(),
        series: &found.series,
        points: found.points.iter().map(|c| (c, decision(c, &decided))).collect(),
        compare_url: args.compare_url.clone(),
        tables: ab_tables(&decided),
        explained: explanations(&decided)?,
    };
    let files = crate::page::history::render(&site)?;
    write::out_dir(&args.out_dir, "index.html")?;
    for (name, text) in &files {
        write::write_bytes_atomic(&args.out_dir.join(name), text.as_bytes())?;
    }
    show!("wrote {} file(s) to {}\n", files.len(), args.out_dir.join("index.html").display());
    Ok(ExitCode::SUCCESS)
}

/// The A/B table of every stored decision whose evidence is an A/B report still on disk.
fn ab_tables(decided: &[Confirmation]) -> std::collections::BTreeMap<String, String> {
    use crate::compare::{Comparison, throughput};
    let reports = decided.iter().filter_map(|d| d.evidence.as_deref().and_then(crate::page::history::ab_report));
    // The page has no terminal: the table's colour, when on, is left out.
    let colour = regex::Regex::new("\x1b\\[[0-9;]*m").expect("a valid pattern");
    reports
        .filter_map(|path| {
            let report = read_report(std::path::Path::new(path), "an A/B").ok()?;
            let table = throughput::compare_sides(&report, Default::default()).text();
            report.is_ab().then(|| (path.to_string(), colour.replace_all(&table, "").into_owned()))
        })
        .collect()
}

/// What `harness explain` wrote beside each stored decision's A/B report, where it was run.
fn explanations(
    decided: &[Confirmation],
) -> Result<std::collections::BTreeMap<String, crate::page::explained::Explanation>, BadInput> {
    let mut found = std::collections::BTreeMap::new();
    for report in decided.iter().filter_map(|d| d.evidence.as_deref().and_then(crate::page::history::ab_report)) {
        if let Some(x) = super::explained_beside(std::path::Path::new(report))? {
            found.insert(report.to_string(), x);
        }
    }
    Ok(found)
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
fn cells(c: &ChangePoint, d: Option<&Confirmation>) -> [String; 7] {
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
    let key = format!("{} {}", c.key.case_id, c.key.metric);
    [key, range, change, evidence, verdict, crate::history::store::word(d), c.key.machine.clone()]
}

/// A count as it reads: whole when it is, else to two decimals.
fn count(x: f64) -> String {
    if x.fract() == 0.0 { format!("{x:.0}") } else { format!("{x:.2}") }
}

/// One row of a table: a change point and what `confirm` decided about it.
type Row<'a> = (&'a ChangePoint, Option<&'a Confirmation>);

fn text(rows: &[Row<'_>], summary: &str) -> String {
    let header = ["case and figure", "last good..first bad", "change", "evidence", "verdict", "confirmation"];
    let mut table = vec![header.map(String::from).to_vec()];
    table.extend(rows.iter().map(|(c, d)| cells(c, *d)[..6].to_vec()));
    let table = if rows.is_empty() { String::new() } else { crate::format::table(&table, |_| false) };
    table + summary
}

fn markdown(rows: &[Row<'_>], summary: &str) -> String {
    if rows.is_empty() {
        return format!("No change points.\n\n{summary}");
    }
    let mut out = String::from(
        "| case and figure | last good..first bad | change | evidence | verdict | confirmation | machine |\n",
    );
    out += "|---|---|---|---|---|---|---|\n";
    for (c, d) in rows {
        out += &format!("| {} |\n", cells(c, *d).join(" | "));
    }
    format!("{out}\n{summary}")
}

fn json(rows: &[Row<'_>]) -> String {
    let rows: Vec<serde_json::Value> = rows
        .iter()
        .map(|(c, d)| {
            let (p, counts) = match c.change.evidence {
                Evidence::PValue(p) => (Some(p), None),
                Evidence::Counts(a, b) => (None, Some([a, b])),
            };
            serde_json::json!({
                "case": c.key.case_id, "metric": c.key.metric, "machine": c.key.machine, "settings": c.key.settings,
                "last_good": c.last_good, "first_bad": c.first_bad, "adjacent": c.adjacent,
                "before": c.change.before, "after": c.change.after, "change": c.change.ratio(),
                "interval": c.change.interval.map(|(lo, hi)| [lo, hi]), "p_value": p, "counts": counts,
                "regression": c.regression, "at_head": c.at_head,
                "confirmation": d.map_or("unconfirmed", |d| d.outcome.word()),
                "confirmed_commit": d.and_then(|d| d.commit.clone()),
                "confirmation_detail": d.map(|d| d.detail.clone()),
            })
        })
        .collect();
    serde_json::to_string_pretty(&rows).unwrap_or_default()
}
