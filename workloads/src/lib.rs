//! Declared persistence workloads: the [`Workload`] abstraction, the [`registry`] and the suite.
//!
//! A workload is built once per fork from its params ([`WorkloadDef::setup`]), verified, measured
//! and torn down by the harness worker. The measured operation lives in a generic trait so that
//! the timed loop is monomorphized per workload; the worker only makes one dynamic call per
//! *batch* of operations ([`Bench::run_batch`]), never one per operation.

pub mod baseline;
mod bench;
pub mod cache;
pub mod db;
pub mod def;
pub mod fault;
pub mod growth;
pub mod ids;
mod open;
pub mod orm;
pub mod params;
pub mod planted;
pub mod probe;
pub mod redact;
pub mod redis;
pub mod registry;
pub mod relay;
pub mod sql;
pub mod sql_text;
pub mod tally;
mod workload;

pub use bench::{
    Async, Bench, Blocking, Concurrent, IterationPlan, Prepared, Shape, TaskRun, asynchronous, blocking, run_iteration,
};
pub use def::{Server, ServerFailed, SetupContext, WorkloadDef, server_failed};
pub use open::{Landed, SPIN as OPEN_LOOP_SPIN};
pub use params::{ParamKind, ParamSpec, Params};
pub use tally::{PerOp, Tally};
pub use workload::{AsyncWorkload, Phase, Workload};

/// The runtime async workloads own: current-thread, so the worker's measuring thread drives
/// every task of an op (no cross-thread wake-ups).
pub fn current_thread_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread().enable_all().build()?)
}
