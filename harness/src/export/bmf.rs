//! Bencher Metric Format: `{ case: { measure: { value, lower_value, upper_value } } }`, with the
//! built-in `throughput` (ops/s, bounds from the confidence interval) and `latency` (ns: the p50,
//! the p99 its upper bound; open loop: the corrected latency's) measures, the open-loop
//! `latency_p50`, `latency_p99` and `latency_p99_9`, and `instructions`, `allocations` and the I/O counts (`round_trips`,
//! `statements`, `messages`, `bytes`, `rows_returned`, `rows_read`) per op where present. Every
//! case appears: one with failed forks has a `forks_failed` measure, a skipped one `skipped`.

use super::{Exporter, interval};
use crate::report::Report;
use serde_json::{Map, Value, json};

/// The BMF exporter.
pub(super) struct Bmf;

impl Exporter for Bmf {
    fn export(&self, report: &Report) -> anyhow::Result<String> {
        let mut out = Map::new();
        for b in &report.benchmarks {
            let mut measures = Map::new();
            if let Some(s) = &b.score {
                let mut m = json!({ "value": s.mean });
                if let Some((lo, hi)) = interval(b) {
                    m["lower_value"] = json!(lo.max(0.0));
                    m["upper_value"] = json!(hi);
                }
                measures.insert("throughput".into(), m);
            }
            // The median with the p99 as its upper bound: a value always inside its bounds (the
            // mean of a skewed sample can lie above the p99).
            if let Some(p) = b.percentiles() {
                measures.insert("latency".into(), json!({ "value": p.get("p50"), "upper_value": p.get("p99") }));
            }
            for metric in crate::metric::Metric::SECONDARY {
                for m in metric.measures(b) {
                    let mut v = json!({ "value": m.value });
                    if let Some((lo, hi)) = m.range {
                        (v["lower_value"], v["upper_value"]) = (json!(lo), json!(hi));
                    }
                    measures.insert(m.name.into(), v);
                }
            }
            if let Some(a) = &b.allocations {
                measures.insert("allocations".into(), json!({ "value": a.per_op }));
            }
            // A case that failed or was skipped is kept, marked by a measure of its own.
            match super::CaseStatus::of(b) {
                super::CaseStatus::Ok => {}
                super::CaseStatus::Skipped(_) => drop(measures.insert("skipped".into(), json!({ "value": 1.0 }))),
                status => {
                    drop(measures.insert("forks_failed".into(), json!({ "value": status.forks_failed() as f64 })))
                }
            }
            out.insert(b.id().to_string(), Value::Object(measures));
        }
        Ok(serde_json::to_string_pretty(&Value::Object(out))? + "\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bmf_snapshot() {
        insta::assert_snapshot!(Bmf.export(&crate::export::fixture::report()).unwrap());
    }
}
