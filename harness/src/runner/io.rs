//! I/O forks (`--io`): the worker reaches its servers through counting relays the parent runs
//! on loopback, and the parent reads the relays' counts at the edges of the worker's counted
//! windows. Never timed: the relay adds a hop.

use super::collect::Collector;
use super::{RunContext, Side};
use crate::plan::Case;
use crate::progress::Progress;
use crate::protocol::{IoTask, Task};
use crate::report::io::{IoCount, IoSource};
use crate::report::{Fork, ForkStatus};
use std::time::Duration;
use workloads::Server;
use workloads::relay::{Protocol, Relay, Tally};

/// How I/O forks run.
#[derive(Debug, Clone)]
pub(crate) struct IoSettings {
    /// `--io-ops`: ops counted per fork.
    pub ops: Option<u64>,
    /// I/O forks per case.
    pub forks: u32,
}

/// One relayed server: its relay and how it is named in the report.
struct Relayed {
    relay: Relay,
    server: Server,
}

/// Runs one I/O fork of `side` and reports its progress.
pub(super) fn run_io_fork(
    ctx: &RunContext<'_>,
    case: &Case,
    (fork_index, forks): (u32, u32),
    io: &IoSettings,
    side: Side,
    progress: &Progress,
    label: &str,
) -> Fork {
    progress.fork_started(label, fork_index, forks);
    let mut task = io_task(case, fork_index, ctx, io);
    let fork = match relay_servers(&mut task, case) {
        Ok(relays) => follow(ctx, &task, side, &relays, progress, label),
        Err(e) => super::spawn_failed(&task, e),
    };
    if fork.status != ForkStatus::Ok {
        super::cleanup::clean_up_after(ctx, case, &fork, progress);
    }
    super::report_fork_end(progress, label, &fork, forks);
    fork
}

/// The task of an I/O fork: one measurer, no timed iterations, the counted ops.
fn io_task(case: &Case, fork_index: u32, ctx: &RunContext<'_>, io: &IoSettings) -> Task {
    Task {
        warmup_iterations: 0,
        iterations: 0,
        threads: 1,
        sample: false,
        count_allocations: false,
        io: Some(IoTask { ops: io.ops }),
        rate: None,
        ..super::task(case, fork_index, ctx, None)
    }
}

/// Spawns the worker and follows it, reading the relays at every window edge.
fn follow(ctx: &RunContext<'_>, task: &Task, side: Side, relays: &[Relayed], progress: &Progress, label: &str) -> Fork {
    let exe = match ctx.exe(side, None) {
        Ok((exe, _)) => exe,
        Err(e) => return super::spawn_failed(task, e),
    };
    let worker = match ctx.start_worker(vec![], exe, task) {
        Ok(w) => w,
        Err(e) => return super::spawn_failed(task, e),
    };
    let mut collector = Collector::new(worker, task, Duration::from_nanos(ctx.settings.fork_timeout_nanos));
    let mut on_message = |m: &crate::protocol::Message| progress.message(label, m);
    let (mut counted, mut opened) = (Tally::default(), None::<Tally>);
    while collector.pump(ctx.stop, &mut on_message, true) {
        let now = tally_of(relays);
        match opened.take() {
            None => opened = Some(now),
            Some(start) => counted.add(&now.since(&start)),
        }
        if !collector.go() {
            break;
        }
    }
    let mut fork = collector.finish(ctx.stop, &mut on_message);
    if let Some(io) = fork.io.as_mut() {
        add_relayed(io, &counted, relays);
    }
    if let Some(missed) =
        relays.iter().find(|r| r.relay.tally().connections == 0).filter(|_| fork.status == ForkStatus::Ok)
    {
        fork.status = ForkStatus::Failed;
        fork.failure = Some(crate::report::Failure {
            kind: crate::report::FailureKind::Verify,
            message: format!(
                "the counting relay in front of {} saw no connection, so the fork's counts would read 0: the workload bypassed it (a harness bug; please report it)",
                missed.server.name()
            ),
            stderr_tail: String::new(),
        });
    }
    fork
}

/// Every relay's counts so far, summed.
fn tally_of(relays: &[Relayed]) -> Tally {
    let mut sum = Tally::default();
    for r in relays {
        sum.add(&r.relay.tally());
    }
    sum
}

/// The relays' counts of the windows added to what the worker traced (SQLite's statements and
/// rows), with every source; `none` when nothing talks to a server or to SQLite.
fn add_relayed(io: &mut IoCount, t: &Tally, relays: &[Relayed]) {
    let relayed = relays.iter().map(|r| IoSource {
        server: r.server.name().to_string(),
        how: match r.server {
            Server::Postgres => "the harness's counting relay on loopback (protocol 3, encryption declined)",
            Server::Redis => "the harness's counting relay on loopback (RESP requests)",
        }
        .to_string(),
        exact: t.unreadable_connections == 0,
    });
    io.sources.extend(relayed);
    if io.sources.is_empty() {
        io.sources.push(IoSource {
            server: "none".into(),
            how: "talks to no server and runs no SQLite statement: nothing to count".into(),
            exact: true,
        });
    }
    io.round_trips = t.round_trips;
    io.bytes_to_server = t.bytes_to_server;
    io.bytes_to_client = t.bytes_to_client;
    io.messages.clone_from(&t.messages);
    for (sql, n) in &t.statements {
        *io.statements.entry(sql.clone()).or_default() += n;
    }
    io.rows_returned += t.rows;
    io.connections = t.connections;
}

/// Starts a relay in front of every server of the case and points the task at it, where the
/// worker takes each URL from: `--database-url` for PostgreSQL (the case's `sslmode` is written
/// in from its `db`), the param that holds it for Redis. Then asks the case again, from the
/// rewritten task, which URLs it will use: each must be a relay's, or the fork does not start.
fn relay_servers(task: &mut Task, case: &Case) -> Result<Vec<Relayed>, String> {
    let mut relays = vec![];
    for (server, url) in servers_of(case, task) {
        let mut port = 0;
        let relayed_url = relayed(server, &url, |addr| {
            let protocol = if server == Server::Postgres { Protocol::Postgres } else { Protocol::Resp };
            let relay = Relay::start(addr, protocol).map_err(|e| format!("cannot start the counting relay: {e}"))?;
            port = relay.addr.port();
            relays.push(Relayed { relay, server });
            Ok(port)
        })?;
        if server == Server::Postgres {
            task.database_url = relayed(server, &task.database_url, |_| Ok(port))?;
        }
        for value in task.params.values_mut().filter(|v| **v == url) {
            value.clone_from(&relayed_url);
        }
    }
    let ports: Vec<u16> = relays.iter().map(|r| r.relay.addr.port()).collect();
    for (server, url) in servers_of(case, task) {
        let parsed = url::Url::parse(&url).ok();
        let through =
            parsed.is_some_and(|u| u.host_str() == Some("127.0.0.1") && ports.contains(&u.port().unwrap_or(0)));
        if !through {
            return Err(format!(
                "--io: the {} URL of {} does not go through its counting relay (a harness bug; please report it)",
                server.name(),
                case.id()
            ));
        }
    }
    Ok(relays)
}

/// The servers `case` will use given the task's URLs and params (those the worker gets).
fn servers_of(case: &Case, task: &Task) -> Vec<(Server, String)> {
    let setup = workloads::SetupContext {
        database_url: task.database_url.clone(),
        ..workloads::SetupContext::new(workloads::Params(task.params.clone()))
    };
    (case.def.servers)(&setup)
}

/// `url` rewritten to the port of the relay that `start` starts in front of its server.
fn relayed(
    server: Server,
    url: &str,
    start: impl FnOnce(std::net::SocketAddr) -> Result<u16, String>,
) -> Result<String, String> {
    use std::net::ToSocketAddrs;
    let shown = workloads::redact::redact(url);
    crate::server_url::io_countable(server, url)?;
    let mut parsed = url::Url::parse(url).map_err(|e| format!("--io cannot read the URL {shown}: {e}"))?;
    let host = parsed.host_str().map(str::to_string).unwrap_or_default();
    let port = parsed.port().unwrap_or(server.default_port());
    let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
    let addr = (host.as_str(), port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| format!("--io cannot resolve the host of {shown}: check the URL"))?;
    let port = start(addr)?;
    parsed.set_host(Some("127.0.0.1")).map_err(|e| format!("--io cannot point {shown} at its relay: {e}"))?;
    parsed.set_port(Some(port)).map_err(|()| format!("--io cannot point {shown} at its relay"))?;
    Ok(parsed.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_pointed_at_the_relay_and_sockets_are_refused() {
        let mut upstream = None;
        let url = relayed(Server::Postgres, "postgres://u:pw@127.0.0.1:5432/test?sslmode=prefer", |addr| {
            upstream = Some(addr.port());
            Ok(4000)
        })
        .unwrap();
        assert_eq!((upstream, url.as_str()), (Some(5432), "postgres://u:pw@127.0.0.1:4000/test?sslmode=prefer"));
        let url = relayed(Server::Redis, "redis://localhost/2", |_| Ok(4001)).unwrap();
        assert_eq!(url, "redis://127.0.0.1:4001/2");
        let socket = relayed(Server::Postgres, "postgres:///test?host=/run/postgresql", |_| Ok(1)).unwrap_err();
        assert!(socket.contains("plain TCP only"), "{socket}");
    }
}
