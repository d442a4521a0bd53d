//! Markdown: one table row per case, with the error, forks and any counts.

use super::{Exporter, params_text};
use crate::format::si;
use crate::report::{Benchmark, Report};

/// The Markdown exporter.
pub struct Markdown;

/// The row cells of a case: params, ops/s, ± error, forks, instr/op, allocs/op, p50, p99.
pub fn cells(b: &Benchmark) -> [String; 8] {
    let s = b.score.as_ref();
    let pct = |k: &str| {
        b.latency.as_ref().and_then(|l| l.percentiles.get(k)).map_or("-".into(), |v| crate::summary::nanos(*v as f64))
    };
    [
        params_text(b),
        s.map_or("-".into(), |s| si(s.mean)),
        match s {
            Some(s) => {
                s.error.map_or(format!("n/a (n={})", s.n), |e| format!("± {} ({:.1}%)", si(e), 100.0 * e / s.mean))
            }
            None => b.skipped.as_ref().map_or("-".into(), |_| "skipped".into()),
        },
        format!("{}/{}", b.forks_ok(), b.timed_forks()),
        b.instructions
            .as_ref()
            .map_or("-".into(), |i| format!("{}{:.1}", if i.deterministic { "" } else { "~" }, i.per_op)),
        b.allocations.as_ref().map_or("-".into(), |a| format!("{:.2}", a.per_op)),
        pct("p50"),
        pct("p99"),
    ]
}

/// The table header, matching [`cells`] after a leading benchmark column.
pub const HEADER: [&str; 9] =
    ["benchmark", "params", "ops/s", "± error (99.9%)", "forks ok", "instr/op", "allocs/op", "p50", "p99"];

/// One Markdown row.
pub fn row(first: &str, cells: &[String]) -> String {
    let esc = |c: &str| c.replace('|', "\\|");
    format!("| {} | {} |\n", esc(first), cells.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | "))
}

impl Exporter for Markdown {
    fn export(&self, report: &Report) -> anyhow::Result<String> {
        let mut out = format!("| {} |\n|---|---|{}\n", HEADER.join(" | "), "---:|".repeat(HEADER.len() - 2));
        for b in &report.benchmarks {
            out.push_str(&row(&b.name, &cells(b)));
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
