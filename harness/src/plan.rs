//! Configurations and the params matrix: which benchmark cases a run measures.

use crate::error::BadInput;
use crate::report::CaseId;
use regex::Regex;
use std::collections::BTreeMap;
use std::time::Duration;
use workloads::{Params, WorkloadDef, registry};

/// A named selection of workload groups with its own defaults.
#[derive(Debug)]
pub(crate) struct Configuration {
    /// Name given on the command line.
    pub name: &'static str,
    /// One-line description.
    pub about: &'static str,
    /// Workload groups it runs, or single workloads by full name (`ids/select_by_id`).
    pub groups: &'static [&'static str],
    /// Settings that replace the release defaults (flags still win).
    pub defaults: SettingDefaults,
    /// Param values that replace the workloads' defaults (`-p` still wins).
    pub params: &'static [(&'static str, &'static str)],
}

impl Configuration {
    /// Whether it runs `w`: its group, or `w` itself, is listed.
    pub(crate) fn includes(&self, w: &WorkloadDef) -> bool {
        self.groups.iter().any(|g| *g == w.group() || *g == w.name)
    }
}

/// Optional overrides of the release defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct SettingDefaults {
    /// Warmup iterations.
    pub warmup_iterations: Option<u32>,
    /// Warmup iteration time.
    pub warmup_time: Option<Duration>,
    /// Measured iterations.
    pub iterations: Option<u32>,
    /// Measured iteration time.
    pub time: Option<Duration>,
    /// Fork timeout (for workloads measured in steps, the limit of each step).
    pub fork_timeout: Option<Duration>,
}

impl SettingDefaults {
    /// The iteration time one fork plans with these settings (an unset one counts nothing).
    pub(crate) fn planned(&self) -> Duration {
        self.warmup_time.unwrap_or_default() * self.warmup_iterations.unwrap_or(0)
            + self.time.unwrap_or_default() * self.iterations.unwrap_or(0)
    }
}

/// Release defaults: 1 fork, 1 warmup iteration, 3 measured iterations of 1 s.
pub(crate) const DEFAULT_FORKS: u32 = 1;
/// Default warmup iterations.
pub(crate) const DEFAULT_WARMUP: u32 = 1;
/// Default measured iterations.
pub(crate) const DEFAULT_ITERATIONS: u32 = 3;
/// Default iteration time (warmup and measured).
pub(crate) const DEFAULT_TIME: Duration = Duration::from_secs(1);

/// What an A/B run (`--baseline-bin`, `harness ab`) uses where neither a flag nor the
/// configuration sets it: one 50 ms warmup, ten measured iterations of 25 ms. The test's unit is
/// the fork (pair), so long iterations buy little; short forks reach a decision in fewer
/// seconds at the same error rates (`scripts/calibrate --only timing`, reports/calibration.md).
pub(crate) const AB_DEFAULTS: SettingDefaults = SettingDefaults {
    warmup_iterations: Some(1),
    warmup_time: Some(Duration::from_millis(50)),
    iterations: Some(10),
    time: Some(Duration::from_millis(25)),
    fork_timeout: None,
};

const ALL_GROUPS: &[&str] = &["baseline", "sql", "orm", "ids", "cache", "redis"];

/// Every configuration.
pub(crate) static CONFIGURATIONS: &[Configuration] = &[
    Configuration {
        name: "main",
        about: "everything, with release defaults",
        groups: ALL_GROUPS,
        defaults: NONE,
        params: &[("db", "sqlite,postgres")],
    },
    Configuration {
        name: "smoke",
        about: "everything except Redis, small and short: proves the build runs",
        groups: &["baseline", "sql", "orm", "ids", "cache"],
        defaults: SettingDefaults {
            warmup_iterations: Some(1),
            warmup_time: Some(Duration::from_millis(50)),
            iterations: Some(1),
            time: Some(Duration::from_millis(100)),
            fork_timeout: None,
        },
        params: &[("row_count", "100"), ("cache_size", "1000")],
    },
    Configuration {
        name: "sql",
        about: "SQL select shapes on SQLite and PostgreSQL",
        groups: &["sql"],
        defaults: NONE,
        params: &[("db", "sqlite,postgres")],
    },
    Configuration {
        name: "orm",
        about: "Diesel's workloads beside their raw-driver twins, on SQLite and PostgreSQL",
        groups: &["orm", "sql", "ids/select_by_id", "ids/select_by_name", "ids/batch_insert", "ids/insert_growth"],
        defaults: NONE,
        params: &[("db", "sqlite,postgres"), ("row_count", "1000")],
    },
    Configuration {
        name: "ids",
        about: "ID-keyed table workloads on SQLite and PostgreSQL",
        groups: &["ids"],
        defaults: NONE,
        params: &[("db", "sqlite,postgres")],
    },
    Configuration {
        name: "growth",
        about: "id-keyed tables grown to millions of rows: rows/s, index, WAL",
        groups: &["growth"],
        // Measured in steps: the timeout limits each step, the last of which inserts a fifth of the rows.
        defaults: SettingDefaults { fork_timeout: Some(Duration::from_secs(1800)), ..NONE },
        params: &[("db", "sqlite_file,postgres")],
    },
    Configuration { name: "cache", about: "in-process caches", groups: &["cache"], defaults: NONE, params: &[] },
    Configuration {
        name: "redis",
        about: "Redis clients and near caches",
        groups: &["redis"],
        defaults: NONE,
        params: &[],
    },
];

const NONE: SettingDefaults =
    SettingDefaults { warmup_iterations: None, warmup_time: None, iterations: None, time: None, fork_timeout: None };

/// The configuration called `name`.
pub(crate) fn configuration(name: &str) -> Result<&'static Configuration, BadInput> {
    CONFIGURATIONS.iter().find(|c| c.name == name).ok_or_else(|| {
        let names: Vec<_> = CONFIGURATIONS.iter().map(|c| c.name).collect();
        BadInput(format!("unknown configuration '{name}': choose one of {}", names.join(", ")))
    })
}

/// One benchmark case: a workload and one value per declared param, with its identity built
/// once ([`Case::new`]).
#[derive(Debug, Clone)]
pub(crate) struct Case {
    /// The workload.
    pub def: &'static WorkloadDef,
    /// Its param values.
    pub params: Params,
    /// Name, params with passwords redacted, and measuring threads: the identity its report
    /// entry has.
    id: CaseId,
    /// Open loop at a share of its closed-loop throughput (`--rate 80%`), until the runner has
    /// measured that and set the rate: the percentage and the arrivals.
    share: Option<(u32, crate::rate::Arrivals)>,
}

impl Case {
    /// Workload `def` with `params`, measured by `threads` threads or tasks.
    pub(crate) fn new(def: &'static WorkloadDef, params: Params, threads: u32) -> Case {
        let redacted = params.0.iter().map(|(k, v)| (k.clone(), workloads::redact::redact(v))).collect();
        Case { def, params, id: CaseId::new(def.name, redacted, threads), share: None }
    }

    /// Measuring threads or tasks (`--threads`).
    pub(crate) fn threads(&self) -> u32 {
        self.id.threads()
    }

    /// The same case run open-loop at `rate` (`--rate`).
    pub(crate) fn with_rate(self, rate: Option<crate::rate::Rate>) -> Case {
        Case { id: self.id.with_rate(rate), ..self }
    }

    /// Its open-loop arrival rate, if any.
    pub(crate) fn rate(&self) -> Option<crate::rate::Rate> {
        self.id.rate()
    }

    /// The same case to run open-loop at `pct` percent of its closed-loop throughput.
    pub(crate) fn with_share(self, pct: u32, arrivals: crate::rate::Arrivals) -> Case {
        Case { share: Some((pct, arrivals)), ..self }
    }

    /// The share of its closed-loop throughput it runs at (`--rate 80%`), if given so.
    pub(crate) fn share_pct(&self) -> Option<u32> {
        self.share.map(|s| s.0)
    }

    /// A share case given its closed-loop ops/s: the case at that share of it, as a rate.
    pub(crate) fn at_share_of(&self, closed_per_sec: f64) -> Option<Case> {
        let (pct, arrivals) = self.share?;
        let per_sec = (closed_per_sec * f64::from(pct) / 100.0).round();
        (per_sec >= 1.0 && per_sec.is_finite()).then(|| {
            let per_sec = (per_sec as u64).min(crate::rate::MAX_RATE);
            self.clone().with_rate(Some(crate::rate::Rate { per_sec, arrivals }))
        })
    }

    /// Its identity: `name[a=1,b=2]` when displayed, passwords in values redacted.
    pub(crate) fn id(&self) -> &CaseId {
        &self.id
    }
}

/// A parsed `-p NAME=V1,V2`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ParamOverride {
    /// Param name.
    pub name: String,
    /// Values, each a case.
    pub values: Vec<String>,
    /// As typed, for messages and the report.
    pub raw: String,
}

/// Parses one `-p` argument.
pub(crate) fn parse_param(raw: &str) -> Result<ParamOverride, String> {
    let (name, values) = raw.split_once('=').ok_or_else(|| {
        format!("'{raw}' has no '=': write it as NAME=VALUE[,VALUE...], e.g. -p row_count=1000,10000")
    })?;
    let name = name.trim();
    let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
    if name.is_empty() || values.iter().any(String::is_empty) {
        return Err(format!("'{raw}' has an empty name or value: write it as NAME=VALUE[,VALUE...]"));
    }
    Ok(ParamOverride { name: name.to_string(), values, raw: raw.to_string() })
}

/// What to select: configuration, filters and whether hidden workloads may be picked.
#[derive(Debug)]
pub(crate) struct Selection<'a> {
    /// The configuration.
    pub config: &'static Configuration,
    /// `--filter` patterns (regular expressions searched in the workload name; any may match).
    pub filters: &'a [String],
    /// Include hidden fault injectors.
    pub hidden: bool,
    /// `-p` overrides.
    pub params: &'a [ParamOverride],
    /// Run settings that param defaults of the form `$name` refer to (e.g. `redis_url`).
    pub settings: &'a BTreeMap<String, String>,
}

/// Expands a selection into benchmark cases, rejecting every bad input before anything runs.
pub(crate) fn plan(sel: &Selection<'_>) -> Result<Vec<Case>, BadInput> {
    let filters = sel
        .filters
        .iter()
        .map(|f| {
            Regex::new(f).map_err(|e| BadInput(format!("invalid --filter '{f}': {}", on_one_line(&e.to_string()))))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let in_config = |w: &WorkloadDef| sel.config.includes(w) && !w.hidden;
    let defs: Vec<&'static WorkloadDef> = registry::all()
        .into_iter()
        .filter(|w| in_config(w) || (sel.hidden && w.hidden))
        .filter(|w| filters.is_empty() || filters.iter().any(|f| f.is_match(w.name)))
        .collect();
    if defs.is_empty() {
        return Err(BadInput(if sel.filters.is_empty() {
            format!("configuration '{}' has no workloads in this build: see `harness list main`", sel.config.name)
        } else {
            format!(
                "no workload matches --filter {} in configuration '{}': see `harness list {}`{}",
                sel.filters.iter().map(|f| format!("'{f}'")).collect::<Vec<_>>().join(", "),
                sel.config.name,
                sel.config.name,
                if sel.hidden { "" } else { " (fault injectors need --hidden)" }
            )
        }));
    }
    for o in sel.params {
        let declaring: Vec<_> = defs.iter().filter_map(|d| d.param(&o.name).map(|p| (d, p))).collect();
        if declaring.is_empty() {
            let mut known: Vec<_> = defs.iter().flat_map(|d| d.params.iter().map(|p| p.name)).collect();
            known.sort_unstable();
            known.dedup();
            let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
            return Err(BadInput(format!(
                "unknown param '{}' in -p {}: the selected workloads declare {known} (see `harness list`)",
                o.name, o.raw
            )));
        }
        for (d, spec) in declaring {
            for v in &o.values {
                spec.check(v).map_err(|e| {
                    BadInput(format!("invalid value '{v}' for param '{}' of {} in -p {}: {e}", o.name, d.name, o.raw))
                })?;
            }
        }
    }
    Ok(defs.into_iter().flat_map(|d| matrix(d, sel)).collect())
}

/// The cases of one workload: the product of its params' values, declared order.
fn matrix(def: &'static WorkloadDef, sel: &Selection<'_>) -> Vec<Case> {
    let mut rows: Vec<BTreeMap<String, String>> = vec![BTreeMap::new()];
    for spec in def.params {
        let values: Vec<String> = if let Some(o) = sel.params.iter().rev().find(|o| o.name == spec.name) {
            o.values.clone()
        } else if let Some((_, v)) = sel.config.params.iter().find(|(n, _)| *n == spec.name) {
            v.split(',').map(str::to_string).collect()
        } else {
            spec.defaults.iter().map(|v| resolve(v, sel.settings)).collect()
        };
        rows = rows
            .into_iter()
            .flat_map(|row| {
                values.iter().map(move |v| {
                    let mut r = row.clone();
                    r.insert(spec.name.to_string(), v.clone());
                    r
                })
            })
            .collect();
    }
    rows.into_iter().map(|p| Case::new(def, Params(p), 1)).collect()
}

/// A default of the form `$name` is the run setting `name`; anything else is itself.
fn resolve(default: &str, settings: &BTreeMap<String, String>) -> String {
    match default.strip_prefix('$').and_then(|name| settings.get(name)) {
        Some(value) => value.clone(),
        None => default.to_string(),
    }
}

/// A multi-line message (a regex error draws its pattern and a caret) joined into one line.
fn on_one_line(s: &str) -> String {
    s.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    static SETTINGS: std::sync::LazyLock<BTreeMap<String, String>> =
        std::sync::LazyLock::new(|| [("redis_url".to_string(), "redis://h:1".to_string())].into());

    fn sel<'a>(config: &str, filters: &'a [String], params: &'a [ParamOverride]) -> Selection<'a> {
        Selection { config: configuration(config).unwrap(), filters, hidden: false, params, settings: &SETTINGS }
    }

    #[test]
    fn unknown_configuration_lists_the_known_ones() {
        let e = configuration("nope").unwrap_err().0;
        assert_eq!(e, "unknown configuration 'nope': choose one of main, smoke, sql, orm, ids, growth, cache, redis");
    }

    #[test]
    fn param_override_parsing() {
        let p = parse_param("work=10, 20").unwrap();
        assert_eq!((p.name.as_str(), p.values.clone()), ("work", vec!["10".to_string(), "20".to_string()]));
        assert!(parse_param("work").unwrap_err().contains("NAME=VALUE"));
        assert!(parse_param("work=").is_err());
        assert!(parse_param("=3").is_err());
    }

    #[test]
    fn matrix_multiplies_values_and_p_wins() {
        let params = [parse_param("work=1,2,3").unwrap()];
        let filters = ["^baseline/busy_loop$".to_string()];
        let cases = plan(&sel("smoke", &filters, &params)).unwrap();
        let labels: Vec<_> = cases.iter().map(|c| c.id().to_string()).collect();
        assert_eq!(labels, ["baseline/busy_loop[work=1]", "baseline/busy_loop[work=2]", "baseline/busy_loop[work=3]"]);
    }

    #[test]
    fn bad_params_and_filters_are_rejected_with_the_fix() {
        let filters = ["busy".to_string()];
        let e = plan(&sel("main", &filters, &[parse_param("rows=1").unwrap()])).unwrap_err().0;
        assert!(e.starts_with("unknown param 'rows' in -p rows=1: the selected workloads declare work"), "{e}");
        let e = plan(&sel("main", &filters, &[parse_param("work=abc").unwrap()])).unwrap_err().0;
        assert!(e.contains("invalid value 'abc' for param 'work' of baseline/busy_loop"), "{e}");
        let nothing = ["zzz".to_string()];
        let e = plan(&sel("main", &nothing, &[])).unwrap_err().0;
        assert!(e.starts_with("no workload matches --filter 'zzz' in configuration 'main'"), "{e}");
        let bad = ["(".to_string()];
        assert!(plan(&sel("main", &bad, &[])).unwrap_err().0.starts_with("invalid --filter '('"));
    }

    #[test]
    fn hidden_workloads_need_the_flag() {
        let filters = ["fault/panic".to_string()];
        assert!(plan(&sel("main", &filters, &[])).is_err());
        let s = Selection { hidden: true, ..sel("main", &filters, &[]) };
        let cases = plan(&s).unwrap();
        assert_eq!(cases.len(), 1);
        assert_eq!(cases[0].params.get("fork").unwrap(), "-1");
    }

    #[test]
    fn configuration_params_are_valid_for_every_workload_declaring_them() {
        for config in CONFIGURATIONS {
            for (name, values) in config.params {
                let defs = registry::all().into_iter().filter(|d| config.includes(d));
                for def in defs {
                    let Some(spec) = def.param(name) else { continue };
                    for v in values.split(',') {
                        spec.check(v).unwrap_or_else(|e| panic!("{}: {name}={v} for {}: {e}", config.name, def.name));
                    }
                }
            }
        }
    }

    #[test]
    fn sql_runs_both_backends_and_smoke_only_sqlite() {
        let filters = ["^sql/thread".to_string()];
        let sql: Vec<_> = plan(&sel("sql", &filters, &[])).unwrap().iter().map(|c| c.id().to_string()).collect();
        assert_eq!(sql.len(), 4, "{sql:?}");
        assert!(sql.iter().any(|l| l.contains("db=postgres")));
        let smoke: Vec<_> = plan(&sel("smoke", &filters, &[])).unwrap().iter().map(|c| c.id().to_string()).collect();
        assert_eq!(smoke, ["sql/thread_select_by_id[db=sqlite,pool_size=10,row_count=100]"]);
    }

    #[test]
    fn setting_defaults_resolve_and_labels_hide_passwords() {
        let filters = ["^redis/fred_get$".to_string()];
        let cases = plan(&sel("redis", &filters, &[])).unwrap();
        assert_eq!(cases[0].params.get("redis_url").unwrap(), "redis://h:1");
        let params = [parse_param("redis_url=redis://u:pw@h:2").unwrap(), parse_param("cache_size=5").unwrap()];
        let cases = plan(&sel("redis", &filters, &params)).unwrap();
        assert_eq!(cases[0].params.get("redis_url").unwrap(), "redis://u:pw@h:2", "workers get the real URL");
        assert_eq!(cases[0].id().to_string(), "redis/fred_get[cache_size=5,redis_url=redis://u:***@h:2]");
        assert_eq!(cases[0].id().params()["redis_url"], "redis://u:***@h:2");
    }

    #[test]
    fn smoke_has_no_redis_and_main_has_every_group() {
        let smoke = configuration("smoke").unwrap();
        assert!(!smoke.groups.contains(&"redis"));
        assert_eq!(configuration("main").unwrap().groups, ALL_GROUPS);
        assert!(plan(&sel("smoke", &[], &[])).unwrap().len() >= 3);
        assert!(!ALL_GROUPS.contains(&"growth") && !smoke.groups.contains(&"growth"), "growth runs for minutes");
        assert!(plan(&sel("growth", &[], &[])).unwrap().iter().all(|c| c.def.group() == "growth"));
    }
}
