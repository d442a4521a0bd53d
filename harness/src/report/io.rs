//! What I/O forks (`--io`) counted: the traffic between the worker and its servers, read by
//! the parent's counting relays, per fork and per case.

use super::{Fork, ForkKind, ForkStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What one I/O fork counted over its `ops` ops (after a warmup of a tenth as many).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct IoCount {
    /// Ops counted.
    pub ops: u64,
    /// Round trips: flights of the client answered by the server.
    pub round_trips: u64,
    /// Bytes from the client to its servers.
    pub bytes_to_server: u64,
    /// Bytes from the servers to the client.
    pub bytes_to_client: u64,
    /// Client messages by type (PostgreSQL `Parse`, `Bind`, `Execute`, `Sync`, `Query`…) and
    /// Redis commands by name (`GET`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub messages: BTreeMap<String, u64>,
    /// Statements executed, by text: PostgreSQL's (each Execute, each simple Query) with
    /// whitespace collapsed and literals made `?` (bound parameters are not in the text), and
    /// Redis's commands by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub statements: BTreeMap<String, u64>,
    /// PostgreSQL rows the server sent (`DataRow` messages).
    pub rows_returned: u64,
    /// Connections the worker opened during the counted ops.
    pub connections: u64,
    /// Where the counts come from, one line per server, and whether each is exact.
    pub sources: Vec<IoSource>,
    /// The worker traced every SQLite statement (false in reports of a harness older than the
    /// trace, whose SQLite cases count no statements).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sqlite_traced: bool,
}

/// One source of an I/O fork's counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct IoSource {
    /// `PostgreSQL`, `Redis`, or `none` for a case that talks to no server.
    pub server: String,
    /// How it was counted.
    pub how: String,
    /// Exact counts; false when some connection could not be read (its messages are missing).
    pub exact: bool,
}

/// How the worker counts SQLite's statements, as its source says.
pub(crate) const SQLITE_TRACE: &str =
    "the worker's trace hook on every SQLite connection it opens (sqlite3_trace_v2: statements started, rows)";

impl IoCount {
    /// What the worker traced of SQLite over `ops` ops: its statements (normalised as the
    /// relay's are) and rows, with their source when there were any.
    pub(crate) fn traced(ops: u64, statements: &BTreeMap<String, u64>, rows: u64) -> IoCount {
        let mut normalised = BTreeMap::new();
        for (sql, n) in statements {
            *normalised.entry(workloads::sql_text::normalise_sql(sql)).or_default() += n;
        }
        let sources = if normalised.is_empty() {
            vec![]
        } else {
            vec![IoSource { server: "SQLite".into(), how: SQLITE_TRACE.into(), exact: true }]
        };
        IoCount { ops, statements: normalised, rows_returned: rows, sources, ..IoCount::default() }
    }

    /// `value` per op.
    pub(crate) fn per_op(&self, value: u64) -> f64 {
        if self.ops == 0 { 0.0 } else { value as f64 / self.ops as f64 }
    }

    /// Whether SQLite's statements are among the counts (the trace ran and saw some).
    pub(crate) fn has_sqlite_statements(&self) -> bool {
        self.sources.iter().any(|s| s.server == "SQLite")
    }

    /// Statements executed, every text together.
    pub(crate) fn statements_total(&self) -> u64 {
        self.statements.values().sum()
    }

    /// The counts without the ops and sources, for telling whether two forks agree.
    fn counts(&self) -> IoCount {
        IoCount { ops: 0, sources: vec![], ..self.clone() }
    }
}

/// A case's I/O counts per op.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct IoPerOp {
    /// Round trips per op.
    pub round_trips: f64,
    /// Statements per op.
    pub statements: f64,
    /// Client messages per op.
    pub messages: f64,
    /// Bytes both ways per op.
    pub bytes: f64,
    /// Rows the server sent per op.
    pub rows_returned: f64,
    /// Rows the server read per op (PostgreSQL: rows read by sequential scans and fetched by
    /// index scans of the fork's table), where it counted them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows_read: Option<f64>,
}

/// A case's I/O counts: its first ok I/O fork's, and whether every other agreed exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct IoSummary {
    /// Ok I/O forks.
    pub forks: u32,
    /// Every ok I/O fork counted the same over the same ops (always true for one fork).
    pub identical: bool,
    /// The first ok I/O fork's counts.
    pub count: IoCount,
    /// The same per op, for readers of the report.
    pub per_op: IoPerOp,
    /// What the servers counted of that fork's work (its `observed`, with `ops_run`: every op
    /// it ran, the warmup's included), e.g. `pg_seq_scan`, `pg_seq_tup_read`, `pg_wal_bytes`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub server: BTreeMap<String, i64>,
}

impl IoSummary {
    /// Why these counts cannot be what a fork counted (traffic over no ops, or a per-op figure
    /// that is not its total over the ops), or `None`: a report edited or cut by hand.
    pub(crate) fn inconsistency(&self) -> Option<String> {
        let c = &self.count;
        let statements: u64 = c.statements.values().sum();
        let messages: u64 = c.messages.values().sum();
        let traffic = [
            ("round trips", c.round_trips),
            ("statements", statements),
            ("messages", messages),
            ("bytes", c.bytes_to_server + c.bytes_to_client),
            ("rows returned", c.rows_returned),
        ];
        if c.ops == 0 {
            let (what, n) = traffic.iter().find(|(_, n)| *n > 0)?;
            return Some(format!("says 0 ops but {n} {what}"));
        }
        let per_op = [
            ("round trips", self.per_op.round_trips, c.round_trips),
            ("statements", self.per_op.statements, statements),
            ("messages", self.per_op.messages, messages),
            ("bytes", self.per_op.bytes, c.bytes_to_server + c.bytes_to_client),
            ("rows returned", self.per_op.rows_returned, c.rows_returned),
        ];
        per_op.iter().find_map(|&(what, stated, total)| {
            let derived = total as f64 / c.ops as f64;
            ((stated - derived).abs() > 1e-9 * derived.abs().max(1.0)).then(|| {
                format!("says {stated} {what} per op, but its total is {total} over {} ops ({derived})", c.ops)
            })
        })
    }
}

/// Rows the server read per op in a fork's `observed` (PostgreSQL's rows read by sequential
/// scans and fetched by index scans of the fork's table, over `ops_run`), if it has them.
fn rows_read_per_op(observed: &BTreeMap<String, i64>) -> Option<f64> {
    let ops = (*observed.get("ops_run")?).max(1);
    let (seq, idx) = (observed.get("pg_seq_tup_read")?, observed.get("pg_idx_tup_fetch")?);
    Some((seq + idx) as f64 / ops as f64)
}

impl super::Benchmark {
    /// Rows the server read per op: from the I/O fork's server counts, else from the first ok
    /// timed fork's (every PostgreSQL fork records them), so a plain run shows them too.
    pub(crate) fn rows_read_per_op(&self) -> Option<f64> {
        self.io
            .as_ref()
            .and_then(IoSummary::rows_read_per_op)
            .or_else(|| self.forks.iter().find(|f| f.is_ok_timed()).and_then(|f| rows_read_per_op(&f.observed)))
    }
}

impl IoSummary {
    /// Rows the server read per op (PostgreSQL's rows read by sequential scans and fetched by
    /// index scans of the fork's table), if it counted them.
    pub(crate) fn rows_read_per_op(&self) -> Option<f64> {
        rows_read_per_op(&self.server)
    }

    /// A server count per op (over `ops_run`), if the fork has it.
    pub(crate) fn server_per_op(&self, name: &str) -> Option<(i64, i64)> {
        let ops = *self.server.get("ops_run")?;
        self.server.get(name).map(|v| (*v, ops.max(1)))
    }

    /// The summary of the ok I/O forks among `forks`, if any.
    pub(crate) fn from_forks(forks: &[Fork]) -> Option<IoSummary> {
        let counted: Vec<&Fork> =
            forks.iter().filter(|f| f.status == ForkStatus::Ok && f.kind == ForkKind::Io && f.io.is_some()).collect();
        let (first, io) = counted.first().and_then(|f| f.io.as_ref().map(|io| (*f, io)))?;
        let same = |f: &&Fork| f.io.as_ref().is_some_and(|c| c.ops == io.ops && c.counts() == io.counts());
        let identical = counted.iter().all(same);
        let mut summary = IoSummary {
            forks: counted.len() as u32,
            identical,
            count: io.clone(),
            per_op: IoPerOp {
                round_trips: io.per_op(io.round_trips),
                statements: io.per_op(io.statements_total()),
                messages: io.per_op(io.messages.values().sum()),
                bytes: io.per_op(io.bytes_to_server + io.bytes_to_client),
                rows_returned: io.per_op(io.rows_returned),
                rows_read: None,
            },
            server: first.observed.clone(),
        };
        summary.per_op.rows_read = summary.rows_read_per_op();
        Some(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io_fork(round_trips: u64) -> Fork {
        Fork {
            status: ForkStatus::Ok,
            kind: ForkKind::Io,
            io: Some(IoCount { ops: 10, round_trips, ..IoCount::default() }),
            ..Fork::pending(0, Some(1))
        }
    }

    #[test]
    fn the_summary_says_whether_the_forks_agreed() {
        assert_eq!(IoSummary::from_forks(&[Fork::pending(0, None)]), None);
        let same = IoSummary::from_forks(&[io_fork(30), io_fork(30)]).unwrap();
        assert!(same.identical && same.forks == 2 && same.count.per_op(same.count.round_trips) == 3.0);
        assert!(!IoSummary::from_forks(&[io_fork(30), io_fork(31)]).unwrap().identical);
    }
}
