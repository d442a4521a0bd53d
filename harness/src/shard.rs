//! Splitting a run across CI runners (`run --shard K/N`) and joining the parts (`harness merge`).
//!
//! A shard is a deterministic, balanced share of the case list: cases are dealt, longest planned
//! time first (ties in plan order), each to the shard with the least planned time so far. Every
//! runner computes the same split from the same command line, so the N parts cover every case
//! exactly once. Merging refuses parts that were not made alike, listing every difference.

use crate::error::BadInput;
use crate::report::meta::MergeInfo;
use crate::report::{Report, RunStatus};

/// `--shard K/N`: this runner's share, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which share, 1 to `count`.
    pub index: usize,
    /// How many shares.
    pub count: usize,
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Parses `K/N` (1 ≤ K ≤ N).
pub(crate) fn parse(s: &str) -> Result<Shard, String> {
    let (k, n) = s.split_once('/').ok_or("expected K/N, e.g. 2/3")?;
    let num =
        |x: &str| x.trim().parse::<usize>().map_err(|_| format!("'{x}' is not a whole number; expected K/N, e.g. 2/3"));
    let (index, count) = (num(k)?, num(n)?);
    if count == 0 || index == 0 || index > count {
        return Err(format!("K must be 1 to N (got {index}/{count}); e.g. 1/3, 2/3, 3/3"));
    }
    Ok(Shard { index, count })
}

/// The indices of the items this shard runs, given each item's planned time, in plan order.
pub(crate) fn assign(planned: &[u64], shard: Shard) -> Vec<usize> {
    let mut order: Vec<usize> = (0..planned.len()).collect();
    order.sort_by(|&a, &b| planned[b].cmp(&planned[a]).then(a.cmp(&b)));
    let mut load = vec![0u64; shard.count];
    let mut mine = vec![];
    for i in order {
        let target = (0..shard.count).min_by_key(|&s| (load[s], s)).expect("at least one shard");
        load[target] += planned[i].max(1);
        if target + 1 == shard.index {
            mine.push(i);
        }
    }
    mine.sort_unstable();
    mine
}

/// Every way `part` was made differently from `first`: commit, configuration, settings,
/// machine shape and toolchain.
fn part_differences(first: &Report, part: &Report) -> Vec<String> {
    let mut out = crate::compare::differences(first, part, crate::metric::Metric::Throughput);
    let mut check = |what: &str, x: String, y: String| {
        if x != y {
            out.push(format!("{what}: {x} vs {y}"));
        }
    };
    let commit = |r: &Report| r.meta.git.commit.clone().unwrap_or_else(|| "unknown".into());
    check("commit", commit(first), commit(part));
    let setting = |r: &Report, f: &dyn Fn(&crate::report::meta::RunSettings) -> String| {
        r.meta.settings.as_ref().map_or("unknown".into(), f)
    };
    let filters = |s: &crate::report::meta::RunSettings| crate::compare::list(&s.filters);
    check("--filter", setting(first, &filters), setting(part, &filters));
    check(
        "--instructions",
        setting(first, &|s| s.instructions.to_string()),
        setting(part, &|s| s.instructions.to_string()),
    );
    let count = |s: &crate::report::meta::RunSettings| {
        s.shard.as_deref().and_then(|x| x.split_once('/')).map_or("none".into(), |p| p.1.to_string())
    };
    check("--shard count", setting(first, &count), setting(part, &count));
    out
}

/// The shards (`K/N`) of the parts' run that no part holds; none for parts not made with
/// `--shard`.
fn missing_shards(parts: &[(String, Report)]) -> Vec<String> {
    let shard = |r: &Report| r.meta.settings.as_ref().and_then(|s| s.shard.as_deref()).and_then(|s| parse(s).ok());
    let held: Vec<Shard> = parts.iter().filter_map(|(_, r)| shard(r)).collect();
    let Some(count) = held.first().map(|s| s.count) else { return vec![] };
    (1..=count).filter(|k| !held.iter().any(|s| s.index == *k)).map(|k| format!("{k}/{count}")).collect()
}

/// Joins the reports of several shards into one. Refuses (every difference listed) parts made
/// differently unless `allow_differences`, an incomplete set of shards unless `allow_partial`,
/// and always a case that appears in two parts.
pub(crate) fn merge(
    parts: Vec<(String, Report)>,
    allow_differences: bool,
    allow_partial: bool,
) -> Result<Report, BadInput> {
    let (first_name, first) =
        parts.first().cloned().ok_or_else(|| BadInput("merge needs at least one report".into()))?;
    let mut differences = vec![];
    for (name, part) in &parts[1..] {
        differences
            .extend(part_differences(&first, part).into_iter().map(|d| format!("{name} against {first_name}: {d}")));
    }
    if !differences.is_empty() && !allow_differences {
        for d in &differences {
            eprintln!("differs: {d}");
        }
        return Err(BadInput(format!(
            "the parts differ in {} way(s) listed above: merge parts of one sharded run, or pass --allow-differences to merge anyway",
            differences.len()
        )));
    }
    let mut merged = first.clone();
    // Parts of an older schema merge into a report of this one (it records what merging adds).
    merged.schema_version = crate::report::SCHEMA_VERSION;
    merged.benchmarks = every_case_once(&parts)?;
    let missing_shards = missing_shards(&parts);
    if !missing_shards.is_empty() && !allow_partial {
        return Err(BadInput(format!(
            "shard(s) {} of the run are not among the parts: pass every part, or --allow-partial to merge these (the report lists what is missing)",
            missing_shards.join(", ")
        )));
    }
    let readings = parts.iter().filter_map(|(_, p)| p.meta.canary.clone());
    merged.meta.canary = readings.reduce(|mut all, c| {
        all.readings.extend(c.readings);
        all
    });
    merged.meta.started_at = parts.iter().map(|p| p.1.meta.started_at.clone()).min().unwrap_or_default();
    merged.meta.ended_at = parts.iter().map(|p| p.1.meta.ended_at.clone()).max().flatten();
    merged.status = if parts.iter().all(|p| p.1.status == RunStatus::Complete) {
        RunStatus::Complete
    } else {
        RunStatus::Interrupted
    };
    if let Some(s) = merged.meta.settings.as_mut() {
        s.shard = None;
    }
    let part_run_ids = parts.iter().flat_map(|p| p.1.meta.run_ids()).map(String::from).collect();
    merged.meta.run_id = Some(uuid::Uuid::new_v4().to_string());
    merged.meta.merged = Some(MergeInfo {
        parts: parts.iter().map(|p| p.0.clone()).collect(),
        forced: allow_differences,
        differences,
        missing_shards,
        part_run_ids,
    });
    Ok(merged)
}

/// The parts' cases, in order; a case in two parts is refused, naming both.
fn every_case_once(parts: &[(String, Report)]) -> Result<Vec<crate::report::Benchmark>, BadInput> {
    let mut cases = vec![];
    let mut seen: Vec<(crate::report::CaseId, &str)> = vec![];
    for (name, part) in parts {
        for b in &part.benchmarks {
            let label = b.id();
            if let Some((_, other)) = seen.iter().find(|(l, _)| *l == label) {
                return Err(BadInput(format!(
                    "case {label} is in both {other} and {name}: merge the parts of one sharded run, each once"
                )));
            }
            seen.push((label, name));
            cases.push(b.clone());
        }
    }
    Ok(cases)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_refuse_nonsense() {
        assert_eq!(parse("2/3").unwrap(), Shard { index: 2, count: 3 });
        assert!(parse("0/3").unwrap_err().contains("K must be 1 to N"));
        assert!(parse("4/3").is_err() && parse("1/0").is_err());
        assert!(parse("3").unwrap_err().contains("expected K/N"));
        assert!(parse("a/3").unwrap_err().contains("not a whole number"));
    }

    #[test]
    fn shards_cover_every_case_once_and_balance_planned_time() {
        let planned = [5, 1, 1, 1, 3, 3, 2, 2, 1];
        let shards: Vec<Vec<usize>> = (1..=3).map(|k| assign(&planned, Shard { index: k, count: 3 })).collect();
        let mut all: Vec<usize> = shards.iter().flatten().copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..planned.len()).collect::<Vec<_>>());
        let loads: Vec<u64> = shards.iter().map(|s| s.iter().map(|&i| planned[i]).sum()).collect();
        assert!(loads.iter().max().unwrap() - loads.iter().min().unwrap() <= 1, "{loads:?}");
        assert_eq!(assign(&planned, Shard { index: 1, count: 1 }), (0..planned.len()).collect::<Vec<_>>());
        assert!(assign(&[1, 1], Shard { index: 3, count: 3 }).is_empty(), "more shards than cases: some are empty");
    }

    #[test]
    fn merging_joins_parts_and_refuses_overlaps_and_differences() {
        use crate::compare::fixtures::{case, report};
        let a = report(vec![case("a"), case("b")]);
        let b = report(vec![case("c")]);
        let m = merge(vec![("a.json".into(), a.clone()), ("b.json".into(), b.clone())], false, false).unwrap();
        let names: Vec<&str> = m.benchmarks.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(m.meta.merged.as_ref().unwrap().parts, ["a.json", "b.json"]);
        let e =
            merge(vec![("a.json".into(), a.clone()), ("again.json".into(), a.clone())], false, false).unwrap_err().0;
        assert!(e.contains("case a is in both a.json and again.json"), "{e}");
        let mut other = b.clone();
        other.meta.cpu.model = "Other CPU".into();
        other.meta.git.commit = Some("ffff".into());
        let e =
            merge(vec![("a.json".into(), a.clone()), ("b.json".into(), other.clone())], false, false).unwrap_err().0;
        assert!(e.contains("differ in 2 way(s)"), "{e}");
        let forced = merge(vec![("a.json".into(), a), ("b.json".into(), other)], true, false).unwrap();
        let info = forced.meta.merged.unwrap();
        assert!(info.forced && info.differences.len() == 2, "{info:?}");
    }
}
