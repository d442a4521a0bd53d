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

/// A TCP proxy in front of a server that counts round trips: a *flight* is the client speaking
/// and the server answering it, summed over every proxied connection. What the driver sends in
/// one go (Parse/Bind/Execute/Sync) is one flight; a ping is one more. A flight is counted when
/// its answer passes the proxy, before the client can read it: an op has counted all its flights
/// when it returns, and a message nobody answers (a dropped connection's Terminate, read late by
/// the proxy's thread) is never counted.
pub(crate) struct RoundTrips {
    /// The port clients connect to instead of the server's.
    pub(crate) port: u16,
    flights: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl RoundTrips {
    /// Starts proxying to `upstream` (`host:port`).
    pub(crate) fn start(upstream: String) -> RoundTrips {
        use std::sync::Arc;
        use std::sync::atomic::AtomicU64;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        let port = listener.local_addr().unwrap().port();
        let flights = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&flights);
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let server = std::net::TcpStream::connect(&upstream).expect("the server behind the proxy");
                Self::pump_both(client, server, Arc::clone(&counted));
            }
        });
        RoundTrips { port, flights }
    }

    /// Copies both directions of one connection, counting the client's flights.
    fn pump_both(
        client: std::net::TcpStream,
        server: std::net::TcpStream,
        flights: std::sync::Arc<std::sync::atomic::AtomicU64>,
    ) {
        use std::sync::atomic::{AtomicBool, Ordering};
        let client_spoke_last = std::sync::Arc::new(AtomicBool::new(false));
        let pump = |mut from: std::net::TcpStream, mut to: std::net::TcpStream, on_bytes: Box<dyn Fn() + Send>| {
            std::thread::spawn(move || {
                let mut buf = [0u8; 16 * 1024];
                loop {
                    match std::io::Read::read(&mut from, &mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            on_bytes();
                            if std::io::Write::write_all(&mut to, &buf[..n]).is_err() {
                                break;
                            }
                        }
                    }
                }
                let _ = to.shutdown(std::net::Shutdown::Write);
            });
        };
        let (spoke, heard) = (std::sync::Arc::clone(&client_spoke_last), client_spoke_last);
        let on_request = Box::new(move || spoke.store(true, Ordering::SeqCst));
        let on_answer = Box::new(move || {
            if heard.swap(false, Ordering::SeqCst) {
                flights.fetch_add(1, Ordering::SeqCst);
            }
        });
        pump(client.try_clone().unwrap(), server.try_clone().unwrap(), on_request);
        pump(server, client, on_answer);
    }

    /// Round trips so far.
    pub(crate) fn count(&self) -> u64 {
        self.flights.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Round trips per op over `ops` calls of `op`.
    #[allow(dead_code, reason = "the tests without a proxy use none of it")]
    pub(crate) fn per_op(&self, ops: u64, mut op: impl FnMut()) -> f64 {
        let before = self.count();
        for _ in 0..ops {
            op();
        }
        (self.count() - before) as f64 / ops as f64
    }
}

/// PostgreSQL's URL rewritten to go through a [`RoundTrips`] proxy, and the proxy.
pub(crate) fn postgres_through_proxy() -> (String, RoundTrips) {
    let url = postgres();
    let config: postgres::Config = url.parse().unwrap();
    let host = match &config.get_hosts()[0] {
        postgres::config::Host::Tcp(h) => h.clone(),
        postgres::config::Host::Unix(_) => panic!("the round-trip test needs PostgreSQL over TCP, not a socket"),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let proxy = RoundTrips::start(format!("{host}:{port}"));
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

/// Redis's URL rewritten to go through a [`RoundTrips`] proxy, and the proxy.
#[allow(dead_code, reason = "only the Redis tests use it")]
pub(crate) fn redis_through_proxy() -> (String, RoundTrips) {
    use redis::IntoConnectionInfo;
    let url = redis();
    let info = url.as_str().into_connection_info().expect("REDIS_URL parses");
    let redis::ConnectionAddr::Tcp(host, port) = info.addr().clone() else {
        panic!("the round-trip test needs Redis over plain TCP");
    };
    let proxy = RoundTrips::start(format!("{host}:{port}"));
    assert!(info.redis_settings().password().is_none(), "the round-trip test needs Redis without a password");
    (format!("redis://127.0.0.1:{}/{}", proxy.port, info.redis_settings().db()), proxy)
}
