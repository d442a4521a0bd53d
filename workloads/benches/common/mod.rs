//! What both cargo bench drivers share: the in-process cases, set up from the same registry the
//! harness uses, with the same param values.

#![allow(dead_code, reason = "each bench driver uses part of it")]

use workloads::{Bench, Params, Phase, Prepared, SetupContext, registry};

/// In-process cases (no server), as `(workload, params)`; unnamed params take their first default.
pub(crate) const CASES: &[(&str, &[(&str, &str)])] = &[
    ("baseline/noop", &[]),
    ("baseline/busy_loop", &[("work", "100")]),
    ("cache/moka_hit", &[("cache_size", "1000")]),
    ("cache/hashmap_hit", &[("cache_size", "1000")]),
    ("cache/near_hit", &[("cache_size", "1000")]),
    ("sql/thread_select_by_id", &[("db", "sqlite"), ("row_count", "1000")]),
    ("ids/generate", &[("kind", "ulid")]),
    ("ids/select_by_id", &[("db", "sqlite"), ("kind", "uuid_v7"), ("row_count", "1000")]),
];

/// A case set up and checked, ready to measure: keep `prepared` alive while `bench` runs.
pub(crate) struct Ready {
    /// `name[k=v,...]`, as the harness labels the case.
    pub(crate) label: String,
    /// The workload state.
    pub(crate) prepared: Box<dyn Prepared>,
    /// The measuring handle.
    pub(crate) bench: Box<dyn Bench>,
}

/// Sets up `name` with `given` params (defaults for the rest) and runs its check.
pub(crate) fn ready(name: &str, given: &[(&str, &str)]) -> Ready {
    let def = registry::find(name).unwrap_or_else(|| panic!("no workload {name}"));
    let params = Params(
        def.params
            .iter()
            .map(|spec| {
                let value = given.iter().find(|(k, _)| *k == spec.name).map_or(spec.defaults[0], |(_, v)| *v);
                (spec.name.to_string(), value.to_string())
            })
            .collect(),
    );
    let label = format!("{name}[{}]", params.display());
    let prepared = (def.setup)(&SetupContext::new(params)).unwrap_or_else(|e| panic!("{name}: setup failed: {e:#}"));
    prepared.verify(Phase::Before).unwrap_or_else(|e| panic!("{name}: check failed: {e:#}"));
    let bench = prepared.bench(0).unwrap_or_else(|e| panic!("{name}: {e:#}"));
    Ready { label: if label.ends_with("[]") { name.to_string() } else { label }, prepared, bench }
}
