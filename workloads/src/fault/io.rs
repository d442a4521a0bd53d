//! Hidden I/O faults: workloads that pass their own correctness checks yet do more work with
//! their server than their twin, so that tests can prove the I/O gate (`compare --metric io`)
//! catches each one and names the change. They declare no server counts (the extra work would
//! fail the twin's), so only the I/O fork sees what they do.

use crate::params::ParamSpec;
use crate::redis::{PARAMS as REDIS_PARAMS, RedisCase, RedisRsGet};
use crate::{AsyncWorkload, Phase, Workload, WorkloadDef, asynchronous, blocking};

/// The I/O faults.
pub static WORKLOADS: &[WorkloadDef] = &[
    WorkloadDef {
        name: "fault/extra_round_trip",
        about: "sql/thread_select_by_id with a `SELECT 1` after every op: its checks pass, one more round trip per op on PostgreSQL",
        params: &[crate::sql::ROW_COUNT, crate::sql::POOL_SIZE, POSTGRES],
        hidden: true,
        setup: |ctx| {
            Ok(blocking(ExtraRoundTrip(crate::sql::ThreadSelect::create(&crate::sql::SqlConfig::from(ctx)?)?)))
        },
        servers: crate::db::servers,
        op_floor: crate::def::OpFloor::None,
        ops_ceiling: crate::def::no_ceiling,
        shareable: true,
    },
    WorkloadDef {
        name: "fault/extra_get",
        about: "redis/redis_rs_get with one GET too many per op: its checks pass, two GETs per op",
        params: REDIS_PARAMS,
        hidden: true,
        setup: |ctx| Ok(asynchronous(ExtraGet(RedisRsGet::create(&RedisCase::from(ctx)?)?))),
        servers: crate::redis::servers,
        op_floor: crate::def::OpFloor::None,
        ops_ceiling: crate::def::no_ceiling,
        shareable: true,
    },
];

/// `db` of `fault/extra_round_trip`: PostgreSQL, where the extra statement is a round trip.
const POSTGRES: ParamSpec = ParamSpec { defaults: &["postgres"], ..crate::db::DB };

/// `fault/extra_round_trip`: its twin's op, then `SELECT 1` on a pooled connection.
struct ExtraRoundTrip(crate::sql::ThreadSelect);

impl Workload for ExtraRoundTrip {
    type Local = <crate::sql::ThreadSelect as Workload>::Local;
    type Output = i64;
    fn deterministic(&self) -> bool {
        Workload::deterministic(&self.0)
    }
    fn local(&self, thread: usize) -> anyhow::Result<Self::Local> {
        Workload::local(&self.0, thread)
    }
    fn op(&self, local: &mut Self::Local) -> i64 {
        let found = Workload::op(&self.0, local);
        let one: i64 = match &self.0.fixture().0 {
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
        };
        found + one - 1
    }
    fn verify(&self, phase: Phase) -> anyhow::Result<()> {
        Workload::verify(&self.0, phase)
    }
    fn teardown(&self) -> anyhow::Result<()> {
        Workload::teardown(&self.0)
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
