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

/// clap's parser for `--redis-url`.
pub(crate) fn redis(s: &str) -> Result<String, String> {
    check(Server::Redis, s).map(|()| s.to_string())
}

/// clap's parser for `--database-url`.
pub(crate) fn postgres(s: &str) -> Result<String, String> {
    check(Server::Postgres, s).map(|()| s.to_string())
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
    }
}
