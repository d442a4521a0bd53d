//! The SQL backends shared by the `sql` and `ids` workloads: embedded SQLite (default) and a
//! real PostgreSQL server, each as a pool of connections set up once per fork, every connection
//! holding its workload's statements prepared.

pub mod postgres;
pub mod sqlite;
pub mod sqlite_alloc;
pub mod sqlite_trace;
pub mod stale;
pub mod transport;

pub use sqlite::Storage;

use crate::SetupContext;
use crate::params::{ParamKind, ParamSpec};
use anyhow::Context;

/// The builder of every pool the workloads open (raw drivers and Diesel alike): `size`
/// connections, checked out untested, `connect` to wait for one, and no reaper. r2d2 reaps
/// idle and old connections from a thread of its own every 30 s after the pool opens; inside
/// an instruction fork's window that one tick added about 4,200 instructions (its lock, clock
/// reads and wakeups: `sql/held_connection_select_by_id`, one million ops), which moved
/// "exact" counts between runs of one build. A fork lasts minutes, not the ten of an idle
/// timeout.
pub fn pool_builder<M: r2d2::ManageConnection>(size: u32, connect: std::time::Duration) -> r2d2::Builder<M> {
    r2d2::Pool::builder()
        .max_size(size)
        .test_on_check_out(false)
        .connection_timeout(connect)
        .idle_timeout(None)
        .max_lifetime(None)
}

/// `db`: the backend.
pub const DB: ParamSpec = ParamSpec {
    name: "db",
    about: "sqlite (embedded, in memory), sqlite_file (embedded, WAL file), postgres (--database-url, in the clear) or postgres_tls (the same over TLS, for every driver)",
    kind: ParamKind::Choice(&["sqlite", "sqlite_file", "postgres", "postgres_tls"]),
    defaults: &["sqlite"],
};

/// The PostgreSQL server a case with `db=postgres` or `db=postgres_tls` needs, its URL carrying
/// the case's transport.
pub fn servers(ctx: &SetupContext) -> Vec<(crate::def::Server, String)> {
    match ctx.params.get("db").ok().and_then(transport::Transport::of_db) {
        Some(t) => vec![(crate::def::Server::Postgres, t.apply(&ctx.database_url))],
        None => vec![],
    }
}

/// Every connection the pool holds, checked out at once (none is handed out twice): for reading
/// or flushing what each one keeps, outside the measured ops.
pub fn hold_all<M: r2d2::ManageConnection>(
    pool: &r2d2::Pool<M>,
) -> Result<Vec<r2d2::PooledConnection<M>>, r2d2::Error> {
    (0..pool.state().connections).map(|_| pool.get()).collect()
}

/// What a worker that was killed (crash, timeout, interrupt) left behind, removed by the parent:
/// its SQLite database files, and, given the PostgreSQL URL its case used, its schemas. Returns
/// how many it removed.
pub fn remove_leftovers(worker_pid: u32, database_url: Option<&str>) -> anyhow::Result<usize> {
    let mut removed = sqlite::remove_leftovers(worker_pid);
    if let Some(url) = database_url {
        removed += postgres::drop_schemas_of(url, worker_pid)?;
    }
    Ok(removed)
}

/// What [`sweep_stale`] removed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Swept {
    /// PostgreSQL schemas dropped.
    pub schemas: usize,
    /// SQLite temp dirs removed.
    pub dirs: usize,
    /// The gone workers they belonged to.
    pub pids: std::collections::BTreeSet<u32>,
}

impl Swept {
    /// The one line that says what was removed, or `None` when nothing was.
    pub fn line(&self) -> Option<String> {
        if self.schemas + self.dirs == 0 {
            return None;
        }
        let pids: Vec<String> = self.pids.iter().map(u32::to_string).collect();
        Some(format!(
            "removed {} PostgreSQL schema(s) and {} SQLite temp dir(s) left by workers that are gone (pid {})",
            self.schemas,
            self.dirs,
            pids.join(", ")
        ))
    }
}

/// Removes the SQLite temp dirs and, given a PostgreSQL URL, the schemas whose workers are gone
/// (a killed worker cannot clean up, and the parent's cleanup can fail while a server restarts).
pub fn sweep_stale(database_url: Option<&str>) -> anyhow::Result<Swept> {
    let dirs = sqlite::remove_stale_dirs();
    let schemas = match database_url {
        Some(url) => postgres::drop_stale_schemas(url)?,
        None => vec![],
    };
    Ok(Swept { schemas: schemas.len(), dirs: dirs.len(), pids: dirs.into_iter().chain(schemas).collect() })
}

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// An embedded SQLite database.
    Sqlite(Storage),
    /// A PostgreSQL server.
    Postgres,
}

impl Backend {
    /// Ends an op that failed: a server failure on PostgreSQL (reported as such), a panic on
    /// SQLite (a bug in the workload or the library).
    pub fn op_failed(self, what: std::fmt::Arguments<'_>) -> ! {
        match self {
            Backend::Postgres => crate::server_failed(crate::Server::Postgres, what),
            Backend::Sqlite(_) => panic!("{what}"),
        }
    }
}

impl Backend {
    /// The backend a `db` param value names.
    pub fn from_param(value: &str) -> Backend {
        match value {
            "postgres" | "postgres_tls" => Backend::Postgres,
            "sqlite_file" => Backend::Sqlite(Storage::File),
            _ => Backend::Sqlite(Storage::Memory),
        }
    }
}

/// Where a case's database lives and how many connections its pool holds.
#[derive(Debug, Clone)]
pub struct DbConfig {
    /// Backend.
    pub backend: Backend,
    /// Pool size.
    pub pool_size: u32,
    /// PostgreSQL URL (may hold a password: redact before printing).
    pub database_url: String,
}

impl DbConfig {
    /// The `db` param of a case, with `pool_size` connections; on PostgreSQL the URL says the
    /// case's transport to every driver (see [`transport`]).
    pub fn from(ctx: &SetupContext, pool_size: u32) -> anyhow::Result<DbConfig> {
        let db = ctx.params.get("db")?;
        let database_url = match transport::Transport::of_db(db) {
            Some(t) => t.apply(&ctx.database_url),
            None => ctx.database_url.clone(),
        };
        Ok(DbConfig { backend: Backend::from_param(db), pool_size, database_url })
    }
}

/// The connection a setup step runs on, before the pool exists.
pub enum Init<'a> {
    /// SQLite.
    Sqlite(&'a mut rusqlite::Connection),
    /// PostgreSQL, with `search_path` set to the fork's schema.
    Postgres(&'a mut ::postgres::Client),
}

impl Init<'_> {
    /// Runs semicolon-separated statements.
    pub fn batch(&mut self, sql: &str) -> anyhow::Result<()> {
        match self {
            Init::Sqlite(c) => c.execute_batch(sql)?,
            Init::Postgres(c) => c.batch_execute(sql)?,
        }
        Ok(())
    }
}

/// A database on either backend, with its pool.
pub enum Db {
    /// SQLite.
    Sqlite(sqlite::SqliteDb),
    /// PostgreSQL.
    Postgres(postgres::PgDb),
}

impl Db {
    /// Creates the database, runs `init` (schema, seed), and opens the pool whose connections
    /// prepare `statements(backend)`.
    pub fn create(
        cfg: &DbConfig,
        statements: Vec<String>,
        init: &mut dyn FnMut(Init<'_>) -> anyhow::Result<()>,
    ) -> anyhow::Result<Db> {
        Ok(match cfg.backend {
            Backend::Sqlite(storage) => {
                Db::Sqlite(sqlite::SqliteDb::create(storage, cfg.pool_size, statements, &mut |c| {
                    init(Init::Sqlite(c))
                })?)
            }
            Backend::Postgres => {
                Db::Postgres(postgres::PgDb::create(&cfg.database_url, cfg.pool_size, statements, &mut |c| {
                    init(Init::Postgres(c))
                })?)
            }
        })
    }

    /// The backend.
    pub fn backend(&self) -> Backend {
        match self {
            Db::Sqlite(db) => Backend::Sqlite(db.storage()),
            Db::Postgres(_) => Backend::Postgres,
        }
    }

    /// Runs a query returning one integer column.
    pub fn query_i64s(&self, sql: &str) -> anyhow::Result<Vec<i64>> {
        Ok(match self {
            Db::Sqlite(db) => {
                let conn = db.pool.get()?;
                let mut stmt = conn.borrow_owner().prepare(sql)?;
                stmt.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?
            }
            Db::Postgres(db) => db.pool.get()?.client.query(sql, &[])?.iter().map(|r| r.get(0)).collect(),
        })
    }

    /// Runs statements in one transaction, committed or rolled back.
    pub fn execute_in_tx(&self, sql: &str, commit: bool) -> anyhow::Result<()> {
        match self {
            Db::Sqlite(db) => {
                let conn = db.pool.get()?;
                let tx = conn.borrow_owner().unchecked_transaction()?;
                tx.execute_batch(sql)?;
                if commit { tx.commit()? } else { tx.rollback()? }
            }
            Db::Postgres(db) => {
                let mut conn = db.pool.get()?;
                let mut tx = conn.client.transaction()?;
                tx.batch_execute(sql)?;
                if commit { tx.commit()? } else { tx.rollback()? }
            }
        }
        Ok(())
    }

    /// The server's counts of `table` (see [`postgres::PgDb::tallies`]); none on SQLite.
    pub fn tallies(
        &self,
        table: &str,
        counted: &[(postgres::TableCount, crate::PerOp)],
    ) -> anyhow::Result<Vec<crate::Tally>> {
        match self {
            Db::Sqlite(_) => Ok(vec![]),
            Db::Postgres(db) => db.tallies(table, counted),
        }
    }

    /// On SQLite, the runs of the pool's prepared statements as a [`crate::Tally`] of exactly
    /// `per_op` per op (`sqlite_statement_runs`), and what the engine counted of their work,
    /// recorded: VM steps, full-scan steps, sorts, automatic-index rows, page-cache writes, hits
    /// and misses; nothing on PostgreSQL, whose server counts the work ([`Db::tallies`]).
    pub fn statement_tally(&self, per_op: i64) -> anyhow::Result<Vec<crate::Tally>> {
        let Db::Sqlite(db) = self else { return Ok(vec![]) };
        let recorded = |name, value| crate::Tally {
            name,
            value,
            per_op: crate::PerOp::Recorded,
            keeper: "SQLite (sqlite3_stmt_status, sqlite3_db_status)",
        };
        let mut tallies = vec![crate::Tally {
            name: "sqlite_statement_runs".into(),
            value: db.statement_runs()?,
            per_op: crate::PerOp::Exactly(per_op),
            keeper: "SQLite's statement status (SQLITE_STMTSTATUS_RUN)",
        }];
        let work = sqlite::STATEMENT_WORK.iter().map(|w| w.0).zip(db.statement_work()?);
        let cache = sqlite::PAGE_CACHE.iter().map(|c| c.0).zip(db.page_cache_counts()?);
        tallies.extend(work.chain(cache).map(|(name, value)| recorded(name.into(), value)));
        Ok(tallies)
    }

    /// Drops what setup created on a server (SQLite goes with the fixture).
    pub fn teardown(&self) -> anyhow::Result<()> {
        match self {
            Db::Sqlite(_) => Ok(()),
            Db::Postgres(db) => db.drop_schema().context("cannot drop the fork's schema"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_counts_and_pids() {
        assert_eq!(Swept::default().line(), None);
        let swept = Swept { schemas: 2, dirs: 1, pids: [7, 9].into() };
        assert_eq!(
            swept.line().unwrap(),
            "removed 2 PostgreSQL schema(s) and 1 SQLite temp dir(s) left by workers that are gone (pid 7, 9)"
        );
    }
}
