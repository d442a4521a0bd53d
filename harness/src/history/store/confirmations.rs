//! What `history confirm` decided about each change point, kept so that a second call re-runs
//! nothing already decided and `detect` says which change points were confirmed.

use super::conn::Value;
use super::{Store, StoreError};
use crate::history::SeriesKey;

/// What re-running a change point's commits said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The paired A/B across layouts moved the same way: the change is real.
    Confirmed,
    /// The A/B did not move, and both builds ran the same instructions: the history's step was
    /// a code layout (or the machine), not the code.
    Layout,
    /// The A/B did not move (or moved the other way), and the instructions differ.
    NotReproduced,
    /// An exact count: the change is its commit's, no timing needed.
    Exact,
}

impl Outcome {
    /// Its word in the store, the tables and JSON.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Outcome::Confirmed => "confirmed",
            Outcome::Layout => "layout",
            Outcome::NotReproduced => "not reproduced",
            Outcome::Exact => "exact",
        }
    }

    fn from_word(w: &str) -> Option<Outcome> {
        [Outcome::Confirmed, Outcome::Layout, Outcome::NotReproduced, Outcome::Exact]
            .into_iter()
            .find(|o| o.word() == w)
    }
}

/// One decided change point.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Confirmation {
    /// Its series.
    pub key: SeriesKey,
    /// The last commit at the old level.
    pub last_good: String,
    /// The first commit at the new level.
    pub first_bad: String,
    /// What was decided.
    pub outcome: Outcome,
    /// The commit the change came with, where known (adjacent, or found by bisect).
    pub commit: Option<String>,
    /// One line of what was measured: the A/B's ratio and interval, or the counts.
    pub detail: String,
    /// The A/B report or bisect search it rests on.
    pub evidence: Option<String>,
}

/// What a change point's row says of its confirmation: `unconfirmed`, `layout`, `confirmed at
/// 1a2b3c4d5e6f`.
pub(crate) fn word(d: Option<&Confirmation>) -> String {
    match d {
        None => "unconfirmed".into(),
        Some(d) => match &d.commit {
            Some(commit) => format!("{} at {}", d.outcome.word(), &commit[..commit.len().min(12)]),
            None => d.outcome.word().into(),
        },
    }
}

const COLUMNS: &str =
    "case_id, metric, machine, settings, last_good, first_bad, outcome, commit_hash, detail, evidence";

impl Store {
    /// Records `c`, unless a confirmation of the same change point is stored already (two
    /// runners deciding at once keep the first); whether it was new.
    pub(crate) fn record(&mut self, c: &Confirmation) -> Result<bool, StoreError> {
        let decided_at = crate::machine::now_rfc3339();
        let k = &c.key;
        let n = self.execute(
            &format!(
                "INSERT INTO history_confirmations ({COLUMNS}, decided_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING"
            ),
            &[
                Value::Text(Some(&k.case_id)),
                Value::Text(Some(&k.metric)),
                Value::Text(Some(&k.machine)),
                Value::Text(Some(&k.settings)),
                Value::Text(Some(&c.last_good)),
                Value::Text(Some(&c.first_bad)),
                Value::Text(Some(c.outcome.word())),
                Value::Text(c.commit.as_deref()),
                Value::Text(Some(&c.detail)),
                Value::Text(c.evidence.as_deref()),
                Value::Text(Some(&decided_at)),
            ],
        )?;
        Ok(n == 1)
    }

    /// Every stored confirmation.
    pub(crate) fn confirmations(&mut self) -> Result<Vec<Confirmation>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM history_confirmations");
        let rows = self.conn.texts(&sql, &[], 10).map_err(|e| self.sql(e))?;
        Ok(rows
            .into_iter()
            .filter_map(|r| {
                let text = |i: usize| r[i].clone().unwrap_or_default();
                Some(Confirmation {
                    key: SeriesKey { case_id: text(0), metric: text(1), machine: text(2), settings: text(3) },
                    last_good: text(4),
                    first_bad: text(5),
                    outcome: Outcome::from_word(&text(6))?,
                    commit: r[7].clone(),
                    detail: text(8),
                    evidence: r[9].clone(),
                })
            })
            .collect())
    }
}
