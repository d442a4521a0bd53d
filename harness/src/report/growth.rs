//! Growth curves of the workloads measured in steps (`growth/*`): per database and layout, one
//! curve per id kind, each point a step that grew the table to `table_rows`: its rows inserted
//! per second (median over forks, band from the slowest to the fastest fork) and what it wrote
//! per row. Points are joined in order of table size only. The model the summary, the report
//! page and its charts all read.

use super::{Benchmark, Fork, Iteration};
use crate::stats::median;
use std::collections::BTreeMap;

/// One step's figures over every fork that finished it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Point {
    /// Rows in the table when the step ended.
    pub rows: f64,
    /// Rows inserted per second: median, lowest and highest over forks.
    pub rate: (f64, f64, f64),
    /// WAL bytes written per row inserted in the step (median over forks), where observed.
    pub wal_per_row: Option<f64>,
}

/// One kind's curve, points in order of table size.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Curve {
    /// The id kind.
    pub kind: String,
    /// Points, by table size.
    pub points: Vec<Point>,
    /// The observed figures of the last step of the first fork that got furthest.
    pub last: BTreeMap<String, i64>,
    /// Forks, and the median wall time of those that finished ok.
    pub forks: (usize, Option<f64>),
    /// The table size at the first step whose key index was larger than the memory that holds
    /// pages (PostgreSQL's `shared_buffers`, SQLite's page cache), and that memory in bytes.
    pub outgrew: Option<(f64, i64)>,
}

/// The key's index bytes a step observed: PostgreSQL's key index, or SQLite's indexes.
pub(crate) fn key_index(observed: &BTreeMap<String, i64>) -> Option<i64> {
    observed.get("key_index_bytes").or_else(|| observed.get("index_bytes")).copied()
}

/// The memory that holds pages, as a step observed it: `shared_buffers` or SQLite's page cache.
pub(crate) fn page_memory(observed: &BTreeMap<String, i64>) -> Option<i64> {
    observed.get("shared_buffers_bytes").or_else(|| observed.get("page_cache_bytes")).copied()
}

/// The first step of `fork` whose key index outgrew the page memory: its table rows, and the memory.
fn outgrew(fork: &Fork) -> Option<(f64, i64)> {
    fork.iterations.iter().find_map(|it| {
        let (index, memory) = (key_index(&it.observed)?, page_memory(&it.observed)?);
        (index > memory).then(|| Some((*it.observed.get("table_rows")? as f64, memory))).flatten()
    })
}

/// `(rows at the step's end, rows/s, WAL bytes per row)` of every step of a fork.
fn fork_steps(fork: &Fork) -> Vec<(i64, f64, Option<f64>)> {
    let mut before: Option<&Iteration> = None;
    let mut out = vec![];
    for it in &fork.iterations {
        let (Some(&rows), prior) = (it.observed.get("table_rows"), before.and_then(|b| b.observed.get("table_rows")))
        else {
            continue;
        };
        let added = rows - prior.copied().unwrap_or(0);
        let wal = |i: Option<&Iteration>| i.map_or(Some(0), |i| i.observed.get("wal_bytes").copied());
        let wal_per_row = match (wal(Some(it)), wal(before)) {
            (Some(now), Some(then)) if added > 0 => Some((now - then) as f64 / added as f64),
            _ => None,
        };
        if added > 0 && it.nanos > 0 {
            out.push((rows, added as f64 * 1e9 / it.nanos as f64, wal_per_row));
        }
        before = Some(it);
    }
    out
}

/// The curve of one case: every fork's finished steps (an interrupted fork's too), by size.
pub(crate) fn curve(b: &Benchmark) -> Option<Curve> {
    let mut by_rows: BTreeMap<i64, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    let timed: Vec<&Fork> = b.forks.iter().filter(|f| f.steps.is_some()).collect();
    for fork in &timed {
        for (rows, rate, wal) in fork_steps(fork) {
            let entry = by_rows.entry(rows).or_default();
            entry.0.push(rate);
            entry.1.extend(wal);
        }
    }
    let points: Vec<Point> = by_rows
        .into_iter()
        .map(|(rows, (rates, wal))| Point {
            rows: rows as f64,
            rate: (
                median(&rates).unwrap_or(f64::NAN),
                rates.iter().copied().fold(f64::INFINITY, f64::min),
                rates.iter().copied().fold(0.0, f64::max),
            ),
            wal_per_row: median(&wal),
        })
        .collect();
    let furthest = timed.iter().max_by_key(|f| f.iterations.len())?;
    let walls: Vec<f64> = timed.iter().filter(|f| f.is_ok_timed()).map(|f| f.wall_nanos as f64 / 1e9).collect();
    Some(Curve {
        kind: b.params.get("kind").cloned().unwrap_or_else(|| b.id().to_string()),
        points,
        last: furthest.iterations.last()?.observed.clone(),
        forks: (timed.len(), median(&walls)),
        outgrew: outgrew(furthest),
    })
    .filter(|c| !c.points.is_empty())
}

/// The curves of the stepped cases among `cases`, by `db/layout`, kinds in the cases' order.
pub(crate) fn curves(cases: &[&Benchmark]) -> BTreeMap<String, Vec<Curve>> {
    let mut out: BTreeMap<String, Vec<Curve>> = BTreeMap::new();
    for b in cases {
        if let Some(c) = curve(b) {
            let key = ["db", "layout"].iter().filter_map(|p| b.params.get(*p).cloned()).collect::<Vec<_>>().join("/");
            out.entry(key).or_default().push(c);
        }
    }
    out
}

/// A case measured in steps as one case per step, for the exports: `table_rows=N` added to its
/// params, each fork's iteration of that step the fork's only iteration. The steps' rates are
/// never pooled into one mean and interval: the table grows between them, as the noise report
/// says too. A case not measured in steps is returned as it is.
pub(crate) fn per_step(b: &Benchmark) -> Vec<Benchmark> {
    if !b.forks.iter().any(|f| f.steps.is_some()) {
        return vec![b.clone()];
    }
    let rows = |it: &Iteration| it.observed.get("table_rows").copied();
    let mut sizes: Vec<i64> = b.forks.iter().flat_map(|f| f.iterations.iter().filter_map(rows)).collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
        .into_iter()
        .map(|size| {
            let forks: Vec<Fork> = b
                .forks
                .iter()
                .filter(|f| f.steps.is_some())
                .filter_map(|f| {
                    let step = f.iterations.iter().find(|it| rows(it) == Some(size))?.clone();
                    Some(Fork { iterations: vec![step], ..f.clone() })
                })
                .collect();
            // Rescored from the step's forks alone, as a case of its own would be.
            let mut step = b.with_forks(forks);
            step.params.insert("table_rows".into(), size.to_string());
            step
        })
        .collect()
}
