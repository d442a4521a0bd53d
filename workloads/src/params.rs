//! Declared workload parameters: their kinds, defaults, validation, and the values of one case.

use std::collections::BTreeMap;

/// What values a parameter accepts.
#[derive(Debug, Clone, Copy)]
pub enum ParamKind {
    /// A whole number in `min..=max`.
    Int {
        /// Smallest accepted value.
        min: i64,
        /// Largest accepted value.
        max: i64,
    },
    /// `auto` (the workload chooses, and says how in its description) or a whole number in
    /// `min..=max`.
    IntOrAuto {
        /// Smallest accepted number.
        min: i64,
        /// Largest accepted number.
        max: i64,
    },
    /// One of a fixed set of names.
    Choice(&'static [&'static str]),
    /// Free text (a URL, a path).
    Text,
}

/// A parameter a workload declares, with the values it runs by default.
#[derive(Debug, Clone, Copy)]
pub struct ParamSpec {
    /// `snake_case` name, as given to `-p NAME=VALUE`.
    pub name: &'static str,
    /// One-line description.
    pub about: &'static str,
    /// Accepted values.
    pub kind: ParamKind,
    /// Values run when neither the configuration nor `-p` says otherwise (each one is a case).
    pub defaults: &'static [&'static str],
}

impl ParamSpec {
    /// Checks one value, returning a message that names what is accepted.
    pub fn check(&self, value: &str) -> Result<(), String> {
        match self.kind {
            ParamKind::Int { min, max } => match value.parse::<i64>() {
                Ok(v) if (min..=max).contains(&v) => Ok(()),
                Ok(_) => Err(format!("must be between {min} and {max}")),
                Err(_) => Err(format!("must be a whole number between {min} and {max}")),
            },
            ParamKind::IntOrAuto { .. } if value == "auto" => Ok(()),
            ParamKind::IntOrAuto { min, max } => match value.parse::<i64>() {
                Ok(v) if (min..=max).contains(&v) => Ok(()),
                _ => Err(format!("must be auto or a whole number between {min} and {max}")),
            },
            ParamKind::Choice(options) if options.contains(&value) => Ok(()),
            ParamKind::Choice(options) => Err(format!("must be one of {}", options.join(", "))),
            ParamKind::Text if value.is_empty() => Err("must not be empty".into()),
            ParamKind::Text => Ok(()),
        }
    }

    /// A short description of the accepted values, for listings.
    pub fn accepted(&self) -> String {
        match self.kind {
            ParamKind::Int { min, max } => format!("integer {min}..={max}"),
            ParamKind::IntOrAuto { min, max } => format!("auto|integer {min}..={max}"),
            ParamKind::Choice(options) => options.join("|"),
            ParamKind::Text => "text".into(),
        }
    }
}

/// The parameter values of one benchmark case, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Params(pub BTreeMap<String, String>);

impl Params {
    /// The raw value of `name`.
    pub fn get(&self, name: &str) -> anyhow::Result<&str> {
        self.0.get(name).map(String::as_str).ok_or_else(|| anyhow::anyhow!("param '{name}' is not set for this case"))
    }

    /// The value of an integer param.
    pub fn int(&self, name: &str) -> anyhow::Result<i64> {
        let raw = self.get(name)?;
        raw.parse().map_err(|_| anyhow::anyhow!("param '{name}' = '{raw}' is not a whole number"))
    }

    /// The value of an integer param that must be non-negative, as a `usize`.
    pub fn count(&self, name: &str) -> anyhow::Result<usize> {
        let v = self.int(name)?;
        usize::try_from(v).map_err(|_| anyhow::anyhow!("param '{name}' = {v} must not be negative"))
    }

    /// `name=value,...` in name order, for display.
    pub fn display(&self) -> String {
        self.0.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROWS: ParamSpec =
        ParamSpec { name: "row_count", about: "rows", kind: ParamKind::Int { min: 1, max: 100 }, defaults: &["10"] };

    #[test]
    fn int_kind_rejects_text_and_out_of_range() {
        assert!(ROWS.check("10").is_ok());
        assert_eq!(ROWS.check("abc").unwrap_err(), "must be a whole number between 1 and 100");
        assert_eq!(ROWS.check("0").unwrap_err(), "must be between 1 and 100");
    }

    #[test]
    fn int_or_auto_accepts_auto_and_numbers_in_range() {
        let rows = ParamSpec { kind: ParamKind::IntOrAuto { min: 1, max: 100 }, ..ROWS };
        assert!(rows.check("auto").is_ok() && rows.check("100").is_ok());
        assert_eq!(rows.check("0").unwrap_err(), "must be auto or a whole number between 1 and 100");
        assert_eq!(rows.check("lots").unwrap_err(), "must be auto or a whole number between 1 and 100");
    }

    #[test]
    fn choice_kind_names_the_options() {
        let db = ParamSpec { kind: ParamKind::Choice(&["sqlite", "postgres"]), ..ROWS };
        assert!(db.check("sqlite").is_ok());
        assert_eq!(db.check("mysql").unwrap_err(), "must be one of sqlite, postgres");
    }

    #[test]
    fn params_parse_and_display() {
        let p = Params([("b".to_string(), "2".to_string()), ("a".to_string(), "x".to_string())].into());
        assert_eq!(p.int("b").unwrap(), 2);
        assert!(p.int("a").is_err());
        assert!(p.get("c").is_err());
        assert_eq!(p.display(), "a=x,b=2");
    }
}
