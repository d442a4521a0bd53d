//! The store of runs: an embedded SQLite file by default, or a PostgreSQL database a team's CI
//! runners share. One schema for both (the same SQL, `$n` parameters), a schema version with
//! migrations applied under a lock, and ingest that is idempotent by run id: a run is added in
//! one transaction that first claims its id, so two runners adding the same report store it once.

mod confirmations;
mod conn;
#[cfg(test)]
mod tests;

pub(crate) use confirmations::{Confirmation, Outcome, word};

use super::ingest::{Point, Run};
use conn::{Conn, Value};
use std::path::PathBuf;

/// The migrations, in order: entry i brings a store from version i to i + 1. `@ID@` is each
/// backend's own integer key.
const MIGRATIONS: [&str; 2] = [
    r"
CREATE TABLE history_runs (
    run @ID@,
    run_id TEXT NOT NULL UNIQUE,
    commit_hash TEXT,
    parent_hash TEXT,
    commit_time BIGINT,
    dirty BIGINT NOT NULL,
    schema_version BIGINT NOT NULL,
    harness_version TEXT NOT NULL,
    configuration TEXT NOT NULL,
    machine TEXT NOT NULL,
    started_at TEXT NOT NULL,
    status TEXT NOT NULL,
    source TEXT NOT NULL,
    added_at TEXT NOT NULL
);
CREATE TABLE history_series (
    series @ID@,
    case_id TEXT NOT NULL,
    metric TEXT NOT NULL,
    machine TEXT NOT NULL,
    settings TEXT NOT NULL,
    exact BIGINT NOT NULL,
    higher_is_better BIGINT NOT NULL,
    UNIQUE (case_id, metric, machine, settings)
);
CREATE TABLE history_points (
    run BIGINT NOT NULL REFERENCES history_runs (run),
    series BIGINT NOT NULL REFERENCES history_series (series),
    value DOUBLE PRECISION NOT NULL,
    forks TEXT NOT NULL,
    PRIMARY KEY (series, run)
);
",
    r"
CREATE TABLE history_confirmations (
    confirmation @ID@,
    case_id TEXT NOT NULL,
    metric TEXT NOT NULL,
    machine TEXT NOT NULL,
    settings TEXT NOT NULL,
    last_good TEXT NOT NULL,
    first_bad TEXT NOT NULL,
    outcome TEXT NOT NULL,
    commit_hash TEXT,
    detail TEXT NOT NULL,
    evidence TEXT,
    decided_at TEXT NOT NULL,
    UNIQUE (case_id, metric, machine, settings, last_good, first_bad)
);
",
];

/// The store's schema version this harness writes.
pub(crate) const STORE_VERSION: u32 = MIGRATIONS.len() as u32;

/// Where the history is kept.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Location {
    /// An SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL URL.
    Postgres(String),
}

impl Location {
    /// `postgres://…` or `postgresql://…` is a PostgreSQL database; anything else a file path
    /// (`sqlite:` prefix optional).
    pub(crate) fn parse(s: &str) -> Location {
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            Location::Postgres(s.to_string())
        } else {
            Location::Sqlite(PathBuf::from(s.strip_prefix("sqlite:").unwrap_or(s)))
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Sqlite(p) => write!(f, "{}", p.display()),
            Location::Postgres(url) => write!(f, "{}", workloads::redact::redact(url)),
        }
    }
}

/// What went wrong with the store, naming it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    /// It could not be opened or created.
    #[error("cannot open the history store {0}: {1}; pass a writable file or a reachable postgres:// URL to --history")]
    Open(String, String),
    /// It was written by a newer harness.
    #[error(
        "the history store {0} has schema version {1}; this harness reads versions up to {STORE_VERSION}: use the harness that wrote it, or another store"
    )]
    Newer(String, u32),
    /// A statement failed.
    #[error("the history store {0} failed: {1}")]
    Sql(String, String),
}

/// One stored point with its run: what detection reads.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StoredPoint {
    /// The run it came from.
    pub run: Run,
    /// The point.
    pub point: Point,
}

/// How an add ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Added {
    /// New: this many points stored.
    New(usize),
    /// The run id was stored before: nothing changed.
    Already,
}

/// An open store.
pub(crate) struct Store {
    conn: Conn,
    shown: String,
}

impl Store {
    /// Opens (creating it if need be) and migrates the store at `location`.
    pub(crate) fn open(location: &Location) -> Result<Store, StoreError> {
        let shown = location.to_string();
        let conn = match location {
            Location::Sqlite(path) => Conn::sqlite(path),
            Location::Postgres(url) => Conn::postgres(url),
        }
        .map_err(|e| StoreError::Open(shown.clone(), workloads::redact::redact(&e)))?;
        let mut store = Store { conn, shown };
        store.migrate()?;
        Ok(store)
    }

    /// Brings the store to [`STORE_VERSION`] under the writer lock; a newer store is refused.
    fn migrate(&mut self) -> Result<(), StoreError> {
        self.begin()?;
        if !self.conn.is_sqlite() {
            // Serialises two runners creating or migrating one database at once.
            self.batch("SELECT pg_advisory_xact_lock(7305066240)")?;
        }
        self.batch("CREATE TABLE IF NOT EXISTS history_schema (version BIGINT NOT NULL)")?;
        let version = self.ints("SELECT version FROM history_schema", &[])?.first().copied();
        let from = u32::try_from(version.unwrap_or(0)).unwrap_or(u32::MAX);
        if from > STORE_VERSION {
            self.rollback();
            return Err(StoreError::Newer(self.shown.clone(), from));
        }
        let id = if self.conn.is_sqlite() {
            "INTEGER PRIMARY KEY"
        } else {
            "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
        };
        for sql in &MIGRATIONS[from as usize..] {
            self.batch(&sql.replace("@ID@", id))?;
        }
        let to = [Value::Int(Some(STORE_VERSION.into()))];
        match version {
            None => self.execute("INSERT INTO history_schema (version) VALUES ($1)", &to)?,
            Some(_) => self.execute("UPDATE history_schema SET version = $1", &to)?,
        };
        self.commit()
    }

    /// Adds `run` with its `points`, read from `source`, unless its run id is stored already:
    /// the run's row claims the id first, in the transaction that stores its points.
    pub(crate) fn add(&mut self, run: &Run, points: &[Point], source: &str) -> Result<Added, StoreError> {
        self.begin()?;
        let added_at = crate::machine::now_rfc3339();
        let claimed = self.ints(
            "INSERT INTO history_runs (run_id, commit_hash, parent_hash, commit_time, dirty, schema_version, \
             harness_version, configuration, machine, started_at, status, source, added_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (run_id) DO NOTHING RETURNING run",
            &[
                Value::Text(Some(&run.run_id)),
                Value::Text(run.commit.as_deref()),
                Value::Text(run.parent.as_deref()),
                Value::Int(run.commit_time),
                Value::Int(Some(i64::from(run.dirty))),
                Value::Int(Some(run.schema_version.into())),
                Value::Text(Some(&run.harness_version)),
                Value::Text(Some(&run.configuration)),
                Value::Text(Some(&run.machine)),
                Value::Text(Some(&run.started_at)),
                Value::Text(Some(&run.status)),
                Value::Text(Some(source)),
                Value::Text(Some(&added_at)),
            ],
        )?;
        let Some(&key) = claimed.first() else {
            self.rollback();
            return Ok(Added::Already);
        };
        // One order of series for every add, so that two runners making the same new series
        // wait for each other instead of deadlocking.
        let mut ordered: Vec<&Point> = points.iter().collect();
        ordered.sort_by(|a, b| (&a.case_id, &a.metric, &a.settings).cmp(&(&b.case_id, &b.metric, &b.settings)));
        for p in ordered {
            let series = self.series(p, &run.machine)?;
            let forks = serde_json::to_string(&p.forks).unwrap_or_else(|_| "[]".into());
            self.execute(
                "INSERT INTO history_points (run, series, value, forks) VALUES ($1, $2, $3, $4)",
                &[Value::Int(Some(key)), Value::Int(Some(series)), Value::Real(p.value), Value::Text(Some(&forks))],
            )?;
        }
        self.commit()?;
        Ok(Added::New(points.len()))
    }

    /// The key of `p`'s series on `machine`, made if it is new.
    fn series(&mut self, p: &Point, machine: &str) -> Result<i64, StoreError> {
        let key = [
            Value::Text(Some(&p.case_id)),
            Value::Text(Some(&p.metric)),
            Value::Text(Some(machine)),
            Value::Text(Some(&p.settings)),
        ];
        let select =
            "SELECT series FROM history_series WHERE case_id = $1 AND metric = $2 AND machine = $3 AND settings = $4";
        if let Some(&id) = self.ints(select, &key)?.first() {
            return Ok(id);
        }
        self.execute(
            "INSERT INTO history_series (case_id, metric, machine, settings, exact, higher_is_better) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
            &[
                Value::Text(Some(&p.case_id)),
                Value::Text(Some(&p.metric)),
                Value::Text(Some(machine)),
                Value::Text(Some(&p.settings)),
                Value::Int(Some(i64::from(p.exact))),
                Value::Int(Some(i64::from(p.higher_is_better))),
            ],
        )?;
        self.ints(select, &key)?.first().copied().ok_or_else(|| self.sql("a series just added cannot be read back"))
    }

    /// Every stored point with its run, in no particular order.
    pub(crate) fn points(&mut self) -> Result<Vec<StoredPoint>, StoreError> {
        let sql = "SELECT r.run_id, r.commit_hash, r.parent_hash, r.harness_version, r.configuration, r.machine, \
                   r.started_at, r.status, r.commit_time, r.dirty, r.schema_version, s.exact, s.higher_is_better, \
                   s.case_id, s.metric, s.settings, p.forks, p.value \
                   FROM history_points p JOIN history_runs r ON r.run = p.run JOIN history_series s ON s.series = p.series";
        self.conn.points(sql).map_err(|e| self.sql(e))
    }

    /// How many runs are stored.
    pub(crate) fn run_count(&mut self) -> Result<i64, StoreError> {
        Ok(self.ints("SELECT COUNT(*) FROM history_runs", &[])?.first().copied().unwrap_or(0))
    }

    /// How many runs of builds without uncommitted edits are stored.
    pub(crate) fn clean_run_count(&mut self) -> Result<i64, StoreError> {
        Ok(self.ints("SELECT COUNT(*) FROM history_runs WHERE dirty = 0", &[])?.first().copied().unwrap_or(0))
    }

    fn sql(&self, e: impl std::fmt::Display) -> StoreError {
        StoreError::Sql(self.shown.clone(), workloads::redact::redact(&e.to_string()))
    }

    fn begin(&mut self) -> Result<(), StoreError> {
        // SQLite: take the writer lock now, so that two adds never both read before writing.
        self.batch(if self.conn.is_sqlite() { "BEGIN IMMEDIATE" } else { "BEGIN" })
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        self.batch("COMMIT")
    }

    fn rollback(&mut self) {
        let _ = self.batch("ROLLBACK");
    }

    fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.conn.batch(sql).map_err(|e| self.sql(e))
    }

    fn execute(&mut self, sql: &str, params: &[Value<'_>]) -> Result<u64, StoreError> {
        self.conn.execute(sql, params).map_err(|e| self.sql(e))
    }

    fn ints(&mut self, sql: &str, params: &[Value<'_>]) -> Result<Vec<i64>, StoreError> {
        self.conn.ints(sql, params).map_err(|e| self.sql(e))
    }
}

/// A stored point from its columns: the run's texts, its numbers, the point's texts and value.
fn row(texts: [Option<String>; 8], ints: [Option<i64>; 5], point: [String; 4], value: f64) -> StoredPoint {
    let [run_id, commit, parent, harness_version, configuration, machine, started_at, status] = texts;
    let [commit_time, dirty, schema_version, exact, higher] = ints;
    let [case_id, metric, settings, forks] = point;
    StoredPoint {
        run: Run {
            run_id: run_id.unwrap_or_default(),
            commit,
            parent,
            commit_time,
            dirty: dirty != Some(0),
            schema_version: u32::try_from(schema_version.unwrap_or(0)).unwrap_or(0),
            harness_version: harness_version.unwrap_or_default(),
            configuration: configuration.unwrap_or_default(),
            machine: machine.unwrap_or_default(),
            started_at: started_at.unwrap_or_default(),
            status: status.unwrap_or_default(),
        },
        point: Point {
            case_id,
            metric,
            settings,
            value,
            forks: serde_json::from_str(&forks).unwrap_or_default(),
            exact: exact == Some(1),
            higher_is_better: higher == Some(1),
        },
    }
}

impl crate::error::Classify for StoreError {
    fn exit(&self) -> crate::error::Exit {
        match self {
            StoreError::Open(..) | StoreError::Newer(..) => crate::error::Exit::BadInput,
            StoreError::Sql(..) => crate::error::Exit::Failed,
        }
    }
}
