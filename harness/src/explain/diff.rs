//! Two profiles of one case, per op: what changed in total, per function (own and inclusive),
//! which functions appeared or vanished, and the change per component and per event.

use super::component::component;
use crate::callgrind::profile::Profile;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One build's profile and the ops it counted.
#[derive(Debug, Clone)]
pub(crate) struct Counted {
    /// What callgrind counted.
    pub profile: Profile,
    /// The ops those counts are for.
    pub ops: u64,
}

/// A number per op in both builds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct Change {
    /// What it is: a function, a component or an event.
    pub name: String,
    /// Per op in the baseline build.
    pub base: f64,
    /// Per op in this build.
    pub new: f64,
}

impl Change {
    /// `new - base`.
    pub(crate) fn delta(&self) -> f64 {
        self.new - self.base
    }
}

/// A function's change, with the component its instructions come from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct FunctionChange {
    /// Demangled name, counts per op.
    #[serde(flatten)]
    pub change: Change,
    /// Where its code comes from (its own source file's component).
    pub component: String,
}

/// What changed between two profiles of one case, per op.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct Diff {
    /// Every event's total (`Ir` first; with cache simulation the misses too).
    pub events: Vec<Change>,
    /// Functions by the change of their own instructions, largest first.
    pub own: Vec<FunctionChange>,
    /// Functions by the change of their inclusive instructions (own plus callees'), largest first.
    pub inclusive: Vec<FunctionChange>,
    /// Functions only this build ran.
    pub appeared: Vec<FunctionChange>,
    /// Functions only the baseline ran.
    pub vanished: Vec<FunctionChange>,
    /// Instructions by component, largest change first.
    pub components: Vec<Change>,
    /// Where the change enters the program's own code: the narrowest function of the workspace
    /// (`workloads::`, `harness::`) whose inclusive change carries at least half the total's.
    pub cause: Option<FunctionChange>,
}

impl Diff {
    /// Instructions per op, both builds.
    pub(crate) fn instructions(&self) -> &Change {
        &self.events[0]
    }
}

/// The diff of `base` and `new` (per op), each list cut to its `top` largest changes.
pub(crate) fn diff(base: &Counted, new: &Counted, top: usize) -> Diff {
    let per_op = |c: &Counted, v: u64| v as f64 / c.ops.max(1) as f64;
    let ir = 0;
    let events: Vec<Change> = base
        .profile
        .events
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let j = new.profile.event(name);
            let new_total = j.map_or(0, |j| new.profile.total(j));
            Change { name: name.clone(), base: per_op(base, base.profile.total(i)), new: per_op(new, new_total) }
        })
        .collect();
    let own = |c: &Counted| -> BTreeMap<String, f64> {
        c.profile.own.iter().map(|(f, v)| (f.clone(), per_op(c, v.get(ir).copied().unwrap_or(0)))).collect()
    };
    let inclusive = |c: &Counted| -> BTreeMap<String, f64> {
        c.profile.inclusive(ir).into_iter().map(|(f, v)| (f, per_op(c, v))).collect()
    };
    let (base_own, new_own) = (own(base), own(new));
    let label = |name: &str| function_component(name, base, new);
    let mut own_changes = changes(&base_own, &new_own, &label);
    let mut appeared: Vec<FunctionChange> =
        own_changes.iter().filter(|c| !base_own.contains_key(&c.change.name)).cloned().collect();
    let mut vanished: Vec<FunctionChange> =
        own_changes.iter().filter(|c| !new_own.contains_key(&c.change.name)).cloned().collect();
    let mut inclusive_changes = changes(&inclusive(base), &inclusive(new), &label);
    let cause = events.first().and_then(|total| cause(&inclusive_changes, total.delta(), total.base));
    for list in [&mut own_changes, &mut inclusive_changes, &mut appeared, &mut vanished] {
        list.truncate(top);
    }
    let components = by_component(base, new);
    Diff { events, own: own_changes, inclusive: inclusive_changes, appeared, vanished, components, cause }
}

/// The narrowest function of the workspace's own code whose inclusive change carries at least
/// half of `delta` (the total's change per op, of `total`); none while the total holds.
fn cause(inclusive: &[FunctionChange], delta: f64, total: f64) -> Option<FunctionChange> {
    if total <= 0.0 || crate::compare::throughput::same_instructions(total, total + delta) {
        return None;
    }
    let own_code = |name: &str| name.contains("workloads::") || name.contains("harness::");
    inclusive
        .iter()
        .filter(|f| own_code(&f.change.name) && f.change.delta() * delta > 0.0)
        .filter(|f| f.change.delta().abs() >= 0.5 * delta.abs())
        .min_by(|a, b| {
            let size = |f: &FunctionChange| f.change.base.max(f.change.new);
            size(a).total_cmp(&size(b)).then(b.change.delta().abs().total_cmp(&a.change.delta().abs()))
        })
        .cloned()
}

/// Every function's change, largest first; ties (the unchanged ones too) by size, then name.
fn changes(
    base: &BTreeMap<String, f64>,
    new: &BTreeMap<String, f64>,
    label: &dyn Fn(&str) -> String,
) -> Vec<FunctionChange> {
    let names: BTreeSet<&String> = base.keys().chain(new.keys()).collect();
    let mut out: Vec<FunctionChange> = names
        .into_iter()
        .map(|name| FunctionChange {
            change: Change {
                name: name.clone(),
                base: base.get(name).copied().unwrap_or(0.0),
                new: new.get(name).copied().unwrap_or(0.0),
            },
            component: label(name),
        })
        .collect();
    let size = |c: &FunctionChange| c.change.base.max(c.change.new);
    out.sort_by(|a, b| {
        let by_change = b.change.delta().abs().total_cmp(&a.change.delta().abs());
        by_change.then(size(b).total_cmp(&size(a))).then(a.change.name.cmp(&b.change.name))
    });
    out
}

/// The component of the source file most of a function's own instructions come from (inlined
/// code keeps its file), from whichever build ran it; its own file when it ran none.
fn function_component(name: &str, base: &Counted, new: &Counted) -> String {
    let of = |c: &Counted| {
        let object = c.profile.object_of.get(name).map_or("", String::as_str);
        let sites = c.profile.sites.range((name.to_string(), String::new())..).take_while(|((f, _), _)| f == name);
        let dominant = sites.max_by_key(|(_, costs)| costs.first().copied().unwrap_or(0)).map(|((_, file), _)| file);
        let file = dominant.or_else(|| c.profile.file_of.get(name))?;
        Some(component(file, name, object))
    };
    of(new).or_else(|| of(base)).unwrap_or_else(|| "other".into())
}

/// Instructions per op by component (every instruction by the file it came from), both builds.
fn by_component(base: &Counted, new: &Counted) -> Vec<Change> {
    let totals = |c: &Counted| {
        let mut out: BTreeMap<String, f64> = BTreeMap::new();
        for ((function, file), costs) in &c.profile.sites {
            let object = c.profile.object_of.get(function).map_or("", String::as_str);
            *out.entry(component(file, function, object)).or_default() +=
                costs.first().copied().unwrap_or(0) as f64 / c.ops.max(1) as f64;
        }
        out
    };
    let (b, n) = (totals(base), totals(new));
    let names: BTreeSet<&String> = b.keys().chain(n.keys()).collect();
    let mut out: Vec<Change> = names
        .into_iter()
        .map(|name| Change {
            name: name.clone(),
            base: b.get(name).copied().unwrap_or(0.0),
            new: n.get(name).copied().unwrap_or(0.0),
        })
        .collect();
    out.sort_by(|a, b| {
        b.delta().abs().total_cmp(&a.delta().abs()).then(b.base.total_cmp(&a.base)).then(a.name.cmp(&b.name))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::callgrind::profile::{parse, tests::DUMP};

    fn counted(text: &str, ops: u64) -> Counted {
        Counted { profile: parse(text).unwrap(), ops }
    }

    #[test]
    fn a_changed_function_tops_the_own_and_inclusive_lists_and_its_component() {
        let base = counted(DUMP, 2);
        let changed = DUMP.replace("7 100 2", "7 160 2").replace("4 105 2", "4 165 2");
        let new = counted(&changed, 2);
        let d = diff(&base, &new, 10);
        assert_eq!(d.instructions().base, 61.0);
        assert_eq!(d.instructions().new, 91.0);
        assert_eq!(d.own.iter().filter(|f| f.change.delta() != 0.0).count(), 1, "only app::work changed: {:?}", d.own);
        assert_eq!(d.own[0].change.name, "app::work");
        assert_eq!(d.own[0].change.delta(), 30.0);
        assert_eq!(d.own[0].component, "other (work.rs)");
        assert_eq!(d.inclusive[0].change.delta(), 30.0, "main's inclusive moves as much as work's");
        assert_eq!(d.components[0].delta(), 30.0);
        assert!(d.appeared.is_empty() && d.vanished.is_empty());
    }

    #[test]
    fn functions_only_one_build_ran_appear_or_vanish() {
        let base = counted(DUMP, 1);
        let renamed = DUMP.replace("cfn=(3) free", "cfn=(3) realloc");
        let d = diff(&base, &counted(&renamed, 1), 10);
        assert_eq!(d.appeared[0].change.name, "realloc");
        assert_eq!(d.vanished[0].change.name, "free");
        assert_eq!(d.instructions().delta(), 0.0);
    }
}
