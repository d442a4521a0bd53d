//! CSV: one row per case, numbers unformatted; every case, its `status` (ok, partial, failed,
//! skipped), failed forks and why.

use super::{Exporter, interval};
use crate::report::{InstructionSummary, Report};

/// The CSV exporter.
pub(super) struct Csv;

const HEADER: [&str; 26] = [
    "benchmark",
    "params",
    "threads",
    "forks_ok",
    "iterations",
    "mean_ops_per_s",
    "error_ops_per_s",
    "confidence",
    "ci_low",
    "ci_high",
    "median_ops_per_s",
    "min_ops_per_s",
    "max_ops_per_s",
    "instructions_per_op",
    "allocations_per_op",
    "round_trips_per_op",
    "statements_per_op",
    "messages_per_op",
    "bytes_per_op",
    "rows_returned_per_op",
    "rows_read_per_op",
    "p50_ns",
    "p99_ns",
    "status",
    "forks_failed",
    "note",
];

/// One I/O count of `b` per op, where it has an I/O fork.
fn io(b: &crate::report::Benchmark, get: fn(&crate::report::io::IoCount) -> u64) -> Option<f64> {
    b.io.as_ref().map(|io| io.count.per_op(get(&io.count)))
}

fn opt(v: Option<f64>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

impl Exporter for Csv {
    fn export(&self, report: &Report) -> anyhow::Result<String> {
        let mut w = csv::Writer::from_writer(vec![]);
        w.write_record(HEADER)?;
        for b in &report.benchmarks {
            let status = super::CaseStatus::of(b);
            let s = b.score.as_ref();
            let ci = interval(b);
            let pct = |k: &str| b.percentiles().and_then(|p| p.get(k)).map(|v| *v as f64);
            w.write_record([
                b.name.clone(),
                b.id().params_text(),
                b.concurrency.as_ref().map_or(1, |c| c.count).to_string(),
                b.forks_ok().to_string(),
                s.map_or(0, |s| s.n).to_string(),
                opt(s.map(|s| s.mean)),
                opt(s.and_then(|s| s.error)),
                opt(s.map(|s| s.confidence)),
                opt(ci.map(|c| c.0)),
                opt(ci.map(|c| c.1)),
                opt(s.map(|s| s.median)),
                opt(s.map(|s| s.min)),
                opt(s.map(|s| s.max)),
                opt(b.instructions.as_ref().map(InstructionSummary::median)),
                opt(b.allocations.as_ref().map(|a| a.per_op)),
                opt(io(b, |c| c.round_trips)),
                opt(io(b, crate::report::io::IoCount::statements_total)),
                opt(io(b, |c| c.messages.values().sum())),
                opt(io(b, |c| c.bytes_to_server + c.bytes_to_client)),
                opt(io(b, |c| c.rows_returned)),
                opt(b.rows_read_per_op()),
                opt(pct("p50")),
                opt(pct("p99")),
                status.token().to_string(),
                status.forks_failed().to_string(),
                status.note(),
            ])?;
        }
        Ok(String::from_utf8(w.into_inner()?)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_snapshot() {
        insta::assert_snapshot!(Csv.export(&crate::export::fixture::report()).unwrap());
    }
}
