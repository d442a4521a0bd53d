//! The one face every metric's comparison shows. `compare`, `ab`, `bisect` and the exports read
//! a metric through [`Comparison`]; `compare::compare` is the registry, one line per [`Metric`].
//! A new metric is a file under `compare/` that implements the trait (a table of counts
//! implements [`super::counts::CountRow`] instead and gets the rest) and a line there.

use super::json;
use crate::error::BadInput;
use crate::metric::Metric;
use crate::report::{CaseId, Report};

/// What a gate does with a case that is slower while both builds ran the same instructions per
/// op (`--same-instructions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum SameInstructions {
    /// Fail the gate, like any slower case.
    #[default]
    Fail,
    /// Warn on stderr and pass.
    Warn,
}

/// How a gate treats the cases it cannot call a regression outright.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Policy {
    /// Timed metrics gate only when asked (`--fail-on-regression`); counts always gate.
    pub fail_on_regression: bool,
    /// A case missing from the new report passes (`--allow-missing`).
    pub allow_missing: bool,
    /// Slower with the same instructions (a layout suspect): fail or warn.
    pub same_instructions: SameInstructions,
}

/// What the gate found: cases that fail it, cases it could not test, and warnings to print.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Outcome {
    /// Labels of the failing cases, each with its reason where the label alone does not say it.
    pub failing: Vec<String>,
    /// Labels of the cases the gate could not decide (a failing exit of its own: bad input).
    pub untested: Vec<String>,
    /// Passed with a warning (`--same-instructions warn`), one line each.
    pub warnings: Vec<String>,
}

/// Which way one case moved, as bisect and a history read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Move {
    /// Worse beyond the metric's threshold or test.
    Worse,
    /// Better beyond it.
    Better,
    /// Within it.
    Same,
    /// Not comparable, and why in the verdict's words (`no data`, `missing in new`).
    Unknown(String),
}

/// One metric's comparison of a base and a new side, case by case.
pub(crate) trait Comparison {
    /// The metric compared.
    fn metric(&self) -> Metric;
    /// Each case's identity and move, in the table's order.
    fn moves(&self) -> Vec<(CaseId, Move)>;
    /// Counts of the verdicts, one line.
    fn summary_line(&self) -> String;
    /// Keeps only the cases that changed or cannot be compared (`--only-changed`).
    fn retain_changed(&mut self);
    /// The plain-text table with its legend.
    fn text(&self) -> String;
    /// The Markdown summary, for a pull-request comment or a CI job summary.
    fn markdown(&self) -> String;
    /// The `compare --json` document, with the gate's decision.
    fn json(&self, decision: json::Decision) -> json::Document;
    /// What the gate decides under `policy`; bad input when it measured nothing to decide on.
    fn outcome(&self, policy: &Policy) -> Result<Outcome, BadInput>;
}

/// The one report of each side that a comparison of exact counts takes.
pub(crate) fn one_each<'a>(
    metric: Metric,
    base: &'a [Report],
    new: &'a [Report],
) -> Result<(&'a Report, &'a Report), BadInput> {
    let flag = metric.name();
    match (base, new) {
        ([base], [new]) => Ok((base, new)),
        (_, []) => Err(BadInput(format!(
            "--metric {flag} needs two reports (BASE.json NEW.json): an A/B report's two builds are shown beside its time ratios by `compare AB.json`"
        ))),
        _ => Err(BadInput(format!(
            "--metric {flag} compares one report per side: counts are exact, so pass BASE.json NEW.json instead of --base/--new runs"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_refuse_runs_by_sides_and_a_lone_report() {
        let (one, two) = ([super::super::fixtures::report(vec![])], vec![super::super::fixtures::report(vec![]); 2]);
        let e = one_each(Metric::Io, &two, &two).unwrap_err().0;
        assert!(e.contains("--metric io compares one report per side"), "{e}");
        assert!(one_each(Metric::Instructions, &one, &[]).unwrap_err().0.contains("needs two reports"));
    }
}
