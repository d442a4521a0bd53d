//! The harness: CLI, parent runner, worker, statistics and reports. Its one user is `main.rs`:
//! everything else is private to the crate.

pub use alloc::CountingAllocator;
pub use app::run;
pub use cli::Cli;
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
mod cli;
mod compare;
mod explain;
mod export;
mod format;
mod layouts;
mod machine;
mod noise;
mod page;
mod pin;
mod plan;
mod preflight;
mod progress;
mod protocol;
mod relay;
mod report;
mod row;
mod runner;
mod server_url;
mod shard;
mod sql_text;
mod stats;
mod summary;
mod worker;

/// Bad input from the user: printed as one line, exit code 2, nothing measured.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// Exit code for bad input.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit code when a gate could not decide (a case it could not measure or test): it fails
/// closed, with the code of bad input, since more or other input is the fix.
pub const EXIT_UNDECIDED: u8 = EXIT_BAD_INPUT;
/// Exit code when a fork or benchmark failed.
pub const EXIT_FAILED: u8 = 1;
/// Exit code when `harness compare` finds a regression.
pub const EXIT_REGRESSION: u8 = 3;
/// Exit code when `harness bisect` finds no regression between its two commits.
pub const EXIT_NOT_FOUND: u8 = 4;
/// Exit code when `harness bisect` leaves a range of commits (skipped or undecided ones).
pub const EXIT_RANGE: u8 = 5;
/// Exit code after Ctrl-C or SIGTERM.
pub const EXIT_INTERRUPTED: u8 = 130;
