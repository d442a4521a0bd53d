//! Proof from the other side: counts a server (or the client library) keeps of the work the ops
//! did, read before the first op of a fork and after the last, and held against the ops the
//! worker ran.

use std::borrow::Cow;
use std::collections::BTreeMap;

/// What one op adds to a [`Tally`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerOp {
    /// Exactly this many: the count is the workload's own (its table's counters, its cache's
    /// loads), so nothing else moves it.
    Exactly(i64),
    /// At least this many: the count is shared (a whole database's commits, a server's GET
    /// calls), so other clients may add to it but cannot make up for an op that did nothing.
    AtLeast(i64),
    /// Recorded, never checked: a count the op moves by an amount the workload does not
    /// declare (rows read, blocks touched, WAL written), kept for reports and the I/O gate.
    Recorded,
}

/// One count, as read at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tally {
    /// Its name in the fork's `observed` (`pg_xact_commit`, `redis_get_calls`, …).
    pub name: Cow<'static, str>,
    /// The count now.
    pub value: i64,
    /// What each op adds.
    pub per_op: PerOp,
    /// Who keeps the count, for the message when it disagrees ("PostgreSQL's pg_stat_user_tables").
    pub keeper: &'static str,
}

/// The deltas between two readings, by name, with `ops_run`: what a fork's `observed` records.
/// A recorded count first seen in the second reading (a server's first call of a command)
/// counts from 0.
pub fn deltas(before: &[Tally], after: &[Tally], ops: u64) -> BTreeMap<String, i64> {
    let mut out: BTreeMap<String, i64> = after
        .iter()
        .filter_map(|a| {
            let start = before.iter().find(|b| b.name == a.name).map(|b| b.value);
            let start = start.or((a.per_op == PerOp::Recorded).then_some(0))?;
            Some((a.name.to_string(), a.value - start))
        })
        .collect();
    if !out.is_empty() {
        out.insert("ops_run".into(), ops as i64);
    }
    out
}

/// Holds each delta against what `ops` ops must have added; the first disagreement, as one line.
pub fn check(before: &[Tally], after: &[Tally], ops: u64) -> Result<(), String> {
    let ops = ops as i64;
    for a in after {
        let Some(b) = before.iter().find(|b| b.name == a.name) else { continue };
        let delta = a.value - b.value;
        let (holds, expected) = match a.per_op {
            PerOp::Exactly(k) => (delta == k * ops, format!("exactly {} ({k} per op)", k * ops)),
            PerOp::AtLeast(k) => (delta >= k * ops, format!("at least {} ({k} per op)", k * ops)),
            PerOp::Recorded => continue,
        };
        if !holds {
            return Err(format!(
                "{} counted {delta} {} over the fork's {ops} ops, expected {expected}: the op did not do the work it claims",
                a.keeper, a.name
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &'static str, value: i64, per_op: PerOp) -> Tally {
        Tally { name: name.into(), value, per_op, keeper: "the server" }
    }

    #[test]
    fn exact_counts_must_match_and_shared_counts_must_reach() {
        let before = [t("scans", 10, PerOp::Exactly(1)), t("commits", 100, PerOp::AtLeast(1))];
        let good = [t("scans", 15, PerOp::Exactly(1)), t("commits", 107, PerOp::AtLeast(1))];
        assert_eq!(check(&before, &good, 5), Ok(()));
        assert_eq!(
            deltas(&before, &good, 5).into_iter().collect::<Vec<_>>(),
            [("commits".to_string(), 7), ("ops_run".to_string(), 5), ("scans".to_string(), 5)]
        );
        let extra_scan = [t("scans", 16, PerOp::Exactly(1)), t("commits", 107, PerOp::AtLeast(1))];
        let e = check(&before, &extra_scan, 5).unwrap_err();
        assert!(e.starts_with("the server counted 6 scans over the fork's 5 ops, expected exactly 5"), "{e}");
        let few_commits = [t("scans", 15, PerOp::Exactly(1)), t("commits", 104, PerOp::AtLeast(1))];
        assert!(check(&before, &few_commits, 5).unwrap_err().contains("expected at least 5 (1 per op)"));
    }

    #[test]
    fn a_recorded_count_first_seen_after_counts_from_zero() {
        let before = [t("scans", 10, PerOp::Exactly(1))];
        let after =
            [t("scans", 15, PerOp::Exactly(1)), t("calls_set", 4, PerOp::Recorded), t("late", 9, PerOp::AtLeast(1))];
        let d = deltas(&before, &after, 5);
        assert_eq!((d.get("calls_set"), d.get("late"), d.get("scans")), (Some(&4), None, Some(&5)));
    }

    #[test]
    fn no_counts_record_nothing() {
        assert!(deltas(&[], &[], 5).is_empty());
        assert_eq!(check(&[], &[], 5), Ok(()));
    }
}
