//! Exports of a report for other tools, one module per format behind one [`Exporter`] trait:
//! JMH's JSON result format, Bencher Metric Format, CSV, Markdown and github-action-benchmark's
//! custom format.

mod bmf;
mod csv;
mod gab;
mod jmh;
pub(crate) mod markdown;

use crate::report::{Benchmark, Report};

/// A format a report can be exported to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// JMH's JSON result format (a list of benchmark results), for tools that read JMH output.
    Jmh,
    /// Bencher Metric Format, for a continuous-benchmarking server.
    Bmf,
    /// One row per case.
    Csv,
    /// One table row per case.
    Markdown,
    /// github-action-benchmark's custom format: throughput as `customBiggerIsBetter`, or with
    /// `--metric instructions` as `customSmallerIsBetter`.
    Gab,
}

/// Turns a report into the bytes of one format.
pub(crate) trait Exporter {
    /// The exported document.
    fn export(&self, report: &Report) -> anyhow::Result<String>;
}

/// The exporter of `format`; `metric` picks the series of the formats that hold one.
pub(crate) fn exporter(format: Format, metric: crate::metric::Metric) -> Box<dyn Exporter> {
    match format {
        Format::Jmh => Box::new(jmh::Jmh),
        Format::Bmf => Box::new(bmf::Bmf),
        Format::Csv => Box::new(csv::Csv),
        Format::Markdown => Box::new(markdown::Markdown),
        Format::Gab => Box::new(gab::Gab { metric }),
    }
}

/// `harness.<group>.<workload>`: a dotted name, for tools that group by the text before the last
/// dot.
pub(crate) fn dotted_name(b: &Benchmark) -> String {
    format!("harness.{}", b.name.replace('/', "."))
}

/// The confidence interval of a case's score, where it has an error.
pub(crate) fn interval(b: &Benchmark) -> Option<(f64, f64)> {
    let s = b.score.as_ref()?;
    s.error.map(|e| (s.mean - e, s.mean + e))
}

/// How a case ran, as every export marks it (a case is never dropped from an export).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CaseStatus {
    /// Every fork finished ok.
    Ok,
    /// Some forks failed; the figures are the ok forks'.
    Partial {
        /// Forks that failed.
        failed: usize,
        /// Forks run.
        of: usize,
        /// The failed forks by kind: `1 instruction`, `2 timed, 1 I/O`.
        kinds: String,
        /// The first failure.
        why: String,
    },
    /// Every fork failed: there is no figure.
    Failed {
        /// Forks run.
        of: usize,
        /// The failed forks by kind.
        kinds: String,
        /// The first failure.
        why: String,
    },
    /// Not run, and why.
    Skipped(String),
}

impl CaseStatus {
    /// The status of `b` from its forks.
    pub(crate) fn of(b: &Benchmark) -> CaseStatus {
        if let Some(why) = &b.skipped {
            return CaseStatus::Skipped(why.clone());
        }
        let failed: Vec<&crate::report::Fork> = b.forks.iter().filter(|f| f.failure.is_some()).collect();
        let why = failed.first().and_then(|f| f.failure.as_ref()).map(|f| f.message.clone()).unwrap_or_default();
        let kinds = failed_kinds(&failed);
        match (failed.len(), b.forks.len()) {
            (0, _) => CaseStatus::Ok,
            (n, of) if n < of => CaseStatus::Partial { failed: n, of, kinds, why },
            (_, of) => CaseStatus::Failed { of, kinds, why },
        }
    }

    /// `ok`, `partial`, `failed` or `skipped`.
    pub(crate) fn token(&self) -> &'static str {
        match self {
            CaseStatus::Ok => "ok",
            CaseStatus::Partial { .. } => "partial",
            CaseStatus::Failed { .. } => "failed",
            CaseStatus::Skipped(_) => "skipped",
        }
    }

    /// Forks that failed.
    pub(crate) fn forks_failed(&self) -> usize {
        match self {
            CaseStatus::Partial { failed, .. } => *failed,
            CaseStatus::Failed { of, .. } => *of,
            CaseStatus::Ok | CaseStatus::Skipped(_) => 0,
        }
    }

    /// One line for a reader: empty when ok.
    pub(crate) fn note(&self) -> String {
        match self {
            CaseStatus::Ok => String::new(),
            CaseStatus::Partial { failed, of, kinds, why } => {
                format!("{failed} of {of} forks failed ({kinds}; first: {why})")
            }
            CaseStatus::Failed { of, kinds, why } => format!("all {of} forks failed ({kinds}; first: {why})"),
            CaseStatus::Skipped(why) => format!("skipped: {why}"),
        }
    }
}

/// How many of `failed` were of each kind, in fork order: `1 instruction`, `2 timed, 1 I/O`.
fn failed_kinds(failed: &[&crate::report::Fork]) -> String {
    use crate::report::ForkKind;
    let kinds = [(ForkKind::Time, "timed"), (ForkKind::Instructions, "instruction"), (ForkKind::Io, "I/O")];
    let counts = kinds.map(|(kind, word)| (failed.iter().filter(|f| f.kind == kind).count(), word));
    counts.iter().filter(|(n, _)| *n > 0).map(|(n, word)| format!("{n} {word}")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
pub(crate) mod fixture {
    //! One fixed report for the snapshot tests of every format.

    use crate::report::io::{IoCount, IoSummary};
    use crate::report::latency::{Concurrency, ForkLatency, LatencySummary};
    use crate::report::{
        AllocSummary, Benchmark, Fork, ForkKind, ForkStatus, InstructionSummary, Iteration, Report, Score,
    };

    fn fork(index: u32, rates: &[u64]) -> Fork {
        Fork {
            status: ForkStatus::Ok,
            iterations: rates
                .iter()
                .map(|&r| Iteration { ops: r, nanos: 1_000_000_000, ..Iteration::default() })
                .collect(),
            ..Fork::pending(index, Some(100 + index))
        }
    }

    /// A report of two cases: one plain, one with params, threads, instructions, allocations
    /// and latency; meta fixed so that snapshots do not depend on the machine.
    pub(crate) fn report() -> Report {
        let mut report = crate::compare::fixtures::report(vec![]);
        report.meta.harness_version = "0.1.0".into();
        report.meta.git.commit = Some("0123456789abcdef".into());
        report.meta.rustc = "rustc 1.95.0".into();
        let mut noop = crate::compare::fixtures::case("baseline/noop");
        noop.forks = vec![fork(0, &[1000, 1100, 900]), fork(1, &[1000, 1050, 950])];
        noop.score = Score::from_forks(&noop.forks);
        let mut sql = crate::compare::fixtures::case("sql/thread_select_by_id");
        sql.params = [("db".to_string(), "sqlite".to_string()), ("row_count".to_string(), "1000".to_string())].into();
        sql.settings.forks = 2;
        sql.settings.iterations = 2;
        sql.forks = vec![fork(0, &[500, 520]), fork(1, &[480, 500])];
        sql.forks[0].latency = Some(ForkLatency { ops_per_sample: 1, histogram: vec![(1000, 98), (1_000_000, 2)] });
        sql.forks[0].clock_read_nanos = Some(25.0);
        sql.score = Score::from_forks(&sql.forks);
        sql.concurrency = Some(Concurrency { count: 4, cores: 2, kind: Some("threads".into()), each: None });
        sql.instructions = Some(InstructionSummary {
            forks: 1,
            ops: 1000,
            total: 5_597_400,
            per_op: 5597.4,
            min_per_op: 5597.4,
            max_per_op: 5597.4,
            median_per_op: None,
            identical: None,
            deterministic: true,
        });
        sql.allocations = Some(AllocSummary { per_op: 3.0, bytes_per_op: 256.0, counted: String::new() });
        sql.latency = LatencySummary::from_forks(&sql.forks);
        let io = IoCount {
            ops: 1000,
            round_trips: 3000,
            bytes_to_server: 82_000,
            bytes_to_client: 91_000,
            messages: [("Bind".to_string(), 1000), ("Execute".to_string(), 1000), ("Query".to_string(), 2000)].into(),
            statements: [("COMMIT".to_string(), 1000), ("SELECT name FROM users WHERE id = $1".to_string(), 1000)]
                .into(),
            rows_returned: 1000,
            connections: 0,
            sources: vec![],
            sqlite_traced: false,
        };
        let server = [("ops_run", 1100), ("pg_seq_tup_read", 0), ("pg_idx_tup_fetch", 1100), ("pg_idx_scan", 1100)];
        let server = server.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        let fork = Fork {
            status: ForkStatus::Ok,
            kind: ForkKind::Io,
            io: Some(io),
            observed: server,
            ..Fork::pending(2, None)
        };
        sql.io = IoSummary::from_forks(&[fork]);
        let _: &Benchmark = &sql;
        report.benchmarks = vec![noop, sql];
        report
    }
}

#[cfg(test)]
mod tests {
    use super::{Format, exporter, fixture};
    use crate::metric::Metric;
    use crate::report::Score;
    use serde_json::Value;

    fn export(format: Format, metric: Metric, report: &crate::report::Report) -> String {
        exporter(format, metric).export(report).unwrap()
    }

    #[test]
    fn a_partial_or_failed_case_names_the_kinds_of_fork_that_failed() {
        use crate::report::{Failure, FailureKind, Fork, ForkKind, ForkStatus};
        let failed = |kind, message: &str| Fork {
            status: ForkStatus::Failed,
            kind,
            failure: Some(Failure { kind: FailureKind::Exit, message: message.into(), stderr_tail: String::new() }),
            ..Fork::pending(9, None)
        };
        let mut sql = fixture::report().benchmarks.remove(1);
        sql.forks.push(failed(ForkKind::Instructions, "valgrind exited 1"));
        let note = super::CaseStatus::of(&sql).note();
        assert_eq!(note, "1 of 3 forks failed (1 instruction; first: valgrind exited 1)");
        for f in &mut sql.forks[..2] {
            *f = failed(ForkKind::Time, "killed by SIGSEGV");
        }
        sql.forks.push(failed(ForkKind::Io, "the relay saw no connection"));
        let note = super::CaseStatus::of(&sql).note();
        assert_eq!(note, "all 4 forks failed (2 timed, 1 instruction, 1 I/O; first: killed by SIGSEGV)");
    }

    #[test]
    fn every_format_gives_the_median_of_several_instruction_forks() {
        // Three instruction forks of 860, 900 and 910 per op: the first is not the figure.
        let mut report = fixture::report();
        let i = report.benchmarks[1].instructions.as_mut().unwrap();
        (i.forks, i.per_op, i.median_per_op, i.min_per_op, i.max_per_op) = (3, 860.0, Some(900.0), 860.0, 910.0);
        let bmf: Value = serde_json::from_str(&export(Format::Bmf, Metric::Throughput, &report)).unwrap();
        let (_, sql) = bmf.as_object().unwrap().iter().find(|(k, _)| k.contains("sql")).unwrap();
        assert_eq!(sql["instructions"]["value"], 900.0);
        let jmh: Value = serde_json::from_str(&export(Format::Jmh, Metric::Throughput, &report)).unwrap();
        let entry = jmh.as_array().unwrap().iter().find(|e| e["benchmark"].as_str().unwrap().contains("sql")).unwrap();
        assert_eq!(entry["secondaryMetrics"]["instructions"]["score"], 900.0);
        let csv = export(Format::Csv, Metric::Throughput, &report);
        let mut rows = ::csv::Reader::from_reader(csv.as_bytes());
        let column = rows.headers().unwrap().iter().position(|h| h == "instructions_per_op").unwrap();
        let sql = rows.records().map(Result::unwrap).find(|r| r[0].starts_with("sql/")).unwrap();
        assert_eq!(&sql[column], "900");
        assert!(export(Format::Markdown, Metric::Throughput, &report).contains("900.0"));
        let gab: Value = serde_json::from_str(&export(Format::Gab, Metric::Instructions, &report)).unwrap();
        assert!(gab.as_array().unwrap().iter().any(|e| e["value"] == 900.0), "{gab:#}");
    }

    #[test]
    fn jmh_gives_no_error_from_two_iterations_as_jmh_and_the_report_do() {
        let mut report = fixture::report();
        let noop = &mut report.benchmarks[0];
        noop.forks.truncate(1);
        noop.forks[0].iterations.truncate(2);
        noop.score = Score::from_forks(&noop.forks);
        assert_eq!(noop.score.as_ref().unwrap().error, None);
        let jmh: Value = serde_json::from_str(&export(Format::Jmh, Metric::Throughput, &report)).unwrap();
        let primary = &jmh[0]["primaryMetric"];
        assert_eq!(primary["scoreError"], "NaN", "{primary:#}");
        assert_eq!(primary["scoreConfidence"], serde_json::json!(["NaN", "NaN"]));
    }

    #[test]
    fn bmf_latency_is_never_outside_its_own_bounds() {
        // 995 samples of 1 µs and 5 of 1 s: the mean (5 ms) lies far above the p99 (1 µs).
        let mut report = fixture::report();
        let sql = &mut report.benchmarks[1];
        sql.forks[0].latency.as_mut().unwrap().histogram = vec![(1000, 995), (1_000_000_000, 5)];
        sql.latency = crate::report::latency::LatencySummary::from_forks(&sql.forks);
        let mean = sql.latency.as_ref().unwrap().mean;
        let bmf: Value = serde_json::from_str(&export(Format::Bmf, Metric::Throughput, &report)).unwrap();
        let (_, measures) = bmf.as_object().unwrap().iter().find(|(k, _)| k.contains("sql")).unwrap();
        let latency = &measures["latency"];
        let value = latency["value"].as_f64().unwrap();
        assert!(value <= latency["upper_value"].as_f64().unwrap(), "{latency}");
        assert!(latency.get("lower_value").is_none_or(|l| l.as_f64().unwrap() <= value), "{latency}");
        assert!(mean > latency["upper_value"].as_f64().unwrap(), "the mean would have been outside");
    }
}
