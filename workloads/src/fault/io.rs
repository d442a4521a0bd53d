//! Hidden I/O faults: workloads that pass their own correctness checks yet do more work with
//! their server than their twin, so that tests can prove the I/O gate (`compare --metric io`)
//! catches each one and names the change. The extra-work faults declare no checked server counts
//! (the extra statement would fail their twin's); `fault/missing_index` keeps its twin's, which
//! count one scan per op whichever plan the server picks.

use crate::params::ParamSpec;
use crate::redis::{PARAMS as REDIS_PARAMS, RedisCase, RedisRsGet};
use crate::{AsyncWorkload, Phase, Workload, WorkloadDef, asynchronous, blocking};

/// The I/O faults.
pub static WORKLOADS: &[WorkloadDef] = &[
    WorkloadDef::new(
        "fault/extra_round_trip",
        "sql/thread_select_by_id with a `SELECT 1` after every op: its checks pass, one more round trip per op on PostgreSQL",
        &[crate::sql::ROW_COUNT, crate::sql::POOL_SIZE, POSTGRES],
        |ctx| {
            Ok(blocking(AfterTwin::create(ctx, Extra::SelectOne)?))
        },
    )
    .served_by(crate::db::servers)
    .floor(crate::def::OpFloor::None)
    .hidden(),
    WorkloadDef::new(
        "fault/n_plus_one",
        "sql/thread_select_by_id, then a list of 5 ids and one select per listed row (N+1): its checks pass, 6 more statements per op",
        &[crate::sql::ROW_COUNT, crate::sql::POOL_SIZE, POSTGRES],
        |ctx| Ok(blocking(AfterTwin::create(ctx, Extra::NPlusOne)?)),
    )
    .served_by(crate::db::servers)
    .floor(crate::def::OpFloor::None)
    .hidden(),
    WorkloadDef::new(
        "fault/missing_index",
        "sql/thread_select_by_id on a table whose primary key was dropped after seeding: the same statements and round trips, and a full scan per op",
        &[crate::sql::ROW_COUNT, crate::sql::POOL_SIZE, POSTGRES],
        |ctx| {
            let select = crate::sql::ThreadSelect::create(&crate::sql::SqlConfig::from(ctx)?)?;
            drop_primary_key(&select.fixture().0)?;
            Ok(blocking(select))
        },
    )
    .served_by(crate::db::servers)
    .floor(crate::def::OpFloor::None)
    .hidden(),
    WorkloadDef::new(
        "fault/extra_get",
        "redis/redis_rs_get with one GET too many per op: its checks pass, two GETs per op",
        REDIS_PARAMS,
        |ctx| Ok(asynchronous(ExtraGet(RedisRsGet::create(&RedisCase::from(ctx)?)?))),
    )
    .served_by(crate::redis::servers)
    .floor(crate::def::OpFloor::None)
    .hidden(),
];

/// `db` of `fault/extra_round_trip`: PostgreSQL, where the extra statement is a round trip.
const POSTGRES: ParamSpec = ParamSpec { defaults: &["postgres"], ..crate::db::DB };

/// `fault/missing_index`: `benchmark_users` loses its primary key. PostgreSQL drops the
/// constraint; SQLite, whose `INTEGER PRIMARY KEY` is the row id and cannot be dropped, copies
/// the table without it, and every pooled connection runs the op once so that its statements
/// prepare again now (a statement prepared again counts one run more, in the fork's count).
fn drop_primary_key(db: &crate::db::Db) -> anyhow::Result<()> {
    match db {
        crate::db::Db::Postgres(pg) => {
            pg.pool.get()?.client.batch_execute("ALTER TABLE benchmark_users DROP CONSTRAINT benchmark_users_pkey")?
        }
        crate::db::Db::Sqlite(lite) => {
            lite.pool.get()?.borrow_owner().execute_batch(
                "CREATE TABLE benchmark_users_copy AS SELECT * FROM benchmark_users;
                 DROP TABLE benchmark_users;
                 ALTER TABLE benchmark_users_copy RENAME TO benchmark_users;",
            )?;
            for mut conn in crate::db::hold_all(&lite.pool)? {
                crate::sql::select_on_sqlite(&mut conn, 1)?;
            }
        }
    }
    Ok(())
}

/// What an SQL I/O fault does after its twin's op (`sql/thread_select_by_id`).
#[derive(Clone, Copy)]
enum Extra {
    /// `fault/extra_round_trip`: `SELECT 1` on a pooled connection.
    SelectOne,
    /// `fault/n_plus_one`: a list of [`LISTED`] ids, then one select per listed row.
    NPlusOne,
}

/// Rows `fault/n_plus_one` lists per op.
const LISTED: i64 = 5;

/// An SQL I/O fault: its twin's op, then its [`Extra`]; the twin's checks pass.
struct AfterTwin {
    twin: crate::sql::ThreadSelect,
    extra: Extra,
}

impl AfterTwin {
    fn create(ctx: &crate::SetupContext, extra: Extra) -> anyhow::Result<AfterTwin> {
        Ok(AfterTwin { twin: crate::sql::ThreadSelect::create(&crate::sql::SqlConfig::from(ctx)?)?, extra })
    }

    /// `SELECT 1` on a pooled connection: 1.
    fn select_one(&self) -> i64 {
        match &self.twin.fixture().0 {
            crate::db::Db::Postgres(pg) => pg
                .pool
                .get()
                .expect("a pooled connection")
                .client
                .query_one("SELECT 1::int8", &[])
                .expect("SELECT 1")
                .get(0),
            crate::db::Db::Sqlite(db) => db
                .pool
                .get()
                .expect("a pooled connection")
                .borrow_owner()
                .query_row("SELECT 1", [], |r| r.get(0))
                .expect("SELECT 1"),
        }
    }

    /// The list, then one select per row: the names' total length.
    fn list_then_each(&self) -> anyhow::Result<i64> {
        const LIST: &str = "SELECT id FROM benchmark_users ORDER BY id LIMIT 5";
        const EACH: &str = "SELECT username FROM benchmark_users WHERE id = $1";
        let mut total = 0;
        match &self.twin.fixture().0 {
            crate::db::Db::Postgres(pg) => {
                let mut conn = pg.pool.get()?;
                let ids: Vec<i64> = conn.client.query(LIST, &[])?.iter().map(|r| r.get(0)).collect();
                for id in ids {
                    total += conn.client.query_one(EACH, &[&id])?.get::<_, String>(0).len() as i64;
                }
            }
            crate::db::Db::Sqlite(db) => {
                let conn = db.pool.get()?;
                let ids: Vec<i64> =
                    conn.borrow_owner().prepare_cached(LIST)?.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
                for id in ids {
                    let name: String = conn.borrow_owner().prepare_cached(EACH)?.query_row([id], |r| r.get(0))?;
                    total += name.len() as i64;
                }
            }
        }
        Ok(total)
    }
}

impl Workload for AfterTwin {
    type Local = <crate::sql::ThreadSelect as Workload>::Local;
    type Output = i64;
    fn deterministic(&self) -> bool {
        Workload::deterministic(&self.twin)
    }
    fn local(&self, thread: usize) -> anyhow::Result<Self::Local> {
        Workload::local(&self.twin, thread)
    }
    fn op(&self, local: &mut Self::Local) -> i64 {
        let found = Workload::op(&self.twin, local);
        match self.extra {
            Extra::SelectOne => found + self.select_one() - 1,
            Extra::NPlusOne => {
                std::hint::black_box(self.list_then_each().expect("the list and its selects"));
                found
            }
        }
    }
    fn verify(&self, phase: Phase) -> anyhow::Result<()> {
        Workload::verify(&self.twin, phase)?;
        if let Extra::SelectOne = self.extra {
            return Ok(());
        }
        let seeded = self.twin.ids().len() as i64;
        anyhow::ensure!(seeded >= LISTED, "fault/n_plus_one lists {LISTED} rows: seed at least as many (row_count)");
        self.list_then_each().map(|_| ())
    }
    fn teardown(&self) -> anyhow::Result<()> {
        Workload::teardown(&self.twin)
    }
}

/// `fault/extra_get`: its twin's GET, twice.
struct ExtraGet(RedisRsGet);

impl AsyncWorkload for ExtraGet {
    type Local = <RedisRsGet as AsyncWorkload>::Local;
    type Output = <RedisRsGet as AsyncWorkload>::Output;
    fn deterministic(&self) -> bool {
        false
    }
    fn runtime(&self) -> &tokio::runtime::Runtime {
        self.0.runtime()
    }
    fn local(&self, task: usize) -> anyhow::Result<Self::Local> {
        AsyncWorkload::local(&self.0, task)
    }
    async fn op(&self, local: &mut Self::Local) -> Self::Output {
        let _ = AsyncWorkload::op(&self.0, local).await;
        AsyncWorkload::op(&self.0, local).await
    }
    fn verify(&self, phase: Phase) -> anyhow::Result<()> {
        AsyncWorkload::verify(&self.0, phase)
    }
    fn teardown(&self) -> anyhow::Result<()> {
        AsyncWorkload::teardown(&self.0)
    }
}
