//! github-action-benchmark's custom formats: a list of `{name, unit, value, range, extra}`.
//! Throughput goes to `customBiggerIsBetter` (ops/s), instructions to `customSmallerIsBetter`
//! (instructions per op), so that the dashboard reads a slowdown as a slowdown. Set the action's
//! `tool` to the one named by `--metric`.

use super::Exporter;
use crate::compare::Metric;
use crate::report::Report;
use serde_json::{Value, json};

/// The github-action-benchmark exporter for one direction.
pub(super) struct Gab {
    /// Throughput (bigger is better) or instructions (smaller is better).
    pub metric: Metric,
}

impl Exporter for Gab {
    fn export(&self, report: &Report) -> anyhow::Result<String> {
        let entries: Vec<Value> = report
            .benchmarks
            .iter()
            .filter_map(|b| {
                let name = format!("{}{}", super::dotted_name(b), &b.label()[b.name.len()..]);
                match self.metric {
                    Metric::Throughput => b.score.as_ref().map(|s| {
                        json!({
                            "name": name,
                            "unit": "ops/s",
                            "value": s.mean,
                            "range": s.error.map_or("n/a".to_string(), |e| format!("± {e:.6}")),
                            "extra": format!("{} ok forks, {} iterations; 99.9% interval", b.forks_ok(), s.n),
                        })
                    }),
                    Metric::Instructions => b.instructions.as_ref().map(|i| {
                        json!({
                            "name": name,
                            "unit": "instructions/op",
                            "value": i.median(),
                            "range": format!("{:.1}..{:.1}", i.min_per_op, i.max_per_op),
                            "extra": format!(
                                "median of {} instruction fork(s); {}",
                                i.forks,
                                if i.deterministic { "deterministic" } else { "varies run to run" }
                            ),
                        })
                    }),
                    Metric::Io => b.io.as_ref().map(|io| {
                        let c = &io.count;
                        json!({
                            "name": name,
                            "unit": "round trips/op",
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
            })
            .collect();
        Ok(serde_json::to_string_pretty(&entries)? + "\n")
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
