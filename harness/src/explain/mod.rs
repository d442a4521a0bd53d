//! `harness explain`'s reading: two builds' callgrind dumps of one case turned into what
//! changed per op (per function, component, event and statement) and flame graphs.

pub(crate) mod component;
mod diff;
mod flame;
pub(crate) mod render;

pub(crate) use diff::{Change, Counted, Diff, diff};
pub(crate) use render::render;

use crate::report::io::IoCount;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One case, explained.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Explained {
    /// The case, as every reader names it.
    pub case: String,
    /// The A/B report's verdict on its timed forks, as `compare` prints it.
    pub verdict: Option<String>,
    /// Whether that verdict called the builds different (the time moved).
    pub time_moved: bool,
    /// What changed per op.
    pub diff: Diff,
    /// Round trips and statements per op that changed, where the run counted I/O.
    pub io: Vec<Change>,
    /// The flame graphs written: the differential one, then each build's.
    pub graphs: Vec<String>,
}

/// Writes the flame graphs of `base` and `new` of case `case` into `dir` as `STEM.diff.svg`,
/// `STEM.base.flame.svg` and `STEM.new.flame.svg` (STEM: the case as a file name); returns
/// their paths.
pub(crate) fn write_graphs(base: &Counted, new: &Counted, dir: &Path, case: &str) -> anyhow::Result<Vec<PathBuf>> {
    let stem = crate::callgrind::file_stem(case);
    std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let (b, n) = (flame::folded(&base.profile), flame::folded(&new.profile));
    let ops = format!("instructions of {} ops (baseline) and {} ops (this build)", base.ops, new.ops);
    let graphs = [
        (
            "diff.svg",
            flame::svg(
                &flame::differential(&b, &n)?,
                &format!("{case}: this build against the baseline"),
                &format!("{ops}; red grew, blue shrank"),
            )?,
        ),
        ("base.flame.svg", flame::svg(&b, &format!("{case}: baseline"), &format!("instructions of {} ops", base.ops))?),
        ("new.flame.svg", flame::svg(&n, &format!("{case}: this build"), &format!("instructions of {} ops", new.ops))?),
    ];
    let mut out = vec![];
    for (suffix, svg) in graphs {
        let path = dir.join(format!("{stem}.{suffix}"));
        crate::report::write::write_bytes_atomic(&path, &svg)?;
        out.push(path);
    }
    Ok(out)
}

/// Round trips and statements (by text) per op that differ between two I/O counts.
pub(crate) fn io_changes(base: &IoCount, new: &IoCount) -> Vec<Change> {
    let per_op = |n: u64, c: &IoCount| n as f64 / c.ops.max(1) as f64;
    let mut out = vec![Change {
        name: "round trips".into(),
        base: per_op(base.round_trips, base),
        new: per_op(new.round_trips, new),
    }];
    let texts: BTreeSet<&String> = base.statements.keys().chain(new.statements.keys()).collect();
    let count = |m: &BTreeMap<String, u64>, t: &String| m.get(t).copied().unwrap_or(0);
    for text in texts {
        out.push(Change {
            name: text.clone(),
            base: per_op(count(&base.statements, text), base),
            new: per_op(count(&new.statements, text), new),
        });
    }
    out.retain(|c| (c.delta()).abs() > 1e-9);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_changes_name_the_round_trips_and_statements_that_moved() {
        let count = |trips: u64, statements: &[(&str, u64)]| IoCount {
            ops: 10,
            round_trips: trips,
            statements: statements.iter().map(|(t, n)| (t.to_string(), *n)).collect(),
            ..IoCount::default()
        };
        let base = count(30, &[("BEGIN", 10), ("SELECT id FROM t WHERE id = $1", 10)]);
        let new = count(40, &[("BEGIN", 10), ("SELECT id FROM t WHERE id = $1", 20)]);
        let changes = io_changes(&base, &new);
        assert_eq!(changes.len(), 2, "BEGIN did not change: {changes:?}");
        assert_eq!((changes[0].name.as_str(), changes[0].base, changes[0].new), ("round trips", 3.0, 4.0));
        assert_eq!((changes[1].name.as_str(), changes[1].delta()), ("SELECT id FROM t WHERE id = $1", 1.0));
    }

    #[test]
    fn unchanged_instructions_with_a_moved_time_say_where_to_look() {
        let counted = |ir: u64| Counted {
            profile: crate::callgrind::profile::parse(&format!("events: Ir\nfn=main\n1 {ir}\n")).unwrap(),
            ops: 1,
        };
        let case = |moved: bool, new: u64| Explained {
            case: "c".into(),
            verdict: Some("SLOWER".into()),
            time_moved: moved,
            diff: diff(&counted(100_000), &counted(new), 5),
            io: vec![],
            graphs: vec![],
        };
        let text = render(&case(true, 100_050));
        assert!(text.contains("instructions unchanged"), "{text}");
        assert!(text.contains("the time moved and the instructions did not"), "{text}");
        assert!(text.contains("--cache-sim"), "{text}");
        let changed = render(&case(true, 103_000));
        assert!(!changed.contains("instructions unchanged") && changed.contains("+3.00%"), "{changed}");
    }
}
