//! `harness docs`: a Markdown page of one or more reports (environment, one table per workload
//! group with params as columns) and SVG charts, written atomically; the same reports always
//! give byte-identical files.

mod bars;
pub(crate) mod charts;
mod curve;
pub(crate) mod explained;
pub(crate) mod growth;
pub(crate) mod history;

use crate::export::markdown::row;
use crate::report::{Benchmark, Report};
use crate::row::{CaseRow, Columns, ERROR_HEADER};
use charts::Line;
use std::collections::{BTreeMap, BTreeSet};

/// A file to write: name within the output directory, and its text.
pub(crate) type File = (String, String);

/// The group of a workload name: `sql` for `sql/thread_select_by_id`.
fn group(name: &str) -> &str {
    name.split('/').next().unwrap_or(name)
}

fn environment(source: &str, r: &Report) -> String {
    let m = &r.meta;
    let s = m.settings.as_ref();
    let mut out = format!("### `{source}`\n\n| | |\n|---|---|\n");
    let mut line = |k: &str, v: String| out.push_str(&format!("| {k} | {} |\n", v.replace('|', "\\|")));
    line(
        "commit",
        format!(
            "`{}`{}",
            m.git.commit.as_deref().unwrap_or("unknown"),
            match m.git.dirty {
                Some(true) => " (dirty: uncommitted changes)",
                Some(false) => " (clean)",
                None => "",
            }
        ),
    );
    line("rustc", m.rustc.clone());
    line("build", format!("{}, {}", m.build_profile, m.target));
    line("cpu", format!("{} ({} logical, {} available)", m.cpu.model, m.cpu.logical_cpus, m.cpu.available_parallelism));
    line("os", format!("{} (kernel {})", m.os.name, m.os.kernel));
    line("limits", format!("cgroup CPU quota {}, memory {}", m.cgroup.cpu_quota, m.cgroup.memory_limit));
    let stepped = !r.benchmarks.is_empty() && r.benchmarks.iter().all(Benchmark::is_stepped);
    if let (Some(s), true) = (s, stepped) {
        line("settings", format!("{} fork(s); measured in steps of table size (no warmup; every op timed)", s.forks));
    } else if let Some(s) = s {
        line(
            "settings",
            format!(
                "{} fork(s); warmup {} × {}; {} iteration(s) × {}; threads {}; mode {}{}{}",
                s.forks,
                s.warmup_iterations,
                humantime::format_duration(std::time::Duration::from_nanos(s.warmup_nanos)),
                s.iterations,
                humantime::format_duration(std::time::Duration::from_nanos(s.iteration_nanos)),
                s.threads.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
                s.mode,
                if s.instructions { "; instruction counts (callgrind)" } else { "" },
                if s.alloc { "; allocation counts" } else { "" },
            ),
        );
    }
    line("configuration", m.configuration.clone().unwrap_or_default());
    line("command", format!("`{}`", m.command_line.join(" ")));
    line("when", format!("{} to {}", m.started_at, m.ended_at.as_deref().unwrap_or("(not finished)")));
    line("status", format!("{:?}", r.status).to_lowercase());
    if !m.system.warnings.is_empty() {
        line("warnings", m.system.warnings.join("; "));
    }
    out.push('\n');
    out
}

/// The table of one group: params as columns.
fn table(cases: &[&Benchmark]) -> String {
    let keys: BTreeSet<&String> = cases.iter().flat_map(|b| b.params.keys()).collect();
    let columns = Columns::of(cases.iter().copied());
    let mut head: Vec<String> = vec!["workload".into()];
    head.extend(keys.iter().map(|k| k.to_string()));
    if columns.threads {
        head.push("threads".into());
    }
    head.extend(["score", ERROR_HEADER, "unit", "forks ok"].map(String::from));
    if columns.instr {
        head.push("instr/op".into());
    }
    if columns.allocs {
        head.push("allocs/op".into());
    }
    if columns.io {
        head.extend(crate::row::IO_HEADER.map(String::from));
    }
    if columns.latency {
        head.extend(["p50", "p99"].map(String::from));
    }
    let mut out = format!("| {} |\n|{}\n", head.join(" | "), "---|".repeat(head.len()));
    for b in cases {
        let r = CaseRow::of(b);
        let mut cells: Vec<String> =
            keys.iter().map(|k| b.params.get(*k).cloned().unwrap_or_else(|| "-".into())).collect();
        if columns.threads {
            cells.push(r.threads);
        }
        cells.extend([r.ops, r.error, "ops/s".into(), r.forks]);
        if columns.instr {
            cells.push(r.instr);
        }
        if columns.allocs {
            cells.push(r.allocs);
        }
        if columns.io {
            cells.extend([r.trips, r.statements, r.rows]);
        }
        if columns.latency {
            cells.extend([r.p50, r.p99]);
        }
        out.push_str(&row(&r.name, &cells));
    }
    out
}

/// Growth curves: per `db`, one line per ID kind of `ids/insert_growth`, ops/s of every measured
/// iteration against the table's rows at its end.
fn growth(cases: &[&Benchmark]) -> Vec<(String, Vec<Line>)> {
    let mut by_db: BTreeMap<String, Vec<Line>> = BTreeMap::new();
    for b in cases.iter().filter(|b| b.name == "ids/insert_growth") {
        let mut points: Vec<(f64, f64)> = b
            .forks
            .iter()
            .filter(|f| f.is_ok_timed())
            .flat_map(|f| &f.iterations)
            .filter_map(|it| Some((*it.observed.get("table_rows")? as f64, it.ops_per_sec())))
            .filter(|p| p.1.is_finite())
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        if points.is_empty() {
            continue;
        }
        let db = b.params.get("db").cloned().unwrap_or_else(|| "default".into());
        let name = b.params.get("kind").cloned().unwrap_or_else(|| b.id().to_string());
        by_db.entry(db).or_default().push(Line { name, points });
    }
    by_db.into_iter().collect()
}

/// One workload group's section of the page: a bar chart and a table, or, for workloads
/// measured in steps, their growth curves; its charts go to `files`.
fn group_section(g: &str, in_group: &[&Benchmark], page: &mut String, files: &mut Vec<File>) -> anyhow::Result<()> {
    page.push_str(&format!("## {g}\n\n"));
    // Workloads measured in steps: curves over table size, not one score per case.
    if in_group.iter().all(|b| b.is_stepped()) {
        let (section, charts) = growth::section(g, in_group)?;
        page.push_str(&section);
        files.extend(charts);
        return Ok(());
    }
    // An open-loop case's ops/s is its rate: its curve shows it, not a bar.
    let closed: Vec<&Benchmark> = in_group.iter().copied().filter(|b| b.rate.is_none()).collect();
    let chart = bars::chart(format!("{g}: ops/s (whiskers: 99.9% interval)"), g, &closed);
    if !chart.bars.is_empty() {
        let file = format!("{g}.svg");
        files.push((file.clone(), charts::bars(&chart)?));
        page.push_str(&format!("![{g} throughput]({file})\n\n"));
    }
    page.push_str(&table(in_group));
    page.push('\n');
    if in_group.iter().any(|b| b.counts_client_only()) {
        page.push_str(&format!("Note: {}.\n\n", crate::row::CLIENT_ONLY));
    }
    for limit in in_group.iter().filter_map(|b| b.at_ceiling()) {
        page.push_str(&format!("Note: {limit}.\n\n"));
    }
    let (curves, charts) = curve::section(g, in_group)?;
    page.push_str(&curves);
    files.extend(charts);
    for (db, lines) in growth(in_group) {
        let file = format!("{g}-insert-growth-{db}.svg");
        let title = format!("ids/insert_growth on {db}: ops/s against table rows");
        files.push((file.clone(), charts::lines(&title, "rows in the table", "ops/s", &lines)?));
        page.push_str(&format!("![{title}]({file})\n\n"));
    }
    Ok(())
}

/// The page and charts of `reports`, each named by its source path, with `intro` (Markdown)
/// right after the title.
pub(crate) fn render(
    reports: &[(String, Report)],
    intro: &str,
    explanations: &[explained::Explanation],
) -> anyhow::Result<Vec<File>> {
    let mut files = vec![];
    let mut page = String::from("# Benchmark results\n\n");
    if !intro.trim().is_empty() {
        page.push_str(intro.trim());
        page.push_str("\n\n");
    }
    let sources: Vec<String> = reports.iter().map(|(s, _)| format!("`{s}`")).collect();
    page.push_str(&format!(
        "Generated by `harness docs` from {}. Scores are the mean ops/s over every measured iteration of every fork that finished ok; the error is the half-width of the 99.9% Student-t interval (JMH's scoreError). `~` marks instruction counts that vary run to run.\n\n## Environment\n\n",
        sources.join(", ")
    ));
    for (source, r) in reports {
        page.push_str(&environment(source, r));
    }
    let cases: Vec<&Benchmark> = reports.iter().flat_map(|(_, r)| &r.benchmarks).collect();
    let mut groups: Vec<&str> = vec![];
    for b in &cases {
        if !groups.contains(&group(&b.name)) {
            groups.push(group(&b.name));
        }
    }
    for g in groups {
        let in_group: Vec<&Benchmark> = cases.iter().copied().filter(|b| group(&b.name) == g).collect();
        group_section(g, &in_group, &mut page, &mut files)?;
    }
    let skipped: Vec<String> =
        cases.iter().filter_map(|b| b.skipped.as_ref().map(|why| format!("- `{}`: {why}\n", b.id()))).collect();
    if !skipped.is_empty() {
        page.push_str("## Skipped\n\n");
        page.extend(skipped);
        page.push('\n');
    }
    page.push_str(&explained::section(explanations, &mut files));
    files.insert(0, ("README.md".into(), page.trim_end().to_string() + "\n"));
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_has_environment_params_as_columns_and_charts() {
        let files = render(&[("r.json".into(), crate::export::fixture::report())], "Made *here*.\n", &[]).unwrap();
        let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(names, ["README.md", "baseline.svg", "sql.svg"]);
        let page = &files[0].1;
        assert!(page.contains("| commit | `0123456789abcdef`"), "{page}");
        assert!(page.contains("| workload | db | row_count | threads | score |"), "{page}");
        assert!(page.contains("| sql/thread_select_by_id | sqlite | 1000 | 4 | 500.0 | ± 105.5 (21.1%) | ops/s | 2/2 | 5597.4 | 3.00 | 3 | 2 | 1 | 1.000 µs | 1.000 ms |"), "{page}");
        assert!(page.starts_with("# Benchmark results\n\nMade *here*.\n\n"), "{page}");
        assert_eq!(files, render(&[("r.json".into(), crate::export::fixture::report())], "Made *here*.", &[]).unwrap());
    }

    #[test]
    fn insert_growth_becomes_lines_per_db() {
        let mut b = crate::compare::fixtures::timed("ids/insert_growth", &[&[100.0, 90.0]]);
        b.params = [("db".to_string(), "sqlite".to_string()), ("kind".to_string(), "ulid".to_string())].into();
        for (i, it) in b.forks[0].iterations.iter_mut().enumerate() {
            it.observed.insert("table_rows".into(), 1000 * (i as i64 + 1));
        }
        let g = growth(&[&b]);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].0, "sqlite");
        assert_eq!(g[0].1[0].points, vec![(1000.0, 100.0), (2000.0, 90.0)]);
    }
}
