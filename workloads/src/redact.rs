//! Keeps credentials out of reports, logs and messages: [`redact`] is the one function every
//! place that prints or stores text holding a URL goes through.
//!
//! Two layers. By shape: the password of every `scheme://user:password@host` (any characters,
//! reserved ones included, even where they make the URL invalid) and the value of every
//! secret-looking `key=value` (`password=`, `sslpassword=`, `token=`, ...). By value: every
//! secret [`remember_secrets_in`] found in the command line and the environment, in its raw,
//! percent-decoded, percent-encoded and escaped forms, wherever a library quotes it back.

use percent_encoding::{NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use std::ops::Range;
use std::sync::RwLock;

/// What a secret becomes.
const MASK: &str = "***";

/// Secrets shorter than this are hidden by shape only: hiding every "ab" in a report would
/// garble it.
const MIN_REMEMBERED: usize = 4;

/// The secrets seen in this process's inputs, longest first.
static REMEMBERED: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// `text` with every password hidden: by shape (userinfo, secret-looking parameters) and by
/// value (every secret [`remember_secrets_in`] has seen).
pub fn redact(text: &str) -> String {
    // Remembered secrets first: hiding by shape first could cut one short and leave its rest.
    redact_shapes(&hide_remembered(text))
}

/// Remembers every secret in `text` (a command-line argument, an environment variable's value)
/// so that [`redact`] hides it in any later text, however a library formats it.
pub fn remember_secrets_in(text: &str) {
    let secrets: Vec<&str> = secret_spans(text, Within::Argument).into_iter().map(|r| &text[r]).collect();
    if secrets.is_empty() {
        return;
    }
    let mut known = REMEMBERED.write().unwrap_or_else(|e| e.into_inner());
    for secret in secrets {
        for form in forms_of(secret) {
            if form.chars().count() >= MIN_REMEMBERED && !known.contains(&form) {
                known.push(form);
            }
        }
    }
    known.sort_by_key(|s| std::cmp::Reverse(s.len()));
}

/// The ways a library may print `secret`: as given, percent-decoded, percent-encoded, and with
/// `"` and `\` escaped (Rust's `{:?}`, JSON).
fn forms_of(secret: &str) -> Vec<String> {
    let decoded = percent_decode_str(secret).decode_utf8_lossy().into_owned();
    let encoded = utf8_percent_encode(&decoded, NON_ALPHANUMERIC).to_string();
    let escaped = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let mut forms = vec![secret.to_string(), escaped(secret), escaped(&decoded), decoded, encoded];
    forms.dedup();
    forms
}

fn hide_remembered(text: &str) -> String {
    let known = REMEMBERED.read().unwrap_or_else(|e| e.into_inner());
    let mut out = text.to_string();
    for secret in known.iter() {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), MASK);
        }
    }
    out
}

/// `text` with every secret found by shape replaced by [`MASK`].
fn redact_shapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for span in secret_spans(text, Within::Text) {
        out.push_str(&text[at..span.start]);
        out.push_str(MASK);
        at = span.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Where a URL in the text may end.
#[derive(Clone, Copy)]
enum Within {
    /// Running text: a URL ends at whitespace or a quote.
    Text,
    /// One argument or environment value: a URL runs to its end (a password may hold spaces).
    Argument,
}

impl Within {
    /// Whether `c` ends a URL-like token.
    fn ends_token(self, c: char) -> bool {
        match self {
            Within::Text => c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>'),
            Within::Argument => false,
        }
    }
}

/// The byte ranges of the secrets in `text`, sorted and disjoint.
fn secret_spans(text: &str, within: Within) -> Vec<Range<usize>> {
    let mut spans = userinfo_passwords(text, within);
    spans.extend(secret_parameter_values(text, within));
    spans.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(spans.len());
    for span in spans {
        match merged.last_mut() {
            Some(last) if span.start <= last.end => last.end = last.end.max(span.end),
            _ => merged.push(span),
        }
    }
    merged
}

/// The password of every `scheme://user:password@...`: from the first ':' to the token's last
/// '@', so that a password holding '/', '#', '?' or '@' unencoded is hidden whole. (An '@' in a
/// path or query after a `host:port` hides more than the password: hiding too much is the safe
/// side.)
fn userinfo_passwords(text: &str, within: Within) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("://") {
        let start = from + found + 3;
        let token = &text[start..];
        let token = &token[..token.find(|c| within.ends_token(c)).unwrap_or(token.len())];
        from = start;
        let at = token.rfind('@');
        if let Some(at) = at
            && let Some(colon) = token[..at].find(':')
            && colon + 1 < at
        {
            spans.push(start + colon + 1..start + at);
            from = start + at;
        }
    }
    spans
}

/// Whether a parameter named `key` holds a secret.
fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    const PARTS: [&str; 8] = ["password", "passwd", "pwd", "secret", "token", "apikey", "api_key", "credential"];
    PARTS.iter().any(|p| key.contains(p)) || matches!(key.as_str(), "pass" | "auth")
}

/// The value of every `key=value` whose key looks secret: in a query string up to '&', '#' or
/// the token's end; in a libpq `key='quoted value'` up to the closing quote.
fn secret_parameter_values(text: &str, within: Within) -> Vec<Range<usize>> {
    let is_key_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    let mut spans = Vec::new();
    for (eq, _) in text.match_indices('=') {
        let key_start = text[..eq].rfind(|c: char| !is_key_char(c)).map_or(0, |i| i + 1);
        if !is_secret_key(&text[key_start..eq]) {
            continue;
        }
        let value = &text[eq + 1..];
        let span = match value.strip_prefix('\'') {
            Some(quoted) => 1..1 + quoted.find('\'').unwrap_or(quoted.len()),
            None => {
                0..value
                    .find(|c: char| within.ends_token(c) || matches!(c, '&' | '#' | ',' | ';'))
                    .unwrap_or(value.len())
            }
        };
        if !span.is_empty() {
            spans.push(eq + 1 + span.start..eq + 1 + span.end);
        }
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::{redact, redact_shapes, remember_secrets_in};

    #[test]
    fn passwords_are_redacted_users_and_hosts_kept() {
        assert_eq!(redact_shapes("postgres://bob:s3cret@db:5432/test"), "postgres://bob:***@db:5432/test");
        assert_eq!(redact_shapes("redis://:hunter2@127.0.0.1:6379"), "redis://:***@127.0.0.1:6379");
        assert_eq!(
            redact_shapes("--redis-url=redis://u:p@h/0 and postgres://x:y@z"),
            "--redis-url=redis://u:***@h/0 and postgres://x:***@z"
        );
        assert_eq!(redact_shapes("redis://u:p%40ss@h"), "redis://u:***@h");
    }

    #[test]
    fn reserved_characters_in_a_password_do_not_hide_it() {
        for pw in ["pa/ss", "pa#ss", "pa?ss", "p@ss/w#rd?x", "a:b", "x/y@z"] {
            let url = format!("postgres://bob:{pw}@db:5432/test");
            let shown = redact_shapes(&format!("error: '{url}' is not a URL: invalid port"));
            assert_eq!(shown, "error: 'postgres://bob:***@db:5432/test' is not a URL: invalid port", "{pw}");
        }
    }

    #[test]
    fn secret_parameters_are_redacted() {
        assert_eq!(
            redact_shapes("postgres://bob@h/db?sslmode=disable&password=s3cr/t&application_name=x"),
            "postgres://bob@h/db?sslmode=disable&password=***&application_name=x"
        );
        assert_eq!(
            redact_shapes("host=h user=bob password='a b c' dbname=t"),
            "host=h user=bob password='***' dbname=t"
        );
        assert_eq!(redact_shapes("{\"sslpassword=k\"}"), "{\"sslpassword=***\"}");
        assert_eq!(redact_shapes("?PASSWORD=x;token=y&auth=z"), "?PASSWORD=***;token=***&auth=***");
    }

    #[test]
    fn text_without_credentials_is_unchanged() {
        for s in [
            "postgres://postgres@127.0.0.1:5432/test",
            "redis://127.0.0.1:6379",
            "plain text",
            "a://",
            "x@y:z",
            "row_count=100 key_count=5 id=uuid_v7",
            "postgres://h/db?user=a@b",
            "password=",
        ] {
            assert_eq!(redact_shapes(s), s);
        }
    }

    #[test]
    fn a_remembered_secret_is_hidden_in_any_form() {
        remember_secrets_in("--database-url=postgres://bob:w h%2Fite\"sp@ce@h/db");
        // As a library might print it: decoded, with the space that ends a token by shape.
        let decoded = "connect to bob:w h/ite\"sp@ce failed";
        assert_eq!(redact(decoded), "connect to bob:*** failed");
        assert_eq!(redact("Config { password: \"w h/ite\\\"sp@ce\" }"), "Config { password: \"***\" }");
        assert_eq!(redact("as given: w h%2Fite\"sp@ce"), "as given: ***");
        remember_secrets_in("postgres://h/db?password=a b c&x=1");
        assert_eq!(redact("password was a b c"), "password was ***");
        // A short secret is hidden by shape only, so that "ab" elsewhere survives.
        remember_secrets_in("redis://:ab@h");
        assert_eq!(redact("tab"), "tab");
    }

    /// A password of 12 to 24 characters drawn from `alphabet`.
    fn password(rng: &mut rand::rngs::Xoshiro256PlusPlus, alphabet: &[u8]) -> String {
        use rand::RngExt;
        let len = rng.random_range(12..=24);
        (0..len).map(|_| alphabet[rng.random_range(0..alphabet.len())] as char).collect()
    }

    #[test]
    fn no_generated_password_survives_in_any_url_shape() {
        use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
        use rand::SeedableRng;
        // Every printable ASCII character but space and quotes (which end a token in running
        // text: those are hidden by value, below).
        let alphabet: Vec<u8> = (b'!'..=b'~').filter(|c| !matches!(c, b'"' | b'\'' | b'`' | b'<' | b'>')).collect();
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(28);
        for _ in 0..2000 {
            let pw = password(&mut rng, &alphabet);
            let encoded = utf8_percent_encode(&pw, NON_ALPHANUMERIC).to_string();
            let query_safe = pw.replace(['&', '#', ',', ';', '='], "x");
            let urls = [
                format!("postgres://bob:{pw}@127.0.0.1:5432/test"),
                format!("postgres://bob:{encoded}@db/test?sslmode=disable"),
                format!("redis://:{pw}@127.0.0.1:6379/0"),
                format!("postgres://bob@db/test?sslmode=disable&password={query_safe}&x=1"),
                format!("postgres://bob@db/test?password={encoded}"),
                format!("host=db password='{}' dbname=test", pw.replace('\'', "")),
            ];
            for url in &urls {
                let secret = if url.contains(&encoded) {
                    &encoded
                } else if url.contains(&query_safe) {
                    &query_safe
                } else {
                    &pw
                };
                for text in
                    [url.clone(), format!("error: '{url}' is not a URL: x"), format!("--database-url={url} -p a=b")]
                {
                    let shown = redact_shapes(&text);
                    assert!(!shown.contains(secret.as_str()), "{secret} in {shown}");
                }
            }
        }
    }
}
