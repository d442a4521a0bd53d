//! What can go wrong, by kind, and the exit code each kind ends a command with. A leaf: every
//! layer builds its errors from these; `app::exit_of` maps an error to its code in one place.

use std::process::ExitCode;

/// Bad input from the user: printed as one line, exit code 2, nothing measured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// How a command ended: one code each, as the README's table and `--help` list them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Every fork of every case finished and passed its checks.
    Success,
    /// A fork or benchmark failed; the report keeps the rest.
    Failed,
    /// Bad input; nothing was measured. A gate that could not decide fails closed with it too.
    BadInput,
    /// A gate found a regression past its threshold.
    Regression,
    /// `harness bisect`: no regression from GOOD to BAD.
    NotFound,
    /// `harness bisect`: the first bad commit is one of a range it names.
    Range,
    /// Ctrl-C or SIGTERM; the report keeps every finished fork.
    Interrupted,
}

impl Exit {
    /// Every code, in the order the table lists them.
    pub(crate) const ALL: [Exit; 7] =
        [Exit::Success, Exit::Failed, Exit::BadInput, Exit::Regression, Exit::NotFound, Exit::Range, Exit::Interrupted];

    /// The process's exit code.
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Failed => 1,
            Exit::BadInput => 2,
            Exit::Regression => 3,
            Exit::NotFound => 4,
            Exit::Range => 5,
            Exit::Interrupted => 130,
        }
    }

    /// What the code means, as the table says it.
    pub(crate) fn meaning(self) -> &'static str {
        match self {
            Exit::Success => "every fork of every case finished and passed its checks",
            Exit::Failed => {
                "a fork or benchmark failed (crash, timeout, failed check), or --out could not be written mid-run (the last line names where the report went); the report keeps the rest"
            }
            Exit::BadInput => {
                "bad input (unknown configuration, filter that matches nothing, bad param, count or duration, unwritable --out); nothing was measured; also a gate that could not decide (it fails closed)"
            }
            Exit::Regression => {
                "`harness compare` found a regression past its threshold; `harness history detect --fail-on-regression`: a series sits at a regressed level"
            }
            Exit::NotFound => "`harness bisect`: no regression from GOOD to BAD (nothing to find)",
            Exit::Range => "`harness bisect`: undecided: the first bad commit is one of a range it names",
            Exit::Interrupted => "interrupted (Ctrl-C / SIGTERM); the report keeps every finished fork",
        }
    }

    /// The table of every code, for `--help`: one row a code, its meaning wrapped under it.
    pub(crate) fn table() -> String {
        let mut out = String::from("Exit codes:");
        for exit in Exit::ALL {
            let mut line = format!("  {:<5}", exit.code());
            for word in exit.meaning().split(' ') {
                if line.len() + word.len() > 99 {
                    out += &format!("\n{}", line.trim_end());
                    line = " ".repeat(7);
                }
                line += word;
                line.push(' ');
            }
            out += &format!("\n{}", line.trim_end());
        }
        out
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e.code())
    }
}

/// A layer's typed error says which exit it ends a command with (`app::exit_of` asks).
pub(crate) trait Classify {
    /// The exit of a command this error ends.
    fn exit(&self) -> Exit;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_lists_every_code_once() {
        let table = Exit::table();
        for e in Exit::ALL {
            assert_eq!(table.matches(&format!("  {:<5}", e.code())).count(), 1, "{table}");
        }
    }
}
