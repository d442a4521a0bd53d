//! How a case's connections reach PostgreSQL: in the clear (`db=postgres`) or over TLS
//! (`db=postgres_tls`), the same for every driver of a twin pair. Each driver would otherwise
//! pick its own: libpq (Diesel's sync connection) and sqlx default to `sslmode=prefer` and use
//! TLS whenever the server offers it, while the `postgres` crate without a TLS connector and
//! diesel-async's `establish` never do. So the case's URL always carries an explicit `sslmode`
//! that every driver reads, and every driver's TLS is the system OpenSSL (libpq's, native-tls's
//! on Linux, and `postgres-openssl`'s for the raw driver and diesel-async).

use postgres_openssl::MakeTlsConnector;

/// How the connections of a case reach the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Plain TCP (`sslmode=disable`).
    Clear,
    /// TLS, the certificate not verified (`sslmode=require`, libpq's meaning): encrypted, as a
    /// TLS-only server demands, with no certificate authority to set up.
    Tls,
}

impl Transport {
    /// The transport a `db` param value names, `None` for the SQLite backends.
    pub fn of_db(db: &str) -> Option<Transport> {
        match db {
            "postgres" => Some(Transport::Clear),
            "postgres_tls" => Some(Transport::Tls),
            _ => None,
        }
    }

    /// The `sslmode` that says it to every driver.
    pub fn sslmode(self) -> &'static str {
        match self {
            Transport::Clear => "disable",
            Transport::Tls => "require",
        }
    }

    /// The `db` value that selects it.
    pub fn db(self) -> &'static str {
        match self {
            Transport::Clear => "postgres",
            Transport::Tls => "postgres_tls",
        }
    }

    /// `url` with `sslmode` set to this transport's (any `sslmode` it had replaced), keeping
    /// every other part as written; a URL that does not parse is returned as it is, for the
    /// driver to refuse in its own words.
    pub fn apply(self, url: &str) -> String {
        let mode = self.sslmode();
        if sslmode_of(url).is_none() {
            let sep = if url.contains('?') { '&' } else { '?' };
            return format!("{url}{sep}sslmode={mode}");
        }
        let Ok(mut parsed) = url::Url::parse(url) else { return url.to_string() };
        let kept: Vec<(String, String)> = parsed
            .query_pairs()
            .filter(|(k, _)| k != "sslmode")
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(kept).append_pair("sslmode", mode);
        parsed.to_string()
    }
}

/// The `sslmode` a URL sets, if any.
pub fn sslmode_of(url: &str) -> Option<String> {
    url::Url::parse(url).ok()?.query_pairs().find(|(k, _)| k == "sslmode").map(|(_, v)| v.into_owned())
}

/// Why `url`'s own `sslmode` cannot stand beside the harness's (the reason names the fix), or
/// `None`: only `disable` and `require` say one transport to every driver; `prefer` and
/// `allow` let each driver choose, and the `postgres` crate cannot verify certificates.
pub fn unsupported_sslmode(url: &str) -> Option<String> {
    let mode = sslmode_of(url)?;
    match mode.as_str() {
        "disable" | "require" => None,
        "prefer" | "allow" => Some(format!(
            "sets sslmode={mode}, which lets each driver choose its own transport: drop it (each case's -p db=postgres runs in the clear, db=postgres_tls over TLS for every driver)"
        )),
        _ => Some(format!(
            "sets sslmode={mode}, which not every driver supports (the postgres crate has disable, prefer and require): drop it and use -p db=postgres_tls for TLS (encrypted, certificate not verified)"
        )),
    }
}

/// Why the user's `url` and a case's transport disagree (its `sslmode` says the other one), or
/// `None`.
pub fn conflict(url: &str, transport: Transport) -> Option<String> {
    let mode = sslmode_of(url)?;
    let said = [Transport::Clear, Transport::Tls].into_iter().find(|t| t.sslmode() == mode)?;
    (said != transport).then(|| {
        format!(
            "sets sslmode={mode}, but db={} runs {}: drop sslmode from the URL (the db param sets the transport) or use -p db={}",
            transport.db(),
            if transport == Transport::Tls { "over TLS" } else { "in the clear" },
            said.db()
        )
    })
}

/// The OpenSSL connector every non-libpq PostgreSQL connection is given: it is used only when
/// the URL says `sslmode=require` (or `prefer`, for the harness's own housekeeping connections),
/// and, as libpq's `require`, encrypts without verifying the server's certificate. Made once per
/// process (its context loads the system's CA store) and shared: each pool connection, and a
/// reconnect in the measured window, only clones it.
pub fn connector() -> MakeTlsConnector {
    static MADE: std::sync::OnceLock<MakeTlsConnector> = std::sync::OnceLock::new();
    MADE.get_or_init(make_connector).clone()
}

/// A new connector, as [`connector`] describes it.
fn make_connector() -> MakeTlsConnector {
    use openssl::ssl::{SslConnector, SslMethod, SslVerifyMode};
    let mut builder = match SslConnector::builder(SslMethod::tls()) {
        Ok(builder) => builder,
        Err(e) => panic!("OpenSSL cannot make a TLS client context: {e}"),
    };
    builder.set_verify(SslVerifyMode::NONE);
    let mut connector = MakeTlsConnector::new(builder.build());
    connector.set_callback(|config, _| {
        config.set_verify_hostname(false);
        Ok(())
    });
    connector
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transport_is_written_into_the_url_over_any_sslmode() {
        let url = "postgres://bob:pw@h:5433/db?application_name=x&sslmode=prefer";
        assert_eq!(Transport::Clear.apply(url), "postgres://bob:pw@h:5433/db?application_name=x&sslmode=disable");
        assert_eq!(Transport::Tls.apply("postgres://h/db"), "postgres://h/db?sslmode=require");
        assert_eq!(Transport::Tls.apply("postgres:///db?host=/run/pg"), "postgres:///db?host=/run/pg&sslmode=require");
    }

    #[test]
    fn sslmodes_that_let_drivers_choose_or_verify_are_refused() {
        assert_eq!(unsupported_sslmode("postgres://h/db"), None);
        assert_eq!(unsupported_sslmode("postgres://h/db?sslmode=disable"), None);
        assert!(unsupported_sslmode("postgres://h/db?sslmode=prefer").unwrap().contains("drop it"));
        assert!(unsupported_sslmode("postgres://h/db?sslmode=verify-full").unwrap().contains("db=postgres_tls"));
    }

    #[test]
    fn a_url_that_says_the_other_transport_conflicts() {
        let clear = "postgres://h/db?sslmode=disable";
        assert_eq!(conflict(clear, Transport::Clear), None);
        assert!(conflict(clear, Transport::Tls).unwrap().contains("db=postgres_tls runs over TLS"));
        assert_eq!(conflict("postgres://h/db", Transport::Tls), None);
        assert_eq!(Transport::of_db("postgres_tls"), Some(Transport::Tls));
        assert_eq!(Transport::of_db("sqlite"), None);
    }
}
