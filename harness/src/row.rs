//! One row per case, built once for every table that lists cases: the run's summary, the
//! Markdown export and the docs page pick its fields by name.

use crate::format::{nanos, si};
use crate::report::Benchmark;

/// The cells of one case, formatted for people; `-` where the case has no such number.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CaseRow {
    /// The workload's name.
    pub name: String,
    /// `k=v,...` of its params (with `threads=N` when several measurers ran).
    pub params: String,
    /// Measuring threads or tasks.
    pub threads: String,
    /// The score in ops/s, `(limit)` after it where it sits at its scheme's limit.
    pub ops: String,
    /// The score's error at 99.9% with its percentage, or `n/a (n=…)` when it has none.
    pub error: String,
    /// `ok/ran` timed forks, or `skipped`.
    pub forks: String,
    /// Instructions per op, `~` first where counts vary run to run, `(client)` after where
    /// the op talks to a server whose work is not counted.
    pub instr: String,
    /// Allocations per op, `(client)` after where the op talks to a server.
    pub allocs: String,
    /// Round trips per op from the I/O fork (`--io`).
    pub trips: String,
    /// Statements per op from the I/O fork.
    pub statements: String,
    /// Rows the server read per op (PostgreSQL), from the I/O fork's server counts or else a
    /// timed fork's.
    pub rows: String,
    /// Latency percentiles (`--mode sample`).
    pub p50: String,
    /// 99th percentile.
    pub p99: String,
    /// 99.9th percentile.
    pub p999: String,
    /// The largest sample.
    pub max: String,
}

impl CaseRow {
    /// The row of `b`.
    pub(crate) fn of(b: &Benchmark) -> CaseRow {
        let score = b.score.as_ref();
        let percentile = |k: &str| b.latency.as_ref().and_then(|l| l.percentiles.get(k)).map(|v| nanos(*v as f64));
        CaseRow {
            name: b.name.clone(),
            params: b.id().params_text(),
            threads: b.threads().to_string(),
            ops: score.map_or("-".into(), |s| {
                let limit = if b.at_ceiling().is_some() { " (limit)" } else { "" };
                format!("{}{limit}", si(s.mean))
            }),
            error: score.map_or("-".into(), |s| {
                s.error.map_or(format!("n/a (n={})", s.n), |e| format!("± {} ({:.1}%)", si(e), 100.0 * e / s.mean))
            }),
            forks: if b.skipped.is_some() { "skipped".into() } else { format!("{}/{}", b.forks_ok(), b.timed_forks()) },
            instr: b.instructions.as_ref().map_or("-".into(), |i| {
                let client = if b.servers.is_empty() { "" } else { " (client)" };
                format!("{}{:.1}{client}", if i.deterministic { "" } else { "~" }, i.median())
            }),
            allocs: b.allocations.as_ref().map_or("-".into(), |a| {
                let client = if b.servers.is_empty() { "" } else { " (client)" };
                format!("{:.2}{client}", a.per_op)
            }),
            trips: io_per_op(b, |c| c.round_trips),
            statements: io_per_op(b, crate::report::io::IoCount::statements_total),
            rows: b.rows_read_per_op().map_or("-".into(), per_op_text),
            p50: percentile("p50").unwrap_or_else(|| "-".into()),
            p99: percentile("p99").unwrap_or_else(|| "-".into()),
            p999: percentile("p99.9").unwrap_or_else(|| "-".into()),
            max: b.latency.as_ref().map_or("-".into(), |l| nanos(l.max as f64)),
        }
    }
}

/// One I/O count of `b` per op (`-` without an I/O fork), `~` first where its I/O forks
/// disagreed.
fn io_per_op(b: &Benchmark, get: fn(&crate::report::io::IoCount) -> u64) -> String {
    b.io.as_ref().map_or("-".into(), |io| {
        format!("{}{}", if io.identical { "" } else { "~" }, per_op_text(io.count.per_op(get(&io.count))))
    })
}

/// A count per op as people read it: whole when it is, else two decimals.
pub(crate) fn per_op_text(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 { format!("{}", v.round() as i64) } else { format!("{v:.2}") }
}

/// Under a table with a `(client)` instruction or allocation count: what it leaves out.
pub(crate) const CLIENT_ONLY: &str = "(client): instructions and allocations of the client only; the server's work for the op (PostgreSQL, Redis) is not counted, nor libpq's C allocations (Diesel on PostgreSQL)";

/// The headers of the I/O columns (`--io`), in [`CaseRow`]'s order.
pub(crate) const IO_HEADER: [&str; 3] = ["trips/op", "stmts/op", "rows read/op"];

/// The header of the score's error column.
pub(crate) const ERROR_HEADER: &str = "± error (99.9%)";

/// Which optional columns a table of `cases` needs: each only when some case has the number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Columns {
    /// Some case ran several measurers.
    pub threads: bool,
    /// Some case has instruction counts.
    pub instr: bool,
    /// Some case counted allocations.
    pub allocs: bool,
    /// Some case has latency percentiles.
    pub latency: bool,
    /// Some case has I/O counts, or server counts of rows read.
    pub io: bool,
}

impl Columns {
    /// The columns `cases` need.
    pub(crate) fn of<'a>(cases: impl IntoIterator<Item = &'a Benchmark>) -> Columns {
        let mut c = Columns { threads: false, instr: false, allocs: false, latency: false, io: false };
        for b in cases {
            c.threads |= b.threads() != 1;
            c.instr |= b.instructions.is_some();
            c.allocs |= b.allocations.is_some();
            c.latency |= b.latency.is_some();
            c.io |= b.io.is_some() || b.rows_read_per_op().is_some();
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::InstructionSummary;

    #[test]
    fn instruction_counts_of_a_case_with_a_server_say_they_are_the_clients() {
        let counts = InstructionSummary {
            forks: 1,
            ops: 1000,
            total: 12_345_000,
            per_op: 12_345.0,
            min_per_op: 12_345.0,
            max_per_op: 12_345.0,
            median_per_op: None,
            identical: None,
            deterministic: false,
        };
        let mut b = crate::compare::fixtures::timed("sql/thread_select_by_id", &[&[1000.0]]);
        b.instructions = Some(counts);
        assert_eq!(CaseRow::of(&b).instr, "~12345.0");
        b.servers = vec!["PostgreSQL".into()];
        assert_eq!(CaseRow::of(&b).instr, "~12345.0 (client)");
        assert_eq!(CaseRow::of(&b).forks, "1/1");
    }

    #[test]
    fn a_score_at_its_schemes_limit_says_so() {
        let mut b = crate::compare::fixtures::timed("ids/generate", &[&[4.09e6]]);
        assert_eq!(CaseRow::of(&b).ops, "4.090 M");
        b.ops_ceiling = Some(crate::report::OpsCeiling { ops_per_sec: 4.096e6, why: "Snowflake".into() });
        assert_eq!(CaseRow::of(&b).ops, "4.090 M (limit)");
    }
}
