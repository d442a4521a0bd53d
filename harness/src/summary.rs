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
    out.push_str(&open_loop_table(report));
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
        if let Some(w) = missed_rate(b) {
            out.push_str(&format!("warning: {}: {w}\n", b.id()));
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

/// The open-loop cases' latencies: from the intended start (corrected), from the actual start,
/// and the generator's lag; empty when no case ran open-loop.
fn open_loop_table(report: &Report) -> String {
    let open: Vec<_> = report.benchmarks.iter().filter_map(|b| Some((b, b.open_loop.as_ref()?))).collect();
    if open.is_empty() {
        return String::new();
    }
    let header =
        ["open loop", "rate", "achieved", "p50", "p99", "p99.9", "max", "uncorrected p99", "lag p99", "forks kept"];
    let mut rows = vec![header.map(String::from).to_vec()];
    let nanos = |v: Option<u64>| v.map_or("-".into(), |v| crate::format::nanos(v as f64));
    for (b, o) in open {
        let c = o.corrected.as_ref();
        rows.push(vec![
            b.id().to_string(),
            format!(
                "{} {}/s{}",
                o.rate.arrivals.as_str(),
                crate::format::si(o.rate.per_sec as f64),
                b.rate_share_pct.map_or(String::new(), |p| format!(" ({p}%)"))
            ),
            o.achieved_per_sec.map_or("-".into(), |a| format!("{}/s", crate::format::si(a))),
            nanos(c.and_then(|p| p.at("p50"))),
            nanos(c.and_then(|p| p.at("p99"))),
            nanos(c.and_then(|p| p.at("p99.9"))),
            nanos(c.map(|p| p.max)),
            nanos(o.uncorrected.as_ref().and_then(|p| p.at("p99"))),
            nanos(o.lag.as_ref().and_then(|p| p.at("p99"))),
            format!("{} of {}", o.forks_kept, o.forks_kept + o.forks_missed),
        ]);
    }
    format!("\n{}", crate::format::table(&rows, |c| c >= 1))
}

/// Why some of an open-loop case's forks are left out of its percentiles, if any are.
fn missed_rate(b: &crate::report::Benchmark) -> Option<String> {
    let o = b.open_loop.as_ref().filter(|o| o.forks_missed > 0)?;
    let why = b.forks.iter().find_map(|f| f.open_loop.as_ref()?.missed.clone())?;
    let left = if o.forks_kept == 0 { "no percentiles are reported" } else { "their percentiles are left out" };
    Some(format!("{} of {} forks did not keep the rate ({why}); {left}", o.forks_missed, o.forks_missed + o.forks_kept))
}
