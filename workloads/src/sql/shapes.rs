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
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        self.db.tally_with_statements()
    }
}

/// `sql/held_connection_select_by_id`: [`ThreadSelect`]'s transaction on a connection the
/// measuring thread checked out once for the fork: the pool's checkout and return per op are
/// the difference between the two.
pub struct HeldSelect(pub ThreadSelect);

/// A measuring thread's place in the ids and the connection it holds.
pub struct HeldLocal {
    cursor: Cursor,
    conn: super::HeldConn,
}

impl Workload for HeldSelect {
    /// As [`ThreadSelect`].
    fn deterministic(&self) -> bool {
        self.0.deterministic()
    }
    type Local = HeldLocal;
    type Output = i64;
    fn local(&self, thread: usize) -> anyhow::Result<HeldLocal> {
        let conn = self.0.db.checkout().map_err(|e| {
            e.context(format!("thread {thread} cannot hold a pooled connection: is pool_size smaller than --threads?"))
        })?;
        Ok(HeldLocal { cursor: Cursor::new(thread, self.0.ids.len()), conn })
    }
    fn op(&self, local: &mut HeldLocal) -> i64 {
        let id = local.cursor.next(&self.0.ids);
        local
            .conn
            .select_by_id(id)
            .unwrap_or_else(|e| self.0.db.backend().op_failed(format_args!("select of id {id} failed: {e:#}")))
    }
    fn verify(&self, phase: Phase) -> anyhow::Result<()> {
        self.0.verify(phase)
    }
    fn teardown(&self) -> anyhow::Result<()> {
        Workload::teardown(&self.0)
    }
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        Workload::tally(&self.0)
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
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        self.db.tally_with_statements()
    }
}

/// How long the sqlx PostgreSQL pool may take to open its connections.
const PG_POOL_TIMEOUT: Duration = Duration::from_secs(60);

/// An sqlx pool on either backend.
pub enum AsyncDb {
    /// SQLite (sqlx runs each connection on a worker thread of its own).
    Sqlite(sqlx::SqlitePool),
    /// PostgreSQL.
    Postgres(sqlx::PgPool),
}

macro_rules! select_in_tx {
    ($conn:expr, $id:expr) => {{
        let mut tx = sqlx::Connection::begin(&mut **$conn).await?;
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
                    // No ping before handing a connection out: the op pays the same three round
                    // trips (begin, select, commit) as the blocking shapes.
                    .test_before_acquire(false)
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
                    // No ping before handing a connection out: the op pays the same three round
                    // trips (begin, select, commit) as the blocking shapes.
                    .test_before_acquire(false)
                    .min_connections(cfg.db.pool_size)
                    // The pool opens all its connections at once, and over TLS under callgrind each
                    // handshake takes about a second: 5 s failed an instruction fork. A server that
                    // does not answer is found by the parent's probe, and the fork timeout bounds all.
                    .acquire_timeout(PG_POOL_TIMEOUT)
                    .connect_with(options)
                    .await
                    .map_err(|e| unreachable(&cfg.db.database_url, e))?;
                AsyncDb::Postgres(pool)
            }
        })
    }

    /// A connection of the pool, held until dropped.
    pub async fn acquire(&self) -> anyhow::Result<AsyncConn> {
        Ok(match self {
            AsyncDb::Sqlite(pool) => AsyncConn::Sqlite(pool.acquire().await?),
            AsyncDb::Postgres(pool) => AsyncConn::Postgres(pool.acquire().await?),
        })
    }

    /// `begin`, the count of one id, `commit` on a connection checked out for this call only
    /// (sqlx pings a connection when it goes back to the pool: one more round trip).
    pub async fn select_by_id(&self, id: i64) -> anyhow::Result<i64> {
        self.acquire().await?.select_by_id(id).await
    }

    /// Makes every PostgreSQL connection of the pool flush the statistics it holds back.
    pub async fn flush_stats(&self) -> anyhow::Result<()> {
        if let AsyncDb::Postgres(pool) = self {
            let mut held = Vec::new();
            for _ in 0..pool.size() {
                held.push(pool.acquire().await?);
            }
            for conn in &mut held {
                sqlx::query(crate::db::postgres::FLUSH_STATS).execute(&mut **conn).await?;
            }
        }
        Ok(())
    }

    /// Closes every connection.
    pub async fn close(&self) {
        match self {
            AsyncDb::Sqlite(pool) => pool.close().await,
            AsyncDb::Postgres(pool) => pool.close().await,
        }
    }
}

/// A pooled sqlx connection held by one measuring task.
pub enum AsyncConn {
    /// SQLite.
    Sqlite(sqlx::pool::PoolConnection<sqlx::Sqlite>),
    /// PostgreSQL.
    Postgres(sqlx::pool::PoolConnection<sqlx::Postgres>),
}

impl AsyncConn {
    /// One op: `begin`, the count of one id, `commit`, each awaited: three round trips.
    pub async fn select_by_id(&mut self, id: i64) -> anyhow::Result<i64> {
        match self {
            AsyncConn::Sqlite(conn) => select_in_tx!(conn, id),
            AsyncConn::Postgres(conn) => select_in_tx!(conn, id),
        }
    }
}

/// What one measuring task of [`AsyncSelect`] owns: its place in the ids and its connection.
pub struct AsyncLocal {
    cursor: Cursor,
    conn: Option<AsyncConn>,
    /// sqlx returns a dropped connection to its pool from a task: dropped in the runtime.
    runtime: tokio::runtime::Handle,
}

impl Drop for AsyncLocal {
    fn drop(&mut self) {
        let _inside = self.runtime.enter();
        self.conn.take();
    }
}

/// `sql/async_select_by_id`: sqlx, awaited on the workload's runtime (one runtime entry per
/// batch; `--threads N` runs N tasks). Each task holds one pooled connection for the whole
/// fork: checking one out per op would add sqlx's release ping, a fourth round trip the
/// blocking shapes do not pay.
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
    type Local = AsyncLocal;
    type Output = i64;
    fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.runtime
    }
    fn local(&self, task: usize) -> anyhow::Result<AsyncLocal> {
        let conn = self.runtime.block_on(self.pool.acquire()).map_err(|e| {
            e.context(format!("task {task} cannot hold a pooled connection: is pool_size smaller than --threads?"))
        })?;
        Ok(AsyncLocal {
            cursor: Cursor::new(task, self.ids.len()),
            conn: Some(conn),
            runtime: self.runtime.handle().clone(),
        })
    }
    async fn op(&self, local: &mut AsyncLocal) -> i64 {
        let id = local.cursor.next(&self.ids);
        let conn = local.conn.as_mut().expect("held until the local state is dropped");
        conn.select_by_id(id)
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
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        self.runtime.block_on(self.pool.flush_stats())?;
        self.fixture.tally()
    }
}
