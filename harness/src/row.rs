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
    /// The score in ops/s.
    pub ops: String,
    /// The score's error at 99.9% with its percentage, or `n/a (n=…)` when it has none.
    pub error: String,
    /// `ok/ran` timed forks, or `skipped`.
    pub forks: String,
    /// Instructions per op, `~` first where counts vary run to run.
    pub instr: String,
    /// Allocations per op.
    pub allocs: String,
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
            params: b.params_text(),
            threads: b.threads().to_string(),
            ops: score.map_or("-".into(), |s| si(s.mean)),
            error: score.map_or("-".into(), |s| {
                s.error.map_or(format!("n/a (n={})", s.n), |e| format!("± {} ({:.1}%)", si(e), 100.0 * e / s.mean))
            }),
            forks: if b.skipped.is_some() { "skipped".into() } else { format!("{}/{}", b.forks_ok(), b.timed_forks()) },
            instr: b
                .instructions
                .as_ref()
                .map_or("-".into(), |i| format!("{}{:.1}", if i.deterministic { "" } else { "~" }, i.per_op)),
            allocs: b.allocations.as_ref().map_or("-".into(), |a| format!("{:.2}", a.per_op)),
            p50: percentile("p50").unwrap_or_else(|| "-".into()),
            p99: percentile("p99").unwrap_or_else(|| "-".into()),
            p999: percentile("p99.9").unwrap_or_else(|| "-".into()),
            max: b.latency.as_ref().map_or("-".into(), |l| nanos(l.max as f64)),
        }
    }
}

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
}

impl Columns {
    /// The columns `cases` need.
    pub(crate) fn of<'a>(cases: impl IntoIterator<Item = &'a Benchmark>) -> Columns {
        let mut c = Columns { threads: false, instr: false, allocs: false, latency: false };
        for b in cases {
            c.threads |= b.threads() != 1;
            c.instr |= b.instructions.is_some();
            c.allocs |= b.allocations.is_some();
            c.latency |= b.latency.is_some();
        }
        c
    }
}
