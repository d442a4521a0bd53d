//! Before anything is measured: every server the selected cases need must accept a TCP
//! connection. Each unreachable server is reported once, in one line naming its URL (password
//! redacted) and the fix; the cases that need it are skipped, so the run fails fast and never
//! measures a substitute.

use crate::plan::Case;
use crate::redact;
use std::collections::BTreeMap;
use std::net::TcpStream;
use std::time::Duration;
use workloads::{Server, SetupContext};

/// How long one connection attempt may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// For each case, why it cannot run (`None` when every server it needs answers). Prints one
/// `error:` line per unreachable server.
pub(crate) fn check(cases: &[Case], database_url: &str) -> Vec<Option<String>> {
    let needs: Vec<Vec<(Server, String)>> = cases
        .iter()
        .map(|c| {
            let ctx = SetupContext { database_url: database_url.to_string(), ..SetupContext::new(c.params.clone()) };
            (c.def.servers)(&ctx)
        })
        .collect();
    let mut verdicts: BTreeMap<(Server, String), Option<String>> = BTreeMap::new();
    for need in needs.iter().flatten() {
        verdicts.entry(need.clone()).or_insert_with(|| probe(need.0, &need.1).err());
    }
    let reasons: BTreeMap<&(Server, String), String> = verdicts
        .iter()
        .filter_map(|(need, err)| err.as_ref().map(|e| (need, unreachable(need.0, &need.1, e))))
        .collect();
    for (need, reason) in &reasons {
        let skipped = needs.iter().filter(|n| n.contains(need)).count();
        eprintln!("error: {reason}; skipping {skipped} case{}", if skipped == 1 { "" } else { "s" });
    }
    needs.iter().map(|n| n.iter().find_map(|need| reasons.get(need).cloned())).collect()
}

/// Every server URL the cases would use (from `--redis-url`, `--database-url` or a `-p` param)
/// has its server's scheme and a host; otherwise the one line naming the URL and the fix.
pub(crate) fn check_urls(cases: &[Case], database_url: &str) -> Result<(), crate::BadInput> {
    for case in cases {
        let ctx = SetupContext { database_url: database_url.to_string(), ..SetupContext::new(case.params.clone()) };
        for (server, url) in (case.def.servers)(&ctx) {
            crate::server_url::check(server, &url).map_err(|why| {
                crate::BadInput(format!("{} URL '{}' of {} {why}", server.name(), redact(&url), case.label()))
            })?;
        }
    }
    Ok(())
}

/// The one line for an unreachable server.
fn unreachable(server: Server, url: &str, err: &str) -> String {
    format!(
        "cannot reach {} at {} ({}): start {} or pass {}",
        server.name(),
        redact(url),
        redact(err),
        server.name(),
        server.flag()
    )
}

/// Connects to the URL's host and port (the server's default port when none is given). URLs
/// without a TCP host (Unix sockets) are left to the workload.
fn probe(server: Server, url: &str) -> Result<(), String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("invalid URL: {e}"))?;
    if parsed.host_str().is_none_or(str::is_empty) {
        return Ok(());
    }
    let addrs = parsed.socket_addrs(|| Some(server.default_port())).map_err(|e| e.to_string())?;
    let mut last = "no address to connect to".to_string();
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, PROBE_TIMEOUT) {
            Ok(_) => return Ok(()),
            Err(e) => last = e.to_string(),
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_tells_open_from_closed_ports() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert!(probe(Server::Redis, &format!("redis://127.0.0.1:{port}")).is_ok());
        drop(listener);
        // Not the freed port: a test running in parallel may be handed it at once.
        assert!(probe(Server::Redis, "redis://u:pw@127.0.0.1:1").is_err());
        assert!(probe(Server::Postgres, "postgres:///test?host=/var/run/postgresql").is_ok(), "sockets are not probed");
        assert!(probe(Server::Redis, "not a url").is_err());
    }

    #[test]
    fn the_line_redacts_and_names_the_fix() {
        let line = unreachable(Server::Redis, "redis://user:s3cret@127.0.0.1:1", "Connection refused");
        assert_eq!(
            line,
            "cannot reach Redis at redis://user:***@127.0.0.1:1 (Connection refused): start Redis or pass --redis-url (or REDIS_URL)"
        );
    }
}
