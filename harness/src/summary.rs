//! The table printed at the end of a run: one row per case.

use crate::report::Report;
use crate::row::{CaseRow, Columns, ERROR_HEADER, IO_HEADER};

/// Renders the summary table of `report`.
pub(crate) fn render(report: &Report) -> String {
    let columns = Columns::of(&report.benchmarks);
    let mut header = ["benchmark", "params", "ops/s", ERROR_HEADER, "forks ok"].map(String::from).to_vec();
    if columns.instr {
        header.push("instr/op".into());
    }
    if columns.io {
        header.extend(IO_HEADER.map(String::from));
    }
    if columns.latency {
        header.extend(["p50", "p99", "p99.9", "max"].map(String::from));
    }
    let mut rows = vec![header];
    for b in &report.benchmarks {
        let r = CaseRow::of(b);
        let mut row = vec![r.name, r.params, r.ops, r.error, r.forks];
        if columns.instr {
            row.push(r.instr);
        }
        if columns.io {
            row.extend([r.trips, r.statements, r.rows]);
        }
        if columns.latency {
            row.extend([r.p50, r.p99, r.p999, r.max]);
        }
        rows.push(row);
    }
    let mut out = crate::format::table(&rows, |c| c >= 2);
    if report.benchmarks.iter().any(|b| b.counts_client_only()) {
        out.push_str(&format!("note: {}\n", crate::row::CLIENT_ONLY));
    }
    for b in report.benchmarks.iter() {
        if let Some(c) = crate::report::growth::curve(b)
            && let Some(last) = c.points.last()
        {
            let wal = last.wal_per_row.map_or(String::new(), |w| format!(", {w:.0} WAL bytes per row"));
            out.push_str(&format!(
                "note: {}: measured in steps up to {} rows (ops/s above is the mean over steps); last step {} rows/s{wal}; the curve: harness docs REPORT\n",
                b.id(),
                crate::format::si(last.rows),
                crate::format::si(last.rate.0)
            ));
        }
        if let Some(w) = b.latency.as_ref().and_then(|l| l.clock_warning.as_ref()) {
            out.push_str(&format!("warning: {}: {w}\n", b.id()));
        }
        if let Some(l) = b.latency.as_ref().filter(|l| l.ops_per_sample > 1) {
            out.push_str(&format!(
                "note: {}: latency samples are groups of {} ops (each value is the group's mean per op)\n",
                b.id(),
                l.ops_per_sample
            ));
        }
    }
    out
}
