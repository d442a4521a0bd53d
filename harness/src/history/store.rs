//! The store of runs: an embedded SQLite file by default, or a PostgreSQL database a team's CI
//! runners share. One schema for both (the same SQL, `$n` parameters), a schema version with
//! migrations applied under a lock, and ingest that is idempotent by run id: a run is added in
//! one transaction that first claims its id, so two runners adding the same report store it once.

use super::ingest::{Point, Run};
use std::path::PathBuf;

/// The migrations, in order: entry i brings a store from version i to i + 1.
const MIGRATIONS: [&str; 1] = [r"
CREATE TABLE history_runs (
    run_id TEXT PRIMARY KEY,
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
CREATE TABLE history_points (
    run_id TEXT NOT NULL REFERENCES history_runs (run_id),
    case_id TEXT NOT NULL,
    metric TEXT NOT NULL,
    settings TEXT NOT NULL,
    value DOUBLE PRECISION NOT NULL,
    forks TEXT NOT NULL,
    exact BIGINT NOT NULL,
    higher_is_better BIGINT NOT NULL,
    PRIMARY KEY (run_id, case_id, metric)
);
CREATE INDEX history_points_series ON history_points (case_id, metric, settings);
"];

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

enum Conn {
    Sqlite(rusqlite::Connection),
    Postgres(Box<postgres::Client>),
}

/// A parameter of the store's statements.
enum Value<'a> {
    Text(Option<&'a str>),
    Int(Option<i64>),
    Real(f64),
}

impl Store {
    /// Opens (creating it if need be) and migrates the store at `location`.
    pub(crate) fn open(location: &Location) -> Result<Store, StoreError> {
        let shown = location.to_string();
        let conn = match location {
            Location::Sqlite(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| StoreError::Open(shown.clone(), e.to_string()))?;
                }
                let c = rusqlite::Connection::open(path).map_err(|e| StoreError::Open(shown.clone(), e.to_string()))?;
                // Several runners may add at once: wait for the writer lock rather than fail.
                c.busy_timeout(std::time::Duration::from_secs(60))
                    .and_then(|()| c.pragma_update(None, "journal_mode", "WAL"))
                    .map_err(|e| StoreError::Open(shown.clone(), e.to_string()))?;
                Conn::Sqlite(c)
            }
            Location::Postgres(url) => {
                let c = url
                    .parse::<postgres::Config>()
                    .and_then(|mut cfg| {
                        if cfg.get_connect_timeout().is_none() {
                            // A bounded wait: a server that never answers is said, not waited on.
                            cfg.connect_timeout(std::time::Duration::from_secs(10));
                        }
                        cfg.connect(postgres::NoTls)
                    })
                    .map_err(|e| StoreError::Open(shown.clone(), workloads::redact::redact(&with_causes(&e))))?;
                Conn::Postgres(Box::new(c))
            }
        };
        let mut store = Store { conn, shown };
        store.migrate()?;
        Ok(store)
    }

    /// Brings the store to [`STORE_VERSION`] under the writer lock; a newer store is refused.
    fn migrate(&mut self) -> Result<(), StoreError> {
        self.begin()?;
        if let Conn::Postgres(c) = &mut self.conn {
            // Serialises two runners creating or migrating one database at once.
            c.batch_execute("SELECT pg_advisory_xact_lock(7305066240)").map_err(|e| self.sql(e))?;
        }
        self.batch("CREATE TABLE IF NOT EXISTS history_schema (version BIGINT NOT NULL)")?;
        let version = self.query_ints("SELECT version FROM history_schema")?.first().copied();
        let from = u32::try_from(version.unwrap_or(0)).unwrap_or(u32::MAX);
        if from > STORE_VERSION {
            self.rollback();
            return Err(StoreError::Newer(self.shown.clone(), from));
        }
        for sql in &MIGRATIONS[from as usize..] {
            self.batch(sql)?;
        }
        if version.is_none() {
            self.execute(
                "INSERT INTO history_schema (version) VALUES ($1)",
                &[Value::Int(Some(STORE_VERSION.into()))],
            )?;
        } else if from < STORE_VERSION {
            self.execute("UPDATE history_schema SET version = $1", &[Value::Int(Some(STORE_VERSION.into()))])?;
        }
        self.commit()
    }

    /// Adds `run` with its `points`, read from `source`, unless its run id is stored already.
    pub(crate) fn add(&mut self, run: &Run, points: &[Point], source: &str) -> Result<Added, StoreError> {
        self.begin()?;
        let added_at = crate::machine::now_rfc3339();
        let claimed = self.execute(
            "INSERT INTO history_runs (run_id, commit_hash, parent_hash, commit_time, dirty, schema_version, \
             harness_version, configuration, machine, started_at, status, source, added_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (run_id) DO NOTHING",
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
        if claimed == 0 {
            self.rollback();
            return Ok(Added::Already);
        }
        for p in points {
            let forks = serde_json::to_string(&p.forks).unwrap_or_else(|_| "[]".into());
            self.execute(
                "INSERT INTO history_points (run_id, case_id, metric, settings, value, forks, exact, higher_is_better) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                &[
                    Value::Text(Some(&run.run_id)),
                    Value::Text(Some(&p.case_id)),
                    Value::Text(Some(&p.metric)),
                    Value::Text(Some(&p.settings)),
                    Value::Real(p.value),
                    Value::Text(Some(&forks)),
                    Value::Int(Some(i64::from(p.exact))),
                    Value::Int(Some(i64::from(p.higher_is_better))),
                ],
            )?;
        }
        self.commit()?;
        Ok(Added::New(points.len()))
    }

    /// Every stored point with its run, in no particular order.
    pub(crate) fn points(&mut self) -> Result<Vec<StoredPoint>, StoreError> {
        let sql = "SELECT r.run_id, r.commit_hash, r.parent_hash, r.commit_time, r.dirty, r.schema_version, \
                   r.harness_version, r.configuration, r.machine, r.started_at, r.status, \
                   p.case_id, p.metric, p.settings, p.value, p.forks, p.exact, p.higher_is_better \
                   FROM history_points p JOIN history_runs r ON r.run_id = p.run_id";
        let shown = self.shown.clone();
        let fail = |e: String| StoreError::Sql(shown.clone(), e);
        match &mut self.conn {
            Conn::Sqlite(c) => {
                let mut stmt = c.prepare(sql).map_err(|e| fail(e.to_string()))?;
                let rows = stmt
                    .query_map([], |r| {
                        Ok(row(
                            [r.get(0)?, r.get(1)?, r.get(2)?, r.get(6)?, r.get(7)?, r.get(8)?, r.get(9)?, r.get(10)?],
                            [r.get(3)?, r.get(4)?, r.get(5)?, r.get(16)?, r.get(17)?],
                            [r.get(11)?, r.get(12)?, r.get(13)?, r.get(15)?],
                            r.get(14)?,
                        ))
                    })
                    .map_err(|e| fail(e.to_string()))?;
                rows.collect::<Result<Vec<_>, _>>().map_err(|e| fail(e.to_string()))
            }
            Conn::Postgres(c) => {
                let rows = c.query(sql, &[]).map_err(|e| fail(e.to_string()))?;
                Ok(rows
                    .iter()
                    .map(|r| {
                        row(
                            [r.get(0), r.get(1), r.get(2), r.get(6), r.get(7), r.get(8), r.get(9), r.get(10)],
                            [r.get(3), r.get(4), r.get(5), r.get(16), r.get(17)],
                            [r.get(11), r.get(12), r.get(13), r.get(15)],
                            r.get(14),
                        )
                    })
                    .collect())
            }
        }
    }

    /// How many runs are stored.
    pub(crate) fn run_count(&mut self) -> Result<i64, StoreError> {
        Ok(self.query_ints("SELECT COUNT(*) FROM history_runs")?.first().copied().unwrap_or(0))
    }

    fn sql(&self, e: impl std::fmt::Display) -> StoreError {
        StoreError::Sql(self.shown.clone(), workloads::redact::redact(&e.to_string()))
    }

    fn begin(&mut self) -> Result<(), StoreError> {
        // SQLite: take the writer lock now, so that two adds never both read before writing.
        let sql = if matches!(self.conn, Conn::Sqlite(_)) { "BEGIN IMMEDIATE" } else { "BEGIN" };
        self.batch(sql)
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        self.batch("COMMIT")
    }

    fn rollback(&mut self) {
        let _ = self.batch("ROLLBACK");
    }

    fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        let done = match &mut self.conn {
            Conn::Sqlite(c) => c.execute_batch(sql).map_err(|e| e.to_string()),
            Conn::Postgres(c) => c.batch_execute(sql).map_err(|e| e.to_string()),
        };
        done.map_err(|e| self.sql(e))
    }

    fn execute(&mut self, sql: &str, params: &[Value<'_>]) -> Result<u64, StoreError> {
        let done = match &mut self.conn {
            Conn::Sqlite(c) => {
                let p: Vec<Box<dyn rusqlite::ToSql + '_>> = params.iter().map(Value::sqlite).collect();
                c.execute(sql, rusqlite::params_from_iter(p.iter())).map(|n| n as u64).map_err(|e| e.to_string())
            }
            Conn::Postgres(c) => {
                let p: Vec<Box<dyn postgres::types::ToSql + Sync + '_>> = params.iter().map(Value::postgres).collect();
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> = p.iter().map(AsRef::as_ref).collect();
                c.execute(sql, &refs).map_err(|e| e.to_string())
            }
        };
        done.map_err(|e| self.sql(e))
    }

    /// The first column of every row of `sql`, an integer.
    fn query_ints(&mut self, sql: &str) -> Result<Vec<i64>, StoreError> {
        let done = match &mut self.conn {
            Conn::Sqlite(c) => {
                c.prepare(sql).and_then(|mut s| s.query_map([], |r| r.get(0))?.collect()).map_err(|e| e.to_string())
            }
            Conn::Postgres(c) => {
                c.query(sql, &[]).map(|rows| rows.iter().map(|r| r.get(0)).collect()).map_err(|e| e.to_string())
            }
        };
        done.map_err(|e| self.sql(e))
    }
}

impl Value<'_> {
    fn sqlite(&self) -> Box<dyn rusqlite::ToSql + '_> {
        match self {
            Value::Text(t) => Box::new(*t),
            Value::Int(i) => Box::new(*i),
            Value::Real(r) => Box::new(*r),
        }
    }

    fn postgres(&self) -> Box<dyn postgres::types::ToSql + Sync + '_> {
        match self {
            Value::Text(t) => Box::new(*t),
            Value::Int(i) => Box::new(*i),
            Value::Real(r) => Box::new(*r),
        }
    }
}

/// `e` and every cause under it, in one line (postgres says only "error connecting to server").
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text += &format!(": {c}");
        cause = c.source();
    }
    text
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

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str) -> Run {
        Run {
            run_id: id.into(),
            commit: Some("c1".into()),
            parent: None,
            commit_time: Some(1),
            dirty: false,
            schema_version: 2,
            harness_version: "0.1.0".into(),
            configuration: "smoke".into(),
            machine: "m".into(),
            started_at: "2026-01-01T00:00:00Z".into(),
            status: "complete".into(),
        }
    }

    fn point(case: &str) -> Point {
        Point {
            case_id: case.into(),
            metric: "throughput".into(),
            settings: "s".into(),
            value: 10.0,
            forks: vec![9.0, 11.0],
            exact: false,
            higher_is_better: true,
        }
    }

    #[test]
    fn a_run_is_stored_once_and_read_back_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let at = Location::Sqlite(dir.path().join("sub/h.sqlite"));
        let mut store = Store::open(&at).unwrap();
        assert_eq!(store.add(&run("a"), &[point("x"), point("y")], "a.json").unwrap(), Added::New(2));
        assert_eq!(store.add(&run("a"), &[point("x")], "again.json").unwrap(), Added::Already);
        let mut back = Store::open(&at).unwrap().points().unwrap();
        back.sort_by(|a, b| a.point.case_id.cmp(&b.point.case_id));
        assert_eq!(
            back,
            vec![StoredPoint { run: run("a"), point: point("x") }, StoredPoint { run: run("a"), point: point("y") }]
        );
    }

    #[test]
    fn runners_adding_at_once_lose_and_duplicate_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let at = Location::Sqlite(dir.path().join("h.sqlite"));
        Store::open(&at).unwrap();
        let added: Vec<Added> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|t| {
                    let at = at.clone();
                    // Runners 0..4 add runs 0..4; runners 4..8 add the same runs again.
                    s.spawn(move || {
                        Store::open(&at).unwrap().add(&run(&format!("r{}", t % 4)), &[point("x")], "r").unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(added.iter().filter(|a| **a == Added::New(1)).count(), 4, "{added:?}");
        let mut store = Store::open(&at).unwrap();
        assert_eq!((store.run_count().unwrap(), store.points().unwrap().len()), (4, 4));
    }

    #[test]
    fn a_store_from_a_newer_harness_is_refused_and_an_older_one_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.sqlite");
        // Version 0: what an open that stopped before its first migration leaves.
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch("CREATE TABLE history_schema (version BIGINT NOT NULL); INSERT INTO history_schema VALUES (0)")
            .unwrap();
        let mut store = Store::open(&Location::Sqlite(path.clone())).unwrap();
        assert_eq!(store.add(&run("a"), &[point("x")], "a").unwrap(), Added::New(1));
        c.execute("UPDATE history_schema SET version = 99", []).unwrap();
        let e = Store::open(&Location::Sqlite(path)).err().unwrap().to_string();
        assert!(e.contains("has schema version 99; this harness reads versions up to 1"), "{e}");
    }

    #[test]
    fn a_postgres_url_is_shown_without_its_password() {
        let at = Location::parse("postgres://u:hunter22@127.0.0.1:1/x");
        assert_eq!(at.to_string(), "postgres://u:***@127.0.0.1:1/x");
        assert_eq!(Location::parse("sqlite:a/b.db"), Location::Sqlite("a/b.db".into()));
    }
}
