//! `growth/insert_batches` on a small target: the steps grow the table in order of size, the
//! database's own figures are present and plausible at every step, and the server's counts
//! (or SQLite's statement runs) match the rows inserted.

mod common;

use std::collections::BTreeMap;
use workloads::growth::InsertBatches;
use workloads::{Params, Phase, SetupContext, Workload};

/// A growth case of `rows` rows in batches of 1,000.
fn case(db: &str, kind: &str, layout: &str, rows: u64) -> SetupContext {
    let params = [("db", db), ("kind", kind), ("layout", layout), ("batch_rows", "1000"), ("worker_id", "1")];
    let mut params: BTreeMap<String, String> = params.map(|(k, v)| (k.to_string(), v.to_string())).into();
    params.insert("rows".into(), rows.to_string());
    SetupContext { database_url: common::database_url(), ..SetupContext::new(Params(params)) }
}

/// Runs every step, as the worker does, and returns what was observed after each.
fn run_steps(w: &InsertBatches) -> Vec<BTreeMap<&'static str, i64>> {
    let mut local = w.local(0).unwrap();
    w.steps()
        .expect("a growth workload is measured in steps")
        .into_iter()
        .map(|ops| {
            for _ in 0..ops {
                w.op(&mut local);
            }
            w.observe().unwrap().into_iter().collect()
        })
        .collect()
}

/// Every step's table size is the planned one, and the named figures never shrink and grow overall.
fn check_series(w: &InsertBatches, series: &[BTreeMap<&'static str, i64>], growing: &[&str]) {
    let rows: Vec<u64> = series.iter().map(|o| o["table_rows"] as u64).collect();
    assert_eq!(rows, w.sizes(), "one observation per step, at the planned sizes");
    for name in growing {
        let values: Vec<i64> =
            series.iter().map(|o| *o.get(name).unwrap_or_else(|| panic!("{name} observed"))).collect();
        assert!(values[0] > 0 || *name == "idx_blks_read", "{name} starts above zero: {values:?}");
        assert!(values.windows(2).all(|v| v[0] <= v[1]), "{name} never shrinks: {values:?}");
        assert!(values.last() > values.first(), "{name} grows with the table: {values:?}");
    }
}

#[test]
fn sqlite_steps_grow_the_table_and_record_pages_and_wal() {
    for layout in ["key_pk", "serial_pk"] {
        let w = InsertBatches::create(&case("sqlite_file", "uuid_v4", layout, 20_000)).unwrap();
        w.verify(Phase::Before).unwrap();
        let before = w.tally().unwrap();
        let series = run_steps(&w);
        check_series(
            &w,
            &series,
            &["table_bytes", "index_bytes", "page_count", "wal_bytes", "pages_written", "cache_hits"],
        );
        let last = series.last().unwrap();
        assert_eq!(last["page_cache_bytes"], 2000 * 1024, "SQLite's default page cache: 2,000 KiB");
        assert!(last["wal_file_bytes"] > 0, "{last:?}");
        let after = w.tally().unwrap();
        let ops = w.steps().unwrap().iter().sum::<u64>();
        workloads::tally::check(&before, &after, ops).expect("BEGIN, 1,000 inserts and COMMIT per op");
        w.verify(Phase::After).unwrap();
        w.teardown().unwrap();
    }
}

#[test]
#[ignore = "needs PostgreSQL at DATABASE_URL: `cargo test -- --include-ignored` runs it (.ci/run does)"]
fn postgres_steps_grow_the_table_and_record_index_wal_and_buffers() {
    common::postgres();
    for (kind, layout) in [("uuid_v4", "key_pk"), ("uuid_v7", "serial_pk")] {
        let w = InsertBatches::create(&case("postgres", kind, layout, 30_000)).unwrap();
        w.verify(Phase::Before).unwrap();
        let before = w.tally().unwrap();
        let series = run_steps(&w);
        check_series(&w, &series, &["table_bytes", "key_index_bytes", "index_bytes", "wal_bytes", "idx_blks_hit"]);
        let last = series.last().unwrap();
        assert!(last["wal_bytes"] > 30_000 * 50, "at least 50 WAL bytes a row: {last:?}");
        assert!(last["shared_buffers_bytes"] >= 128 * 1024, "{last:?}");
        let serial = layout == "serial_pk";
        assert_eq!(last["index_bytes"] > last["key_index_bytes"], serial, "the serial key has its own index: {last:?}");
        let after = w.tally().unwrap();
        let ops = w.steps().unwrap().iter().sum::<u64>();
        workloads::tally::check(&before, &after, ops).expect("1,000 rows inserted per op, as the server counts");
        w.verify(Phase::After).unwrap();
        w.teardown().unwrap();
    }
}

#[test]
fn auto_rows_on_sqlite_is_a_million() {
    let mut ctx = case("sqlite_file", "snowflake", "key_pk", 1);
    ctx.params.0.insert("rows".into(), "auto".into());
    let w = InsertBatches::create(&ctx).unwrap();
    assert_eq!(w.sizes().last(), Some(&1_000_000));
    w.teardown().unwrap();
}

#[test]
#[ignore = "needs PostgreSQL at DATABASE_URL: `cargo test -- --include-ignored` runs it (.ci/run does)"]
fn a_killed_workers_schemas_are_dropped_and_no_others() {
    let url = common::postgres();
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    // Process ids above the kernel's limit: no live worker has them.
    admin.batch_execute("CREATE SCHEMA harness_4199999_1; CREATE TABLE harness_4199999_1.t (x int); CREATE SCHEMA harness_41999990_1").unwrap();
    assert_eq!(workloads::db::remove_leftovers(4_199_999, Some(&url)).unwrap(), 1);
    let left: Vec<String> = admin
        .query("SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'harness\\_4199999%'", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(left, ["harness_41999990_1"], "only the killed worker's own schemas go");
    admin.batch_execute("DROP SCHEMA harness_41999990_1").unwrap();
}
