//! What a report adds to the history: one run (its commit, machine and settings) and one point
//! per case and figure, keyed so that a series never mixes machines or settings that change the
//! numbers. Pure: the commit's parent and time come from the caller.

use crate::error::BadInput;
use crate::metric::Metric;
use crate::report::{Benchmark, ForkKind, ForkStatus, Report, RunStatus};

/// One stored run: a report of one build.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Run {
    /// The report's run id (or, for a report older than run ids, one made of its start time).
    pub run_id: String,
    /// The built commit; `None` when built outside a checkout.
    pub commit: Option<String>,
    /// Its first parent, where the repository knows the commit.
    pub parent: Option<String>,
    /// Its committer time (Unix seconds), where known.
    pub commit_time: Option<i64>,
    /// The build had uncommitted edits (or it is not known whether it had).
    pub dirty: bool,
    /// The report's schema version.
    pub schema_version: u32,
    /// The harness version that wrote it.
    pub harness_version: String,
    /// Its configuration (`smoke`).
    pub configuration: String,
    /// The machine fingerprint: what must match for two runs' numbers to be compared.
    pub machine: String,
    /// When the run started (RFC 3339).
    pub started_at: String,
    /// `complete` or `interrupted`.
    pub status: String,
}

/// One figure of one case in one run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Point {
    /// The case, as [`crate::report::CaseId`] displays it.
    pub case_id: String,
    /// The figure: `throughput`, `instructions`, `io.round_trips`, `latency.p99`…
    pub metric: String,
    /// The settings that change this figure, as one canonical string.
    pub settings: String,
    /// The case's value (per op, or ops/s).
    pub value: f64,
    /// Each fork's value, where forks were the unit of measurement.
    pub forks: Vec<f64>,
    /// An exact count: any change is a change.
    pub exact: bool,
    /// Higher is better (throughput); otherwise lower is.
    pub higher_is_better: bool,
}

/// The run and points of `report` (read from `shown`); `git` gives a commit's parent and time.
pub(crate) fn ingest(
    report: &Report,
    shown: &str,
    git: impl Fn(&str) -> (Option<String>, Option<i64>),
) -> Result<(Run, Vec<Point>), BadInput> {
    if report.is_ab() || report.meta.baseline.is_some() {
        return Err(BadInput(format!(
            "{shown} is an A/B report of two builds: the history stores one build per run; add the reports of `harness run` (or export one side with `harness export --side`)"
        )));
    }
    if report.status == RunStatus::Running {
        return Err(BadInput(format!(
            "{shown} says status `running`: its run is still writing it (or was killed); add it when it is complete"
        )));
    }
    let meta = &report.meta;
    let commit = meta.git.commit.clone();
    let (parent, commit_time) = commit.as_deref().map_or((None, None), &git);
    let run = Run {
        run_id: meta.run_id.clone().unwrap_or_else(|| format!("legacy:{}:{}", meta.started_at, machine(report))),
        commit,
        parent,
        commit_time,
        dirty: meta.git.dirty != Some(false),
        schema_version: report.schema_version,
        harness_version: meta.harness_version.clone(),
        configuration: meta.configuration.clone().unwrap_or_default(),
        machine: machine(report),
        started_at: meta.started_at.clone(),
        status: if report.status == RunStatus::Complete { "complete" } else { "interrupted" }.into(),
    };
    let points = report.benchmarks.iter().flat_map(crate::report::growth::per_step).flat_map(|b| points(report, &b));
    Ok((run, points.collect()))
}

/// What must be the same machine for two runs to share a series: processor, the CPUs the run
/// could use, its quota, the target and the build profile.
pub(crate) fn machine(report: &Report) -> String {
    let m = &report.meta;
    format!(
        "{} · {} CPUs ({} usable, quota {}) · {} · {}",
        m.cpu.model.trim(),
        m.cpu.logical_cpus,
        m.cpu.available_parallelism,
        m.cgroup.cpu_quota,
        m.target,
        m.build_profile
    )
}

/// The settings that change `metric`'s figures, canonical (two runs with the same string ran alike).
fn settings(report: &Report, b: &Benchmark, metric: Metric) -> String {
    let Some(s) = &report.meta.settings else { return String::new() };
    match metric {
        Metric::Throughput | Metric::Latency | Metric::Alloc => {
            let c = &b.settings;
            format!(
                "mode={} warmup={}x{}ns iteration={}ns alloc={} pin={}",
                s.mode,
                c.warmup_iterations,
                c.warmup_nanos,
                c.iteration_nanos,
                s.alloc,
                s.pin.as_deref().unwrap_or("none")
            )
        }
        Metric::Instructions => {
            format!("instr_ops={} cache_sim={}", s.instr_ops.map_or("default".into(), |n| n.to_string()), s.cache_sim)
        }
        Metric::Io => format!("io_ops={}", s.io_ops.map_or("default".into(), |n| n.to_string())),
    }
}

/// Every point case `b` of `report` adds.
fn points(report: &Report, b: &Benchmark) -> Vec<Point> {
    let case_id = b.id().to_string();
    let point = |metric: Metric, name: String, value: f64, forks: Vec<f64>, exact: bool| Point {
        case_id: case_id.clone(),
        metric: name,
        settings: settings(report, b, metric),
        value,
        forks,
        exact,
        higher_is_better: metric == Metric::Throughput,
    };
    let mut out = vec![];
    let timed: Vec<f64> = b
        .forks
        .iter()
        .filter(|f| f.is_ok_timed())
        .filter_map(|f| crate::stats::median(&f.iterations.iter().map(|i| i.ops_per_sec()).collect::<Vec<_>>()))
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    if let Some(value) = crate::stats::geometric_mean(timed.iter().copied()) {
        out.push(point(Metric::Throughput, "throughput".into(), value, timed, false));
    }
    // Sampled (closed-loop) percentiles, and an open-loop case's corrected ones: lower is better.
    if let Some(lat) = &b.latency {
        for (key, nanos) in &lat.percentiles {
            out.push(point(Metric::Latency, format!("latency.{key}"), *nanos as f64, vec![], false));
        }
    }
    if let Some(c) = b.open_loop.as_ref().and_then(|o| o.corrected.as_ref()) {
        for (key, _) in crate::metric::LATENCY_MEASURES {
            let forks = b.kept_open_forks().filter_map(|f| f.corrected_at(key)).map(|v| v as f64).collect();
            if let Some(v) = c.at(key) {
                out.push(point(Metric::Latency, format!("open_loop.{key}"), v as f64, forks, false));
            }
        }
    }
    if let Some(i) = &b.instructions {
        let forks: Vec<f64> = b
            .forks
            .iter()
            .filter(|f| f.status == ForkStatus::Ok && f.kind == ForkKind::Instructions)
            .filter_map(|f| f.instructions.map(|c| c.per_op()))
            .collect();
        out.push(point(Metric::Instructions, "instructions".into(), i.median(), forks, i.deterministic));
    }
    for m in Metric::Alloc.measures(b) {
        out.push(point(Metric::Alloc, format!("alloc.{}", m.name), m.value, vec![], false));
    }
    for m in Metric::Io.measures(b) {
        // Bytes follow the lengths of ids and values; the rest are counts of things done.
        let exact = m.name != "bytes";
        out.push(point(Metric::Io, format!("io.{}", m.name), m.value, vec![], exact));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(path: &str) -> Report {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
        crate::report::read::read_report(&p, "the").unwrap()
    }

    #[test]
    fn a_committed_report_gives_one_run_and_keyed_points() {
        let r = report("reports/orm-counts.json");
        let (run, points) = ingest(&r, "r", |_| (Some("p".into()), Some(7))).unwrap();
        assert_eq!(run.parent.as_deref(), Some("p"));
        assert_eq!(run.commit_time, Some(7));
        assert!(run.machine.contains(r.meta.cpu.model.trim()), "{}", run.machine);
        let instr: Vec<&Point> = points.iter().filter(|p| p.metric == "instructions").collect();
        assert!(!instr.is_empty());
        assert!(instr.iter().all(|p| p.settings.starts_with("instr_ops=") && !p.higher_is_better));
        let tp = points.iter().find(|p| p.metric == "throughput").unwrap();
        assert!(tp.higher_is_better && !tp.forks.is_empty() && tp.settings.starts_with("mode="));
        let keys: std::collections::BTreeSet<(&str, &str)> =
            points.iter().map(|p| (p.case_id.as_str(), p.metric.as_str())).collect();
        assert_eq!(keys.len(), points.len(), "one point per case and figure");
    }

    #[test]
    fn a_running_or_two_build_report_is_refused_naming_it() {
        let mut r = report("reports/orm-counts.json");
        r.status = RunStatus::Running;
        let e = ingest(&r, "x.json", |_| (None, None)).unwrap_err();
        assert!(e.0.contains("x.json says status `running`"), "{e}");
        let ab = report("reports/ab-async-held-connection.json");
        let e = ingest(&ab, "ab.json", |_| (None, None)).unwrap_err();
        assert!(e.0.contains("ab.json is an A/B report"), "{e}");
    }
}
