//! SQL text as the report keys it, one rule for the relay's PostgreSQL statements and SQLite's
//! traced ones.

/// SQL as the report keys it: whitespace runs made one space, literals (quoted strings and
/// numbers outside names and `$n` placeholders) made `?`.
pub fn normalise_sql(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.trim().chars().peekable();
    let mut prev = ' ';
    while let Some(c) = chars.next() {
        if c.is_whitespace() {
            if !out.ends_with(' ') {
                out.push(' ');
            }
            prev = ' ';
            continue;
        }
        if c == '\'' {
            while let Some(q) = chars.next() {
                if q == '\'' && chars.peek() != Some(&'\'') {
                    break;
                }
                if q == '\'' {
                    chars.next();
                }
            }
            out.push('?');
            prev = '?';
            continue;
        }
        let in_name = prev.is_alphanumeric() || prev == '_' || prev == '$' || prev == '"';
        if c.is_ascii_digit() && !in_name {
            while chars.peek().is_some_and(|d| d.is_ascii_digit() || *d == '.') {
                chars.next();
            }
            out.push('?');
            prev = '?';
            continue;
        }
        out.push(c);
        prev = c;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::normalise_sql;

    #[test]
    fn sql_is_keyed_without_its_literals_or_layout() {
        assert_eq!(
            normalise_sql("  SELECT id,\n\tname FROM t1 WHERE id = $1 "),
            "SELECT id, name FROM t1 WHERE id = $1"
        );
        assert_eq!(normalise_sql("SELECT 1"), "SELECT ?");
        assert_eq!(normalise_sql("INSERT INTO t VALUES (42, 'it''s', 1.5)"), "INSERT INTO t VALUES (?, ?, ?)");
        assert_eq!(normalise_sql("SELECT * FROM \"t2\" LIMIT 10"), "SELECT * FROM \"t2\" LIMIT ?");
    }
}
