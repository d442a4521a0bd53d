//! Server URLs checked when they are read: the scheme its client speaks and a host, so a typo
//! fails in one line (exit 2) before anything is measured or written. Reachability is checked
//! later, by `preflight`.

use workloads::Server;

/// The schemes each server's clients accept.
fn schemes(server: Server) -> &'static [&'static str] {
    match server {
        Server::Postgres => &["postgres", "postgresql"],
        Server::Redis => &["redis", "rediss", "redis+unix"],
    }
}

/// An example of a good URL, for the error.
pub(crate) fn example(server: Server) -> &'static str {
    match server {
        Server::Postgres => "postgres://postgres@127.0.0.1:5432/test",
        Server::Redis => "redis://127.0.0.1:6379",
    }
}

/// Why `url` cannot be `server`'s URL (the reason names the fix), or Ok.
pub(crate) fn check(server: Server, url: &str) -> Result<(), String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("is not a URL ({e}); expected e.g. {}", example(server)))?;
    let accepted = schemes(server);
    if !accepted.contains(&parsed.scheme()) {
        let list: Vec<String> = accepted.iter().map(|s| format!("{s}://")).collect();
        return Err(format!(
            "has scheme {}://, which is not {}'s: use {} (e.g. {})",
            parsed.scheme(),
            server.name(),
            list.join(" or "),
            example(server)
        ));
    }
    // PostgreSQL may name a Unix socket in its query (`postgres:///db?host=/run/postgresql`).
    let socket = parsed.scheme() == "redis+unix" || parsed.query_pairs().any(|(k, _)| k == "host");
    if parsed.host_str().is_none_or(str::is_empty) && !socket {
        return Err(format!("names no host; expected e.g. {}", example(server)));
    }
    Ok(())
}

/// Why `--io` cannot count `server` at `url` (the reason names the fix), or Ok: its relays read
/// plain TCP, so neither a Unix socket nor TLS (`rediss://`, a case's `sslmode=require`) can be
/// counted.
pub(crate) fn io_countable(server: Server, url: &str) -> Result<(), String> {
    let shown = workloads::redact::redact(url);
    let parsed = url::Url::parse(url).map_err(|e| format!("--io cannot read the URL {shown}: {e}"))?;
    let tcp = match server {
        Server::Postgres => !parsed.query_pairs().any(|(k, _)| k == "host" || k == "hostaddr"),
        Server::Redis => parsed.scheme() == "redis",
    };
    if !tcp || parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!(
            "--io counts {} over plain TCP only, and {shown} is not: pass a tcp URL such as {}",
            server.name(),
            example(server)
        ));
    }
    if server == Server::Postgres && workloads::db::transport::sslmode_of(url).as_deref() == Some("require") {
        return Err(format!(
            "--io counts PostgreSQL's messages in the clear only, and {shown} runs over TLS (db=postgres_tls): count with -p db=postgres, or drop --io"
        ));
    }
    Ok(())
}

/// clap's parser for `--redis-url`.
pub(crate) fn redis(s: &str) -> Result<String, String> {
    check(Server::Redis, s).map(|()| s.to_string())
}

/// clap's parser for `--database-url`: a PostgreSQL URL whose `sslmode`, if it has one, says one
/// transport to every driver (see [`workloads::db::transport`]).
pub(crate) fn postgres(s: &str) -> Result<String, String> {
    check(Server::Postgres, s)?;
    match workloads::db::transport::unsupported_sslmode(s) {
        Some(why) => Err(why),
        None => Ok(s.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_urls_pass() {
        for url in ["redis://127.0.0.1:6379", "rediss://u:pw@cache.example:6380/2", "redis+unix:///tmp/redis.sock"] {
            assert_eq!(check(Server::Redis, url), Ok(()), "{url}");
        }
        for url in ["postgres://postgres@127.0.0.1:5432/test", "postgresql://h/db", "postgres:///test?host=/run/pg"] {
            assert_eq!(check(Server::Postgres, url), Ok(()), "{url}");
        }
    }

    #[test]
    fn bad_urls_name_the_problem_and_the_fix() {
        let e = check(Server::Redis, "not a url").unwrap_err();
        assert!(e.starts_with("is not a URL") && e.contains("redis://127.0.0.1:6379"), "{e}");
        let e = check(Server::Redis, "http://127.0.0.1:6379").unwrap_err();
        assert!(e.contains("scheme http://") && e.contains("redis:// or rediss://"), "{e}");
        let e = check(Server::Postgres, "mysql://root@127.0.0.1/test").unwrap_err();
        assert!(e.contains("not PostgreSQL's") && e.contains("postgres:// or postgresql://"), "{e}");
        assert!(check(Server::Postgres, "postgres:///test").unwrap_err().contains("names no host"));
        let e = postgres("postgres://h/db?sslmode=prefer").unwrap_err();
        assert!(e.contains("sslmode=prefer") && e.contains("db=postgres_tls"), "{e}");
        assert_eq!(postgres("postgres://h/db?sslmode=disable").as_deref(), Ok("postgres://h/db?sslmode=disable"));
    }

    #[test]
    fn io_counts_plain_tcp_only() {
        assert_eq!(io_countable(Server::Postgres, "postgres://u@h/db?sslmode=disable"), Ok(()));
        assert_eq!(io_countable(Server::Redis, "redis://h:6379"), Ok(()));
        let socket = io_countable(Server::Postgres, "postgres:///test?host=/run/postgresql").unwrap_err();
        assert!(socket.contains("plain TCP only"), "{socket}");
        let tls = io_countable(Server::Redis, "rediss://u:secret@h:6380").unwrap_err();
        assert!(tls.contains("plain TCP only") && !tls.contains("secret"), "{tls}");
        let unix = io_countable(Server::Redis, "redis+unix:///tmp/redis.sock").unwrap_err();
        assert!(unix.contains("plain TCP only"), "{unix}");
        let pg_tls = io_countable(Server::Postgres, "postgres://h/db?sslmode=require").unwrap_err();
        assert!(pg_tls.contains("-p db=postgres"), "{pg_tls}");
    }
}
