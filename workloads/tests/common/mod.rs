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
