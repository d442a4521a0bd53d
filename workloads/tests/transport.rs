//! Like for like: the two sides of every twin pair reach PostgreSQL over one transport, in the
//! clear with `db=postgres` and over the same TLS with `db=postgres_tls`, as the server itself
//! sees it (`pg_stat_ssl`). Each driver left to itself picks its own (libpq, under Diesel's sync
//! connection, uses TLS whenever the server offers it; the raw `postgres` crate never did).

mod common;

use std::collections::BTreeSet;
use workloads::{Params, SetupContext};

/// The raw-driver workload and its Diesel twin.
const TWINS: [(&str, &str); 4] = [
    ("sql/thread_select_by_id", "orm/diesel_thread_select_by_id"),
    ("sql/spawn_blocking_select_by_id", "orm/diesel_spawn_blocking_select_by_id"),
    ("sql/async_select_by_id", "orm/diesel_async_select_by_id"),
    ("ids/select_by_id", "orm/diesel_ids_select_by_id"),
];

/// What the server says of one connection: TLS or not, its protocol version and cipher.
type Seen = (bool, String, String);

/// Sets the workload up as a fork does (its registry entry, the case's params, the user's URL
/// with no `sslmode`), runs a few ops, and returns what the server saw of its connections.
fn connections_of(workload: &str, db: &str) -> BTreeSet<Seen> {
    let def = workloads::registry::find(workload).expect("registered");
    let mut params: Params = Params::default();
    for spec in def.params {
        params.0.insert(spec.name.into(), spec.defaults[0].into());
    }
    params.0.insert("db".into(), db.into());
    params.0.insert("row_count".into(), "20".into());
    let name = format!("twin_{}_{db}_{}", std::process::id(), workload.replace('/', "_"));
    let base = common::postgres();
    let url = format!("{base}{}application_name={name}", if base.contains('?') { '&' } else { '?' });
    let ctx = SetupContext { database_url: url, ..SetupContext::new(params) };
    let prepared = (def.setup)(&ctx).unwrap_or_else(|e| panic!("{workload} with db={db}: {e:#}"));
    let mut bench = prepared.bench(0).expect("a measuring handle");
    bench.run_batch(3);
    let mut observer = common::postgres().parse::<postgres::Config>().unwrap().connect(postgres::NoTls).unwrap();
    let rows = observer
        .query(
            "SELECT s.ssl, coalesce(s.version, ''), coalesce(s.cipher, '')
             FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.application_name = $1",
            &[&name],
        )
        .unwrap();
    drop(bench);
    prepared.teardown().unwrap();
    rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect()
}

fn twins_share_one_transport(db: &str, tls: bool) {
    for (raw, orm) in TWINS {
        let (raw_seen, orm_seen) = (connections_of(raw, db), connections_of(orm, db));
        assert!(!raw_seen.is_empty() && !orm_seen.is_empty(), "{raw}/{orm}: no connection seen by the server");
        assert!(raw_seen.iter().all(|s| s.0 == tls), "{raw} with db={db}: {raw_seen:?}");
        assert_eq!(raw_seen, orm_seen, "db={db}: {raw} and {orm} reach the server differently");
    }
}

#[test]
#[ignore = "needs PostgreSQL (cargo test -- --include-ignored)"]
fn twins_run_in_the_clear_with_db_postgres() {
    twins_share_one_transport("postgres", false);
}

#[test]
#[ignore = "needs PostgreSQL with ssl = on (cargo test -- --include-ignored)"]
fn twins_run_over_the_same_tls_with_db_postgres_tls() {
    twins_share_one_transport("postgres_tls", true);
}
