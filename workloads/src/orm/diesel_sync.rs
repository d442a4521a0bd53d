//! Diesel (sync) on an r2d2 pool: the thread and spawn_blocking shapes.

use super::{benchmark_users as users, diesel_url, session_setup};
use crate::sql::{Cursor, SqlConfig, UsersDb, check};
use crate::{AsyncWorkload, Phase, Workload};
use anyhow::Context;
use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::r2d2::{ConnectionManager, CustomizeConnection, Pool};
use std::sync::Arc;
use std::time::Duration;

/// Runs the session's setup statement on every connection the pool opens.
#[derive(Debug)]
struct SessionSetup(String);

impl<C: SimpleConnection + Send + 'static> CustomizeConnection<C, diesel::r2d2::Error> for SessionSetup {
    fn on_acquire(&self, conn: &mut C) -> Result<(), diesel::r2d2::Error> {
        conn.batch_execute(&self.0).map_err(diesel::r2d2::Error::QueryError)
    }
}

/// A Diesel r2d2 pool on either backend.
pub enum DieselPool {
    /// SQLite.
    Sqlite(Pool<ConnectionManager<SqliteConnection>>),
    /// PostgreSQL (libpq).
    Postgres(Pool<ConnectionManager<PgConnection>>),
}

/// One op in Diesel's words: `transaction { filter(id).select(id).first().optional() }`.
macro_rules! diesel_select_in_tx {
    ($conn:expr, $id:expr) => {
        $conn.transaction::<i64, diesel::result::Error, _>(|c| {
            let found = users::table.filter(users::id.eq($id)).select(users::id).first::<i64>(c).optional()?;
            Ok(i64::from(found.is_some()))
        })
    };
}

fn pool_of<C: diesel::r2d2::R2D2Connection + 'static>(
    url: &str,
    size: u32,
    setup: String,
) -> Result<Pool<ConnectionManager<C>>, diesel::r2d2::PoolError> {
    crate::db::pool_builder(size, Duration::from_secs(5))
        .connection_customizer(Box::new(SessionSetup(setup)))
        .build(ConnectionManager::<C>::new(url))
}

impl DieselPool {
    /// Opens a pool of the case's size on the fixture's database.
    pub fn open(fixture: &UsersDb, cfg: &SqlConfig) -> anyhow::Result<DieselPool> {
        DieselPool::open_on(fixture, &cfg.db.database_url, cfg.db.pool_size)
    }

    /// Opens a pool of `size` connections on `db` (`database_url` for PostgreSQL).
    pub fn open_on(db: &crate::db::Db, database_url: &str, size: u32) -> anyhow::Result<DieselPool> {
        let (url, setup) = (diesel_url(db, database_url), session_setup(db));
        Ok(match db {
            crate::db::Db::Sqlite(_) => {
                DieselPool::Sqlite(pool_of(&url, size, setup).context("cannot open the Diesel SQLite pool")?)
            }
            crate::db::Db::Postgres(_) => DieselPool::Postgres(
                pool_of(&url, size, setup).map_err(|e| crate::db::postgres::unreachable(database_url, e))?,
            ),
        })
    }

    /// One op: check a connection out of the pool and run the transaction.
    pub fn select_by_id(&self, id: i64) -> anyhow::Result<i64> {
        Ok(match self {
            DieselPool::Sqlite(pool) => diesel_select_in_tx!(pool.get()?, id)?,
            DieselPool::Postgres(pool) => diesel_select_in_tx!(pool.get()?, id)?,
        })
    }
}

impl DieselPool {
    /// Makes every PostgreSQL connection of the pool flush the statistics it holds back.
    pub fn flush_stats(&self) -> anyhow::Result<()> {
        if let DieselPool::Postgres(pool) = self {
            let held = crate::db::hold_all(pool)?;
            for mut conn in held {
                conn.batch_execute(crate::db::postgres::FLUSH_STATS)?;
            }
        }
        Ok(())
    }
}

/// The seeded table (raw driver, for seeding and the checks' table scans) with a Diesel pool.
struct Fixture {
    users: UsersDb,
    diesel: DieselPool,
    ids: Vec<i64>,
    row_count: usize,
}

impl Fixture {
    fn create(cfg: &SqlConfig) -> anyhow::Result<Fixture> {
        let seed_cfg = SqlConfig { db: crate::db::DbConfig { pool_size: 1, ..cfg.db.clone() }, ..cfg.clone() };
        let users = UsersDb::create(&seed_cfg)?;
        let opened = users.ids().and_then(|ids| Ok((ids, DieselPool::open(&users, cfg)?)));
        match opened {
            Ok((ids, diesel)) => Ok(Fixture { users, diesel, ids, row_count: cfg.row_count }),
            Err(e) => {
                let _ = users.teardown();
                Err(e)
            }
        }
    }

    /// PostgreSQL's counts of the ops' work, both pools flushed.
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        self.diesel.flush_stats()?;
        self.users.tally()
    }

    /// The `sql` group's check, each select made through the shape's `select`.
    fn verify(&self, select: impl FnMut(i64) -> anyhow::Result<i64>) -> anyhow::Result<()> {
        check(&self.users, self.row_count, &self.ids, select)
    }
}

/// `orm/diesel_thread_select_by_id`.
pub struct DieselThreadSelect(Fixture);

impl DieselThreadSelect {
    /// Seeds the table and opens the Diesel pool.
    pub fn create(cfg: &SqlConfig) -> anyhow::Result<DieselThreadSelect> {
        Fixture::create(cfg).map(DieselThreadSelect)
    }

    /// One transaction for `id`, as the op runs it.
    pub fn select(&self, id: i64) -> anyhow::Result<i64> {
        self.0.diesel.select_by_id(id)
    }

    /// The seeded table.
    pub fn fixture(&self) -> &UsersDb {
        &self.0.users
    }
}

impl Workload for DieselThreadSelect {
    /// SQLite on the calling thread is; a PostgreSQL server is not.
    fn deterministic(&self) -> bool {
        matches!(self.0.diesel, DieselPool::Sqlite(_))
    }
    type Local = Cursor;
    type Output = i64;
    fn local(&self, thread: usize) -> anyhow::Result<Cursor> {
        Ok(Cursor::new(thread, self.0.ids.len()))
    }
    fn op(&self, cursor: &mut Cursor) -> i64 {
        let id = cursor.next(&self.0.ids);
        self.select(id).unwrap_or_else(|e| {
            self.0.users.backend().op_failed(format_args!("Diesel select of id {id} failed: {e:#}"))
        })
    }
    fn verify(&self, _: Phase) -> anyhow::Result<()> {
        self.0.verify(|id| self.select(id))
    }
    fn teardown(&self) -> anyhow::Result<()> {
        self.0.users.teardown()
    }
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        self.0.tally()
    }
}

/// `orm/diesel_spawn_blocking_select_by_id`.
pub struct DieselSpawnBlockingSelect {
    fixture: Arc<Fixture>,
    runtime: tokio::runtime::Runtime,
}

impl DieselSpawnBlockingSelect {
    /// Seeds the table, opens the Diesel pool and the runtime.
    pub fn create(cfg: &SqlConfig) -> anyhow::Result<DieselSpawnBlockingSelect> {
        Ok(DieselSpawnBlockingSelect {
            fixture: Arc::new(Fixture::create(cfg)?),
            runtime: crate::current_thread_runtime()?,
        })
    }

    async fn dispatch(&self, id: i64) -> anyhow::Result<i64> {
        let fixture = Arc::clone(&self.fixture);
        tokio::task::spawn_blocking(move || fixture.diesel.select_by_id(id)).await.context("blocking task failed")?
    }

    /// One transaction for `id`, as the op runs it.
    pub fn select(&self, id: i64) -> anyhow::Result<i64> {
        self.runtime.block_on(self.dispatch(id))
    }

    /// The seeded table.
    pub fn fixture(&self) -> &UsersDb {
        &self.fixture.users
    }
}

impl AsyncWorkload for DieselSpawnBlockingSelect {
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
        Ok(Cursor::new(task, self.fixture.ids.len()))
    }
    async fn op(&self, cursor: &mut Cursor) -> i64 {
        let id = cursor.next(&self.fixture.ids);
        self.dispatch(id).await.unwrap_or_else(|e| {
            self.fixture.users.backend().op_failed(format_args!("Diesel select of id {id} failed: {e:#}"))
        })
    }
    fn verify(&self, _: Phase) -> anyhow::Result<()> {
        self.fixture.verify(|id| self.select(id))
    }
    fn teardown(&self) -> anyhow::Result<()> {
        self.fixture.users.teardown()
    }
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        self.fixture.tally()
    }
}
