//! Before anything is measured: every server the selected cases need must accept a TCP
//! connection. Each unreachable server is reported once, in one line naming its URL (password
//! redacted) and the fix; the cases that need it are skipped, so the run fails fast and never
//! measures a substitute.

use crate::plan::Case;
use std::collections::BTreeMap;
use std::net::TcpStream;
use std::time::Duration;
use workloads::redact::redact;
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
    let mut reasons: BTreeMap<&(Server, String), String> = BTreeMap::new();
    let mut probed: std::collections::BTreeSet<&(Server, String)> = Default::default();
    for need in needs.iter().flatten() {
        if !probed.insert(need) {
            continue;
        }
        let refused = match probe(need.0, &need.1) {
            Err(e) => Some(unreachable(need.0, &need.1, &e)),
            Ok(reply) => without_tls(need.0, &need.1, reply),
        };
        if let Some(reason) = refused {
            reasons.insert(need, reason);
        }
    }
    for (need, reason) in &reasons {
        let skipped = needs.iter().filter(|n| n.contains(need)).count();
        say!("error: {reason}; skipping {skipped} case{}", if skipped == 1 { "" } else { "s" });
    }
    needs.iter().map(|n| n.iter().find_map(|need| reasons.get(need).cloned())).collect()
}

/// Every server URL the cases would use (from `--redis-url`, `--database-url` or a `-p` param)
/// has its server's scheme and a host, a `--database-url` whose `sslmode` agrees with each
/// case's transport, and, with `--io`, a transport the relays can count; otherwise the one line
/// naming the URL and the fix.
pub(crate) fn check_urls(cases: &[Case], database_url: &str, io: bool) -> Result<(), crate::error::BadInput> {
    use workloads::db::transport::{Transport, conflict};
    for case in cases {
        let ctx = SetupContext { database_url: database_url.to_string(), ..SetupContext::new(case.params.clone()) };
        let transport = case.params.get("db").ok().and_then(Transport::of_db);
        for (server, url) in (case.def.servers)(&ctx) {
            let bad = |why: String| {
                crate::error::BadInput(format!("{} URL '{}' of {} {why}", server.name(), redact(&url), case.id()))
            };
            crate::server_url::check(server, &url).map_err(bad)?;
            if let Some(why) = transport.filter(|_| server == Server::Postgres).and_then(|t| conflict(database_url, t))
            {
                return Err(crate::error::BadInput(format!("--database-url '{}' {why}", redact(database_url))));
            }
            if io {
                crate::server_url::io_countable(server, &url)
                    .map_err(|why| crate::error::BadInput(format!("{}: {why}", case.id())))?;
            }
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

/// The one line for a URL that needs TLS (`sslmode=require`, a `db=postgres_tls` case) on a
/// PostgreSQL that answered the SSLRequest with 'N': every connection of its cases would fail.
fn without_tls(server: Server, url: &str, reply: Option<u8>) -> Option<String> {
    let requires = workloads::db::transport::sslmode_of(url).is_some_and(|m| m == "require");
    (server == Server::Postgres && reply == Some(b'N') && requires).then(|| {
        format!(
            "PostgreSQL at {} does not offer TLS (it answered the SSLRequest with 'N'), which db=postgres_tls needs: turn on `ssl` in the server, or choose -p db=postgres",
            redact(url)
        )
    })
}

/// Connects to the URL's host and port (the server's default port when none is given); the
/// server's one-byte answer to its first question. URLs without a TCP host (Unix sockets) are
/// left to the workload.
fn probe(server: Server, url: &str) -> Result<Option<u8>, String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("invalid URL: {e}"))?;
    if parsed.host_str().is_none_or(str::is_empty) {
        return Ok(None);
    }
    let addrs = parsed.socket_addrs(|| Some(server.default_port())).map_err(|e| e.to_string())?;
    let mut last = "no address to connect to".to_string();
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, PROBE_TIMEOUT) {
            Ok(stream) => return answers(server, stream).map(Some),
            Err(e) => last = e.to_string(),
        }
    }
    Err(last)
}

/// Whether the server behind `stream` answers its protocol's first question within
/// [`PROBE_TIMEOUT`], before any credential is sent: PostgreSQL an SSLRequest (one byte, 'S'
/// or 'N'), Redis a PING (any reply, `-NOAUTH` included). A server that accepts connections
/// and never answers would otherwise hold every fork until its timeout.
fn answers(server: Server, mut stream: TcpStream) -> Result<u8, String> {
    use std::io::{Read, Write};
    /// PostgreSQL's SSLRequest: length 8, then the code 80877103.
    const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];
    let question: &[u8] = match server {
        Server::Postgres => &SSL_REQUEST,
        Server::Redis => b"PING\r\n",
    };
    let silent = || format!("it accepts connections but did not answer within {}s", PROBE_TIMEOUT.as_secs());
    stream
        .set_read_timeout(Some(PROBE_TIMEOUT))
        .and_then(|()| stream.set_write_timeout(Some(PROBE_TIMEOUT)))
        .map_err(|e| e.to_string())?;
    stream.write_all(question).map_err(|e| e.to_string())?;
    let mut reply = [0u8; 1];
    let read = loop {
        match stream.read(&mut reply) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            other => break other,
        }
    };
    match read {
        Ok(1) => Ok(reply[0]),
        Ok(_) => Err("it closed the connection without answering".into()),
        Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => Err(silent()),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_tells_answering_silent_and_closed_servers_apart() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // The silent connection is held open until the probe has given up (a fixed sleep let a
        // loaded machine see it closed instead).
        let (probed, held) = std::sync::mpsc::channel::<()>();
        let answering = std::thread::spawn(move || {
            let (mut c, _) = listener.accept().unwrap();
            let mut buf = [0u8; 6];
            c.read_exact(&mut buf).unwrap();
            c.write_all(b"+PONG\r\n").unwrap();
            let (_silent, _) = listener.accept().unwrap();
            let _ = held.recv();
        });
        assert_eq!(probe(Server::Redis, &format!("redis://127.0.0.1:{port}")), Ok(Some(b'+')));
        let silent = probe(Server::Postgres, &format!("postgres://u@127.0.0.1:{port}/db")).unwrap_err();
        probed.send(()).unwrap();
        assert!(silent.contains("accepts connections but did not answer within 2s"), "{silent}");
        answering.join().unwrap();
        // Not the freed port: a test running in parallel may be handed it at once.
        assert!(probe(Server::Redis, "redis://u:pw@127.0.0.1:1").is_err());
        assert_eq!(
            probe(Server::Postgres, "postgres:///test?host=/var/run/postgresql"),
            Ok(None),
            "sockets are not probed"
        );
        assert!(probe(Server::Redis, "not a url").is_err());
    }

    #[test]
    fn a_server_without_tls_is_refused_only_to_a_url_that_requires_it() {
        let tls = "postgres://u:pw@127.0.0.1/test?sslmode=require";
        let line = without_tls(Server::Postgres, tls, Some(b'N')).unwrap();
        assert!(line.starts_with("PostgreSQL at postgres://u:***@127.0.0.1/test?sslmode=require does not offer TLS"));
        assert!(line.ends_with("or choose -p db=postgres"), "{line}");
        assert_eq!(without_tls(Server::Postgres, tls, Some(b'S')), None);
        assert_eq!(without_tls(Server::Postgres, "postgres://u@h/test?sslmode=disable", Some(b'N')), None);
        assert_eq!(without_tls(Server::Postgres, tls, None), None, "a socket is the workload's to try");
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
