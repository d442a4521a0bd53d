//! Shared by the workload correctness tests: which servers are reachable.
//!
//! A test that needs a server fails under `CI=true` when it is unreachable (`.ci/run` must have
//! started it), and elsewhere says clearly that it was skipped.
#![allow(dead_code)]

use workloads::def::DEFAULT_DATABASE_URL;
use workloads::redact::redact;

/// The PostgreSQL URL the tests use: `DATABASE_URL` or the default.
pub(crate) fn database_url() -> String {
    std::env::var("DATABASE_URL").unwrap_or_else(|_| DEFAULT_DATABASE_URL.into())
}

/// Whether this run is CI.
pub(crate) fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// `Some(url)` when PostgreSQL answers; `None` (with a SKIPPED line) outside CI; a panic in CI.
pub(crate) fn postgres() -> Option<String> {
    let url = database_url();
    let mut config: postgres::Config = url.parse().expect("DATABASE_URL parses");
    config.connect_timeout(std::time::Duration::from_secs(3));
    match config.connect(postgres::NoTls) {
        Ok(_) => Some(url),
        Err(e) if in_ci() => {
            panic!("PostgreSQL is unreachable at {} with CI=true ({e}): .ci/run must start it", redact(&url))
        }
        Err(e) => {
            eprintln!("SKIPPED: PostgreSQL is unreachable at {} ({e}); start it to run this test", redact(&url));
            None
        }
    }
}

/// The Redis URL the tests use: `REDIS_URL` or the default.
pub(crate) fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| workloads::redis::DEFAULT_REDIS_URL.into())
}

/// `Some(url)` when Redis answers PING; `None` (with a SKIPPED line) outside CI; a panic in CI.
pub(crate) fn redis() -> Option<String> {
    let url = redis_url();
    let reachable = redis::Client::open(url.as_str())
        .and_then(|c| c.get_connection_with_timeout(std::time::Duration::from_secs(3)))
        .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
    match reachable {
        Ok(_) => Some(url),
        Err(e) if in_ci() => {
            panic!("Redis is unreachable at {} with CI=true ({e}): .ci/run must start it", redact(&url))
        }
        Err(e) => {
            eprintln!("SKIPPED: Redis is unreachable at {} ({e}); start it to run this test", redact(&url));
            None
        }
    }
}
