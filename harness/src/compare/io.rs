//! What a persistence path did per op, from `--io` runs, case by case: round trips, statements
//! (by text) and client messages (by type) are integers, compared exactly, so any increase
//! regresses; bytes and rows returned grow within a threshold. The gate fails closed like the
//! instruction gate, and it says in words what changed.

use super::case_pairs;
use super::instructions::Verdict;
use crate::report::io::IoCount;
use crate::report::{Benchmark, Report};
use std::collections::{BTreeMap, BTreeSet};

/// Default growth allowed in bytes and rows per op, percent.
pub(crate) const DEFAULT_GROWTH_PCT: f64 = 5.0;

/// One case's comparison.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    /// `name[params]`.
    pub label: String,
    /// The base report's counts.
    pub base: Option<IoCount>,
    /// The new report's counts.
    pub new: Option<IoCount>,
    /// What grew, in words, worst first; then what shrank.
    pub changes: Vec<String>,
    /// Growth allowed in bytes and rows per op, percent.
    pub threshold_pct: f64,
    /// Verdict.
    pub verdict: Verdict,
}

/// A whole comparison.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Comparison {
    /// One row per case of either report.
    pub rows: Vec<Row>,
}

impl Comparison {
    /// Counts of the verdicts, one line.
    pub(crate) fn summary_line(&self) -> String {
        let n = |v: Verdict| self.labels(v).len();
        format!(
            "{} regressed, {} improved, {} unchanged, {} missing in new, {} new",
            n(Verdict::Regressed),
            n(Verdict::Improved),
            n(Verdict::Unchanged),
            n(Verdict::Missing),
            n(Verdict::Extra)
        )
    }

    /// Labels of the cases with the verdict `v`.
    pub(crate) fn labels(&self, v: Verdict) -> Vec<&str> {
        self.rows.iter().filter(|r| r.verdict == v).map(|r| r.label.as_str()).collect()
    }

    /// Keeps only the cases that changed or cannot be compared (`--only-changed`).
    pub(crate) fn retain_changed(&mut self) {
        self.rows.retain(|r| r.verdict != Verdict::Unchanged);
    }
}

/// Compares `new` against `base`: growth beyond `threshold_pct(name, label)` in bytes or rows
/// regresses, as does any increase of an exact count.
pub(crate) fn compare(base: &Report, new: &Report, threshold_pct: &dyn Fn(&str, &str) -> f64) -> Comparison {
    let io = |b: Option<&Benchmark>| b.and_then(|b| b.io.as_ref()).map(|s| s.count.clone());
    let rows = case_pairs(base, new)
        .into_iter()
        .map(|(label, b, n)| {
            let name = b.or(n).map_or("", |c| c.name.as_str());
            let threshold = threshold_pct(name, &label);
            let (bc, nc) = (io(b), io(n));
            let (verdict, changes) = match (b, n, &bc, &nc) {
                (Some(_), None, _, _) => (Verdict::Missing, vec![]),
                (None, Some(_), _, _) => (Verdict::Extra, vec![]),
                (_, _, Some(bc), Some(nc)) => judge(bc, nc, threshold),
                _ => (Verdict::NoData, vec![]),
            };
            Row { label, base: bc, new: nc, changes, threshold_pct: threshold, verdict }
        })
        .collect();
    Comparison { rows }
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

/// A count per op as people read it: whole when it is, else two decimals.
fn per_op_text(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 { format!("{}", v.round() as i64) } else { format!("{v:.2}") }
}

/// The verdict on one case and the changes in words.
fn judge(b: &IoCount, n: &IoCount, threshold_pct: f64) -> (Verdict, Vec<String>) {
    let (mut worse, mut better) = (vec![], vec![]);
    let mut exact = |p: PerOp, words: String| match p.direction() {
        std::cmp::Ordering::Greater => worse.push(words),
        std::cmp::Ordering::Less => better.push(words),
        std::cmp::Ordering::Equal => {}
    };
    let trips = PerOp::of(b, n, |c| c.round_trips);
    exact(trips, format!("{} round trip(s) per op {}", trips.delta(), trips.range()));
    for text in keys(&b.statements, &n.statements) {
        let p = PerOp::of(b, n, |c| c.statements.get(text).copied().unwrap_or(0));
        exact(p, format!("{} statement(s) per op {}: {text}", p.delta(), p.range()));
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
    let mut grown = vec![];
    for (what, get) in [
        ("bytes", (|c: &IoCount| c.bytes_to_server + c.bytes_to_client) as fn(&IoCount) -> u64),
        ("rows returned", |c: &IoCount| c.rows_returned),
    ] {
        let p = PerOp::of(b, n, get);
        let growth = if p.base == 0 {
            f64::from(u8::from(p.new > 0)) * f64::INFINITY
        } else {
            p.new_per_op() / p.base_per_op() - 1.0
        };
        if growth * 100.0 > threshold_pct {
            grown.push(format!(
                "{} {what} per op {} ({:+.1}%, over {threshold_pct}%)",
                p.delta(),
                p.range(),
                growth * 100.0
            ));
        }
    }
    let verdict = match (worse.is_empty() && grown.is_empty(), better.is_empty()) {
        (false, _) => Verdict::Regressed,
        (true, false) => Verdict::Improved,
        (true, true) => Verdict::Unchanged,
    };
    let mut changes: Vec<String> = worse.into_iter().chain(grown).chain(better).collect();
    if !messages.is_empty() {
        changes.push(format!("messages per op: {}", messages.join(", ")));
    }
    (verdict, changes)
}

/// Every key of either map, in order.
fn keys<'a>(a: &'a BTreeMap<String, u64>, b: &'a BTreeMap<String, u64>) -> BTreeSet<&'a str> {
    a.keys().chain(b.keys()).map(String::as_str).collect()
}

/// The table's cells of one row.
fn cells(r: &Row) -> [String; 8] {
    let per_op = |c: &Option<IoCount>, get: fn(&IoCount) -> u64| {
        c.as_ref().map_or("-".into(), |c| per_op_text(c.per_op(get(c))))
    };
    let bytes = |c: &IoCount| c.bytes_to_server + c.bytes_to_client;
    [
        r.label.clone(),
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
pub(crate) const LEGEND: &str = "Per op, from each report's I/O fork (--io): round trips, statements and messages are exact and any increase regresses; bytes (both ways) and rows returned may grow by the threshold (--thresholds [io]).\n";

/// The changes of every row that has some, one line per case.
fn change_lines(c: &Comparison) -> String {
    c.rows
        .iter()
        .filter(|r| !r.changes.is_empty())
        .map(|r| format!("{}: {}\n", r.label, r.changes.join("; ")))
        .collect()
}

/// A plain-text table, then what changed.
pub(crate) fn render_text(c: &Comparison) -> String {
    let painted = |r: &Row| {
        let mut cells = cells(r);
        cells[7] = crate::format::paint(std::mem::take(&mut cells[7]), r.verdict.tone());
        cells.to_vec()
    };
    let rows: Vec<Vec<String>> =
        std::iter::once(HEADER.map(String::from).to_vec()).chain(c.rows.iter().map(painted)).collect();
    crate::format::table(&rows, |i| (1..7).contains(&i)) + LEGEND + &change_lines(c)
}

/// A Markdown table with a one-line verdict and the changes, for a pull-request comment.
pub(crate) fn render_markdown(c: &Comparison) -> String {
    let regressed = c.labels(Verdict::Regressed).len();
    let mut out = if regressed > 0 {
        format!("**{regressed} benchmark(s) do more I/O per op.**\n\n")
    } else {
        "No benchmark does more I/O per op.\n\n".to_string()
    };
    out.push_str(&format!("| {} |\n|---|---:|---:|---:|---:|---:|---:|---|\n", HEADER.join(" | ")));
    for r in &c.rows {
        out.push_str(&format!("| {} |\n", cells(r).map(|c| c.replace('|', "\\|")).join(" | ")));
    }
    out.push('\n');
    out.push_str(LEGEND);
    for line in change_lines(c).lines() {
        out.push_str(&format!("\n- `{}`", line.replace('`', "'")));
    }
    out.push('\n');
    out
}

/// The `compare --json` document of this comparison, with the gate's `decision`.
pub(crate) fn to_json(c: &Comparison, decision: super::json::Decision) -> super::json::Document {
    use super::json;
    let trips = |c: &Option<IoCount>| c.as_ref().map(|c| c.per_op(c.round_trips));
    let cases = c
        .rows
        .iter()
        .map(|r| json::Case {
            threshold_pct: Some(r.threshold_pct),
            io: Some(json::IoPair { base: r.base.clone(), new: r.new.clone() }),
            changes: r.changes.clone(),
            ..json::Case::new(
                r.label.clone(),
                trips(&r.base),
                trips(&r.new),
                r.verdict.token(),
                r.verdict.as_str().into(),
            )
        })
        .collect();
    json::Document {
        schema_version: json::COMPARE_SCHEMA_VERSION,
        metric: "io",
        test: None,
        summary: c.summary_line(),
        cases,
        decision,
    }
}
