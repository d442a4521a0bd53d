//! Correctness of the SQL workloads on real databases: rows returned, seeding, commit and
//! rollback, pooled connections sharing data, and the three shapes agreeing.

mod common;
use common::on_every_backend;

use workloads::db::{Backend, Db, DbConfig, Storage};
use workloads::sql::{AsyncSelect, SpawnBlockingSelect, SqlConfig, ThreadSelect, UsersDb, check};

const ROWS: usize = 60;

fn count(db: &Db) -> i64 {
    db.query_i64s("SELECT COUNT(*) FROM benchmark_users").unwrap()[0]
}

const INSERT: &str = "INSERT INTO benchmark_users (username, email, age) VALUES ('extra', 'extra@example.test', 1)";

on_every_backend!(
    every_shape_counts_one_row_per_seeded_id_none_for_absent_and_they_agree,
    every_shape_counts_one_row_per_seeded_id_none_for_absent_and_they_agree_postgres,
    every_shape_counts_one_row_per_seeded_id_none_for_absent_and_they_agree_on,
    common::sqlite_sql_configs(ROWS),
    common::postgres_sql_config(ROWS)
);

fn every_shape_counts_one_row_per_seeded_id_none_for_absent_and_they_agree_on(cfg: SqlConfig) {
    let thread = ThreadSelect::create(&cfg).unwrap();
    let spawn = SpawnBlockingSelect::create(&cfg).unwrap();
    let asynchronous = AsyncSelect::create(&cfg).unwrap();
    let ids = thread.ids().to_vec();
    assert_eq!(ids, (1..=ROWS as i64).collect::<Vec<_>>(), "{:?}", cfg.db.backend);
    let probe: Vec<i64> = ids.iter().copied().chain([0, -1, ROWS as i64 + 1, i64::MAX]).collect();
    let results = |select: &dyn Fn(i64) -> anyhow::Result<i64>| -> Vec<i64> {
        probe.iter().map(|&id| select(id).unwrap()).collect()
    };
    let by_thread = results(&|id| thread.select(id));
    let expected: Vec<i64> = probe.iter().map(|&id| i64::from((1..=ROWS as i64).contains(&id))).collect();
    assert_eq!(by_thread, expected, "{:?}", cfg.db.backend);
    assert_eq!(results(&|id| spawn.select(id)), by_thread, "{:?} spawn_blocking", cfg.db.backend);
    assert_eq!(results(&|id| asynchronous.select(id)), by_thread, "{:?} async", cfg.db.backend);
    for w in [thread.fixture(), spawn.fixture(), asynchronous.fixture()] {
        w.teardown().unwrap();
    }
}

on_every_backend!(
    seeding_leaves_exactly_row_count_rows_with_their_values,
    seeding_leaves_exactly_row_count_rows_with_their_values_postgres,
    seeding_leaves_exactly_row_count_rows_with_their_values_on,
    common::sqlite_sql_configs(ROWS),
    common::postgres_sql_config(ROWS)
);

fn seeding_leaves_exactly_row_count_rows_with_their_values_on(cfg: SqlConfig) {
    let db = UsersDb::create(&cfg).unwrap();
    assert_eq!(count(&db), ROWS as i64);
    let ids = db.ids().unwrap();
    check(&db, ROWS, &ids, |id| db.select_by_id(id)).unwrap();
    // The check notices a wrong count and a wrong value.
    assert!(check(&db, ROWS + 1, &ids, |id| db.select_by_id(id)).is_err());
    db.execute_in_tx("UPDATE benchmark_users SET age = 0 WHERE id = 7", true).unwrap();
    let e = check(&db, ROWS, &ids, |id| db.select_by_id(id)).unwrap_err().to_string();
    assert!(e.contains("do not hold their seeded values"), "{e}");
    db.teardown().unwrap();
}

on_every_backend!(
    rollback_leaves_no_trace_and_commit_persists,
    rollback_leaves_no_trace_and_commit_persists_postgres,
    rollback_leaves_no_trace_and_commit_persists_on,
    common::sqlite_sql_configs(ROWS),
    common::postgres_sql_config(ROWS)
);

fn rollback_leaves_no_trace_and_commit_persists_on(cfg: SqlConfig) {
    let db = UsersDb::create(&cfg).unwrap();
    db.execute_in_tx(INSERT, false).unwrap();
    assert_eq!(count(&db), ROWS as i64, "{:?}: rolled-back insert visible", cfg.db.backend);
    db.execute_in_tx(INSERT, true).unwrap();
    assert_eq!(count(&db), ROWS as i64 + 1, "{:?}: committed insert lost", cfg.db.backend);
    db.teardown().unwrap();
}

on_every_backend!(
    all_pooled_connections_see_the_same_data,
    all_pooled_connections_see_the_same_data_postgres,
    all_pooled_connections_see_the_same_data_on,
    common::sqlite_sql_configs(ROWS),
    common::postgres_sql_config(ROWS)
);

fn all_pooled_connections_see_the_same_data_on(cfg: SqlConfig) {
    let asynchronous =
        AsyncSelect::create(&SqlConfig { db: DbConfig { pool_size: 1, ..cfg.db.clone() }, ..cfg.clone() }).unwrap();
    let db = UsersDb::create(&cfg).unwrap();
    // Hold every connection of the pool at once, so each count runs on a different one.
    let counts: Vec<i64> = match &db.0 {
        Db::Sqlite(s) => {
            let held: Vec<_> = (0..cfg.db.pool_size).map(|_| s.pool.get().unwrap()).collect();
            held.iter()
                .map(|c| c.borrow_owner().query_row("SELECT COUNT(*) FROM benchmark_users", [], |r| r.get(0)).unwrap())
                .collect()
        }
        Db::Postgres(p) => {
            let mut held: Vec<_> = (0..cfg.db.pool_size).map(|_| p.pool.get().unwrap()).collect();
            held.iter_mut()
                .map(|c| c.client.query_one("SELECT COUNT(*) FROM benchmark_users", &[]).unwrap().get(0))
                .collect()
        }
    };
    assert_eq!(counts, vec![ROWS as i64; cfg.db.pool_size as usize], "{:?}", cfg.db.backend);
    db.teardown().unwrap();
    // The sqlx pool reads what the blocking driver committed to the same database.
    let new_id = ROWS as i64 + 1;
    assert_eq!(asynchronous.select(new_id).unwrap(), 0);
    asynchronous.fixture().execute_in_tx(INSERT, true).unwrap();
    assert_eq!(asynchronous.select(new_id).unwrap(), 1, "{:?}: sqlx does not see the commit", cfg.db.backend);
    asynchronous.fixture().teardown().unwrap();
}

#[test]
fn in_memory_databases_of_two_fixtures_are_separate() {
    let db = DbConfig { backend: Backend::Sqlite(Storage::Memory), pool_size: 2, database_url: String::new() };
    let cfg = SqlConfig { db, row_count: 5 };
    let a = UsersDb::create(&cfg).unwrap();
    let b = UsersDb::create(&SqlConfig { row_count: 9, ..cfg }).unwrap();
    assert_eq!((count(&a), count(&b)), (5, 9));
}

#[test]
#[ignore = "needs PostgreSQL at DATABASE_URL: `cargo test -- --include-ignored` runs it (.ci/run does)"]
fn postgres_schema_is_dropped_at_teardown() {
    let url = common::postgres();
    let cfg = SqlConfig {
        db: DbConfig { backend: Backend::Postgres, pool_size: 1, database_url: url.clone() },
        row_count: 3,
    };
    let db = UsersDb::create(&cfg).unwrap();
    let Db::Postgres(pg) = &db.0 else { unreachable!() };
    let schema = pg.schema.clone();
    let mut probe = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let exists = |c: &mut postgres::Client| -> i64 {
        c.query_one("SELECT COUNT(*) FROM pg_namespace WHERE nspname = $1", &[&schema]).unwrap().get(0)
    };
    assert_eq!(exists(&mut probe), 1);
    db.teardown().unwrap();
    assert_eq!(exists(&mut probe), 0);
}

#[test]
fn unreachable_postgres_is_one_clear_line_with_the_password_redacted() {
    let db = DbConfig {
        backend: Backend::Postgres,
        pool_size: 1,
        database_url: "postgres://bench:s3cret@127.0.0.1:1/test".into(),
    };
    let cfg = SqlConfig { db, row_count: 3 };
    let e = format!("{:#}", UsersDb::create(&cfg).err().expect("port 1 refuses"));
    assert!(e.starts_with("cannot connect to PostgreSQL at postgres://bench:***@127.0.0.1:1/test: "), "{e}");
    assert!(e.ends_with("start PostgreSQL or pass --database-url (or DATABASE_URL)"), "{e}");
    assert!(!e.contains("s3cret") && !e.contains('\n'), "{e}");
}

/// One shape's op as the worker runs it, with its measurer's own local state.
type Op<'a> = Box<dyn FnMut() -> i64 + 'a>;

/// A blocking workload's op.
fn blocking<W: workloads::Workload<Output = i64>>(w: &W) -> Op<'_> {
    let mut local = w.local(0).unwrap();
    Box::new(move || w.op(&mut local))
}

/// An async workload's op, awaited on its own runtime.
fn on_runtime<W: workloads::AsyncWorkload<Output = i64>>(w: &W) -> Op<'_> {
    let mut local = workloads::AsyncWorkload::local(w, 0).unwrap();
    Box::new(move || w.runtime().block_on(w.op(&mut local)))
}

/// Every shape, raw and through Diesel, pays begin + select + commit, counted by the relay
/// `--io` runs: one table of six shapes.
#[test]
#[ignore = "needs PostgreSQL at DATABASE_URL: `cargo test -- --include-ignored` runs it (.ci/run does)"]
fn every_shape_raw_and_diesel_makes_exactly_three_round_trips_per_op_on_postgres() {
    use workloads::orm::{DieselAsyncSelect, DieselSpawnBlockingSelect, DieselThreadSelect};
    const OPS: u64 = 40;
    let (url, proxy) = common::postgres_through_proxy();
    let cfg = SqlConfig { db: DbConfig { backend: Backend::Postgres, pool_size: 2, database_url: url }, row_count: 20 };
    let (thread, spawn) = (ThreadSelect::create(&cfg).unwrap(), SpawnBlockingSelect::create(&cfg).unwrap());
    let asynchronous = AsyncSelect::create(&cfg).unwrap();
    let (diesel_thread, diesel_spawn) =
        (DieselThreadSelect::create(&cfg).unwrap(), DieselSpawnBlockingSelect::create(&cfg).unwrap());
    let diesel_async = DieselAsyncSelect::create(&cfg).unwrap();
    let mut shapes: [(&str, Op<'_>); 6] = [
        ("thread", blocking(&thread)),
        ("spawn_blocking", on_runtime(&spawn)),
        ("async", on_runtime(&asynchronous)),
        ("diesel thread", blocking(&diesel_thread)),
        ("diesel spawn_blocking", on_runtime(&diesel_spawn)),
        ("diesel async", on_runtime(&diesel_async)),
    ];
    for (shape, op) in shapes.iter_mut() {
        // Every pooled connection has prepared (and cached) its statement once.
        for _ in 0..4 {
            op();
        }
        let per_op = proxy.per_op(OPS, || assert_eq!(op(), 1, "{shape}: a seeded id counts one row"));
        assert_eq!(per_op, 3.0, "{shape}: {per_op} round trips per op, not begin + select + commit");
    }
    drop(shapes);
    for w in [thread.fixture(), spawn.fixture(), asynchronous.fixture()] {
        w.teardown().unwrap();
    }
    for w in [diesel_thread.fixture(), diesel_spawn.fixture(), diesel_async.fixture()] {
        w.teardown().unwrap();
    }
}
