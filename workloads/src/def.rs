//! What every workload declares and is given: its definition ([`WorkloadDef`]), the context of
//! its setup, the servers it talks to and the floor of its op. The list of workloads is
//! [`crate::registry`]; this module imports none of them.

use crate::{Params, Prepared, params::ParamSpec};

/// Default PostgreSQL URL (`--database-url`, `DATABASE_URL`).
pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// What setup receives: the case's params, where in the run this fork stands, and the servers.
#[derive(Debug, Clone)]
pub struct SetupContext {
    /// The parameter values of this case.
    pub params: Params,
    /// Index of this fork within the case (0-based).
    pub fork_index: u32,
    /// PostgreSQL URL for `db=postgres` (may hold a password: redact before printing).
    pub database_url: String,
    /// Measuring threads (or tasks) that will share the state (`--threads`).
    pub threads: usize,
}

impl SetupContext {
    /// A context for fork 0 with the default server URLs.
    pub fn new(params: Params) -> SetupContext {
        SetupContext { params, fork_index: 0, database_url: DEFAULT_DATABASE_URL.into(), threads: 1 }
    }
}

/// A registered workload: its name, declared params and how to build it.
pub struct WorkloadDef {
    /// `group/snake_case_name`.
    pub name: &'static str,
    /// One-line description of the measured operation.
    pub about: &'static str,
    /// Declared parameters.
    pub params: &'static [ParamSpec],
    /// Hidden from `list` and configurations (fault injectors for tests).
    pub hidden: bool,
    /// Builds the workload state for one fork.
    pub setup: fn(&SetupContext) -> anyhow::Result<Box<dyn Prepared>>,
    /// The servers a case needs, with their URLs, so the parent can check them before measuring.
    pub servers: fn(&SetupContext) -> Vec<(Server, String)>,
    /// The fastest an op can plausibly be.
    pub op_floor: OpFloor,
    /// The most ops per second the scheme behind the case allows, where it has such a limit.
    pub ops_ceiling: fn(&SetupContext) -> Option<OpsCeiling>,
    /// Whether several measuring threads or tasks may share one state (`--threads` above 1);
    /// false for workloads that reset shared state before every op.
    pub shareable: bool,
}

/// Builds a workload's definition in a `static`: [`WorkloadDef::new`] gives the common case
/// and each method below changes one thing, so a definition says only how it differs.
impl WorkloadDef {
    /// A visible workload that talks to no server, has no op floor nor ceiling, and whose
    /// state measuring threads may share.
    pub const fn new(
        name: &'static str,
        about: &'static str,
        params: &'static [ParamSpec],
        setup: fn(&SetupContext) -> anyhow::Result<Box<dyn Prepared>>,
    ) -> WorkloadDef {
        WorkloadDef {
            name,
            about,
            params,
            hidden: false,
            setup,
            servers: no_servers,
            op_floor: OpFloor::None,
            ops_ceiling: no_ceiling,
            shareable: true,
        }
    }

    /// Talks to the servers `servers` names, every op at least one round trip to them.
    pub const fn served_by(self, servers: fn(&SetupContext) -> Vec<(Server, String)>) -> WorkloadDef {
        WorkloadDef { servers, op_floor: OpFloor::RoundTrip, ..self }
    }

    /// With the op floor `op_floor` instead.
    pub const fn floor(self, op_floor: OpFloor) -> WorkloadDef {
        WorkloadDef { op_floor, ..self }
    }

    /// With the ceiling `ops_ceiling` of its scheme.
    pub const fn ceiling(self, ops_ceiling: fn(&SetupContext) -> Option<OpsCeiling>) -> WorkloadDef {
        WorkloadDef { ops_ceiling, ..self }
    }

    /// Left out of `list` and configurations (the fault injectors and probes of tests).
    pub const fn hidden(self) -> WorkloadDef {
        WorkloadDef { hidden: true, ..self }
    }

    /// Its state is not shared by several measuring threads (it resets shared state per op).
    pub const fn unshared(self) -> WorkloadDef {
        WorkloadDef { shareable: false, ..self }
    }
}

/// The fastest an op can plausibly be, so that a faster score is flagged (the op may have
/// been optimized away or served from somewhere it should not be).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpFloor {
    /// No floor beyond the harness's general one (1 ns per op).
    None,
    /// The op does nothing by design (a baseline of the harness's own cost per op): no speed is
    /// implausible, so none is flagged.
    Nothing,
    /// Every op makes at least one network round trip to the case's server (when it has one).
    RoundTrip,
}

/// A hard limit on a case's throughput that comes from the scheme it measures, not from its
/// cost: a score near it measures the limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpsCeiling {
    /// The most ops per second the scheme allows.
    pub ops_per_sec: f64,
    /// Why, in a few words (for example Snowflake's sequence space per millisecond).
    pub why: &'static str,
}

/// For workloads whose throughput has no limit but their cost.
pub fn no_ceiling(_: &SetupContext) -> Option<OpsCeiling> {
    None
}

/// The floor of [`OpFloor::RoundTrip`]: a loopback TCP round trip takes several microseconds
/// even on fast machines; 2 µs is a conservative lower bound.
pub const ROUND_TRIP_FLOOR_NANOS: u64 = 2_000;

impl WorkloadDef {
    /// The declared floor of one op of the case `ctx` describes, in nanoseconds.
    pub fn op_floor_nanos(&self, ctx: &SetupContext) -> Option<u64> {
        match self.op_floor {
            OpFloor::RoundTrip if !(self.servers)(ctx).is_empty() => Some(ROUND_TRIP_FLOOR_NANOS),
            OpFloor::Nothing => Some(0),
            _ => None,
        }
    }
}

/// A server a workload talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Server {
    /// PostgreSQL.
    Postgres,
    /// Redis.
    Redis,
}

/// The panic payload of an op that a server failed (see [`server_failed`]): the worker reports
/// it as a server error naming the server, not as a workload panic.
#[derive(Debug)]
pub struct ServerFailed {
    /// Which server.
    pub server: Server,
    /// What the client said.
    pub detail: String,
}

/// Ends an op that its server failed (connection lost, server error): unwinds with a
/// [`ServerFailed`] payload.
pub fn server_failed(server: Server, detail: std::fmt::Arguments<'_>) -> ! {
    std::panic::panic_any(ServerFailed { server, detail: detail.to_string() })
}

impl Server {
    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Server::Postgres => "PostgreSQL",
            Server::Redis => "Redis",
        }
    }

    /// The option that points the harness at it.
    pub fn flag(self) -> &'static str {
        match self {
            Server::Postgres => "--database-url (or DATABASE_URL)",
            Server::Redis => "--redis-url (or REDIS_URL)",
        }
    }

    /// Its default TCP port.
    pub fn default_port(self) -> u16 {
        match self {
            Server::Postgres => 5432,
            Server::Redis => 6379,
        }
    }
}

/// For workloads that need no server.
pub fn no_servers(_: &SetupContext) -> Vec<(Server, String)> {
    vec![]
}

impl WorkloadDef {
    /// The group: the part of the name before `/`.
    pub fn group(&self) -> &'static str {
        self.name.split_once('/').map_or(self.name, |(g, _)| g)
    }

    /// The declared param called `name`.
    pub fn param(&self, name: &str) -> Option<&'static ParamSpec> {
        self.params.iter().find(|p| p.name == name)
    }
}

impl std::fmt::Debug for WorkloadDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkloadDef").field("name", &self.name).finish_non_exhaustive()
    }
}
