//! JMH's JSON result format: a list with one entry per benchmark case and mode, `primaryMetric`
//! holding score, scoreError, scoreConfidence, scorePercentiles, scoreUnit and `rawData` (one
//! list of iteration scores per fork); instructions, allocations and the I/O counts
//! (`io.round_trips`, `io.statements`…) as `secondaryMetrics`.
//!
//! Names are dotted (`harness.<group>.<workload>`) so that tools which group by the text before
//! the last dot (JMH Visualizer) group by workload group; `threads`, `mode` and an open-loop `rate`
//! are params, so no two entries share (name, params). Percentiles interpolate as JMH's (Apache Commons Math
//! `Percentile`, legacy estimation), and the error is the Student-t half-width at 99.9%.

use super::Exporter;
use crate::report::{Benchmark, Iteration, Report};
use serde_json::{Map, Value, json};

/// The JMH exporter.
pub(super) struct Jmh;

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

/// The value at 1-based rank `k` of a multiset given as sorted (value, count) pairs.
fn at_rank(sorted: &[(f64, u64)], k: u64) -> f64 {
    let mut seen = 0;
    for &(v, c) in sorted {
        seen += c;
        if seen >= k {
            return v;
        }
    }
    sorted.last().map_or(f64::NAN, |p| p.0)
}

/// The `p` percentile (0 to 100) of a multiset given as sorted (value, count) pairs, as Apache
/// Commons Math's `Percentile` estimates it by default (and so JMH): position `p (n + 1) / 100`;
/// below rank 1 the smallest value, at rank n or above the largest, otherwise linear
/// interpolation between the values at the two ranks around the position.
fn percentile(sorted: &[(f64, u64)], p: f64) -> f64 {
    let n: u64 = sorted.iter().map(|s| s.1).sum();
    if n == 0 {
        return f64::NAN;
    }
    let pos = p * (n as f64 + 1.0) / 100.0;
    if pos < 1.0 {
        return at_rank(sorted, 1);
    }
    if pos >= n as f64 {
        return at_rank(sorted, n);
    }
    let k = pos.floor() as u64;
    let (lower, upper) = (at_rank(sorted, k), at_rank(sorted, k + 1));
    lower + (pos - pos.floor()) * (upper - lower)
}

/// JMH's percentile keys over a multiset of (value, count) pairs.
fn percentiles(mut values: Vec<(f64, u64)>) -> Map<String, Value> {
    values.sort_by(|a, b| a.0.total_cmp(&b.0));
    JMH_PERCENTILES.iter().map(|(k, q)| (k.to_string(), num(percentile(&values, q * 100.0)))).collect()
}

/// Mean and the 99.9% Student-t half-width of a multiset (NaN for two values or fewer, as in
/// JMH and the report: [`crate::stats::error_of`]).
fn mean_and_error(values: &[(f64, u64)]) -> (f64, f64) {
    let n: u64 = values.iter().map(|v| v.1).sum();
    let mean = values.iter().map(|(v, c)| v * *c as f64).sum::<f64>() / n as f64;
    let stdev = if n < 2 {
        f64::NAN
    } else {
        (values.iter().map(|(v, c)| (v - mean).powi(2) * *c as f64).sum::<f64>() / (n - 1) as f64).sqrt()
    };
    let error = crate::stats::error_of(n as usize, stdev, crate::stats::CONFIDENCE);
    (mean, error.unwrap_or(f64::NAN))
}

fn seconds(nanos: u64) -> String {
    format!("{} s", nanos as f64 / 1e9)
}

fn common(b: &Benchmark, mode: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("jmhVersion".into(), json!(format!("harness {}", env!("CARGO_PKG_VERSION"))));
    m.insert("benchmark".into(), json!(super::dotted_name(b)));
    m.insert("mode".into(), json!(mode));
    m.insert("threads".into(), json!(b.concurrency.as_ref().map_or(1, |c| c.count)));
    m.insert("forks".into(), json!(b.forks_ok()));
    m.insert("warmupIterations".into(), json!(b.settings.warmup_iterations));
    m.insert("warmupTime".into(), json!(seconds(b.settings.warmup_nanos)));
    m.insert("measurementIterations".into(), json!(b.settings.iterations));
    m.insert("measurementTime".into(), json!(seconds(b.settings.iteration_nanos)));
    let mut params: Map<String, Value> = b.params.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    params.insert("threads".into(), json!(b.concurrency.as_ref().map_or(1, |c| c.count).to_string()));
    params.insert("mode".into(), json!(mode));
    if let Some(rate) = b.rate {
        params.insert("rate".into(), json!(rate.to_string()));
    }
    m.insert("params".into(), Value::Object(params));
    m
}

fn secondary(b: &Benchmark) -> Value {
    use crate::metric::Metric;
    let mut s = Map::new();
    for metric in Metric::SECONDARY {
        for m in metric.measures(b) {
            let (lo, hi) = m.range.unwrap_or((m.value, m.value));
            let name = if metric == Metric::Io { format!("io.{}", m.name) } else { m.name.to_string() };
            s.insert(
                name,
                json!({"score": m.value, "scoreError": "NaN", "scoreConfidence": [lo, hi],
                       "scorePercentiles": {}, "scoreUnit": m.unit, "rawData": [[m.value]]}),
            );
        }
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
        .filter(|f| f.is_ok_timed())
        .map(|f| f.iterations.iter().map(Iteration::ops_per_sec).collect())
        .collect();
    let values: Vec<(f64, u64)> = raw.iter().flatten().map(|&v| (v, 1)).collect();
    // The report's own error over the same iterations (NaN where it has none).
    let error = s.error.unwrap_or(f64::NAN);
    let mut m = common(b, "thrpt");
    m.insert(
        "primaryMetric".into(),
        json!({
            "score": s.mean,
            // JMH writes NaN (as a string in its JSON) when the error is not defined.
            "scoreError": num(error),
            "scoreConfidence": [num(s.mean - error), num(s.mean + error)],
            "scorePercentiles": percentiles(values),
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
    b.latency.as_ref()?;
    let ok = b.forks.iter().filter(|f| f.is_ok_timed());
    let forks: Vec<&crate::report::latency::ForkLatency> = ok.filter_map(|f| f.latency.as_ref()).collect();
    // rawDataHistogram: per fork, per iteration, [value, count] pairs; we keep one histogram per fork.
    let histograms: Vec<Vec<Vec<[u64; 2]>>> =
        forks.iter().map(|h| vec![h.histogram.iter().map(|&(v, c)| [v, c]).collect()]).collect();
    let values: Vec<(f64, u64)> = forks.iter().flat_map(|h| h.histogram.iter().map(|&(v, c)| (v as f64, c))).collect();
    if values.is_empty() {
        return None;
    }
    let (mean, error) = mean_and_error(&values);
    let mut m = common(b, "sample");
    m.insert(
        "primaryMetric".into(),
        json!({
            "score": mean,
            "scoreError": num(error),
            "scoreConfidence": [num(mean - error), num(mean + error)],
            "scorePercentiles": percentiles(values),
            "scoreUnit": "ns/op",
            "rawDataHistogram": histograms,
        }),
    );
    m.insert("secondaryMetrics".into(), json!({}));
    Some(Value::Object(m))
}

/// The entry of a case with no figure (every fork failed, or skipped): JMH's NaN score, so that
/// the case is seen, not dropped.
fn unmeasured(b: &Benchmark) -> Value {
    let mut m = common(b, "thrpt");
    m.insert(
        "primaryMetric".into(),
        json!({"score": "NaN", "scoreError": "NaN", "scoreConfidence": ["NaN", "NaN"], "scorePercentiles": {},
               "scoreUnit": "ops/s", "rawData": []}),
    );
    m.insert("secondaryMetrics".into(), json!({}));
    Value::Object(m)
}

/// Every entry of one case; one not ok says so in `harnessStatus` and `harnessNote` (fields JMH
/// readers pass over).
fn entries(b: &Benchmark) -> Vec<Value> {
    let mut found: Vec<Value> = [throughput(b), sample(b)].into_iter().flatten().collect();
    if found.is_empty() {
        found.push(unmeasured(b));
    }
    for entry in &mut found {
        // The case as the harness names it (the benchmark name is dotted for JMH's readers).
        entry["harnessCase"] = json!(b.id().to_string());
    }
    let status = super::CaseStatus::of(b);
    if status != super::CaseStatus::Ok {
        for entry in &mut found {
            entry["harnessStatus"] = json!(status.token());
            entry["harnessNote"] = json!(format!("{}: {}", b.id(), status.note()));
        }
    }
    found
}

impl Exporter for Jmh {
    fn export(&self, report: &Report) -> anyhow::Result<String> {
        let entries: Vec<Value> = report.benchmarks.iter().flat_map(entries).collect();
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
    fn open_loop_cases_at_two_rates_are_two_entries_with_the_rate_as_a_param() {
        use crate::rate::{Arrivals, Rate};
        let mut report = crate::export::fixture::report();
        let at = |per_sec| {
            let mut b = report.benchmarks[0].clone();
            b.rate = Some(Rate { per_sec, arrivals: Arrivals::Poisson });
            b
        };
        let (slow, fast) = (at(1000), at(2000));
        report.benchmarks = vec![slow, fast];
        let out: Vec<Value> = serde_json::from_str(&Jmh.export(&report).unwrap()).unwrap();
        let keys: std::collections::BTreeSet<String> =
            out.iter().map(|e| format!("{} {} {}", e["benchmark"], e["mode"], e["params"])).collect();
        assert_eq!(keys.len(), out.len(), "entries share (benchmark, mode, params): {keys:?}");
        assert_eq!(out[0]["params"]["rate"], "1000/s");
        assert_eq!(out.last().unwrap()["params"]["rate"], "2000/s");
    }

    #[test]
    fn percentiles_interpolate_as_commons_math() {
        // By hand, position p (n + 1) / 100 over 1, 2, 3, 4: p25 at 1.25 -> 1.25; p50 at 2.5 -> 2.5;
        // p90 at 4.5 -> the largest; p0 -> the smallest.
        let v: Vec<(f64, u64)> = [1.0, 2.0, 3.0, 4.0].iter().map(|&x| (x, 1)).collect();
        let got = [0.0, 25.0, 50.0, 90.0, 100.0].map(|p| percentile(&v, p));
        assert_eq!(got, [1.0, 1.25, 2.5, 4.0, 4.0]);
        // Counts: 10, 10, 20, 20 -> p50 at 2.5 is 15; 1..=10 -> p99 at 10.89 is 10, p30 at 3.3 is 3.3.
        assert_eq!(percentile(&[(10.0, 2), (20.0, 2)], 50.0), 15.0);
        let ten: Vec<(f64, u64)> = (1..=10).map(|x| (f64::from(x), 1)).collect();
        assert_eq!(percentile(&ten, 99.0), 10.0);
        assert!((percentile(&ten, 30.0) - 3.3).abs() < 1e-12);
    }

    #[test]
    fn errors_are_numbers_from_three_values_and_nan_below_as_in_jmh() {
        // JMH (Statistics.getMeanErrorAt) and the report give no error for n <= 2: an
        // interval from two values (t = 636.6) is wider than anything it could say.
        assert!(mean_and_error(&[(2.0, 1), (4.0, 1)]).1.is_nan());
        assert!(mean_and_error(&[(2.0, 1)]).1.is_nan());
        // 2, 4, 6: mean 4, sd 2, t(0.9995, 2) = 31.599 (published tables): 31.599 * 2 / sqrt(3).
        let (mean, error) = mean_and_error(&[(2.0, 1), (4.0, 1), (6.0, 1)]);
        assert_eq!(mean, 4.0);
        assert!((error - 36.4875).abs() < 1e-3, "{error}");
        // A multiset counts each value as often as it occurs.
        assert_eq!(mean_and_error(&[(2.0, 1), (4.0, 2)]), mean_and_error(&[(2.0, 1), (4.0, 1), (4.0, 1)]));
        assert!(!mean_and_error(&[(2.0, 1), (4.0, 2)]).1.is_nan(), "three values");
    }
}
