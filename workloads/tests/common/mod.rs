//! Shared by the workload correctness tests: which servers are reachable.
//!
//! A test that needs a server is `#[ignore]`d with the reason (libtest lists it as ignored, so
//! a run without servers says what it left untested); `cargo test -- --include-ignored` runs
//! it, and then an unreachable server fails it with one line saying what to start.
#![allow(dead_code)]

use workloads::def::DEFAULT_DATABASE_URL;
use workloads::redact::redact;

/// The PostgreSQL URL the tests use: `DATABASE_URL` or the default.
pub(crate) fn database_url() -> String {
    std::env::var("DATABASE_URL").unwrap_or_else(|_| DEFAULT_DATABASE_URL.into())
}

/// The URL of PostgreSQL, which must answer: a test that asked for it fails otherwise.
pub(crate) fn postgres() -> String {
    let url = database_url();
    let mut config: postgres::Config = url.parse().expect("DATABASE_URL parses");
    config.connect_timeout(std::time::Duration::from_secs(3));
    if let Err(e) = config.connect(postgres::NoTls) {
        panic!(
            "PostgreSQL is unreachable at {} ({e}): start it (.ci/run does), or run without --include-ignored",
            redact(&url)
        );
    }
    url
}

/// The Redis URL the tests use: `REDIS_URL` or the default.
pub(crate) fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| workloads::redis::DEFAULT_REDIS_URL.into())
}

/// The URL of Redis, which must answer PING: a test that asked for it fails otherwise.
pub(crate) fn redis() -> String {
    let url = redis_url();
    let reachable = redis::Client::open(url.as_str())
        .and_then(|c| c.get_connection_with_timeout(std::time::Duration::from_secs(3)))
        .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
    if let Err(e) = reachable {
        panic!(
            "Redis is unreachable at {} ({e}): start it (.ci/run does), or run without --include-ignored",
            redact(&url)
        );
    }
    url
}

/// The product's counting relay (what `--io` runs) in front of a server: a round trip is a
/// flight, the client speaking and the server answering, summed over every relayed connection;
/// what the driver sends in one go (Parse/Bind/Execute/Sync) is one flight.
pub(crate) struct RoundTrips {
    /// The port clients connect to instead of the server's.
    pub(crate) port: u16,
    relay: workloads::relay::Relay,
}

impl RoundTrips {
    /// Starts relaying to `upstream` (`host:port`), reading `protocol`.
    pub(crate) fn start(upstream: &str, protocol: workloads::relay::Protocol) -> RoundTrips {
        use std::net::ToSocketAddrs;
        let addr = upstream.to_socket_addrs().expect("the server's address resolves").next().expect("an address");
        let relay = workloads::relay::Relay::start(addr, protocol).expect("a relay on a free port");
        RoundTrips { port: relay.addr.port(), relay }
    }

    /// Round trips so far.
    pub(crate) fn count(&self) -> u64 {
        self.relay.tally().round_trips
    }

    /// Round trips per op over `ops` calls of `op`.
    #[allow(dead_code, reason = "the tests without a relay use none of it")]
    pub(crate) fn per_op(&self, ops: u64, mut op: impl FnMut()) -> f64 {
        let before = self.count();
        for _ in 0..ops {
            op();
        }
        (self.count() - before) as f64 / ops as f64
    }
}

/// PostgreSQL's URL rewritten to go through a [`RoundTrips`] relay, and the relay.
pub(crate) fn postgres_through_proxy() -> (String, RoundTrips) {
    let url = postgres();
    let config: postgres::Config = url.parse().unwrap();
    let host = match &config.get_hosts()[0] {
        postgres::config::Host::Tcp(h) => h.clone(),
        postgres::config::Host::Unix(_) => panic!("the round-trip test needs PostgreSQL over TCP, not a socket"),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let proxy = RoundTrips::start(&format!("{host}:{port}"), workloads::relay::Protocol::Postgres);
    let user = config.get_user().unwrap_or("postgres");
    let password = config.get_password().map(|p| format!(":{}", String::from_utf8_lossy(p))).unwrap_or_default();
    let db = config.get_dbname().unwrap_or(user);
    (format!("postgres://{user}{password}@127.0.0.1:{}/{db}", proxy.port), proxy)
}

/// A test of `$on` on every SQLite configuration `$sqlite_cfgs` gives, and its PostgreSQL twin
/// on `$pg_cfg`, ignored (with the reason) unless `--include-ignored`.
#[allow(unused_macros, reason = "the redis tests use none of it")]
macro_rules! on_every_backend {
    ($sqlite:ident, $postgres:ident, $on:ident, $sqlite_cfgs:expr, $pg_cfg:expr) => {
        #[test]
        fn $sqlite() {
            $sqlite_cfgs.into_iter().for_each($on);
        }

        #[test]
        #[ignore = "needs PostgreSQL at DATABASE_URL: `cargo test -- --include-ignored` runs it (.ci/run does)"]
        fn $postgres() {
            $on($pg_cfg);
        }
    };
}
#[allow(unused_imports, reason = "the redis tests use none of it")]
pub(crate) use on_every_backend;

/// Redis's URL rewritten to go through a [`RoundTrips`] relay, and the relay.
#[allow(dead_code, reason = "only the Redis tests use it")]
pub(crate) fn redis_through_proxy() -> (String, RoundTrips) {
    use redis::IntoConnectionInfo;
    let url = redis();
    let info = url.as_str().into_connection_info().expect("REDIS_URL parses");
    let redis::ConnectionAddr::Tcp(host, port) = info.addr().clone() else {
        panic!("the round-trip test needs Redis over plain TCP");
    };
    let proxy = RoundTrips::start(&format!("{host}:{port}"), workloads::relay::Protocol::Resp);
    assert!(info.redis_settings().password().is_none(), "the round-trip test needs Redis without a password");
    (format!("redis://127.0.0.1:{}/{}", proxy.port, info.redis_settings().db()), proxy)
}

/// The SQL workloads' settings on `backend` with `rows` seeded rows and a pool of 3.
fn sql_config(backend: workloads::db::Backend, database_url: String, rows: usize) -> workloads::sql::SqlConfig {
    let db = workloads::db::DbConfig { backend, pool_size: 3, database_url };
    workloads::sql::SqlConfig { db, row_count: rows }
}

/// Both SQLite storages, `rows` seeded rows each.
pub(crate) fn sqlite_sql_configs(rows: usize) -> Vec<workloads::sql::SqlConfig> {
    use workloads::db::{Backend, Storage};
    [Storage::Memory, Storage::File].into_iter().map(|s| sql_config(Backend::Sqlite(s), String::new(), rows)).collect()
}

/// PostgreSQL at `DATABASE_URL` with `rows` seeded rows (the test fails when it does not
/// answer).
pub(crate) fn postgres_sql_config(rows: usize) -> workloads::sql::SqlConfig {
    sql_config(workloads::db::Backend::Postgres, postgres(), rows)
}
