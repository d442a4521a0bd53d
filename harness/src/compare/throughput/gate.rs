//! Throughput through the one [`Comparison`] face: each case's move and what the gate decides.

use super::{Verdict, render};
use crate::compare::comparison::{Comparison, Move, Outcome, Policy, SameInstructions};
use crate::compare::json;
use crate::error::BadInput;
use crate::metric::Metric;
use crate::report::{CaseId, Report};

/// The registry's entry: the `new` runs against the `base` runs, or (no `new` run) the two
/// builds of one A/B report.
pub(crate) fn comparison(
    base: &[Report],
    new: &[Report],
    options: super::Options,
) -> Result<super::Comparison, BadInput> {
    match (base, new) {
        (_, [_, ..]) => Ok(super::compare(base, new, options)),
        ([one], []) if one.is_ab() && !one.benchmarks.is_empty() && one.benchmarks.iter().all(|b| b.rate.is_some()) => {
            Err(BadInput(
                "every case of this A/B report ran open-loop (--rate), whose ops/s is the rate it was given: compare it with --metric latency".into(),
            ))
        }
        ([one], []) if one.is_ab() => Ok(super::compare_sides(one, options)),
        _ => Err(BadInput(
            "one report holds one build only: pass two reports (BASE.json NEW.json), or make an A/B report with `harness run --baseline-bin PATH`".into(),
        )),
    }
}

impl Comparison for super::Comparison {
    fn metric(&self) -> Metric {
        Metric::Throughput
    }

    fn moves(&self) -> Vec<(CaseId, Move)> {
        let of = |v: Verdict| match v {
            Verdict::Slower | Verdict::SlowerSameInstructions => Move::Worse,
            Verdict::Faster | Verdict::FasterSameInstructions => Move::Better,
            Verdict::WithinBand => Move::Same,
            other => Move::Unknown(other.text(self.options.noise_band_pct)),
        };
        self.rows.iter().map(|r| (r.id.clone(), of(r.verdict))).collect()
    }

    fn summary_line(&self) -> String {
        render::summary_line(self)
    }

    fn retain_changed(&mut self) {
        self.rows.retain(|r| !matches!(r.verdict, Verdict::NoChange | Verdict::WithinBand));
    }

    fn text(&self) -> String {
        render::render_text(self)
    }

    fn markdown(&self) -> String {
        render::render_markdown(self)
    }

    fn json(&self, decision: json::Decision) -> json::Document {
        render::to_json(self, decision)
    }

    /// Gates only under `--fail-on-regression`: slower fails, a layout suspect fails or warns,
    /// a case with too few forks or one run per side is untested; sharing no case is bad input.
    fn outcome(&self, policy: &Policy) -> Result<Outcome, BadInput> {
        let words = GateWords {
            nothing_shared: "--fail-on-regression: the reports share no case, so nothing was compared: a gate that measured nothing cannot pass; compare reports of the same cases",
            worse: "is slower",
        };
        timed_outcome(&self.rows, |r| (&r.id, r.verdict), policy, &words, |r| r.id.to_string())
    }
}

/// What a timed metric's gate says in its own words: the error when the reports share no
/// case, and how a layout suspect's warning says the new build is worse.
pub(crate) struct GateWords<'a> {
    /// The bad-input line when no case was compared.
    pub nothing_shared: &'a str,
    /// The verb phrase of a worse case (`is slower`, `has a higher latency`).
    pub worse: &'a str,
}

/// The gate of a timed metric (throughput, a latency percentile) over each case's verdict,
/// only under `--fail-on-regression`: slower fails, a layout suspect fails or warns, a case with
/// too few forks or one run per side is untested (`untested` names it); sharing no case is bad
/// input. `verdict` reads a row's case and verdict.
pub(crate) fn timed_outcome<R>(
    rows: &[R],
    verdict: impl Fn(&R) -> (&CaseId, Verdict),
    policy: &Policy,
    words: &GateWords<'_>,
    untested: impl Fn(&R) -> String,
) -> Result<Outcome, BadInput> {
    let mut out = Outcome::default();
    if !policy.fail_on_regression {
        return Ok(out);
    }
    if rows.iter().all(|r| matches!(verdict(r).1, Verdict::Missing | Verdict::Extra)) {
        return Err(BadInput(words.nothing_shared.into()));
    }
    for row in rows {
        let (id, v) = verdict(row);
        match v {
            Verdict::NoData | Verdict::TooFewForks => out.untested.push(untested(row)),
            Verdict::LooksSlower => out.untested.push(format!("{id} (slower? in one run per side)")),
            Verdict::Slower => out.failing.push(id.to_string()),
            Verdict::SlowerSameInstructions => match policy.same_instructions {
                SameInstructions::Fail => out.failing.push(format!("{id} (same instructions: layout?)")),
                SameInstructions::Warn => out.warnings.push(format!(
                    "warning (--same-instructions warn): {id} {} with the same instructions per op: passed as a layout suspect",
                    words.worse
                )),
            },
            Verdict::Missing if !policy.allow_missing => out.failing.push(format!("{id} (missing in new)")),
            _ => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::fixtures::{report, timed};

    fn runs(k: f64) -> Vec<Report> {
        let side = |j: f64| report(vec![timed("a", &[&[k * (100.0 + j)], &[k * (101.0 - j)]])]);
        vec![side(0.0), side(0.3), side(0.6)]
    }

    #[test]
    fn the_gate_acts_only_when_asked_and_names_what_fails() {
        let c = comparison(&runs(1.0), &runs(0.8), super::super::Options::default()).unwrap();
        assert_eq!(c.moves(), [(c.rows[0].id.clone(), Move::Worse)]);
        assert_eq!(c.outcome(&Policy::default()).unwrap(), Outcome::default());
        let gate = Policy { fail_on_regression: true, ..Policy::default() };
        assert_eq!(c.outcome(&gate).unwrap().failing, ["a"]);
        let mut suspect = c.clone();
        suspect.rows[0].verdict = Verdict::SlowerSameInstructions;
        let warn = Policy { same_instructions: SameInstructions::Warn, ..gate };
        let out = suspect.outcome(&warn).unwrap();
        assert!(out.failing.is_empty() && out.warnings[0].contains("layout suspect"), "{out:?}");
        assert_eq!(suspect.outcome(&gate).unwrap().failing, ["a (same instructions: layout?)"]);
    }

    #[test]
    fn one_report_of_one_build_is_refused() {
        let e = comparison(&runs(1.0)[..1], &[], super::super::Options::default()).unwrap_err().0;
        assert!(e.contains("holds one build only"), "{e}");
    }
}
