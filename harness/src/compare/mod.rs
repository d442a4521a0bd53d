//! Comparing two reports case by case, one metric at a time, each through [`Comparison`]:
//! wall-clock throughput with a significance verdict ([`throughput`]), instructions per op
//! against a regression threshold ([`instructions`]), I/O per op exactly ([`io`]), a percentile
//! of open-loop latency with a significance verdict ([`latency`]), allocations per op against a
//! growth threshold ([`alloc`]); the counts share one table ([`counts`]). Pure functions over reports; the CLI reads, prints and exits.

pub(crate) mod alloc;
pub(crate) mod comparison;
pub(crate) mod counts;
pub(crate) mod instructions;
pub(crate) mod io;
pub(crate) mod json;
pub(crate) mod latency;
pub(crate) mod throughput;

pub(crate) use comparison::{Comparison, Move, Outcome, Policy, SameInstructions};

use crate::error::BadInput;
use crate::format::duration;
use crate::metric::Metric;
use crate::report::{Benchmark, CaseId, Report};
use std::collections::BTreeMap;

/// Default growth allowed in bytes and rows per op (and instructions), percent.
pub(crate) const DEFAULT_GROWTH_PCT: f64 = 5.0;

/// The verdict of a count gate (instructions, I/O) on one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Worse than the threshold allows.
    Regressed,
    /// Better by more than the threshold.
    Improved,
    /// Within the threshold.
    Unchanged,
    /// Only in the base report.
    Missing,
    /// Only in the new report.
    Extra,
    /// In both, but one lacks the metric.
    NoData,
}

impl Verdict {
    /// Its colour on a terminal.
    pub(crate) fn tone(self) -> crate::format::Tone {
        use crate::format::Tone;
        match self {
            Verdict::Regressed | Verdict::Missing => Tone::Bad,
            Verdict::Improved => Tone::Good,
            Verdict::NoData => Tone::Doubt,
            Verdict::Unchanged | Verdict::Extra => Tone::Plain,
        }
    }

    /// The verdict as a `compare --json` token.
    pub(crate) fn token(self) -> &'static str {
        match self {
            Verdict::Regressed => "regressed",
            Verdict::Improved => "improved",
            Verdict::Unchanged => "unchanged",
            Verdict::Missing => "missing",
            Verdict::Extra => "extra",
            Verdict::NoData => "no_data",
        }
    }

    /// The verdict as the table says it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Verdict::Regressed => "REGRESSED",
            Verdict::Improved => "improved",
            Verdict::Unchanged => "unchanged",
            Verdict::Missing => "missing in new",
            Verdict::Extra => "new case",
            Verdict::NoData => "no data",
        }
    }
}

/// Everything a comparer may need from the command line, in domain terms.
#[derive(Debug, Clone, Default)]
pub(crate) struct Settings {
    /// Throughput: the noise band and the level.
    pub throughput: throughput::Options,
    /// Instructions: the command line's thresholds.
    pub limits: instructions::Limits,
    /// Instructions and I/O: the thresholds file (`--thresholds`).
    pub thresholds: instructions::Thresholds,
    /// Latency: the percentile, the band, the level and the test.
    pub latency: latency::Options,
}

/// The registry: `metric`'s comparison of the `new` runs against the `base` runs (no `new` run:
/// the two builds of one A/B report).
pub(crate) fn compare(
    metric: Metric,
    base: &[Report],
    new: &[Report],
    settings: &Settings,
) -> Result<Box<dyn Comparison>, BadInput> {
    Ok(match metric {
        Metric::Throughput => Box::new(throughput::comparison(base, new, settings.throughput)?),
        Metric::Instructions => Box::new(instructions::comparison(base, new, settings.limits, &settings.thresholds)?),
        Metric::Io => Box::new(io::comparison(base, new, &settings.thresholds.io)?),
        Metric::Latency => Box::new(latency::comparison(base, new, settings.latency)?),
        Metric::Alloc => Box::new(alloc::comparison(base, new, &settings.thresholds.alloc)?),
    })
}

/// Every case of either report by identity, in the base report's order then the new ones.
pub(crate) fn case_pairs<'a>(
    base: &'a Report,
    new: &'a Report,
) -> Vec<(CaseId, Option<&'a Benchmark>, Option<&'a Benchmark>)> {
    case_runs(std::slice::from_ref(base), std::slice::from_ref(new))
        .into_iter()
        .map(|(l, b, n)| (l, b.first().copied(), n.first().copied()))
        .collect()
}

/// Every case of any report by identity, in the reports' order (base runs first), with the
/// runs of each side that hold it.
pub(crate) fn case_runs<'a>(
    base: &'a [Report],
    new: &'a [Report],
) -> Vec<(CaseId, Vec<&'a Benchmark>, Vec<&'a Benchmark>)> {
    let index =
        |r: &'a Report| -> BTreeMap<CaseId, &'a Benchmark> { r.benchmarks.iter().map(|b| (b.id(), b)).collect() };
    let (base_cases, new_cases): (Vec<_>, Vec<_>) = (base.iter().map(index).collect(), new.iter().map(index).collect());
    let mut ids: Vec<CaseId> = vec![];
    for id in base.iter().chain(new).flat_map(|r| r.benchmarks.iter().map(Benchmark::id)) {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let holding = |side: &[BTreeMap<CaseId, &'a Benchmark>], id: &CaseId| {
        side.iter().filter_map(|m| m.get(id).copied()).collect()
    };
    ids.into_iter()
        .map(|l| {
            let (b, n) = (holding(&base_cases, &l), holding(&new_cases, &l));
            (l, b, n)
        })
        .collect()
}

/// Every way the two reports' runs differ that makes their numbers incomparable for `metric`:
/// configuration, settings, params, servers, machine and toolchain. The commit is expected to
/// differ and is not listed.
pub(crate) fn differences(base: &Report, new: &Report, metric: Metric) -> Vec<String> {
    let mut out = vec![];
    let mut check = |what: &str, b: String, n: String| {
        if b != n {
            out.push(format!("{what}: base {b}, new {n}"));
        }
    };
    let (b, n) = (&base.meta, &new.meta);
    let config = |c: &Option<String>| c.clone().unwrap_or_else(|| "none".into());
    check("configuration", config(&b.configuration), config(&n.configuration));
    let (bs, ns) = (b.settings.as_ref(), n.settings.as_ref());
    let field = |s: Option<&crate::report::meta::RunSettings>,
                 f: &dyn Fn(&crate::report::meta::RunSettings) -> String| {
        s.map_or("unknown".to_string(), f)
    };
    check("-p params", field(bs, &|s| list(&s.params)), field(ns, &|s| list(&s.params)));
    check("--database-url", field(bs, &|s| s.database_url.clone()), field(ns, &|s| s.database_url.clone()));
    check("--redis-url", field(bs, &|s| s.redis_url.clone()), field(ns, &|s| s.redis_url.clone()));
    match metric {
        Metric::Instructions => {
            check(
                "--instr-ops",
                field(bs, &|s| s.instr_ops.map_or("default".into(), |n| n.to_string())),
                field(ns, &|s| s.instr_ops.map_or("default".into(), |n| n.to_string())),
            );
        }
        Metric::Io => {
            let ops = |s: &crate::report::meta::RunSettings| s.io_ops.map_or("default".into(), |n| n.to_string());
            check("--io-ops", field(bs, &ops), field(ns, &ops));
        }
        Metric::Throughput | Metric::Latency | Metric::Alloc => {
            check("--forks", field(bs, &|s| s.forks.to_string()), field(ns, &|s| s.forks.to_string()));
            check(
                "--warmup",
                field(bs, &|s| s.warmup_iterations.to_string()),
                field(ns, &|s| s.warmup_iterations.to_string()),
            );
            check("--warmup-time", field(bs, &|s| duration(s.warmup_nanos)), field(ns, &|s| duration(s.warmup_nanos)));
            check("--iterations", field(bs, &|s| s.iterations.to_string()), field(ns, &|s| s.iterations.to_string()));
            check("--time", field(bs, &|s| duration(s.iteration_nanos)), field(ns, &|s| duration(s.iteration_nanos)));
            check("--alloc", field(bs, &|s| s.alloc.to_string()), field(ns, &|s| s.alloc.to_string()));
            let pin = |s: &crate::report::meta::RunSettings| s.pin.clone().unwrap_or_else(|| "none".into());
            check("--pin", field(bs, &pin), field(ns, &pin));
            let threads = |s: &crate::report::meta::RunSettings| {
                s.threads.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
            };
            check("--threads", field(bs, &threads), field(ns, &threads));
            check("--mode", field(bs, &|s| s.mode.clone()), field(ns, &|s| s.mode.clone()));
        }
    }
    check(
        "cpu",
        format!("{} x{}", b.cpu.model, b.cpu.logical_cpus),
        format!("{} x{}", n.cpu.model, n.cpu.logical_cpus),
    );
    check("os", format!("{} {}", b.os.name, b.os.kernel), format!("{} {}", n.os.name, n.os.kernel));
    check("cgroup cpu quota", b.cgroup.cpu_quota.clone(), n.cgroup.cpu_quota.clone());
    check("rustc", b.rustc.clone(), n.rustc.clone());
    check("build profile", b.build_profile.clone(), n.build_profile.clone());
    check("target", b.target.clone(), n.target.clone());
    out
}

/// Items as people write them on a command line: `a b`, or `none`.
pub(crate) fn list(items: &[String]) -> String {
    if items.is_empty() { "none".into() } else { items.join(" ") }
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! Reports built in code for the comparison tests.

    use crate::report::{Benchmark, CaseSettings, Fork, ForkStatus, Iteration, Report, RunStatus, SCHEMA_VERSION};
    use std::collections::BTreeMap;

    /// A case with no forks.
    pub(crate) fn case(name: &str) -> Benchmark {
        let settings = CaseSettings {
            forks: 1,
            warmup_iterations: 0,
            warmup_nanos: 0,
            iterations: 1,
            iteration_nanos: 1,
            fork_timeout_nanos: 1,
        };
        Benchmark::empty(&crate::report::CaseId::new(name, BTreeMap::new(), 1), settings)
    }

    /// An ok timed fork whose iterations ran at `ops_per_sec` (one op per 1/ops_per_sec s).
    pub(crate) fn fork(index: u32, ops_per_sec: &[f64]) -> Fork {
        Fork {
            status: ForkStatus::Ok,
            iterations: ops_per_sec
                .iter()
                .map(|&r| Iteration {
                    ops: (r * 1000.0).round() as u64,
                    nanos: 1_000_000_000_000,
                    ..Iteration::default()
                })
                .collect(),
            ..Fork::pending(index, Some(1))
        }
    }

    /// A case whose forks ran at these rates.
    pub(crate) fn timed(name: &str, forks: &[&[f64]]) -> Benchmark {
        let mut b = case(name);
        b.forks = forks.iter().enumerate().map(|(i, f)| fork(i as u32, f)).collect();
        b.score = crate::report::Score::from_forks(&b.forks);
        b
    }

    /// A complete report of `cases` on this machine.
    pub(crate) fn report(cases: Vec<Benchmark>) -> Report {
        Report {
            schema_version: SCHEMA_VERSION,
            status: RunStatus::Complete,
            meta: crate::machine::collect_meta(Some("smoke".into()), None),
            benchmarks: cases,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;

    #[test]
    fn every_metric_is_in_the_registry_and_says_which_it_is() {
        use clap::ValueEnum;
        let base = [report(vec![timed("a", &[&[100.0], &[101.0]])])];
        let new = [report(vec![timed("a", &[&[100.0], &[100.5]])])];
        for &m in Metric::value_variants() {
            let c = compare(m, &base, &new, &Settings::default()).unwrap();
            assert_eq!(c.metric(), m);
            // Latency compares open-loop cases only, and these ran closed-loop.
            assert_eq!(c.moves().len(), usize::from(m != Metric::Latency), "{}", m.name());
        }
    }

    #[test]
    fn a_count_gate_fails_closed_without_counts() {
        let base = [report(vec![timed("a", &[&[100.0]])])];
        let c = compare(Metric::Instructions, &base, &base, &Settings::default()).unwrap();
        let e = c.outcome(&Policy::default()).unwrap_err().0;
        assert!(e.contains("no instruction counts for a") && e.contains("harness run --instructions"), "{e}");
    }

    #[test]
    fn pairs_keep_base_order_then_new_cases() {
        let base = report(vec![case("b"), case("a")]);
        let new = report(vec![case("a"), case("c")]);
        let pairs: Vec<(String, bool, bool)> =
            case_pairs(&base, &new).into_iter().map(|(l, b, n)| (l.to_string(), b.is_some(), n.is_some())).collect();
        assert_eq!(pairs, [("b".into(), true, false), ("a".into(), true, true), ("c".into(), false, true)]);
    }

    #[test]
    fn every_difference_is_named() {
        let base = report(vec![]);
        assert!(differences(&base, &base, Metric::Throughput).is_empty());
        let mut new = base.clone();
        new.meta.configuration = Some("main".into());
        new.meta.rustc = "rustc 0.0.1".into();
        new.meta.cpu.model = "Other CPU".into();
        let d = differences(&base, &new, Metric::Throughput);
        assert_eq!(d.len(), 3, "{d:?}");
        assert!(d[0].starts_with("configuration: base smoke, new main"), "{d:?}");
        assert!(d.iter().any(|l| l.starts_with("rustc:")) && d.iter().any(|l| l.starts_with("cpu:")), "{d:?}");
    }
}
