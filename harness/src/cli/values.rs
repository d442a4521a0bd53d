//! The value parsers of the command line: each turns one flag's text into its value, or into
//! the one-line reason clap prints beside the flag.

use super::ForkCount;
use std::time::Duration;

pub(super) fn count(s: &str) -> Result<u32, String> {
    match s.trim().parse::<i64>() {
        Ok(v) if v < 0 => Err("must not be negative".into()),
        Ok(v) => u32::try_from(v).map_err(|_| "is too large".into()),
        Err(_) => Err("expected a whole number".into()),
    }
}

pub(super) fn at_least_one(s: &str) -> Result<u32, String> {
    match count(s)? {
        0 => Err("must be at least 1".into()),
        n => Ok(n),
    }
}

pub(super) fn fork_count(s: &str) -> Result<ForkCount, String> {
    if s.trim().eq_ignore_ascii_case("auto") {
        return Ok(ForkCount::Auto);
    }
    at_least_one(s).map(ForkCount::Fixed).map_err(|e| format!("{e}, or `auto`"))
}

pub(super) fn at_least_two(s: &str) -> Result<u32, String> {
    match count(s)? {
        0 | 1 => Err("must be at least 2 (a paired test needs two pairs)".into()),
        n => Ok(n),
    }
}

pub(super) fn at_least_one_u64(s: &str) -> Result<u64, String> {
    match s.trim().parse::<i128>() {
        Ok(v) if v < 1 => Err("must be at least 1".into()),
        Ok(v) => u64::try_from(v).map_err(|_| "is too large".into()),
        Err(_) => Err("expected a whole number".into()),
    }
}

pub(super) fn percentage(s: &str) -> Result<f64, String> {
    match s.trim().trim_end_matches('%').parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err("expected a percentage of 0 or more, e.g. 1 or 0.5".into()),
    }
}

pub(super) fn thread_count(s: &str) -> Result<u32, String> {
    match count(s)? {
        0 => Err("must be at least 1".into()),
        n if n > 1024 => Err("must be at most 1024".into()),
        n => Ok(n),
    }
}

pub(super) fn rate(s: &str) -> Result<crate::rate::Load, String> {
    crate::rate::parse_load(s)
}

pub(super) fn positive_percentage(s: &str) -> Result<f64, String> {
    match percentage(s)? {
        0.0 => Err("must be more than 0".into()),
        v => Ok(v),
    }
}

pub(super) fn probability(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err("expected a probability between 0 and 1, e.g. 0.05".into()),
    }
}

pub(super) fn duration(s: &str) -> Result<Duration, String> {
    match humantime::parse_duration(s.trim()) {
        Ok(d) if d.is_zero() => Err("must be longer than zero".into()),
        Ok(d) => Ok(d),
        Err(_) => Err("expected a duration such as 500ms, 2s or 1m".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_parsers_explain_the_fix() {
        assert_eq!(at_least_one("0").unwrap_err(), "must be at least 1");
        assert_eq!(at_least_one("-2").unwrap_err(), "must not be negative");
        assert_eq!(count("x").unwrap_err(), "expected a whole number");
        assert_eq!(count("0").unwrap(), 0);
        assert_eq!(duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(duration("1x").unwrap_err(), "expected a duration such as 500ms, 2s or 1m");
        assert!(duration("0s").is_err());
    }
}
