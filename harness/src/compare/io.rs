//! What a persistence path did per op, from `--io` runs, case by case: statements (by text),
//! client messages (by type) and the fork's own table's scans are integers, compared exactly, so
//! any increase regresses; round trips regress by half a trip per op (a pipelining client's
//! timing moves them by a fraction); bytes, rows and blocks grow within a threshold. The gate
//! fails closed like the instruction gate, and it says in words what changed.

use super::Verdict;
use super::case_pairs;
use super::counts::{CountRow, Counts};
use crate::report::io::{IoCount, IoSummary};
use crate::report::{Benchmark, CaseId, Report};
use crate::row::per_op_text;
use std::collections::{BTreeMap, BTreeSet};

/// One case's comparison.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    /// The case.
    pub id: CaseId,
    /// The base report's counts.
    pub base: Option<IoSummary>,
    /// The new report's counts.
    pub new: Option<IoSummary>,
    /// What grew, in words, worst first; then what shrank.
    pub changes: Vec<String>,
    /// Growth allowed in bytes and rows per op, percent.
    pub threshold_pct: f64,
    /// Verdict.
    pub verdict: Verdict,
}

/// Compares `new` against `base`: growth beyond `threshold_pct(name, label)` in bytes or rows
/// regresses, as does any increase of an exact count.
pub(crate) fn compare(base: &Report, new: &Report, threshold_pct: &dyn Fn(&str, &str) -> f64) -> Counts<Row> {
    let io = |b: Option<&Benchmark>| b.and_then(|b| b.io.clone());
    let rows = case_pairs(base, new)
        .into_iter()
        .map(|(id, b, n)| {
            let name = b.or(n).map_or("", |c| c.name.as_str());
            let threshold = threshold_pct(name, &id.to_string());
            let (bc, nc) = (io(b), io(n));
            let (verdict, changes) = match (b, n, &bc, &nc) {
                (Some(_), None, _, _) => (Verdict::Missing, vec![]),
                (None, Some(_), _, _) => (Verdict::Extra, vec![]),
                (_, _, Some(bc), Some(nc)) => judge(bc, nc, threshold),
                _ => (Verdict::NoData, vec![]),
            };
            Row { id, base: bc, new: nc, changes, threshold_pct: threshold, verdict }
        })
        .collect();
    Counts { rows }
}

/// The registry's entry: one report per side, the thresholds file's `[io]` table.
pub(crate) fn comparison(
    base: &[Report],
    new: &[Report],
    thresholds: &super::instructions::IoThresholds,
) -> Result<Counts<Row>, crate::error::BadInput> {
    let (base, new) = super::comparison::one_each(crate::metric::Metric::Io, base, new)?;
    Ok(compare(base, new, &|name, label| thresholds.for_case(name, label)))
}

/// One exact count per op on both sides: `x` of `b` over its ops, against `y` of `n`.
#[derive(Debug, Clone, Copy)]
struct PerOp {
    base: u64,
    base_ops: u64,
    new: u64,
    new_ops: u64,
}

impl PerOp {
    fn of(b: &IoCount, n: &IoCount, get: impl Fn(&IoCount) -> u64) -> PerOp {
        PerOp { base: get(b), base_ops: b.ops.max(1), new: get(n), new_ops: n.ops.max(1) }
    }

    /// A server count of both sides, each `(value, ops_run)`.
    fn server((base, base_ops): (i64, i64), (new, new_ops): (i64, i64)) -> PerOp {
        let u = |v: i64| u64::try_from(v).unwrap_or(0);
        PerOp { base: u(base), base_ops: u(base_ops).max(1), new: u(new), new_ops: u(new_ops).max(1) }
    }

    /// Exact, in integers: -1, 0 or 1 as new per op is below, equal to or above base per op.
    fn direction(self) -> std::cmp::Ordering {
        (u128::from(self.new) * u128::from(self.base_ops)).cmp(&(u128::from(self.base) * u128::from(self.new_ops)))
    }

    fn base_per_op(self) -> f64 {
        self.base as f64 / self.base_ops as f64
    }

    fn new_per_op(self) -> f64 {
        self.new as f64 / self.new_ops as f64
    }

    /// `+1`: the change per op, signed.
    fn delta(self) -> String {
        let sign = if self.direction() == std::cmp::Ordering::Greater { "+" } else { "−" };
        format!("{sign}{}", per_op_text((self.new_per_op() - self.base_per_op()).abs()))
    }

    /// `(3 → 4)`.
    fn range(self) -> String {
        format!("({} → {})", per_op_text(self.base_per_op()), per_op_text(self.new_per_op()))
    }
}

/// Server counts that are the fork's own table's and whole per op: any increase regresses.
/// Every other gated server count (rows read, blocks touched, a server's calls) may grow by the
/// threshold, and by at least one whole unit per op.
const EXACT_SERVER_COUNTS: &[&str] = &[
    "pg_table_scans",
    "pg_seq_scan",
    "pg_idx_scan",
    "pg_rows_inserted",
    "pg_tup_upd",
    "pg_tup_del",
    "sqlite_statement_runs",
    "sqlite_sorts",
    "near_cache_loads",
];

/// Server counts in the report but never gated: blocks read from disk depend on what the
/// caches held, and PostgreSQL 15 keeps WAL and commits for the whole server or database, so
/// any other client's writes land in them (two runs of one build beside other tests differed by
/// 370 WAL bytes per op of a read-only case); Redis's command calls are the server's too (the
/// relay counts the fork's own commands exactly).
const SHOWN_ONLY: &[&str] = &[
    "ops_run",
    "pg_heap_blks_read",
    "pg_idx_blks_read",
    "pg_wal_bytes",
    "pg_wal_records",
    "pg_xact_commit",
    "redis_get_calls",
];

/// Whether a server count is shown and never gated: [`SHOWN_ONLY`], and Redis's calls of
/// every command (`redis_calls_<command>`, `INFO commandstats`: the whole server's).
fn shown_only(name: &str) -> bool {
    SHOWN_ONLY.contains(&name) || name.starts_with("redis_calls_")
}

/// The verdict on one case and the changes in words.
fn judge(bs: &IoSummary, ns: &IoSummary, threshold_pct: f64) -> (Verdict, Vec<String>) {
    let (b, n) = (&bs.count, &ns.count);
    let (mut worse, mut better) = (vec![], vec![]);
    let mut exact = |p: PerOp, words: String| match p.direction() {
        std::cmp::Ordering::Greater => worse.push(words),
        std::cmp::Ordering::Less => better.push(words),
        std::cmp::Ordering::Equal => {}
    };
    // Round trips move by a fraction per op when a client sends without waiting (a lazy Close
    // merges with the next flight or not, by timing): half a trip per op is a change; the
    // statements and messages, exact, catch anything smaller.
    let trips = PerOp::of(b, n, |c| c.round_trips);
    let words = format!("{} round trip(s) per op {}", trips.delta(), trips.range());
    if (trips.new_per_op() - trips.base_per_op()).abs() >= 0.5 {
        exact(trips, words);
    }
    let traced_on_one_side = sqlite_traced_on_one_side(b, n);
    if !traced_on_one_side {
        for text in keys(&b.statements, &n.statements) {
            let p = PerOp::of(b, n, |c| c.statements.get(text).copied().unwrap_or(0));
            exact(p, format!("{} statement(s) per op {}: {text}", p.delta(), p.range()));
        }
    }
    let server = server_pairs(bs, ns);
    for &(name, p) in server.iter().filter(|(k, _)| EXACT_SERVER_COUNTS.contains(k)) {
        exact(p, format!("{} {} per op {}", server_count_name(name), p.delta(), p.range()));
    }
    let mut messages = vec![];
    for m in keys(&b.messages, &n.messages) {
        let p = PerOp::of(b, n, |c| c.messages.get(m).copied().unwrap_or(0));
        if p.direction() != std::cmp::Ordering::Equal {
            messages.push(format!("{m} {}", p.delta()));
            exact(p, String::new());
        }
    }
    worse.retain(|w| !w.is_empty());
    better.retain(|w| !w.is_empty());
    let rows = (!traced_on_one_side).then(|| ("rows returned", PerOp::of(b, n, |c| c.rows_returned)));
    let sized =
        [Some(("bytes", PerOp::of(b, n, |c| c.bytes_to_server + c.bytes_to_client))), rows].into_iter().flatten();
    let gated = server
        .iter()
        .filter(|(k, _)| !EXACT_SERVER_COUNTS.contains(k) && !shown_only(k))
        .map(|&(k, p)| (server_count_name(k), p));
    let grown: Vec<String> =
        sized.into_iter().chain(gated).filter_map(|(what, p)| grew(what, p, threshold_pct)).collect();
    let verdict = match (worse.is_empty() && grown.is_empty(), better.is_empty()) {
        (false, _) => Verdict::Regressed,
        (true, false) => Verdict::Improved,
        (true, true) => Verdict::Unchanged,
    };
    let mut changes: Vec<String> = worse.into_iter().chain(grown).chain(better).collect();
    if !messages.is_empty() {
        changes.push(format!("messages per op: {}", messages.join(", ")));
    }
    if traced_on_one_side {
        let older = if b.sqlite_traced { "new" } else { "base" };
        changes.push(format!(
            "statements and rows not compared: the {older} report's harness did not trace SQLite (rerun it with this one)"
        ));
    }
    (verdict, changes)
}

/// Whether only one report's harness traced SQLite, and SQLite's statements are among the
/// counts: a harness older than the trace counted none, so its statements and rows are not
/// comparable.
fn sqlite_traced_on_one_side(b: &IoCount, n: &IoCount) -> bool {
    b.sqlite_traced != n.sqlite_traced && (b.has_sqlite_statements() || n.has_sqlite_statements())
}

/// Every server count both sides have, per op on each.
fn server_pairs<'a>(bs: &'a IoSummary, ns: &'a IoSummary) -> Vec<(&'a str, PerOp)> {
    server_keys(bs, ns)
        .into_iter()
        .filter_map(|k| Some((k, PerOp::server(bs.server_per_op(k)?, ns.server_per_op(k)?))))
        .collect()
}

/// A sized count that grew beyond the threshold, and by at least one whole unit per op, in words.
fn grew(what: &str, p: PerOp, threshold_pct: f64) -> Option<String> {
    let growth = if p.base == 0 { f64::INFINITY } else { p.new_per_op() / p.base_per_op() - 1.0 };
    (p.new_per_op() - p.base_per_op() >= 1.0 && growth * 100.0 > threshold_pct).then(|| {
        let pct = if growth.is_finite() { format!("{:+.1}%", growth * 100.0) } else { "from none".into() };
        format!("{what} {} per op {} ({pct}, over {threshold_pct}%)", p.delta(), p.range())
    })
}

/// A server count as the changes name it: in words, with its name in the report.
fn server_count_name(name: &str) -> &str {
    match name {
        "pg_seq_scan" => "sequential scans (pg_seq_scan)",
        "pg_idx_scan" => "index scans (pg_idx_scan)",
        "pg_table_scans" => "scans (pg_table_scans)",
        "pg_seq_tup_read" => "rows read by sequential scans (pg_seq_tup_read)",
        "pg_idx_tup_fetch" => "rows fetched by index scans (pg_idx_tup_fetch)",
        "pg_rows_inserted" => "rows inserted (pg_rows_inserted)",
        "pg_tup_upd" => "rows updated (pg_tup_upd)",
        "pg_tup_del" => "rows deleted (pg_tup_del)",
        "pg_heap_blks" => "heap blocks touched (pg_heap_blks)",
        "pg_idx_blks" => "index blocks touched (pg_idx_blks)",
        "pg_wal_bytes" => "WAL bytes, server-wide (pg_wal_bytes)",
        "pg_wal_records" => "WAL records, server-wide (pg_wal_records)",
        "pg_xact_commit" => "commits, database-wide (pg_xact_commit)",
        "sqlite_statement_runs" => "statement runs (sqlite_statement_runs)",
        "sqlite_vm_steps" => "SQLite VM steps (sqlite_vm_steps)",
        "sqlite_fullscan_steps" => "rows stepped through by full scans (sqlite_fullscan_steps)",
        "sqlite_sorts" => "sorts (sqlite_sorts)",
        "sqlite_autoindex_rows" => "rows put in automatic indexes (sqlite_autoindex_rows)",
        "sqlite_cache_writes" => "pages written (sqlite_cache_writes)",
        "sqlite_cache_hits" => "page-cache hits (sqlite_cache_hits)",
        "sqlite_cache_misses" => "page-cache misses (sqlite_cache_misses)",
        other => other,
    }
}

/// The server counts both sides have.
fn server_keys<'a>(b: &'a IoSummary, n: &'a IoSummary) -> Vec<&'a str> {
    b.server.keys().filter(|k| n.server.contains_key(*k)).map(String::as_str).collect()
}

/// Every key of either map, in order.
fn keys<'a>(a: &'a BTreeMap<String, u64>, b: &'a BTreeMap<String, u64>) -> BTreeSet<&'a str> {
    a.keys().chain(b.keys()).map(String::as_str).collect()
}

/// The table's cells of one row.
fn cells(r: &Row) -> [String; 8] {
    let per_op = |s: &Option<IoSummary>, get: fn(&IoCount) -> u64| {
        s.as_ref().map_or("-".into(), |s| per_op_text(s.count.per_op(get(&s.count))))
    };
    let bytes = |c: &IoCount| c.bytes_to_server + c.bytes_to_client;
    [
        r.id.to_string(),
        per_op(&r.base, |c| c.round_trips),
        per_op(&r.new, |c| c.round_trips),
        per_op(&r.base, IoCount::statements_total),
        per_op(&r.new, IoCount::statements_total),
        per_op(&r.base, bytes),
        per_op(&r.new, bytes),
        r.verdict.as_str().into(),
    ]
}

const HEADER: [&str; 8] = [
    "benchmark",
    "base trips/op",
    "new trips/op",
    "base stmts/op",
    "new stmts/op",
    "base bytes/op",
    "new bytes/op",
    "verdict",
];

/// What the numbers are, printed under the table.
pub(crate) const LEGEND: &str = "Per op, from each report's I/O fork (--io): statements, messages and the table's scans are exact and any increase regresses, as does half a round trip more; bytes, rows and blocks may grow by the threshold (--thresholds [io]); WAL and commits are server-wide and only shown.\n";

impl CountRow for Row {
    const METRIC: crate::metric::Metric = crate::metric::Metric::Io;
    const HEADER: &'static [&'static str] = &HEADER;
    const LEGEND: &'static str = LEGEND;
    const REGRESSED: &'static str = "**{n} benchmark(s) do more I/O per op.**";
    const NONE_REGRESSED: &'static str = "No benchmark does more I/O per op.";

    super::counts::count_row_fields!();

    fn changes(&self) -> &[String] {
        &self.changes
    }

    fn json_case(&self) -> super::json::Case {
        use super::json;
        let trips = |s: &Option<IoSummary>| s.as_ref().map(|s| s.count.per_op(s.count.round_trips));
        json::Case {
            threshold_pct: Some(self.threshold_pct),
            io: Some(json::IoPair { base: self.base.clone(), new: self.new.clone() }),
            changes: self.changes.clone(),
            ..json::Case::new(
                self.id.to_string(),
                trips(&self.base),
                trips(&self.new),
                self.verdict.token(),
                self.verdict.as_str().into(),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(trips: u64, select: u64, server: &[(&str, i64)]) -> IoSummary {
        let count = IoCount {
            ops: 100,
            round_trips: trips,
            bytes_to_server: 100 * 80,
            bytes_to_client: 100 * 90,
            statements: [("SELECT ?".to_string(), select), ("COMMIT".to_string(), 100)].into(),
            messages: [("Execute".to_string(), select)].into(),
            ..IoCount::default()
        };
        let server = server.iter().map(|(k, v)| (k.to_string(), *v)).chain([("ops_run".to_string(), 110)]).collect();
        let fork = crate::report::Fork {
            status: crate::report::ForkStatus::Ok,
            kind: crate::report::ForkKind::Io,
            io: Some(count),
            observed: server,
            ..crate::report::Fork::pending(0, None)
        };
        IoSummary::from_forks(&[fork]).unwrap()
    }

    #[test]
    fn an_extra_round_trip_and_statement_regress_and_are_named() {
        let (v, changes) = judge(&summary(300, 100, &[]), &summary(400, 200, &[]), 5.0);
        assert_eq!(v, Verdict::Regressed);
        assert_eq!(changes[0], "+1 round trip(s) per op (3 → 4)");
        assert_eq!(changes[1], "+1 statement(s) per op (1 → 2): SELECT ?");
        assert_eq!(changes.last().unwrap(), "messages per op: Execute +1");
        assert_eq!(judge(&summary(300, 100, &[]), &summary(300, 100, &[]), 0.0), (Verdict::Unchanged, vec![]));
        assert_eq!(judge(&summary(400, 200, &[]), &summary(300, 100, &[]), 5.0).0, Verdict::Improved);
    }

    #[test]
    fn sqlite_statements_are_compared_only_when_both_harnesses_traced_them() {
        let traced = |statements: u64, on: bool| {
            let mut s = summary(0, statements, &[]);
            (s.count.sqlite_traced, s.count.messages) = (on, BTreeMap::new());
            if on {
                s.count.sources =
                    vec![crate::report::io::IoSource { server: "SQLite".into(), how: String::new(), exact: true }];
            }
            s
        };
        // An older harness counted no SQLite statement: the first run of a newer one is no regression.
        let (v, changes) = judge(&traced(0, false), &traced(100, true), 5.0);
        assert_eq!(v, Verdict::Unchanged, "{changes:?}");
        assert!(changes.last().unwrap().contains("the base report's harness did not trace SQLite"), "{changes:?}");
        // Both traced: a statement more is one.
        assert_eq!(judge(&traced(100, true), &traced(200, true), 5.0).0, Verdict::Regressed);
        // A case that ran none before tracing existed and now runs some, traced on both sides.
        assert_eq!(judge(&traced(0, true), &traced(100, true), 5.0).0, Verdict::Regressed);
    }

    #[test]
    fn a_scan_regresses_exactly_and_rows_read_beyond_the_threshold() {
        let indexed = summary(300, 100, &[("pg_seq_scan", 0), ("pg_seq_tup_read", 0), ("pg_wal_bytes", 0)]);
        let scanning =
            summary(300, 100, &[("pg_seq_scan", 110), ("pg_seq_tup_read", 110_000), ("pg_wal_bytes", 50_000)]);
        let (v, changes) = judge(&indexed, &scanning, 5.0);
        assert_eq!(v, Verdict::Regressed);
        assert_eq!(changes[0], "sequential scans (pg_seq_scan) +1 per op (0 → 1)");
        assert!(
            changes[1].starts_with("rows read by sequential scans (pg_seq_tup_read) +1000 per op (0 → 1000)"),
            "{changes:?}"
        );
        // WAL is server-wide on PostgreSQL 15: shown in the report, never gated.
        assert_eq!(changes.len(), 2, "{changes:?}");
    }
}
