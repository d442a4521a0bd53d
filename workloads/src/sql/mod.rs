//! SQL workloads: the same transaction (`BEGIN`; count of one id with `LIMIT 1`; `COMMIT`) in
//! three execution shapes, on embedded SQLite (default) or a real PostgreSQL server.
//!
//! Every shape checks a connection out of a pool set up once per fork, runs the same prepared
//! statements on the same seeded data, and returns the count, so only the shape differs:
//! - `sql/thread_select_by_id`: a blocking driver on the measuring thread;
//! - `sql/held_connection_select_by_id`: the thread shape without the per-op pool checkout (each
//!   measuring thread holds one connection for the fork), so the checkout's cost is a difference;
//! - `sql/spawn_blocking_select_by_id`: the same blocking call handed to tokio's blocking pool
//!   with `spawn_blocking` and awaited (one runtime entry per batch);
//! - `sql/async_select_by_id`: sqlx, `begin` / query / `commit` awaited on the workload's
//!   runtime (one runtime entry per batch; `--threads N` runs N concurrent tasks). The seed's
//!   `runBlocking { … }` per op adds one `block_on`, whose floor is `baseline/block_on_noop`.

mod shapes;

pub use shapes::{AsyncDb, AsyncSelect, HeldLocal, HeldSelect, SpawnBlockingSelect, ThreadSelect};

use crate::db::{Backend, DB, Db, DbConfig, Init};
use crate::params::{ParamKind, ParamSpec};
use crate::{SetupContext, WorkloadDef};

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

const PARAMS: &[ParamSpec] = &[ROW_COUNT, POOL_SIZE, DB];

/// The sql group.
pub static WORKLOADS: &[WorkloadDef] = &[
    WorkloadDef::new(
        "sql/thread_select_by_id",
        "select-by-id transaction, blocking driver on the measuring thread",
        PARAMS,
        |ctx| Ok(crate::blocking(ThreadSelect::create(&SqlConfig::from(ctx)?)?)),
    )
    .served_by(crate::db::servers),
    WorkloadDef::new(
        "sql/held_connection_select_by_id",
        "the thread shape on a connection each measuring thread holds for the fork: the pool checkout's cost is the difference",
        PARAMS,
        |ctx| Ok(crate::blocking(HeldSelect(ThreadSelect::create(&SqlConfig::from(ctx)?)?))),
    )
    .served_by(crate::db::servers),
    WorkloadDef::new(
        "sql/spawn_blocking_select_by_id",
        "the same blocking call through tokio spawn_blocking, awaited",
        PARAMS,
        |ctx| Ok(crate::asynchronous(SpawnBlockingSelect::create(&SqlConfig::from(ctx)?)?)),
    )
    .served_by(crate::db::servers),
    WorkloadDef::new(
        "sql/async_select_by_id",
        "sqlx begin/select/commit awaited on the workload's runtime (N tasks with --threads N)",
        PARAMS,
        |ctx| Ok(crate::asynchronous(AsyncSelect::create(&SqlConfig::from(ctx)?)?)),
    )
    .served_by(crate::db::servers),
];

/// A SQL case's settings.
#[derive(Debug, Clone)]
pub struct SqlConfig {
    /// Where the database lives, pool size included.
    pub db: DbConfig,
    /// Rows to seed.
    pub row_count: usize,
}

impl SqlConfig {
    /// Reads the params of a case.
    pub fn from(ctx: &SetupContext) -> anyhow::Result<SqlConfig> {
        let pool_size = u32::try_from(ctx.params.count("pool_size")?)?;
        Ok(SqlConfig { db: DbConfig::from(ctx, pool_size)?, row_count: ctx.params.count("row_count")? })
    }
}

/// The seeded `benchmark_users` table, with a pool whose connections hold the op's statements.
pub struct UsersDb(pub Db);

impl std::ops::Deref for UsersDb {
    type Target = Db;
    fn deref(&self) -> &Db {
        &self.0
    }
}

impl UsersDb {
    /// Creates and seeds the table (one transaction) and opens the pool.
    pub fn create(cfg: &SqlConfig) -> anyhow::Result<UsersDb> {
        // SQLite runs BEGIN and COMMIT as prepared statements too; the postgres driver sends
        // them as simple queries through `Client::transaction`.
        let statements: &[&str] = match cfg.db.backend {
            Backend::Sqlite(_) => &["BEGIN", SELECT_BY_ID, "COMMIT"],
            Backend::Postgres => &[SELECT_BY_ID],
        };
        let db = Db::create(&cfg.db, statements.iter().map(|s| s.to_string()).collect(), &mut |init| {
            seed(init, cfg.row_count)
        })?;
        Ok(UsersDb(db))
    }

    /// One op: check a connection out of the pool and run the select-by-id transaction.
    pub fn select_by_id(&self, id: i64) -> anyhow::Result<i64> {
        match &self.0 {
            Db::Sqlite(db) => select_on_sqlite(&mut *db.pool.get()?, id),
            Db::Postgres(db) => select_on_postgres(&mut *db.pool.get()?, id),
        }
    }

    /// A connection out of the pool, held until dropped.
    pub fn checkout(&self) -> anyhow::Result<HeldConn> {
        Ok(match &self.0 {
            Db::Sqlite(db) => HeldConn::Sqlite(db.pool.get()?),
            Db::Postgres(db) => HeldConn::Postgres(Box::new(db.pool.get()?)),
        })
    }

    /// PostgreSQL's counts of the op's work after flushing this pool's connections (flush any
    /// other pool on the schema first): one scan of `benchmark_users` per op, and its
    /// commit. None on SQLite.
    pub fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        use crate::db::postgres::TableCount;
        self.0.tallies("benchmark_users", &[(TableCount::Scans, crate::PerOp::Exactly(1))])
    }

    /// [`UsersDb::tally`], and on SQLite the runs of this pool's three prepared statements
    /// (`BEGIN`, the select, `COMMIT`): exactly three per op, for the shapes that run the op on
    /// this pool.
    pub fn tally_with_statements(&self) -> anyhow::Result<Vec<crate::Tally>> {
        let mut tallies = self.tally()?;
        tallies.extend(self.0.statement_tally(3)?);
        Ok(tallies)
    }

    /// Every seeded id, ascending.
    pub fn ids(&self) -> anyhow::Result<Vec<i64>> {
        self.query_i64s("SELECT id FROM benchmark_users ORDER BY id")
    }
}

/// A pooled connection of the fixture, with the op's statements prepared on it.
pub enum HeldConn {
    /// SQLite.
    Sqlite(r2d2::PooledConnection<crate::db::sqlite::SqliteManager>),
    /// PostgreSQL (boxed: four times the SQLite connection's size).
    Postgres(Box<r2d2::PooledConnection<crate::db::postgres::PgManager>>),
}

impl HeldConn {
    /// The select-by-id transaction on this connection.
    pub fn select_by_id(&mut self, id: i64) -> anyhow::Result<i64> {
        match self {
            HeldConn::Sqlite(conn) => select_on_sqlite(conn, id),
            HeldConn::Postgres(conn) => select_on_postgres(conn, id),
        }
    }
}

/// The select-by-id transaction on a SQLite connection: `BEGIN`, the count of one id, `COMMIT`
/// (rolled back if the count fails).
#[inline]
pub(crate) fn select_on_sqlite(conn: &mut crate::db::sqlite::PreparedConn, id: i64) -> anyhow::Result<i64> {
    Ok(conn.with_dependent_mut(|owner, st| {
        let [begin, select, commit] = &mut st.0[..] else { unreachable!("three statements") };
        begin.execute([])?;
        let counted = select.query_row([id], |row| row.get(0)).and_then(|n| commit.execute([]).map(|_| n));
        if counted.is_err() && !owner.is_autocommit() {
            let _ = owner.execute_batch("ROLLBACK");
        }
        counted
    })?)
}

/// The same transaction on a PostgreSQL connection (`BEGIN` and `COMMIT` as simple queries).
#[inline]
fn select_on_postgres(conn: &mut crate::db::postgres::PgConn, id: i64) -> anyhow::Result<i64> {
    let crate::db::postgres::PgConn { client, statements } = conn;
    let mut tx = client.transaction()?;
    let n: i64 = tx.query_one(&statements[0], &[&id])?.get(0);
    tx.commit()?;
    Ok(n)
}

/// Creates `benchmark_users` and seeds `row_count` rows in one transaction, each with the values
/// derived from its database-generated id.
fn seed(mut init: Init<'_>, row_count: usize) -> anyhow::Result<()> {
    match &mut init {
        Init::Sqlite(conn) => {
            conn.execute_batch(
                "CREATE TABLE benchmark_users (id INTEGER PRIMARY KEY, username VARCHAR(128) NOT NULL,
                 email VARCHAR(192) NOT NULL, age INTEGER NOT NULL)",
            )?;
            let tx = conn.transaction()?;
            {
                let mut insert = tx.prepare(SEED_PLACEHOLDERS)?;
                for _ in 0..row_count {
                    insert.execute([])?;
                }
            }
            tx.execute_batch(SEED_VALUES)?;
            tx.commit()?;
        }
        Init::Postgres(client) => {
            client.batch_execute(
                "CREATE TABLE benchmark_users (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                 username VARCHAR(128) NOT NULL, email VARCHAR(192) NOT NULL, age INTEGER NOT NULL)",
            )?;
            let mut tx = client.transaction()?;
            tx.execute(
                "INSERT INTO benchmark_users (username, email, age) SELECT '', '', 0 FROM generate_series(1, $1::bigint)",
                &[&(row_count as i64)],
            )?;
            tx.batch_execute(SEED_VALUES)?;
            tx.batch_execute("ANALYZE benchmark_users")?;
            tx.commit()?;
        }
    }
    Ok(())
}

/// The correctness check shared by the shapes: the table holds exactly `row_count` rows with the
/// seeded values, a sample of seeded ids (first, last and evenly spaced, at most ~200) each count
/// one row through `select`, and an absent id counts none.
pub fn check(
    db: &Db,
    row_count: usize,
    ids: &[i64],
    mut select: impl FnMut(i64) -> anyhow::Result<i64>,
) -> anyhow::Result<()> {
    let rows = db.query_i64s("SELECT COUNT(*) FROM benchmark_users")?;
    anyhow::ensure!(rows == [row_count as i64], "table holds {rows:?} rows, expected row_count = {row_count}");
    let bad = db.query_i64s(
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
