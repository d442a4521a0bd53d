//! The harness: CLI, parent runner, worker, statistics and reports. Its one user is `main.rs`:
//! everything else is private to the crate.

pub use alloc::CountingAllocator;
pub use app::{exit_of, run};
pub use cli::Cli;
pub use error::{BadInput, Exit};
pub use protocol::WORKER_ARG;
pub use worker::main as worker_main;

pub use workloads::redact::redact;

/// Remembers the secrets in this process's command line and URL environment variables, so that
/// [`redact`] hides them wherever a library prints them back (decoded, escaped, in an error).
pub fn remember_secrets() {
    let env = ["DATABASE_URL", "REDIS_URL"].into_iter().filter_map(std::env::var_os);
    for input in std::env::args_os().chain(env) {
        workloads::redact::remember_secrets_in(&input.to_string_lossy());
    }
}

/// `eprintln!` that never panics: a closed stderr (`harness run 2>&1 | head`) must not end a
/// run and lose what it measured (measuring commands ignore SIGPIPE).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `print!` that never panics, for what a run prints on stdout at its end.
macro_rules! show {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}

mod ab;
mod alloc;
mod app;
mod bisect;
mod callgrind;
mod child;
mod cli;
mod compare;
mod error;
mod explain;
mod export;
mod format;
mod history;
mod interrupt;
mod layouts;
mod machine;
mod metric;
mod noise;
mod page;
mod pin;
mod plan;
mod preflight;
mod progress;
mod protocol;
mod rate;
mod report;
mod row;
mod runner;
mod server_url;
mod shard;
mod stats;
mod summary;
mod worker;
