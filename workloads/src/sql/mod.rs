//! SQL workloads: the same transaction (`BEGIN`; count of one id with `LIMIT 1`; `COMMIT`) in
//! three execution shapes, on embedded SQLite (default) or a real PostgreSQL server.
//!
//! Every shape checks a connection out of a pool set up once per fork, runs the same prepared
//! statements on the same seeded data, and returns the count, so only the shape differs:
//! - `sql/thread_select_by_id`: a blocking driver on the measuring thread;
//! - `sql/spawn_blocking_select_by_id`: the same blocking call handed to tokio's blocking pool
//!   with `spawn_blocking` and awaited (one runtime entry per batch);
//! - `sql/async_select_by_id`: sqlx, `begin` / query / `commit` awaited, one runtime entry
//!   (`block_on`) per op, like the seed's `runBlocking { suspendTransaction { … } }`.

pub mod postgres;
mod shapes;
pub mod sqlite;

pub use shapes::{AsyncDb, AsyncSelect, SpawnBlockingSelect, ThreadSelect};

use crate::params::{ParamKind, ParamSpec};
use crate::{SetupContext, WorkloadDef};
use anyhow::Context;

/// The measured statement; `$1` is the id (SQLite reads `$1` as a named parameter).
pub const SELECT_BY_ID: &str = "SELECT COUNT(*) FROM (SELECT 1 FROM benchmark_users WHERE id = $1 LIMIT 1) t";
/// Inserts one row whose values are filled in by [`SEED_VALUES`] once its id is known.
const SEED_PLACEHOLDERS: &str = "INSERT INTO benchmark_users (username, email, age) VALUES ('', '', 0)";
/// Gives every row the values derived from its database-generated id.
const SEED_VALUES: &str =
    "UPDATE benchmark_users SET username = 'user-' || id, email = 'user-' || id || '@example.test', age = 20 + id % 50";

/// `row_count`: rows seeded per fork.
pub const ROW_COUNT: ParamSpec = ParamSpec {
    name: "row_count",
    about: "rows seeded in the table",
    kind: ParamKind::Int { min: 1, max: 10_000_000 },
    defaults: &["1000", "10000"],
};

/// `pool_size`: connections in the fork's pool.
pub const POOL_SIZE: ParamSpec = ParamSpec {
    name: "pool_size",
    about: "connections in the pool",
    kind: ParamKind::Int { min: 1, max: 1000 },
    defaults: &["10"],
};

/// `db`: the backend.
pub const DB: ParamSpec = ParamSpec {
    name: "db",
    about: "sqlite (embedded, in memory), sqlite_file (embedded, WAL file) or postgres (--database-url)",
    kind: ParamKind::Choice(&["sqlite", "sqlite_file", "postgres"]),
    defaults: &["sqlite"],
};

const PARAMS: &[ParamSpec] = &[ROW_COUNT, POOL_SIZE, DB];

/// The sql group.
pub static WORKLOADS: &[WorkloadDef] = &[
    WorkloadDef {
        name: "sql/thread_select_by_id",
        about: "select-by-id transaction, blocking driver on the measuring thread",
        params: PARAMS,
        hidden: false,
        setup: |ctx| Ok(crate::blocking(ThreadSelect::create(&SqlConfig::from(ctx)?)?)),
    },
    WorkloadDef {
        name: "sql/spawn_blocking_select_by_id",
        about: "the same blocking call through tokio spawn_blocking, awaited",
        params: PARAMS,
        hidden: false,
        setup: |ctx| Ok(crate::asynchronous(SpawnBlockingSelect::create(&SqlConfig::from(ctx)?)?)),
    },
    WorkloadDef {
        name: "sql/async_select_by_id",
        about: "sqlx begin/select/commit awaited, one runtime entry per op",
        params: PARAMS,
        hidden: false,
        setup: |ctx| Ok(crate::blocking(AsyncSelect::create(&SqlConfig::from(ctx)?)?)),
    },
];

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// An embedded SQLite database.
    Sqlite(sqlite::Storage),
    /// A PostgreSQL server.
    Postgres,
}

/// A SQL case's settings.
#[derive(Debug, Clone)]
pub struct SqlConfig {
    /// Backend.
    pub backend: Backend,
    /// Rows to seed.
    pub row_count: usize,
    /// Pool size.
    pub pool_size: u32,
    /// PostgreSQL URL.
    pub database_url: String,
}

impl SqlConfig {
    /// Reads the params of a case.
    pub fn from(ctx: &SetupContext) -> anyhow::Result<SqlConfig> {
        let backend = match ctx.params.get("db")? {
            "postgres" => Backend::Postgres,
            "sqlite_file" => Backend::Sqlite(sqlite::Storage::File),
            _ => Backend::Sqlite(sqlite::Storage::Memory),
        };
        Ok(SqlConfig {
            backend,
            row_count: ctx.params.count("row_count")?,
            pool_size: u32::try_from(ctx.params.count("pool_size")?)?,
            database_url: ctx.database_url.clone(),
        })
    }
}

/// A seeded table on either backend, with a pool of blocking connections.
pub enum SyncDb {
    /// SQLite.
    Sqlite(sqlite::SqliteDb),
    /// PostgreSQL.
    Postgres(postgres::PgDb),
}

impl SyncDb {
    /// Creates and seeds the table and opens the pool.
    pub fn create(cfg: &SqlConfig) -> anyhow::Result<SyncDb> {
        Ok(match cfg.backend {
            Backend::Sqlite(storage) => {
                SyncDb::Sqlite(sqlite::SqliteDb::create(storage, cfg.row_count, cfg.pool_size)?)
            }
            Backend::Postgres => {
                SyncDb::Postgres(postgres::PgDb::create(&cfg.database_url, cfg.row_count, cfg.pool_size)?)
            }
        })
    }

    /// One op: check a connection out of the pool and run the select-by-id transaction.
    pub fn select_by_id(&self, id: i64) -> anyhow::Result<i64> {
        Ok(match self {
            SyncDb::Sqlite(db) => sqlite::select_in_tx(&mut *db.pool.get()?, id)?,
            SyncDb::Postgres(db) => postgres::select_in_tx(&mut *db.pool.get()?, id)?,
        })
    }

    /// Every seeded id, ascending.
    pub fn ids(&self) -> anyhow::Result<Vec<i64>> {
        self.query_ids("SELECT id FROM benchmark_users ORDER BY id")
    }

    /// Runs a query returning one integer column.
    pub fn query_ids(&self, sql: &str) -> anyhow::Result<Vec<i64>> {
        Ok(match self {
            SyncDb::Sqlite(db) => {
                let conn = db.pool.get()?;
                let mut stmt = conn.borrow_owner().prepare(sql)?;
                stmt.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?
            }
            SyncDb::Postgres(db) => db.pool.get()?.client.query(sql, &[])?.iter().map(|r| r.get(0)).collect(),
        })
    }

    /// Runs statements in one transaction, committed or rolled back.
    pub fn execute_in_tx(&self, sql: &str, commit: bool) -> anyhow::Result<()> {
        match self {
            SyncDb::Sqlite(db) => {
                let conn = db.pool.get()?;
                let tx = conn.borrow_owner().unchecked_transaction()?;
                tx.execute_batch(sql)?;
                if commit { tx.commit()? } else { tx.rollback()? }
            }
            SyncDb::Postgres(db) => {
                let mut conn = db.pool.get()?;
                let mut tx = conn.client.transaction()?;
                tx.batch_execute(sql)?;
                if commit { tx.commit()? } else { tx.rollback()? }
            }
        }
        Ok(())
    }

    /// Drops what setup created (the SQLite file goes with the fixture).
    pub fn teardown(&self) -> anyhow::Result<()> {
        match self {
            SyncDb::Sqlite(_) => Ok(()),
            SyncDb::Postgres(db) => db.drop_schema().context("cannot drop the fork's schema"),
        }
    }
}

/// The correctness check shared by the shapes: the table holds exactly `row_count` rows with the
/// seeded values, a sample of seeded ids (first, last and evenly spaced, at most ~200) each count
/// one row through `select`, and an absent id counts none.
pub fn check(
    db: &SyncDb,
    row_count: usize,
    ids: &[i64],
    mut select: impl FnMut(i64) -> anyhow::Result<i64>,
) -> anyhow::Result<()> {
    let rows = db.query_ids("SELECT COUNT(*) FROM benchmark_users")?;
    anyhow::ensure!(rows == [row_count as i64], "table holds {rows:?} rows, expected row_count = {row_count}");
    let bad = db.query_ids(
        "SELECT COUNT(*) FROM benchmark_users WHERE username <> 'user-' || id OR email <> 'user-' || id || '@example.test' OR age <> 20 + id % 50",
    )?;
    anyhow::ensure!(bad == [0], "{} rows do not hold their seeded values", bad.first().copied().unwrap_or(-1));
    let step = (ids.len() / 200).max(1);
    for &id in ids.iter().step_by(step).chain(ids.last()) {
        let n = select(id)?;
        anyhow::ensure!(n == 1, "select of seeded id {id} counted {n} rows, expected 1");
    }
    let absent = ids.last().copied().unwrap_or(0) + 1;
    let n = select(absent)?;
    anyhow::ensure!(n == 0, "select of absent id {absent} counted {n} rows, expected 0");
    Ok(())
}

/// A measuring thread's position in the round-robin over the seeded ids.
#[derive(Debug, Clone, Copy)]
pub struct Cursor(usize);

impl Cursor {
    /// Thread `thread` starts at a different place so threads do not march in step.
    pub fn new(thread: usize, len: usize) -> Cursor {
        Cursor(thread.wrapping_mul(7919) % len.max(1))
    }

    /// The next id.
    #[inline]
    pub fn next(&mut self, ids: &[i64]) -> i64 {
        let id = ids[self.0];
        self.0 += 1;
        if self.0 == ids.len() {
            self.0 = 0;
        }
        id
    }
}
