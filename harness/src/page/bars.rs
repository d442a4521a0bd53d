//! The bar chart of one workload group, readable at a glance: one colour per database (or per
//! shape, where no case names a database), short labels that keep only what tells the cases
//! apart, and the params every case shares said once in the legend.

use super::charts::{Bar, BarChart};
use crate::report::Benchmark;
use std::collections::{BTreeMap, BTreeSet};

/// The name of the pseudo-param for the measuring threads (`--threads`).
const THREADS: &str = "threads";

/// A case's params as the chart sees them: its declared params, and `threads` when it ran
/// several measurers.
fn params_of(b: &Benchmark) -> BTreeMap<String, String> {
    let mut p = b.params.clone();
    if b.threads() != 1 {
        p.insert(THREADS.into(), b.threads().to_string());
    }
    p
}

/// What colours the bars: `db` when the cases name more than one, else the op's shape when
/// there are several, else nothing (one colour). The key and each case's value.
fn colour_key(cases: &[&Benchmark]) -> Option<(&'static str, Vec<String>)> {
    let dbs: Vec<String> =
        cases.iter().map(|b| b.params.get("db").cloned().unwrap_or_else(|| "in-process".into())).collect();
    let shapes: Vec<String> = cases.iter().map(|b| b.shape.clone().unwrap_or_else(|| "unknown".into())).collect();
    let varies = |v: &[String]| v.iter().collect::<BTreeSet<_>>().len() > 1;
    if varies(&dbs) {
        Some(("db", dbs))
    } else if varies(&shapes) {
        Some(("shape", shapes))
    } else {
        None
    }
}

/// The chart of `cases` (those with a score), titled `title`.
pub(crate) fn chart(title: String, group: &str, cases: &[&Benchmark]) -> BarChart {
    let cases: Vec<&Benchmark> = cases.iter().copied().filter(|b| b.score.is_some()).collect();
    let params: Vec<BTreeMap<String, String>> = cases.iter().map(|b| params_of(b)).collect();
    let keys: BTreeSet<&String> = params.iter().flat_map(|p| p.keys()).collect();
    let value = |p: &BTreeMap<String, String>, k: &str| p.get(k).cloned().unwrap_or_else(|| "-".into());
    let (shared, varying): (Vec<&String>, Vec<&String>) =
        keys.into_iter().partition(|k| params.iter().all(|p| value(p, k) == value(&params[0], k)));
    let colour = colour_key(&cases);
    let mut series: Vec<String> = vec![];
    let mut bars = vec![];
    for (i, (b, p)) in cases.iter().zip(&params).enumerate() {
        let index = match &colour {
            Some((_, values)) => {
                let v = &values[i];
                series.iter().position(|s| s == v).unwrap_or_else(|| {
                    series.push(v.clone());
                    series.len() - 1
                })
            }
            None => 0,
        };
        let short = b.name.strip_prefix(&format!("{group}/")).unwrap_or(&b.name);
        let mut label = vec![short.to_string()];
        let shown = varying.iter().filter(|k| colour.as_ref().is_none_or(|(c, _)| *c != k.as_str()));
        label.extend(shown.filter_map(|k| Some(format!("{k}={}", p.get(*k)?))));
        let score = b.score.as_ref().expect("filtered to scored cases");
        bars.push(Bar { label: label.join(" "), value: score.mean, error: score.error, series: index });
    }
    let mut notes = vec![];
    let shared: Vec<String> = shared.iter().map(|k| format!("{k}={}", value(&params[0], k))).collect();
    if !shared.is_empty() {
        notes.push(format!("every case: {}", shared.join(", ")));
    }
    BarChart { title, bars, series_key: colour.map(|(key, _)| key.to_string()), series, notes }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str, params: &[(&str, &str)], ops: f64) -> Benchmark {
        let mut b = crate::compare::fixtures::timed(name, &[&[ops, ops]]);
        b.params = params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        b
    }

    #[test]
    fn colours_by_db_and_labels_only_what_varies() {
        let a = case("sql/thread_select", &[("db", "sqlite"), ("pool", "10"), ("rows", "1000")], 100.0);
        let b = case("sql/thread_select", &[("db", "postgres"), ("pool", "10"), ("rows", "1000")], 50.0);
        let c = case("sql/async_select", &[("db", "sqlite"), ("pool", "10"), ("rows", "10000")], 80.0);
        let d = case("sql/generate", &[("pool", "10")], 80.0);
        let chart = chart("t".into(), "sql", &[&a, &b, &c, &d]);
        let labels: Vec<&str> = chart.bars.iter().map(|b| b.label.as_str()).collect();
        assert_eq!(
            labels,
            ["thread_select rows=1000", "thread_select rows=1000", "async_select rows=10000", "generate"]
        );
        assert_eq!(chart.series, ["sqlite", "postgres", "in-process"]);
        assert_eq!(chart.bars.iter().map(|b| b.series).collect::<Vec<_>>(), [0, 1, 0, 2]);
        assert_eq!((chart.series_key.as_deref(), chart.notes), (Some("db"), vec!["every case: pool=10".to_string()]));
    }

    #[test]
    fn one_database_gives_one_colour_and_no_colour_note() {
        let a = case("cache/hit", &[("size", "5")], 100.0);
        let b = case("cache/miss", &[("size", "5")], 50.0);
        let chart = chart("t".into(), "cache", &[&a, &b]);
        assert!(chart.series.is_empty() && chart.series_key.is_none());
        assert_eq!(chart.bars[1].label, "miss");
        assert_eq!(chart.notes, ["every case: size=5"]);
    }
}
