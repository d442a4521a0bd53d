//! diesel-async: the async shape, one connection held per measuring task, as its raw twin
//! `sql/async_select_by_id` holds one pooled sqlx connection.

use super::{benchmark_users as users, diesel_url, session_setup};
use crate::sql::{Cursor, SqlConfig, UsersDb, check};
use crate::{AsyncWorkload, Phase};
use diesel::prelude::*;
use diesel_async::pg::AsyncPgConnection;
use diesel_async::sync_connection_wrapper::SyncConnectionWrapper;
use diesel_async::{AsyncConnection, RunQueryDsl, SimpleAsyncConnection};
use std::sync::{Arc, Mutex};

/// A diesel-async connection on either backend.
pub enum DieselAsyncConn {
    /// SQLite, each query run on tokio's blocking pool by diesel-async's wrapper.
    Sqlite(SyncConnectionWrapper<SqliteConnection>),
    /// PostgreSQL through tokio-postgres (boxed: five times the SQLite wrapper's size).
    Postgres(Box<AsyncPgConnection>),
}

/// One op in diesel-async's words, the same DSL query as the sync twin's.
macro_rules! diesel_async_select_in_tx {
    ($conn:expr, $id:expr) => {
        $conn
            .transaction::<i64, diesel::result::Error, _>(async |c| {
                let found =
                    users::table.filter(users::id.eq($id)).select(users::id).first::<i64>(c).await.optional()?;
                Ok(i64::from(found.is_some()))
            })
            .await
    };
}

impl DieselAsyncConn {
    /// Opens a connection to the fixture's database, pointed at the fork's schema.
    pub async fn open(fixture: &UsersDb, cfg: &SqlConfig) -> anyhow::Result<DieselAsyncConn> {
        let (url, setup) = (diesel_url(fixture, &cfg.db.database_url), session_setup(fixture));
        Ok(match &fixture.0 {
            crate::db::Db::Sqlite(_) => {
                let mut conn = SyncConnectionWrapper::<SqliteConnection>::establish(&url).await?;
                conn.batch_execute(&setup).await?;
                DieselAsyncConn::Sqlite(conn)
            }
            crate::db::Db::Postgres(_) => {
                let mut conn =
                    connect_pg(&url).await.map_err(|e| crate::db::postgres::unreachable(&cfg.db.database_url, e))?;
                conn.batch_execute(&setup).await?;
                DieselAsyncConn::Postgres(Box::new(conn))
            }
        })
    }

    /// One op: `BEGIN`, the DSL query, `COMMIT`, each awaited.
    pub async fn select_by_id(&mut self, id: i64) -> anyhow::Result<i64> {
        Ok(match self {
            DieselAsyncConn::Sqlite(conn) => diesel_async_select_in_tx!(conn, id)?,
            DieselAsyncConn::Postgres(conn) => diesel_async_select_in_tx!(conn, id)?,
        })
    }
}

/// `AsyncPgConnection::establish` with the OpenSSL connector instead of its `NoTls`, so that
/// the URL's `sslmode` decides the transport, as it does for every other driver.
async fn connect_pg(url: &str) -> anyhow::Result<AsyncPgConnection> {
    let (client, connection) = tokio_postgres::connect(url, crate::db::transport::connector()).await?;
    Ok(AsyncPgConnection::try_from_client_and_connection(client, connection).await?)
}

/// The connections not in a task's hands: a task takes one for the fork and puts it back when
/// its local state is dropped, so that the checks and the server's counts reach every one.
type Shelf = Arc<Mutex<Vec<DieselAsyncConn>>>;

/// What one measuring task owns: its place in the ids and its connection.
pub struct DieselAsyncLocal {
    cursor: Cursor,
    conn: Option<DieselAsyncConn>,
    shelf: Shelf,
}

impl Drop for DieselAsyncLocal {
    fn drop(&mut self) {
        if let (Some(conn), Ok(mut shelf)) = (self.conn.take(), self.shelf.lock()) {
            shelf.push(conn);
        }
    }
}

/// `orm/diesel_async_select_by_id`.
pub struct DieselAsyncSelect {
    users: UsersDb,
    cfg: SqlConfig,
    ids: Vec<i64>,
    shelf: Shelf,
    runtime: tokio::runtime::Runtime,
}

impl DieselAsyncSelect {
    /// Seeds the table (blocking driver), opens the runtime and a first connection.
    pub fn create(cfg: &SqlConfig) -> anyhow::Result<DieselAsyncSelect> {
        let seed_cfg = SqlConfig { db: crate::db::DbConfig { pool_size: 1, ..cfg.db.clone() }, ..cfg.clone() };
        let users = UsersDb::create(&seed_cfg)?;
        let runtime = crate::current_thread_runtime()?;
        let opened = users.ids().and_then(|ids| Ok((ids, runtime.block_on(DieselAsyncConn::open(&users, cfg))?)));
        match opened {
            Ok((ids, first)) => Ok(DieselAsyncSelect {
                users,
                cfg: cfg.clone(),
                ids,
                shelf: Arc::new(Mutex::new(vec![first])),
                runtime,
            }),
            Err(e) => {
                let _ = users.teardown();
                Err(e)
            }
        }
    }

    /// A connection off the shelf, or a new one.
    fn take(&self) -> anyhow::Result<DieselAsyncConn> {
        let spare = self.shelf.lock().map_err(|_| anyhow::anyhow!("connection shelf poisoned"))?.pop();
        match spare {
            Some(conn) => Ok(conn),
            None => self.runtime.block_on(DieselAsyncConn::open(&self.users, &self.cfg)),
        }
    }

    /// One transaction for `id`, as the op runs it, on a connection off the shelf.
    pub fn select(&self, id: i64) -> anyhow::Result<i64> {
        let mut conn = self.take()?;
        let n = self.runtime.block_on(conn.select_by_id(id));
        self.shelf.lock().map_err(|_| anyhow::anyhow!("connection shelf poisoned"))?.push(conn);
        n
    }

    /// The seeded table.
    pub fn fixture(&self) -> &UsersDb {
        &self.users
    }
}

impl AsyncWorkload for DieselAsyncSelect {
    /// A server, or SQLite on tokio's blocking pool.
    fn deterministic(&self) -> bool {
        false
    }
    type Local = DieselAsyncLocal;
    type Output = i64;
    fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.runtime
    }
    fn local(&self, task: usize) -> anyhow::Result<DieselAsyncLocal> {
        Ok(DieselAsyncLocal {
            cursor: Cursor::new(task, self.ids.len()),
            conn: Some(self.take()?),
            shelf: Arc::clone(&self.shelf),
        })
    }
    async fn op(&self, local: &mut DieselAsyncLocal) -> i64 {
        let id = local.cursor.next(&self.ids);
        let conn = local.conn.as_mut().expect("held until the local state is dropped");
        conn.select_by_id(id).await.unwrap_or_else(|e| {
            self.users.backend().op_failed(format_args!("diesel-async select of id {id} failed: {e:#}"))
        })
    }
    fn verify(&self, _: Phase) -> anyhow::Result<()> {
        check(&self.users, self.cfg.row_count, &self.ids, |id| self.select(id))
    }
    fn teardown(&self) -> anyhow::Result<()> {
        self.users.teardown()
    }
    /// Every connection is on the shelf again: each flushes its statistics first.
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        let mut shelf = self.shelf.lock().map_err(|_| anyhow::anyhow!("connection shelf poisoned"))?;
        for conn in shelf.iter_mut() {
            if let DieselAsyncConn::Postgres(pg) = conn {
                self.runtime.block_on(pg.batch_execute(crate::db::postgres::FLUSH_STATS))?;
            }
        }
        drop(shelf);
        self.users.tally()
    }
}
