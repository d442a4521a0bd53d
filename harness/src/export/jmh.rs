//! JMH's JSON result format: a list with one entry per benchmark case and mode, `primaryMetric`
//! holding score, scoreError, scoreConfidence, scorePercentiles, scoreUnit and `rawData` (one
//! list of iteration scores per fork); instructions and allocations as `secondaryMetrics`.

use super::{Exporter, interval};
use crate::report::{Benchmark, ForkKind, ForkStatus, Iteration, Report};
use serde_json::{Map, Value, json};

/// The JMH exporter.
pub struct Jmh;

/// Percentile keys JMH writes, and their quantiles.
const JMH_PERCENTILES: [(&str, f64); 10] = [
    ("0.0", 0.0),
    ("50.0", 0.5),
    ("90.0", 0.9),
    ("95.0", 0.95),
    ("99.0", 0.99),
    ("99.9", 0.999),
    ("99.99", 0.9999),
    ("99.999", 0.99999),
    ("99.9999", 0.999999),
    ("100.0", 1.0),
];

/// The `q` quantile of `sorted` by nearest rank, as JMH's percentiles read.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn seconds(nanos: u64) -> String {
    format!("{} s", nanos as f64 / 1e9)
}

fn common(b: &Benchmark, mode: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("jmhVersion".into(), json!(format!("harness {}", env!("CARGO_PKG_VERSION"))));
    m.insert("benchmark".into(), json!(b.name));
    m.insert("mode".into(), json!(mode));
    m.insert("threads".into(), json!(b.concurrency.as_ref().map_or(1, |c| c.count)));
    m.insert(
        "forks".into(),
        json!(b.forks.iter().filter(|f| f.status == ForkStatus::Ok && f.kind == ForkKind::Time).count()),
    );
    m.insert("warmupIterations".into(), json!(b.settings.warmup_iterations));
    m.insert("warmupTime".into(), json!(seconds(b.settings.warmup_nanos)));
    m.insert("measurementIterations".into(), json!(b.settings.iterations));
    m.insert("measurementTime".into(), json!(seconds(b.settings.iteration_nanos)));
    if !b.params.is_empty() {
        m.insert("params".into(), json!(b.params));
    }
    m
}

fn secondary(b: &Benchmark) -> Value {
    let mut s = Map::new();
    if let Some(i) = &b.instructions {
        s.insert(
            "instructions".into(),
            json!({"score": i.per_op, "scoreError": "NaN", "scoreConfidence": [i.min_per_op, i.max_per_op],
                   "scorePercentiles": {}, "scoreUnit": "instructions/op", "rawData": [[i.per_op]]}),
        );
    }
    if let Some(a) = &b.allocations {
        s.insert(
            "gc.alloc.count.norm".into(),
            json!({"score": a.per_op, "scoreError": "NaN", "scoreConfidence": [a.per_op, a.per_op],
                   "scorePercentiles": {}, "scoreUnit": "allocations/op", "rawData": [[a.per_op]]}),
        );
        s.insert(
            "gc.alloc.rate.norm".into(),
            json!({"score": a.bytes_per_op, "scoreError": "NaN", "scoreConfidence": [a.bytes_per_op, a.bytes_per_op],
                   "scorePercentiles": {}, "scoreUnit": "B/op", "rawData": [[a.bytes_per_op]]}),
        );
    }
    Value::Object(s)
}

fn throughput(b: &Benchmark) -> Option<Value> {
    let s = b.score.as_ref()?;
    let raw: Vec<Vec<f64>> = b
        .forks
        .iter()
        .filter(|f| f.status == ForkStatus::Ok && f.kind == ForkKind::Time)
        .map(|f| f.iterations.iter().map(Iteration::ops_per_sec).collect())
        .collect();
    let mut sorted: Vec<f64> = raw.iter().flatten().copied().collect();
    sorted.sort_by(f64::total_cmp);
    let percentiles: Map<String, Value> =
        JMH_PERCENTILES.iter().map(|(k, q)| (k.to_string(), json!(quantile(&sorted, *q)))).collect();
    let (lo, hi) = interval(b).unwrap_or((f64::NAN, f64::NAN));
    let mut m = common(b, "thrpt");
    m.insert(
        "primaryMetric".into(),
        json!({
            "score": s.mean,
            // JMH writes NaN (as a string in its JSON) when the error is not defined.
            "scoreError": s.error.map_or(json!("NaN"), |e| json!(e)),
            "scoreConfidence": [num(lo), num(hi)],
            "scorePercentiles": percentiles,
            "scoreUnit": "ops/s",
            "rawData": raw,
        }),
    );
    m.insert("secondaryMetrics".into(), secondary(b));
    Some(Value::Object(m))
}

fn num(x: f64) -> Value {
    if x.is_finite() { json!(x) } else { json!("NaN") }
}

fn sample(b: &Benchmark) -> Option<Value> {
    let l = b.latency.as_ref()?;
    let mut percentiles = Map::new();
    percentiles.insert(
        "0.0".into(),
        json!(b.forks.iter().filter_map(|f| f.latency.as_ref()).flat_map(|h| h.histogram.first()).map(|v| v.0).min()),
    );
    for (k, q) in [("50.0", "p50"), ("90.0", "p90"), ("99.0", "p99"), ("99.9", "p99.9"), ("99.99", "p99.99")] {
        percentiles.insert(k.into(), json!(l.percentiles.get(q)));
    }
    percentiles.insert("100.0".into(), json!(l.max));
    // rawDataHistogram: per fork, per iteration, [value, count] pairs; we keep one histogram per fork.
    let histograms: Vec<Vec<Vec<[u64; 2]>>> = b
        .forks
        .iter()
        .filter_map(|f| f.latency.as_ref())
        .map(|h| vec![h.histogram.iter().map(|&(v, c)| [v, c]).collect()])
        .collect();
    let mut m = common(b, "sample");
    m.insert(
        "primaryMetric".into(),
        json!({
            "score": l.mean,
            "scoreError": "NaN",
            "scoreConfidence": [l.percentiles.get("p50"), l.percentiles.get("p99")],
            "scorePercentiles": percentiles,
            "scoreUnit": "ns/op",
            "rawDataHistogram": histograms,
        }),
    );
    m.insert("secondaryMetrics".into(), json!({}));
    Some(Value::Object(m))
}

impl Exporter for Jmh {
    fn export(&self, report: &Report) -> anyhow::Result<String> {
        let entries: Vec<Value> = report.benchmarks.iter().flat_map(|b| [throughput(b), sample(b)]).flatten().collect();
        Ok(serde_json::to_string_pretty(&entries)? + "\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jmh_snapshot() {
        insta::assert_snapshot!(Jmh.export(&crate::export::fixture::report()).unwrap());
    }

    #[test]
    fn nearest_rank_quantiles() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!((quantile(&v, 0.0), quantile(&v, 0.5), quantile(&v, 0.9), quantile(&v, 1.0)), (1.0, 2.0, 4.0, 4.0));
    }
}
