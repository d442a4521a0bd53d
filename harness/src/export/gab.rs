//! github-action-benchmark's custom formats: a list of `{name, unit, value, range, extra}`.
//! Throughput goes to `customBiggerIsBetter` (ops/s), instructions to `customSmallerIsBetter`
//! (instructions per op), so that the dashboard reads a slowdown as a slowdown. Set the action's
//! `tool` to the one named by `--metric`. Every case appears: one without a figure as 0 ops/s
//! (the action alerts on it) or, for a count, `null`, with `extra` saying why.

use super::{CaseStatus, Exporter};
use crate::metric::Metric;
use crate::report::{Benchmark, Report};
use serde_json::{Value, json};

/// The github-action-benchmark exporter for one direction.
pub(super) struct Gab {
    /// Throughput (bigger is better) or instructions (smaller is better).
    pub metric: Metric,
}

impl Exporter for Gab {
    fn export(&self, report: &Report) -> anyhow::Result<String> {
        let entries: Vec<Value> = report.benchmarks.iter().map(|b| self.entry(b)).collect();
        Ok(serde_json::to_string_pretty(&entries)? + "\n")
    }
}

impl Gab {
    /// The case's entry: its figure, or, where it has none, one that says why (every case
    /// appears: the action would otherwise drop it without a word).
    fn entry(&self, b: &Benchmark) -> Value {
        let name = format!("{}{}", super::dotted_name(b), b.id().bracketed_params());
        let status = CaseStatus::of(b);
        let mut entry = match self.figure(b) {
            Some(mut figure) => {
                // The case as the harness names it (the name is dotted), and how it ran.
                let mut extra = format!("{}: {}", b.id(), figure["extra"].as_str().unwrap_or_default());
                if status != CaseStatus::Ok {
                    extra = format!("{extra}; {}", status.note());
                }
                figure["extra"] = json!(extra);
                figure
            }
            None => self.without_figure(&b.id().to_string(), &status),
        };
        entry["name"] = json!(name);
        entry
    }

    /// The entry of a case with no figure for the metric. Throughput: 0 ops/s, what a case that
    /// failed or did not run achieved, so the action alerts on it (previous / 0 exceeds any
    /// threshold). A count has no honest number: `null`, which the chart leaves as a gap and
    /// the action never alerts on; `harness compare` gates it (and fails closed).
    fn without_figure(&self, label: &str, status: &CaseStatus) -> Value {
        let why = match status {
            CaseStatus::Ok => format!("no {} measured for {label}", self.unit()),
            CaseStatus::Skipped(_) => format!("SKIPPED {label}: {}", status.note().trim_start_matches("skipped: ")),
            _ => format!("FAILED {label}: {}", status.note()),
        };
        let value = if self.metric == Metric::Throughput { json!(0.0) } else { Value::Null };
        json!({ "unit": self.unit(), "value": value, "range": "n/a", "extra": why })
    }

    fn unit(&self) -> &'static str {
        match self.metric {
            Metric::Throughput => "ops/s",
            Metric::Instructions => "instructions/op",
            Metric::Io => "round trips/op",
            Metric::Latency => "ns (p99)",
            Metric::Alloc => "allocations/op",
        }
    }

    /// The case's figure for the metric, where it has one.
    fn figure(&self, b: &Benchmark) -> Option<Value> {
        match self.metric {
            Metric::Throughput => b.score.as_ref().map(|s| {
                json!({
                    "unit": self.unit(),
                    "value": s.mean,
                    "range": s.error.map_or("n/a".to_string(), |e| format!("± {e:.6}")),
                    "extra": format!("{} ok forks, {} iterations; 99.9% interval", b.forks_ok(), s.n),
                })
            }),
            Metric::Instructions => b.instructions.as_ref().map(|i| {
                json!({
                    "unit": self.unit(),
                    "value": i.median(),
                    "range": format!("{:.1}..{:.1}", i.min_per_op, i.max_per_op),
                    "extra": format!(
                        "median of {} instruction fork(s); {}",
                        i.forks,
                        if i.deterministic { "deterministic" } else { "varies run to run" }
                    ),
                })
            }),
            Metric::Latency => b.open_loop.as_ref().and_then(|o| {
                let c = o.corrected.as_ref()?;
                Some(json!({
                    "unit": self.unit(),
                    "value": c.at("p99")?,
                    "range": format!("p50 {}, p99.9 {}", c.at("p50")?, c.at("p99.9")?),
                    "extra": format!("open loop at {}, corrected for coordinated omission; {} forks kept the rate", o.rate, o.forks_kept),
                }))
            }),
            Metric::Alloc => b.allocations.as_ref().map(|a| {
                json!({
                    "unit": self.unit(),
                    "value": a.per_op,
                    "range": "n/a",
                    "extra": format!("{:.1} bytes/op over the ok timed forks", a.bytes_per_op),
                })
            }),
            Metric::Io => b.io.as_ref().map(|io| {
                let c = &io.count;
                json!({
                    "unit": self.unit(),
                    "value": c.per_op(c.round_trips),
                    "range": "exact",
                    "extra": format!(
                        "{:.2} statements/op, {:.1} bytes/op; I/O fork over {} ops",
                        c.per_op(c.statements_total()),
                        c.per_op(c.bytes_to_server + c.bytes_to_client),
                        c.ops
                    ),
                })
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gab_snapshots() {
        let r = crate::export::fixture::report();
        insta::assert_snapshot!("gab_throughput", Gab { metric: Metric::Throughput }.export(&r).unwrap());
        insta::assert_snapshot!("gab_instructions", Gab { metric: Metric::Instructions }.export(&r).unwrap());
    }
}
