//! `harness history docs`: a static site of the history. `index.html` holds the summary table,
//! the open change points newest first (each linked to its series' row of it) and, per series,
//! a chart over its commits (the forks' spread as a band, each change point a vertical line:
//! solid red when confirmed or exact, dashed orange when unconfirmed, grey when the A/B
//! rejected it) with the table of its change points and what re-running them measured. One
//! SVG file per chart; the same store always gives byte-identical files.

use super::File;
use super::explained::Explanation;
use crate::history::store::{Confirmation, Outcome, word};
use crate::history::{ChangePoint, Series};
use plotters::prelude::*;

/// What the site shows.
pub(crate) struct Site<'a> {
    /// Where the history is kept, as shown.
    pub store: String,
    /// Every series, in order.
    pub series: &'a [Series],
    /// Every change point, with what `confirm` decided.
    pub points: Vec<(&'a ChangePoint, Option<&'a Confirmation>)>,
    /// A URL to which `A...B` appends a comparison of two commits (`https://github.com/o/r/compare/`).
    pub compare_url: Option<String>,
    /// The A/B table of each confirmation whose report could be read, by its A/B report's path.
    pub tables: std::collections::BTreeMap<String, String>,
    /// What `harness explain` found beside each A/B report that has it, by the report's path:
    /// its flame graphs are copied into the site under `explain/N/` and linked from the row.
    pub explained: std::collections::BTreeMap<String, Explanation>,
}

/// The A/B report a decision's evidence names (the first of `AB.json, SEARCH.json` when a
/// bisect narrowed it), if it names one.
pub(crate) fn ab_report(evidence: &str) -> Option<&str> {
    evidence.split(", ").next().filter(|path| path.ends_with(".json"))
}

/// How a change point stands, for its colour and its word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Standing {
    Confirmed,
    Unconfirmed,
    Rejected,
}

fn standing(d: Option<&Confirmation>) -> Standing {
    match d.map(|d| d.outcome) {
        None => Standing::Unconfirmed,
        Some(Outcome::Confirmed | Outcome::Exact) => Standing::Confirmed,
        Some(Outcome::Layout | Outcome::NotReproduced) => Standing::Rejected,
    }
}

/// `&`, `<`, `>` and `"` escaped for HTML text and attributes.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn short(c: &str) -> &str {
    &c[..c.len().min(12)]
}

/// The site's files: `index.html` and one `series-N.svg` per series.
pub(crate) fn render(site: &Site<'_>) -> anyhow::Result<Vec<File>> {
    let mut files = vec![];
    let mut sections = String::new();
    for (i, s) in site.series.iter().enumerate() {
        let points: Vec<_> = site.points.iter().filter(|(c, _)| c.key == s.key).copied().collect();
        let svg = chart(s, &points)?;
        let name = format!("series-{}.svg", i + 1);
        sections += &section(site, i, s, &points, &name);
        files.push((name, svg));
    }
    let html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>History of {store}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>History</h1>\n<p>{store}: {summary}</p>\n{open}\n{sections}</body>\n</html>\n",
        store = esc(&site.store),
        summary = esc(&summary(site)),
        open = open_points(site),
    );
    files.insert(0, ("index.html".into(), html));
    for (n, x) in site.explained.values().enumerate() {
        files.extend(x.graphs.iter().map(|(name, svg)| (format!("explain/{}/{name}", n + 1), svg.clone())));
    }
    Ok(files)
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse;margin:1em 0}\
td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}.confirmed{color:#c00}.unconfirmed{color:#c60}\
.rejected{color:#777}:target{background:#ffd}img{max-width:100%}";

fn summary(site: &Site<'_>) -> String {
    let count = |want: Standing| site.points.iter().filter(|(_, d)| standing(*d) == want).count();
    let machines: std::collections::BTreeSet<&str> = site.series.iter().map(|s| s.key.machine.as_str()).collect();
    format!(
        "{} series on {} machine(s), {} change point(s): {} confirmed, {} unconfirmed, {} rejected by an A/B",
        site.series.len(),
        machines.len(),
        site.points.len(),
        count(Standing::Confirmed),
        count(Standing::Unconfirmed),
        count(Standing::Rejected)
    )
}

/// The anchor of change point `j` of series `i`.
fn anchor(i: usize, j: usize) -> String {
    format!("cp-{}-{}", i + 1, j + 1)
}

/// The change points no A/B rejected, newest first (the ones nearest their series' head).
fn open_points(site: &Site<'_>) -> String {
    let mut open = vec![];
    for (i, s) in site.series.iter().enumerate() {
        let points = site.points.iter().filter(|(c, _)| c.key == s.key);
        for (j, (c, d)) in points.enumerate() {
            if standing(*d) != Standing::Rejected {
                let age = s.commits.len() - s.commits.iter().position(|p| p.commit == c.first_bad).unwrap_or(0);
                open.push((age, i, j, *c, *d));
            }
        }
    }
    open.sort_by_key(|o| (o.0, o.1, o.2));
    if open.is_empty() {
        return "<h2>Open change points</h2>\n<p>None.</p>\n".into();
    }
    let mut out = String::from(
        "<h2>Open change points</h2>\n<table id=\"open\">\n<tr><th>case and figure</th><th>commits</th><th>change</th><th>confirmation</th></tr>\n",
    );
    for (_, i, j, c, d) in open {
        out += &format!(
            "<tr><td>{}</td><td><a href=\"#{}\">{}..{}</a></td><td>{:+.2}%</td><td class=\"{}\">{}</td></tr>\n",
            esc(&c.key.to_string()),
            anchor(i, j),
            short(&c.last_good),
            short(&c.first_bad),
            c.change.ratio() * 100.0,
            class(d),
            esc(&word(d))
        );
    }
    out + "</table>\n"
}

fn class(d: Option<&Confirmation>) -> &'static str {
    match standing(d) {
        Standing::Confirmed => "confirmed",
        Standing::Unconfirmed => "unconfirmed",
        Standing::Rejected => "rejected",
    }
}

/// One series: its chart and its change points' table.
fn section(
    site: &Site<'_>,
    i: usize,
    s: &Series,
    points: &[(&ChangePoint, Option<&Confirmation>)],
    svg: &str,
) -> String {
    let title = esc(&s.key.to_string());
    let mut out = format!(
        "<section id=\"series-{n}\">\n<h2>{title}</h2>\n<p>{} commit(s), {} run(s); {} · {}</p>\n<img src=\"{svg}\" alt=\"{title} over commits\">\n",
        s.commits.len(),
        s.runs,
        esc(&s.key.machine),
        esc(&s.key.settings),
        n = i + 1,
    );
    if points.is_empty() {
        return out + "<p>No change point.</p>\n</section>\n";
    }
    out += "<table>\n<tr><th>commits</th><th>change</th><th>confirmation</th><th>what the re-run measured</th></tr>\n";
    for (j, (c, d)) in points.iter().enumerate() {
        let range = format!("{}..{}", short(&c.last_good), short(&c.first_bad));
        let range = match &site.compare_url {
            Some(url) => format!("<a href=\"{}{}...{}\">{range}</a>", esc(url), esc(&c.last_good), esc(&c.first_bad)),
            None => range,
        };
        let between = if c.adjacent == Some(false) { " (commits between not stored)" } else { "" };
        let detail = d.map_or(String::new(), |d| format!("{}{}", esc(&d.detail), evidence(site, d)));
        out += &format!(
            "<tr id=\"{}\"><td>{range}{between}</td><td>{:+.2}%</td><td class=\"{}\">{}</td><td>{detail}</td></tr>\n",
            anchor(i, j),
            c.change.ratio() * 100.0,
            class(*d),
            esc(&word(*d))
        );
    }
    out + "</table>\n</section>\n"
}

/// A decision's evidence as the row shows it: its A/B table folded in where its report was
/// read, else its path; then links to the flame graphs of its explanation, where one was run.
fn evidence(site: &Site<'_>, d: &Confirmation) -> String {
    let Some(e) = d.evidence.as_deref() else { return String::new() };
    let report = ab_report(e);
    let mut out = match report.and_then(|r| site.tables.get(r)) {
        Some(table) => format!(
            "<details><summary>the A/B table (<code>{}</code>)</summary><pre>{}</pre></details>",
            esc(e),
            esc(table)
        ),
        None => format!(" (<code>{}</code>)", esc(e)),
    };
    let explained = report.and_then(|r| site.explained.keys().position(|k| k == r).map(|n| (n, &site.explained[r])));
    if let Some((n, x)) = explained {
        for case in &x.cases {
            let links: Vec<String> = case
                .graphs
                .iter()
                .filter_map(|g| g.rsplit('/').next())
                .map(|name| {
                    let what = if name.ends_with(".diff.svg") {
                        "difference"
                    } else if name.ends_with(".base.flame.svg") {
                        "last good"
                    } else {
                        "first bad"
                    };
                    format!("<a href=\"explain/{}/{}\">{what}</a>", n + 1, esc(name))
                })
                .collect();
            out += &format!("<br>flame graphs of <code>{}</code>: {}", esc(&case.case), links.join(", "));
        }
    }
    out
}

/// The series over its commits: each commit's value, its forks' spread as a band, and a
/// vertical line at each change point in the colour of its standing.
fn chart(s: &Series, points: &[(&ChangePoint, Option<&Confirmation>)]) -> anyhow::Result<String> {
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let values: Vec<(f64, f64)> = s.commits.iter().enumerate().map(|(i, c)| (i as f64, mean(&c.values))).collect();
    let spread = |c: &crate::history::detect::CommitPoint| {
        let all = if c.forks.is_empty() { &c.values } else { &c.forks };
        (all.iter().copied().fold(f64::INFINITY, f64::min), all.iter().copied().fold(f64::NEG_INFINITY, f64::max))
    };
    let (lo, hi) =
        s.commits.iter().map(spread).fold((f64::INFINITY, f64::NEG_INFINITY), |a, b| (a.0.min(b.0), a.1.max(b.1)));
    let pad = ((hi - lo).abs() * 0.1).max(hi.abs() * 0.01).max(1e-9);
    let n = s.commits.len().max(2) as f64;
    let labels: Vec<String> = s.commits.iter().map(|c| short(&c.commit)[..7.min(c.commit.len())].to_string()).collect();
    super::charts::svg((900, 360), |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.5..(n - 0.5), (lo - pad)..(hi + pad))?;
        let x_label = |x: &f64| labels.get(x.round() as usize).cloned().unwrap_or_default();
        let y_label = |v: &f64| crate::format::si(*v);
        chart
            .configure_mesh()
            .x_labels(labels.len().clamp(2, 12))
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label)
            .x_desc("commit")
            .y_desc(s.key.metric.as_str())
            .label_style(super::charts::TICK_FONT)
            .draw()?;
        let band: Vec<(f64, f64)> = s
            .commits
            .iter()
            .enumerate()
            .map(|(i, c)| (i as f64, spread(c).1))
            .chain(s.commits.iter().enumerate().rev().map(|(i, c)| (i as f64, spread(c).0)))
            .collect();
        chart.draw_series(std::iter::once(Polygon::new(band, RGBColor(31, 119, 180).mix(0.2).filled())))?;
        chart.draw_series(LineSeries::new(values.iter().copied(), RGBColor(31, 119, 180).stroke_width(2)))?;
        chart.draw_series(values.iter().map(|&p| Circle::new(p, 3, RGBColor(31, 119, 180).filled())))?;
        for (c, d) in points {
            let Some(at) = s.commits.iter().position(|p| p.commit == c.first_bad) else { continue };
            let x = at as f64 - 0.5;
            mark(&mut chart, vec![(x, lo - pad), (x, hi + pad)], standing(*d))?;
        }
        Ok(())
    })
}

/// A change point's vertical line in the colour of its standing: solid red confirmed, grey
/// rejected, dashed orange unconfirmed.
fn mark<DB: DrawingBackend>(
    chart: &mut ChartContext<
        '_,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    line: Vec<(f64, f64)>,
    standing: Standing,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    match standing {
        Standing::Confirmed => chart.draw_series(std::iter::once(PathElement::new(line, RED.stroke_width(2))))?,
        Standing::Rejected => {
            chart.draw_series(std::iter::once(PathElement::new(line, RGBColor(150, 150, 150).stroke_width(2))))?
        }
        Standing::Unconfirmed => {
            chart.draw_series(DashedLineSeries::new(line, 6, 4, RGBColor(204, 102, 0).stroke_width(2)))?
        }
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::SeriesKey;
    use crate::history::detect::{Change, CommitPoint, Evidence};

    fn series() -> Series {
        let key = SeriesKey {
            case_id: "a<b>".into(),
            metric: "throughput".into(),
            machine: "m".into(),
            settings: "s".into(),
        };
        let commit = |i: usize, v: f64| CommitPoint {
            commit: format!("{i:040x}"),
            parent: (i > 0).then(|| format!("{:040x}", i - 1)),
            values: vec![v],
            forks: vec![v * 0.99, v * 1.01],
        };
        Series {
            key,
            exact: false,
            higher_is_better: true,
            commits: vec![commit(0, 10.0), commit(1, 10.0), commit(2, 9.0)],
            runs: 3,
        }
    }

    /// An explanation of case `a<b>` with two of its flame graphs, as `harness explain` wrote it.
    fn explanation() -> Explanation {
        let diff = serde_json::from_value(serde_json::json!({
            "events": [], "own": [], "inclusive": [], "appeared": [], "vanished": [], "components": [], "cause": null
        }))
        .unwrap();
        let case = crate::explain::Explained {
            case: "a<b>".into(),
            verdict: None,
            time_moved: true,
            diff,
            io: vec![],
            graphs: vec!["ab.explain/a.diff.svg".into(), "ab.explain/a.base.flame.svg".into()],
        };
        let graphs =
            vec![("a.diff.svg".into(), "<svg>diff</svg>".into()), ("a.base.flame.svg".into(), "<svg/>".into())];
        Explanation { source: "ab.explain".into(), cases: vec![case], graphs }
    }

    #[test]
    fn an_evidence_names_its_ab_report_first() {
        assert_eq!(ab_report("x/ab.json"), Some("x/ab.json"));
        assert_eq!(
            ab_report("x/ab.json, x/bisect.json"),
            Some("x/ab.json"),
            "a narrowed step: the A/B, then the search"
        );
        assert_eq!(ab_report("x/bisect"), None);
    }

    #[test]
    fn the_index_links_each_open_change_to_its_row_and_shows_its_ab_table_escaped() {
        let s = series();
        let change = Change {
            at: 2,
            before: 10.0,
            after: 9.0,
            interval: Some((-0.12, -0.08)),
            evidence: Evidence::PValue(1e-4),
        };
        let point = ChangePoint {
            key: s.key.clone(),
            last_good: s.commits[1].commit.clone(),
            first_bad: s.commits[2].commit.clone(),
            adjacent: Some(true),
            regression: true,
            change,
            at_head: true,
        };
        let decided = Confirmation {
            key: s.key.clone(),
            last_good: point.last_good.clone(),
            first_bad: point.first_bad.clone(),
            outcome: Outcome::Confirmed,
            commit: Some(point.first_bad.clone()),
            detail: "-9.8% [-11%, -8%]".into(),
            evidence: Some("ab.json".into()),
        };
        let series = [s];
        let site = Site {
            store: "h.sqlite".into(),
            series: &series,
            points: vec![(&point, Some(&decided))],
            compare_url: Some("https://example.invalid/compare/".into()),
            tables: [("ab.json".to_string(), "case <x> 0.90".to_string())].into(),
            explained: [("ab.json".to_string(), explanation())].into(),
        };
        let files = render(&site).unwrap();
        let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(names, ["index.html", "series-1.svg", "explain/1/a.diff.svg", "explain/1/a.base.flame.svg"]);
        let html = &files[0].1;
        assert!(html.contains("<a href=\"#cp-1-1\">000000000000..000000000000</a>"), "{html}");
        assert!(html.contains("<tr id=\"cp-1-1\">"), "{html}");
        assert!(html.contains("a&lt;b&gt; throughput") && !html.contains("a<b>"), "escaped: {html}");
        assert!(html.contains("<pre>case &lt;x&gt; 0.90</pre>"), "{html}");
        assert!(html.contains("confirmed at 000000000000") && html.contains("1 confirmed, 0 unconfirmed"), "{html}");
        assert!(files[1].1.starts_with("<svg"), "a chart");
        assert!(html.contains("flame graphs of <code>a&lt;b&gt;</code>: <a href=\"explain/1/a.diff.svg\">difference</a>, <a href=\"explain/1/a.base.flame.svg\">last good</a>"), "{html}");
        assert_eq!(files[2].1, "<svg>diff</svg>", "the graph is copied into the site");
        assert_eq!(render(&site).unwrap(), files, "the same history gives the same files");
    }
}
