//! Correctness of the ORM workloads on real databases: each Diesel shape answers exactly as its
//! raw-driver twin on the same seeded table (their round trips per op: `sql.rs`, one table of
//! six shapes).

mod common;
use common::on_every_backend;

use workloads::db::{Backend, DbConfig};
use workloads::ids::{IdKind, IdsCase, SelectById};
use workloads::orm::{
    DieselAsyncSelect, DieselIdsBatchInsert, DieselIdsInsertGrowth, DieselIdsSelectById, DieselIdsSelectByName,
    DieselSpawnBlockingSelect, DieselThreadSelect,
};
use workloads::sql::{SqlConfig, ThreadSelect};
use workloads::{AsyncWorkload, Phase, Workload};

const ROWS: usize = 50;

on_every_backend!(
    every_diesel_shape_answers_as_the_raw_driver_does,
    every_diesel_shape_answers_as_the_raw_driver_does_postgres,
    every_diesel_shape_answers_as_the_raw_driver_does_on,
    common::sqlite_sql_configs(ROWS),
    common::postgres_sql_config(ROWS)
);

fn every_diesel_shape_answers_as_the_raw_driver_does_on(cfg: SqlConfig) {
    let raw = ThreadSelect::create(&cfg).unwrap();
    let thread = DieselThreadSelect::create(&cfg).unwrap();
    let spawn = DieselSpawnBlockingSelect::create(&cfg).unwrap();
    let asynchronous = DieselAsyncSelect::create(&cfg).unwrap();
    let probe: Vec<i64> = (1..=ROWS as i64).chain([0, -1, ROWS as i64 + 1, i64::MAX]).collect();
    let answers = |select: &dyn Fn(i64) -> anyhow::Result<i64>| -> Vec<i64> {
        probe.iter().map(|&id| select(id).unwrap()).collect()
    };
    let by_raw = answers(&|id| raw.select(id));
    assert_eq!(by_raw.iter().sum::<i64>(), ROWS as i64, "{:?}", cfg.db.backend);
    assert_eq!(answers(&|id| thread.select(id)), by_raw, "{:?} diesel thread", cfg.db.backend);
    assert_eq!(answers(&|id| spawn.select(id)), by_raw, "{:?} diesel spawn_blocking", cfg.db.backend);
    assert_eq!(answers(&|id| asynchronous.select(id)), by_raw, "{:?} diesel-async", cfg.db.backend);
    // The checks the worker runs pass, and the measured op itself answers (a held connection).
    Workload::verify(&thread, Phase::After).unwrap();
    AsyncWorkload::verify(&spawn, Phase::After).unwrap();
    AsyncWorkload::verify(&asynchronous, Phase::After).unwrap();
    let mut local = AsyncWorkload::local(&asynchronous, 1).unwrap();
    let counted: i64 = (0..ROWS).map(|_| asynchronous.runtime().block_on(asynchronous.op(&mut local))).sum();
    assert_eq!(counted, ROWS as i64, "{:?}: every op of a task finds its seeded id", cfg.db.backend);
    drop(local);
    for w in [raw.fixture(), thread.fixture(), spawn.fixture(), asynchronous.fixture()] {
        w.teardown().unwrap();
    }
}

on_every_backend!(
    diesel_fetches_every_kinds_rows_as_the_raw_driver_does,
    diesel_fetches_every_kinds_rows_as_the_raw_driver_does_postgres,
    diesel_fetches_every_kinds_rows_as_the_raw_driver_does_on,
    common::sqlite_sql_configs(ROWS),
    common::postgres_sql_config(ROWS)
);

fn diesel_fetches_every_kinds_rows_as_the_raw_driver_does_on(cfg: SqlConfig) {
    for kind in IdKind::ALL {
        let case = IdsCase { kind, row_count: 30, db: DbConfig { pool_size: 2, ..cfg.db.clone() }, worker_id: 3 };
        let diesel = DieselIdsSelectById::create(&case).unwrap();
        Workload::verify(&diesel, Phase::After).unwrap_or_else(|e| panic!("{kind:?} {:?}: {e:#}", cfg.db.backend));
        // Every op of a measurer finds its row; the raw twin on its own table agrees.
        let raw = SelectById::create(&case).unwrap();
        let mut next = Workload::local(&diesel, 0).unwrap();
        let found = (0..30).filter(|_| Workload::op(&diesel, &mut next).is_some()).count();
        assert_eq!(found, 30, "{kind:?} {:?}", cfg.db.backend);
        let mut raw_next = Workload::local(&raw, 0).unwrap();
        let raw_found = (0..30).filter(|_| Workload::op(&raw, &mut raw_next).is_some()).count();
        assert_eq!(raw_found, found, "{kind:?}");
        Workload::teardown(&diesel).unwrap();
        Workload::teardown(&raw).unwrap();
    }
}

#[test]
#[ignore = "needs PostgreSQL at DATABASE_URL: `cargo test -- --include-ignored` runs it (.ci/run does)"]
fn diesel_id_table_ops_make_the_raw_twins_round_trips_on_postgres() {
    let (url, proxy) = common::postgres_through_proxy();
    for kind in [IdKind::UuidV7, IdKind::Snowflake, IdKind::Ulid] {
        let db = DbConfig { backend: Backend::Postgres, pool_size: 2, database_url: url.clone() };
        let diesel = DieselIdsSelectById::create(&IdsCase { kind, row_count: 20, db, worker_id: 3 }).unwrap();
        let mut next = Workload::local(&diesel, 0).unwrap();
        for _ in 0..4 {
            Workload::op(&diesel, &mut next);
        }
        let per_op = proxy.per_op(40, || assert!(Workload::op(&diesel, &mut next).is_some(), "{kind:?}"));
        assert_eq!(per_op, 3.0, "{kind:?}: {per_op} round trips per op, not begin + select + commit");
        Workload::teardown(&diesel).unwrap();
    } // A batch: BEGIN, one multi-row INSERT, the COUNT, COMMIT, as the raw twin's four.
    let proxy_url = url.clone();
    let db = DbConfig { backend: Backend::Postgres, pool_size: 2, database_url: url };
    let batch =
        DieselIdsBatchInsert::create(&IdsCase { kind: IdKind::UuidV7, row_count: 50, db, worker_id: 3 }).unwrap();
    Workload::local(&batch, 0).unwrap();
    Workload::op(&batch, &mut ());
    let per_op = proxy.per_op(10, || {
        Workload::op(&batch, &mut ());
    });
    assert_eq!(per_op, 4.0, "Diesel's batch insert: {per_op} round trips per op");
    Workload::teardown(&batch).unwrap();
    // A count by name: BEGIN, the count, COMMIT; a growth insert: one autocommit INSERT.
    let db = DbConfig { backend: Backend::Postgres, pool_size: 2, database_url: proxy_url.clone() };
    let case = IdsCase { kind: IdKind::Ulid, row_count: 20, db, worker_id: 3 };
    let by_name = DieselIdsSelectByName::create(&case).unwrap();
    let mut next = Workload::local(&by_name, 0).unwrap();
    Workload::op(&by_name, &mut next);
    let per_op = proxy.per_op(20, || assert_eq!(Workload::op(&by_name, &mut next), 1));
    assert_eq!(per_op, 3.0, "Diesel's count by name: {per_op} round trips per op");
    Workload::teardown(&by_name).unwrap();
    let growth = DieselIdsInsertGrowth::create(&case).unwrap();
    Workload::op(&growth, &mut ());
    let per_op = proxy.per_op(20, || Workload::op(&growth, &mut ()));
    assert_eq!(per_op, 1.0, "Diesel's single-row insert: {per_op} round trips per op");
    Workload::teardown(&growth).unwrap();
}

on_every_backend!(
    diesel_batch_inserts_every_kinds_rows,
    diesel_batch_inserts_every_kinds_rows_postgres,
    diesel_batch_inserts_every_kinds_rows_on,
    common::sqlite_sql_configs(ROWS),
    common::postgres_sql_config(ROWS)
);

fn diesel_batch_inserts_every_kinds_rows_on(cfg: SqlConfig) {
    for kind in IdKind::ALL {
        let case = IdsCase { kind, row_count: 40, db: DbConfig { pool_size: 2, ..cfg.db.clone() }, worker_id: 3 };
        let diesel = DieselIdsBatchInsert::create(&case).unwrap();
        Workload::verify(&diesel, Phase::Before).unwrap_or_else(|e| panic!("{kind:?} {:?}: {e:#}", cfg.db.backend));
        Workload::local(&diesel, 0).unwrap();
        for _ in 0..3 {
            Workload::reset(&diesel, &mut ()).unwrap();
            assert_eq!(Workload::op(&diesel, &mut ()), 40, "{kind:?} {:?}", cfg.db.backend);
        }
        // Without the reset, the next batch adds 40 more fresh keys.
        assert_eq!(Workload::op(&diesel, &mut ()), 80, "{kind:?}: fresh keys every op");
        Workload::teardown(&diesel).unwrap();
    }
}

on_every_backend!(
    diesel_counts_names_and_grows_every_kinds_table,
    diesel_counts_names_and_grows_every_kinds_table_postgres,
    diesel_counts_names_and_grows_every_kinds_table_on,
    common::sqlite_sql_configs(ROWS),
    common::postgres_sql_config(ROWS)
);

fn diesel_counts_names_and_grows_every_kinds_table_on(cfg: SqlConfig) {
    for kind in IdKind::ALL {
        let case = IdsCase { kind, row_count: 30, db: DbConfig { pool_size: 2, ..cfg.db.clone() }, worker_id: 3 };
        let by_name = DieselIdsSelectByName::create(&case).unwrap();
        Workload::verify(&by_name, Phase::After).unwrap_or_else(|e| panic!("{kind:?} {:?}: {e:#}", cfg.db.backend));
        let mut next = Workload::local(&by_name, 0).unwrap();
        let counted: i64 = (0..30).map(|_| Workload::op(&by_name, &mut next)).sum();
        assert_eq!(counted, 30, "{kind:?} {:?}: every seeded name counts one row", cfg.db.backend);
        Workload::teardown(&by_name).unwrap();
        let growth = DieselIdsInsertGrowth::create(&case).unwrap();
        for _ in 0..25 {
            Workload::op(&growth, &mut ());
        }
        assert_eq!(Workload::observe(&growth).unwrap(), [("table_rows", 25)], "{kind:?}");
        Workload::verify(&growth, Phase::After).unwrap_or_else(|e| panic!("{kind:?} {:?}: {e:#}", cfg.db.backend));
        Workload::teardown(&growth).unwrap();
    }
}
