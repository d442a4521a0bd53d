//! The page's "Explained differences" section: what `harness explain` found for a report
//! (its `REPORT.explain/explain.json`), each case with its flame graphs beside the page.

use super::File;
use crate::explain::{Explained, render::percent};
use crate::format::si;

/// One report's explanation, as `harness docs` found it beside the report.
#[derive(Debug, Clone)]
pub(crate) struct Explanation {
    /// The explanation's directory, as given (for the section's text).
    pub source: String,
    /// The explained cases.
    pub cases: Vec<Explained>,
    /// The flame graphs: file name and SVG text.
    pub graphs: Vec<File>,
}

/// The section's Markdown; the flame graphs go into `files` under `explain/`.
pub(crate) fn section(explanations: &[Explanation], files: &mut Vec<File>) -> String {
    if explanations.is_empty() {
        return String::new();
    }
    let mut out = String::from("## Explained differences\n\n");
    for x in explanations {
        out.push_str(&format!(
            "From `harness explain` (`{}`): an instruction fork of each build, counted by callgrind, per op.\n\n",
            x.source
        ));
        for case in &x.cases {
            out.push_str(&case_text(case));
        }
        files.extend(x.graphs.iter().map(|(name, svg)| (format!("explain/{name}"), svg.clone())));
    }
    out
}

fn case_text(e: &Explained) -> String {
    let ir = e.diff.instructions();
    let mut out = format!("### `{}`\n\n", e.case);
    if let Some(verdict) = &e.verdict {
        out.push_str(&format!("- timed forks: {verdict}\n"));
    }
    out.push_str(&format!(
        "- instructions per op: {} → {} ({})\n",
        si(ir.base),
        si(ir.new),
        percent(ir.delta(), ir.base)
    ));
    if let Some(c) = &e.diff.cause {
        out.push_str(&format!(
            "- the change enters at `{}` ({} of the total, inclusive)\n",
            c.change.name,
            percent(c.change.delta(), ir.base)
        ));
    }
    out.push_str("\n| function | component | base/op | new/op | Δ of total |\n|---|---|---:|---:|---:|\n");
    for f in e.diff.own.iter().take(5) {
        let c = &f.change;
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            c.name.replace('|', "\\|"),
            f.component,
            si(c.base),
            si(c.new),
            percent(c.delta(), ir.base)
        ));
    }
    let names: Vec<String> = e.graphs.iter().filter_map(|g| g.rsplit('/').next().map(String::from)).collect();
    if let Some(diff) = names.iter().find(|n| n.ends_with(".diff.svg")) {
        out.push_str(&format!("\n![differential flame graph of {}](explain/{diff})\n", e.case));
    }
    let plain: Vec<String> =
        names.iter().filter(|n| n.ends_with(".flame.svg")).map(|n| format!("[{n}](explain/{n})")).collect();
    if !plain.is_empty() {
        out.push_str(&format!("\nEach build's flame graph: {}\n", plain.join(", ")));
    }
    out.push('\n');
    out
}
