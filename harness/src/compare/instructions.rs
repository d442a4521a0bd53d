//! Instructions per op from `--instructions` runs, case by case against a regression threshold:
//! exact counts, so a threshold of a fraction of a percent is meaningful for deterministic
//! workloads. The gate fails closed: a case without counts on either side is an error, not a
//! pass, and a case missing from the new report fails unless missing cases are allowed. With
//! several instruction forks the median per-op count is compared and the spread shown; workloads
//! whose counts vary run to run (`~`) get their own threshold.

use super::Verdict;
use super::case_pairs;
use super::counts::{CountRow, Counts};
use crate::report::{Benchmark, CaseId, Report};
use std::collections::BTreeMap;

/// Regression thresholds in percent: a default and per-benchmark overrides.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Thresholds {
    /// Default for every deterministic benchmark (the file's value wins over `--max-regression`).
    pub default: Option<f64>,
    /// Default for benchmarks whose counts vary run to run (wins over `--max-regression-varying`).
    pub varying: Option<f64>,
    /// By workload name (`sql/thread_select_by_id`) or case label (`cache/moka_hit[cache_size=1000]`).
    #[serde(default)]
    pub benchmarks: BTreeMap<String, f64>,
    /// `--metric io`: the growth allowed in bytes and rows per op (`[io]`).
    #[serde(default)]
    pub io: IoThresholds,
    /// `--metric alloc`: the growth allowed in allocations and bytes per op (`[alloc]`).
    #[serde(default)]
    pub alloc: IoThresholds,
}

/// A growth table of a thresholds file (`[io]`: bytes and rows per op; `[alloc]`: allocations
/// and bytes per op), in percent.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct IoThresholds {
    /// For every benchmark (default [`super::DEFAULT_GROWTH_PCT`]).
    pub default: Option<f64>,
    /// By workload name or case label.
    #[serde(default)]
    pub benchmarks: BTreeMap<String, f64>,
}

impl IoThresholds {
    /// The growth allowed for one case, percent.
    pub(crate) fn for_case(&self, name: &str, label: &str) -> f64 {
        let default = self.default.unwrap_or(super::DEFAULT_GROWTH_PCT);
        self.benchmarks.get(label).or_else(|| self.benchmarks.get(name)).copied().unwrap_or(default)
    }
}

impl Thresholds {
    /// Parses a thresholds file's text.
    pub(crate) fn parse(text: &str) -> Result<Thresholds, String> {
        let t: Thresholds = toml::from_str(text).map_err(|e| e.message().to_string())?;
        let named = t.benchmarks.iter().chain(&t.io.benchmarks).chain(&t.alloc.benchmarks);
        let defaults = [("[io] default", t.io.default), ("[alloc] default", t.alloc.default)];
        let mut all =
            named.map(|(k, v)| (k.as_str(), *v)).chain(defaults.into_iter().filter_map(|(k, d)| Some((k, d?))));
        if let Some((k, v)) = all.find(|(_, v)| !v.is_finite() || *v < 0.0) {
            return Err(format!("threshold for '{k}' is {v}: use a percentage of 0 or more"));
        }
        Ok(t)
    }

    fn for_case(&self, name: &str, label: &str, deterministic: bool, limits: Limits) -> f64 {
        let default = if deterministic {
            self.default.unwrap_or(limits.deterministic_pct)
        } else {
            self.varying.unwrap_or(limits.varying_pct)
        };
        self.benchmarks.get(label).or_else(|| self.benchmarks.get(name)).copied().unwrap_or(default)
    }
}

/// The command line's thresholds, in percent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Limits {
    /// `--max-regression`: workloads whose counts repeat exactly.
    pub deterministic_pct: f64,
    /// `--max-regression-varying`: workloads whose counts vary run to run.
    pub varying_pct: f64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { deterministic_pct: 1.0, varying_pct: DEFAULT_VARYING_PCT }
    }
}

/// Default threshold of workloads whose counts vary run to run (clock reads, other threads,
/// servers): their counts move by a few percent between two runs of one build (3.5% once for
/// `baseline/spawn_blocking_noop`), so a tighter default would cry wolf.
pub(crate) const DEFAULT_VARYING_PCT: f64 = 10.0;

/// One case's comparison.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    /// The case.
    pub id: CaseId,
    /// Metric in the base report.
    pub base: Option<f64>,
    /// Metric in the new report.
    pub new: Option<f64>,
    /// `(new - base) / base` in percent.
    pub delta_pct: Option<f64>,
    /// Threshold applied, percent.
    pub threshold_pct: f64,
    /// Verdict.
    pub verdict: Verdict,
    /// False when the workload's counts vary run to run.
    pub deterministic: bool,
    /// Smallest and largest per-op count over the new report's instruction forks, when it ran
    /// more than one.
    pub spread: Option<(f64, f64)>,
}

fn metric_of(b: &Benchmark) -> Option<(f64, bool)> {
    b.instructions.as_ref().map(|i| (i.median(), i.deterministic))
}

fn spread_of(b: &Benchmark) -> Option<(f64, f64)> {
    b.instructions.as_ref().filter(|i| i.forks > 1).map(|i| (i.min_per_op, i.max_per_op))
}

/// Compares `new` against `base`; `limits` apply where `thresholds` is silent.
pub(crate) fn compare(base: &Report, new: &Report, limits: Limits, thresholds: &Thresholds) -> Counts<Row> {
    let rows = case_pairs(base, new)
        .into_iter()
        .map(|(id, b, n)| {
            let label = id.to_string();
            let name = b.or(n).map_or("", |c| c.name.as_str());
            let (bm, nm) = (b.and_then(metric_of), n.and_then(metric_of));
            let deterministic = bm.or(nm).is_none_or(|(_, d)| d);
            let threshold_pct = thresholds.for_case(name, &label, deterministic, limits);
            let delta_pct = match (bm, nm) {
                (Some((bv, _)), Some((nv, _))) if bv > 0.0 => Some((nv - bv) / bv * 100.0),
                _ => None,
            };
            let verdict = match (b, n, delta_pct) {
                (Some(_), None, _) => Verdict::Missing,
                (None, Some(_), _) => Verdict::Extra,
                (_, _, Some(d)) if d > threshold_pct => Verdict::Regressed,
                (_, _, Some(d)) if d < -threshold_pct => Verdict::Improved,
                (_, _, Some(_)) => Verdict::Unchanged,
                _ => Verdict::NoData,
            };
            let spread = n.and_then(spread_of);
            Row {
                id,
                base: bm.map(|m| m.0),
                new: nm.map(|m| m.0),
                delta_pct,
                threshold_pct,
                verdict,
                deterministic,
                spread,
            }
        })
        .collect();
    Counts { rows }
}

/// The registry's entry: one report per side, the command line's limits and thresholds.
pub(crate) fn comparison(
    base: &[Report],
    new: &[Report],
    limits: Limits,
    thresholds: &Thresholds,
) -> Result<Counts<Row>, crate::error::BadInput> {
    let (base, new) = super::comparison::one_each(crate::metric::Metric::Instructions, base, new)?;
    Ok(compare(base, new, limits, thresholds))
}

fn cells(r: &Row) -> [String; 7] {
    let num = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
    [
        format!("{}{}", r.id, if r.deterministic { "" } else { " ~ (varies run to run)" }),
        num(r.base),
        num(r.new),
        r.spread.map_or("-".into(), |(lo, hi)| format!("{lo:.1}..{hi:.1}")),
        r.delta_pct.map_or("-".into(), |d| format!("{d:+.2}%")),
        format!("{:.2}%", r.threshold_pct),
        r.verdict.as_str().into(),
    ]
}

const HEADER: [&str; 7] =
    ["benchmark", "base instr/op", "new instr/op", "new forks min..max", "delta", "threshold", "verdict"];

/// What the numbers are, printed under the table.
pub(crate) const LEGEND: &str = "Median instructions per op over each report's instruction forks; ~ marks workloads whose counts vary run to run (their own threshold, --max-regression-varying).\n";

impl CountRow for Row {
    const METRIC: crate::metric::Metric = crate::metric::Metric::Instructions;
    const HEADER: &'static [&'static str] = &HEADER;
    const LEGEND: &'static str = LEGEND;
    const REGRESSED: &'static str = "**{n} benchmark(s) regressed** in instructions per op.";
    const NONE_REGRESSED: &'static str = "No benchmark regressed in instructions per op.";

    super::counts::count_row_fields!();

    fn json_case(&self) -> super::json::Case {
        super::json::Case {
            delta_pct: self.delta_pct,
            threshold_pct: Some(self.threshold_pct),
            deterministic: Some(self.deterministic),
            ..super::json::Case::new(
                self.id.to_string(),
                self.base,
                self.new,
                self.verdict.token(),
                self.verdict.as_str().into(),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::report;
    use super::*;
    use crate::report::InstructionSummary;

    fn case(name: &str, per_op: Option<f64>) -> Benchmark {
        Benchmark {
            instructions: per_op.map(|p| InstructionSummary {
                forks: 1,
                ops: 1000,
                total: (p * 1000.0) as u64,
                per_op: p,
                min_per_op: p,
                max_per_op: p,
                median_per_op: None,
                identical: None,
                deterministic: true,
            }),
            ..super::super::fixtures::case(name)
        }
    }

    #[test]
    fn verdicts_follow_the_threshold_and_list_missing_and_extra() {
        let base = report(vec![
            case("a", Some(1000.0)),
            case("b", Some(1000.0)),
            case("c", Some(1000.0)),
            case("gone", Some(5.0)),
        ]);
        let new = report(vec![
            case("a", Some(1009.0)),
            case("b", Some(1011.0)),
            case("c", Some(900.0)),
            case("fresh", Some(5.0)),
        ]);
        let c = compare(&base, &new, Limits::default(), &Thresholds::default());
        let verdicts: Vec<(String, Verdict)> = c.rows.iter().map(|r| (r.id.to_string(), r.verdict)).collect();
        assert_eq!(
            verdicts,
            [
                ("a".into(), Verdict::Unchanged),
                ("b".into(), Verdict::Regressed),
                ("c".into(), Verdict::Improved),
                ("gone".into(), Verdict::Missing),
                ("fresh".into(), Verdict::Extra)
            ]
        );
        assert!(!c.labels(Verdict::Regressed).is_empty());
        assert!((c.rows[1].delta_pct.unwrap() - 1.1).abs() < 1e-9);
        let exact = Limits { deterministic_pct: 0.0, ..Limits::default() };
        let same = compare(&base, &base, exact, &Thresholds::default());
        assert!(
            same.labels(Verdict::Regressed).is_empty() && same.rows.iter().all(|r| r.verdict == Verdict::Unchanged)
        );
    }

    #[test]
    fn thresholds_file_overrides_by_label_then_name() {
        let t = Thresholds::parse("default = 5.0\nvarying = 9.0\n[benchmarks]\n\"b\" = 0.5\n").unwrap();
        let l = Limits::default();
        assert_eq!(t.for_case("b", "b[x=1]", true, l), 0.5);
        assert_eq!(t.for_case("a", "a", true, l), 5.0);
        assert_eq!(t.for_case("a", "a", false, l), 9.0);
        assert_eq!(Thresholds::default().for_case("a", "a", false, l), DEFAULT_VARYING_PCT);
        assert!(Thresholds::parse("[benchmarks]\n\"b\" = -1\n").unwrap_err().contains("percentage"));
        assert!(Thresholds::parse("unknown = 1").is_err());
    }

    #[test]
    fn cases_without_counts_have_no_data() {
        let base = report(vec![case("a", None)]);
        let c = compare(&base, &base, Limits::default(), &Thresholds::default());
        assert_eq!(c.rows[0].verdict, Verdict::NoData);
        assert_eq!(c.labels(Verdict::NoData), ["a"]);
        let markdown = super::super::Comparison::markdown(&c);
        assert!(markdown.contains("| a | - | - | - | - | 1.00% | no data |"), "{markdown}");
    }
}
