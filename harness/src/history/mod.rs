//! The history of runs: a store of every report's per-case figures ([`store`]), keyed into
//! series that never mix machines or settings ([`ingest`]), and the change points found in
//! each series ([`detect`]), commit by commit.

pub(crate) mod detect;
pub(crate) mod ingest;
pub(crate) mod store;

use detect::{Change, CommitPoint};
use std::collections::BTreeMap;
use store::StoredPoint;

/// What keys a series: its case, figure, machine and settings.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct SeriesKey {
    /// The case.
    pub case_id: String,
    /// The figure (`throughput`, `instructions`, `io.round_trips`).
    pub metric: String,
    /// The machine fingerprint.
    pub machine: String,
    /// The settings that change the figure.
    pub settings: String,
}

impl std::fmt::Display for SeriesKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.case_id, self.metric)
    }
}

/// One series, its commits in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Series {
    /// What it is.
    pub key: SeriesKey,
    /// Any change is a change.
    pub exact: bool,
    /// Higher is better.
    pub higher_is_better: bool,
    /// Its commits, oldest first; runs of one commit pooled.
    pub commits: Vec<CommitPoint>,
    /// Runs stored for it.
    pub runs: usize,
}

/// What detection leaves in and out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Options {
    /// Level of each split's test.
    pub alpha: f64,
    /// Runs of builds with uncommitted edits are left out unless this is set.
    pub include_dirty: bool,
}

/// The stored points gathered into series: dirty runs left out (unless asked), each series'
/// runs ordered by commit time (then start time) and pooled per commit.
pub(crate) fn series(points: Vec<StoredPoint>, options: &Options) -> Vec<Series> {
    let mut by_key: BTreeMap<SeriesKey, Vec<StoredPoint>> = BTreeMap::new();
    for sp in points.into_iter().filter(|sp| options.include_dirty || !sp.run.dirty) {
        let key = SeriesKey {
            case_id: sp.point.case_id.clone(),
            metric: sp.point.metric.clone(),
            machine: sp.run.machine.clone(),
            settings: sp.point.settings.clone(),
        };
        by_key.entry(key).or_default().push(sp);
    }
    by_key
        .into_iter()
        .map(|(key, mut runs)| {
            runs.sort_by(|a, b| {
                (a.run.commit_time.unwrap_or(i64::MAX), &a.run.started_at)
                    .cmp(&(b.run.commit_time.unwrap_or(i64::MAX), &b.run.started_at))
            });
            let mut commits: Vec<CommitPoint> = vec![];
            let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
            for sp in &runs {
                let commit = sp.run.commit.clone().unwrap_or_else(|| format!("run {}", sp.run.run_id));
                match index.get(&commit) {
                    Some(&i) => {
                        let c = &mut commits[i];
                        c.values.push(sp.point.value);
                        c.forks.extend(&sp.point.forks);
                    }
                    None => {
                        index.insert(commit.clone(), commits.len());
                        commits.push(CommitPoint {
                            commit,
                            parent: sp.run.parent.clone(),
                            values: vec![sp.point.value],
                            forks: sp.point.forks.clone(),
                        });
                    }
                }
            }
            let first = &runs[0].point;
            Series { exact: first.exact, higher_is_better: first.higher_is_better, commits, runs: runs.len(), key }
        })
        .collect()
}

/// A change point of one series, named by its commits.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChangePoint {
    /// The series.
    pub key: SeriesKey,
    /// The last commit at the old level.
    pub last_good: String,
    /// The first commit at the new level.
    pub first_bad: String,
    /// Whether `first_bad`'s parent is `last_good` (else commits between were not stored: a range).
    pub adjacent: Option<bool>,
    /// The figure got worse.
    pub regression: bool,
    /// The change itself.
    pub change: Change,
    /// Whether it is the series' newest change: the head sits at its level.
    pub at_head: bool,
}

/// Every change point of `series`.
pub(crate) fn change_points(series: &Series, alpha: f64) -> Vec<ChangePoint> {
    let changes = if series.exact { detect::exact(&series.commits) } else { detect::noisy(&series.commits, alpha) };
    let last = changes.len().saturating_sub(1);
    changes
        .into_iter()
        .enumerate()
        .map(|(i, change)| {
            let (good, bad) = (&series.commits[change.at - 1], &series.commits[change.at]);
            let worse =
                if series.higher_is_better { change.after < change.before } else { change.after > change.before };
            ChangePoint {
                key: series.key.clone(),
                last_good: good.commit.clone(),
                first_bad: bad.commit.clone(),
                adjacent: bad.parent.as_ref().map(|p| *p == good.commit),
                regression: worse,
                change,
                at_head: i == last,
            }
        })
        .collect()
}
