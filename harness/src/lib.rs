//! The harness: CLI, parent runner, worker, statistics and reports.

pub mod ab;
pub mod alloc;
pub mod app;
pub mod cli;
pub mod compare;
pub mod docs;
pub mod export;
pub mod format;
pub mod gate;
pub mod noise;
pub mod pin;
pub mod plan;
pub mod preflight;
pub mod progress;
pub mod protocol;
/// Credential redaction, shared with the workloads.
pub use workloads::redact;
pub mod report;
pub mod row;
pub mod runner;
pub mod server_url;
pub mod shard;
pub mod stats;
pub mod summary;
pub mod worker;

/// Bad input from the user: printed as one line, exit code 2, nothing measured.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// Exit code for bad input.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit code when a fork or benchmark failed.
pub const EXIT_FAILED: u8 = 1;
/// Exit code when `harness compare` finds a regression.
pub const EXIT_REGRESSION: u8 = 3;
/// Exit code after Ctrl-C or SIGTERM.
pub const EXIT_INTERRUPTED: u8 = 130;
