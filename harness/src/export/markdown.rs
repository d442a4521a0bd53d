//! Markdown: one table row per case, with the error, forks and any counts.

use super::Exporter;
use crate::report::Report;
use crate::row::{CaseRow, ERROR_HEADER};

/// The Markdown exporter.
pub(crate) struct Markdown;

/// The table header.
const HEADER: [&str; 12] = [
    "benchmark",
    "params",
    "ops/s",
    ERROR_HEADER,
    "forks ok",
    "instr/op",
    "allocs/op",
    "trips/op",
    "stmts/op",
    "rows read/op",
    "p50",
    "p99",
];

/// One Markdown row.
pub(crate) fn row(first: &str, cells: &[String]) -> String {
    let esc = |c: &str| c.replace('|', "\\|");
    format!("| {} | {} |\n", esc(first), cells.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | "))
}

impl Exporter for Markdown {
    fn export(&self, report: &Report) -> anyhow::Result<String> {
        let mut out = format!("| {} |\n|---|---|{}\n", HEADER.join(" | "), "---:|".repeat(HEADER.len() - 2));
        for b in &report.benchmarks {
            let r = CaseRow::of(b);
            let cells =
                [r.params, r.ops, r.error, r.forks, r.instr, r.allocs, r.trips, r.statements, r.rows, r.p50, r.p99];
            out.push_str(&row(&r.name, &cells));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_snapshot() {
        insta::assert_snapshot!(Markdown.export(&crate::export::fixture::report()).unwrap());
    }
}
