//! Keeps credentials out of reports, logs and messages.

/// Replaces the password of every `scheme://user:password@host` in `text` with `***`; a user
/// without a password is kept (it is not a secret on its own).
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find("://") {
        let (head, tail) = rest.split_at(pos + 3);
        out.push_str(head);
        // The authority ends at the first '/', '?', '#' or whitespace; its userinfo at the last '@'.
        let end = tail.find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace()).unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                let userinfo = &authority[..at];
                match userinfo.split_once(':') {
                    Some((user, _password)) => {
                        out.push_str(user);
                        out.push_str(":***");
                    }
                    None => out.push_str(userinfo),
                }
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn passwords_are_redacted_users_and_hosts_kept() {
        assert_eq!(redact("postgres://bob:s3cret@db:5432/test"), "postgres://bob:***@db:5432/test");
        assert_eq!(redact("redis://:hunter2@127.0.0.1:6379"), "redis://:***@127.0.0.1:6379");
        assert_eq!(
            redact("--redis-url=redis://u:p@h/0 and postgres://x:y@z"),
            "--redis-url=redis://u:***@h/0 and postgres://x:***@z"
        );
        assert_eq!(redact("redis://u:p%40ss@h"), "redis://u:***@h");
    }

    #[test]
    fn text_without_credentials_is_unchanged() {
        for s in ["postgres://postgres@127.0.0.1:5432/test", "redis://127.0.0.1:6379", "plain text", "a://", "x@y:z"] {
            assert_eq!(redact(s), s);
        }
    }
}
