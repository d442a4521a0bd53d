//! The three execution shapes of the select-by-id transaction.

use super::{Cursor, SELECT_BY_ID, SqlConfig, UsersDb, check};
use crate::db::{Backend, Db, Storage, postgres::unreachable};
use crate::{AsyncWorkload, Phase, Workload};
use anyhow::Context;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// `sql/thread_select_by_id`: the blocking driver on the measuring thread.
pub struct ThreadSelect {
    db: UsersDb,
    ids: Vec<i64>,
    row_count: usize,
}

impl ThreadSelect {
    /// Seeds the table and opens the pool.
    pub fn create(cfg: &SqlConfig) -> anyhow::Result<ThreadSelect> {
        let db = UsersDb::create(cfg)?;
        let ids = db.ids()?;
        Ok(ThreadSelect { db, ids, row_count: cfg.row_count })
    }

    /// One transaction for `id`, as the op runs it.
    pub fn select(&self, id: i64) -> anyhow::Result<i64> {
        self.db.select_by_id(id)
    }

    /// The seeded table.
    pub fn fixture(&self) -> &UsersDb {
        &self.db
    }

    /// The seeded ids.
    pub fn ids(&self) -> &[i64] {
        &self.ids
    }
}

impl Workload for ThreadSelect {
    /// SQLite on the calling thread is; a PostgreSQL server is not.
    fn deterministic(&self) -> bool {
        matches!(self.db.backend(), Backend::Sqlite(_))
    }
    type Local = Cursor;
    type Output = i64;
    fn local(&self, thread: usize) -> anyhow::Result<Cursor> {
        Ok(Cursor::new(thread, self.ids.len()))
    }
    fn op(&self, cursor: &mut Cursor) -> i64 {
        let id = cursor.next(&self.ids);
        self.db
            .select_by_id(id)
            .unwrap_or_else(|e| self.db.backend().op_failed(format_args!("select of id {id} failed: {e:#}")))
    }
    fn verify(&self, _: Phase) -> anyhow::Result<()> {
        check(&self.db, self.row_count, &self.ids, |id| self.select(id))
    }
    fn teardown(&self) -> anyhow::Result<()> {
        self.db.teardown()
    }
}

/// `sql/spawn_blocking_select_by_id`: the same blocking call on tokio's blocking pool, awaited.
pub struct SpawnBlockingSelect {
    db: Arc<UsersDb>,
    ids: Vec<i64>,
    row_count: usize,
    runtime: tokio::runtime::Runtime,
}

impl SpawnBlockingSelect {
    /// Seeds the table, opens the pool and the runtime.
    pub fn create(cfg: &SqlConfig) -> anyhow::Result<SpawnBlockingSelect> {
        let db = UsersDb::create(cfg)?;
        let ids = db.ids()?;
        Ok(SpawnBlockingSelect {
            db: Arc::new(db),
            ids,
            row_count: cfg.row_count,
            runtime: crate::current_thread_runtime()?,
        })
    }

    async fn dispatch(&self, id: i64) -> anyhow::Result<i64> {
        let db = Arc::clone(&self.db);
        tokio::task::spawn_blocking(move || db.select_by_id(id)).await.context("blocking task failed")?
    }

    /// One transaction for `id`, as the op runs it.
    pub fn select(&self, id: i64) -> anyhow::Result<i64> {
        self.runtime.block_on(self.dispatch(id))
    }

    /// The seeded table.
    pub fn fixture(&self) -> &UsersDb {
        &self.db
    }
}

impl AsyncWorkload for SpawnBlockingSelect {
    /// Hands work to the blocking pool's threads.
    fn deterministic(&self) -> bool {
        false
    }
    type Local = Cursor;
    type Output = i64;
    fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.runtime
    }
    fn local(&self, task: usize) -> anyhow::Result<Cursor> {
        Ok(Cursor::new(task, self.ids.len()))
    }
    async fn op(&self, cursor: &mut Cursor) -> i64 {
        let id = cursor.next(&self.ids);
        self.dispatch(id)
            .await
            .unwrap_or_else(|e| self.db.backend().op_failed(format_args!("select of id {id} failed: {e:#}")))
    }
    fn verify(&self, _: Phase) -> anyhow::Result<()> {
        check(&self.db, self.row_count, &self.ids, |id| self.select(id))
    }
    fn teardown(&self) -> anyhow::Result<()> {
        self.db.teardown()
    }
}

/// An sqlx pool on either backend.
pub enum AsyncDb {
    /// SQLite (sqlx runs each connection on a worker thread of its own).
    Sqlite(sqlx::SqlitePool),
    /// PostgreSQL.
    Postgres(sqlx::PgPool),
}

macro_rules! select_in_tx {
    ($pool:expr, $id:expr) => {{
        let mut tx = $pool.begin().await?;
        let n: i64 = sqlx::query_scalar(SELECT_BY_ID).bind($id).fetch_one(&mut *tx).await?;
        tx.commit().await?;
        Ok(n)
    }};
}

impl AsyncDb {
    /// Opens a pool of `size` connections to the fixture's database.
    pub async fn open(db: &Db, cfg: &SqlConfig) -> anyhow::Result<AsyncDb> {
        let timeout = Duration::from_secs(5);
        Ok(match db {
            Db::Sqlite(db) => {
                let options = sqlx::sqlite::SqliteConnectOptions::new().filename(db.path()).busy_timeout(timeout);
                let options = match db.storage() {
                    Storage::Memory => options.vfs("memdb"),
                    Storage::File => options.journal_mode(sqlx::sqlite::SqliteJournalMode::Wal),
                };
                let pool = sqlx::sqlite::SqlitePoolOptions::new()
                    .max_connections(cfg.db.pool_size)
                    .min_connections(cfg.db.pool_size)
                    .acquire_timeout(timeout)
                    .connect_with(options)
                    .await
                    .context("cannot open the sqlx SQLite pool")?;
                AsyncDb::Sqlite(pool)
            }
            Db::Postgres(pg) => {
                let options = sqlx::postgres::PgConnectOptions::from_str(&cfg.db.database_url)
                    .map_err(|e| unreachable(&cfg.db.database_url, e))?
                    .options([("search_path", pg.schema.as_str())]);
                let pool = sqlx::postgres::PgPoolOptions::new()
                    .max_connections(cfg.db.pool_size)
                    .min_connections(cfg.db.pool_size)
                    .acquire_timeout(timeout)
                    .connect_with(options)
                    .await
                    .map_err(|e| unreachable(&cfg.db.database_url, e))?;
                AsyncDb::Postgres(pool)
            }
        })
    }

    /// One op: `begin`, the count of one id, `commit`, each awaited.
    pub async fn select_by_id(&self, id: i64) -> anyhow::Result<i64> {
        match self {
            AsyncDb::Sqlite(pool) => select_in_tx!(pool, id),
            AsyncDb::Postgres(pool) => select_in_tx!(pool, id),
        }
    }

    /// Closes every connection.
    pub async fn close(&self) {
        match self {
            AsyncDb::Sqlite(pool) => pool.close().await,
            AsyncDb::Postgres(pool) => pool.close().await,
        }
    }
}

/// `sql/async_select_by_id`: sqlx, awaited on the workload's runtime (one runtime entry per
/// batch; `--threads N` runs N tasks).
pub struct AsyncSelect {
    fixture: UsersDb,
    pool: AsyncDb,
    ids: Vec<i64>,
    row_count: usize,
    runtime: tokio::runtime::Runtime,
}

impl AsyncSelect {
    /// Seeds the table (blocking driver) and opens the sqlx pool.
    pub fn create(cfg: &SqlConfig) -> anyhow::Result<AsyncSelect> {
        // The blocking pool only seeds and checks; one connection is enough.
        let fixture =
            UsersDb::create(&SqlConfig { db: crate::db::DbConfig { pool_size: 1, ..cfg.db.clone() }, ..cfg.clone() })?;
        let ids = fixture.ids()?;
        let runtime = crate::current_thread_runtime()?;
        let pool = runtime.block_on(AsyncDb::open(&fixture.0, cfg));
        let pool = match pool {
            Ok(p) => p,
            Err(e) => {
                let _ = fixture.teardown();
                return Err(e);
            }
        };
        Ok(AsyncSelect { fixture, pool, ids, row_count: cfg.row_count, runtime })
    }

    /// One transaction for `id`, as the op runs it.
    pub fn select(&self, id: i64) -> anyhow::Result<i64> {
        self.runtime.block_on(self.pool.select_by_id(id))
    }

    /// The seeded table.
    pub fn fixture(&self) -> &UsersDb {
        &self.fixture
    }
}

impl AsyncWorkload for AsyncSelect {
    /// sqlx runs SQLite connections on threads of their own, PostgreSQL over the network.
    fn deterministic(&self) -> bool {
        false
    }
    type Local = Cursor;
    type Output = i64;
    fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.runtime
    }
    fn local(&self, task: usize) -> anyhow::Result<Cursor> {
        Ok(Cursor::new(task, self.ids.len()))
    }
    async fn op(&self, cursor: &mut Cursor) -> i64 {
        let id = cursor.next(&self.ids);
        self.pool
            .select_by_id(id)
            .await
            .unwrap_or_else(|e| self.fixture.backend().op_failed(format_args!("select of id {id} failed: {e:#}")))
    }
    fn verify(&self, _: Phase) -> anyhow::Result<()> {
        check(&self.fixture, self.row_count, &self.ids, |id| self.select(id))
    }
    fn teardown(&self) -> anyhow::Result<()> {
        self.runtime.block_on(self.pool.close());
        self.fixture.teardown()
    }
}
