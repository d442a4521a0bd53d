//! The list of every workload: each group's `WORKLOADS`, in listing order.

use crate::{WorkloadDef, baseline, cache, fault, growth, ids, orm, planted, probe, redis, sql};

/// Every workload, hidden ones included, in listing order.
pub fn all() -> Vec<&'static WorkloadDef> {
    baseline::WORKLOADS
        .iter()
        .chain(sql::WORKLOADS)
        .chain(orm::WORKLOADS)
        .chain(ids::WORKLOADS)
        .chain(growth::WORKLOADS)
        .chain(cache::WORKLOADS)
        .chain(redis::WORKLOADS)
        .chain(fault::WORKLOADS)
        .chain(fault::io::WORKLOADS)
        .chain(probe::WORKLOADS)
        .chain(planted::WORKLOADS)
        .collect()
}

/// The workload called exactly `name`.
pub fn find(name: &str) -> Option<&'static WorkloadDef> {
    all().into_iter().find(|w| w.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_and_well_formed() {
        let mut seen = HashSet::new();
        for w in all() {
            assert!(seen.insert(w.name), "duplicate workload {}", w.name);
            let (group, name) = w.name.split_once('/').expect("group/name");
            for part in [group, name] {
                assert!(
                    !part.is_empty() && part.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                    "{} is not group/snake_case",
                    w.name
                );
            }
        }
    }

    #[test]
    fn declared_defaults_are_valid_values() {
        for w in all() {
            for p in w.params {
                assert!(!p.defaults.is_empty(), "{}: param {} has no default", w.name, p.name);
                for d in p.defaults {
                    p.check(d).unwrap_or_else(|e| panic!("{}: default {}={d}: {e}", w.name, p.name));
                }
            }
        }
    }
}
