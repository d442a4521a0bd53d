//! How a latency comparison is shown (text, Markdown, `--json`) and what its gate decides,
//! through the one [`crate::compare::Comparison`] face.

use super::{Comparison, Method, Row};
use crate::compare::comparison::{Move, Outcome, Policy};
use crate::compare::json;
use crate::compare::throughput::Verdict;
use crate::compare::throughput::gate::{GateWords, timed_outcome};
use crate::error::BadInput;
use crate::format::nanos;
use crate::metric::Metric;
use crate::report::CaseId;

fn header(c: &Comparison) -> Vec<String> {
    let p = c.options.percentile.key();
    let interval = format!("{}% interval", ((1.0 - c.options.alpha) * 1000.0).round() / 10.0);
    let forks = if c.by_runs() { "kept forks (runs)" } else { "kept forks" };
    let mut h: Vec<String> =
        ["benchmark", &format!("base {p}"), &format!("new {p}"), "new/base", &interval, "p", forks, "verdict"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    if c.paired {
        h.push("fork pairs new/base".into());
    }
    if c.rows.iter().any(|r| r.instructions.is_some()) {
        h.push("instr new/base".into());
    }
    h
}

/// The column of the verdict in [`cells`].
const VERDICT: usize = 7;

fn cells(r: &Row, c: &Comparison) -> Vec<String> {
    let ns = |v: Option<f64>| v.map_or("-".into(), nanos);
    let missed = match r.missed {
        (0, 0) => String::new(),
        (b, n) => format!(", {b}/{n} missed the rate"),
    };
    let forks = match r.runs {
        Some((b, n)) => format!("{}/{} ({b}/{n}){missed}", r.kept.0, r.kept.1),
        None => format!("{}/{}{missed}", r.kept.0, r.kept.1),
    };
    let mut v = vec![
        r.id.to_string(),
        ns(r.base),
        ns(r.new),
        r.test.map_or("-".into(), |t| format!("{:.3}", t.ratio)),
        r.test.map_or("-".into(), |t| format!("{:.3}..{:.3}", t.lower, t.upper)),
        r.test.map_or("-".into(), |t| format!("{:.3}", t.p_value)),
        forks,
        verdict_text(r, c.options.noise_band_pct),
    ];
    if c.paired {
        v.push(r.pairs.iter().map(|p| format!("{p:.3}")).collect::<Vec<_>>().join(" "));
    }
    if c.rows.iter().any(|r| r.instructions.is_some()) {
        v.push(r.instructions.map_or("-".into(), |(b, n)| format!("{:.4}", n / b)));
    }
    v
}

/// The verdict as the table says it (`band` the noise band, percent); a case whose forks all
/// missed their rate says so.
fn verdict_text(r: &Row, band: f64) -> String {
    match r.verdict {
        Verdict::NoData if r.missed != (0, 0) => "no data (no fork kept the rate)".into(),
        Verdict::NoData => "no data (no open-loop fork)".into(),
        v => v.text(band),
    }
}

/// What the verdicts mean, printed under the table.
fn legend(c: &Comparison) -> String {
    let (p, band, alpha) = (c.options.percentile.key(), c.options.noise_band_pct, c.options.alpha);
    let test = match (c.paired, c.options.method) {
        (true, Method::T) => "paired t-test on the log ratio of each fork pair's".to_string(),
        (true, Method::Bootstrap) => {
            "percentile bootstrap (10,000 resamples) of the mean log ratio of each fork pair's".into()
        }
        (false, _) if c.by_runs() => "Welch's t-test on each run's log geometric mean of its forks'".into(),
        (false, _) => "Welch's t-test on the log of each fork's".into(),
    };
    let mut out = format!(
        "Open-loop latency {p}, corrected for coordinated omission (from each op's intended start): {test} {p} (alpha {alpha}); FASTER is a lower latency, and faster/slower only when the whole interval lies beyond ±{band}%. A fork that did not keep its rate measured another load and is left out.\n"
    );
    if !c.paired && !c.by_runs() {
        out.push_str("One run per side cannot tell a change of the code from a change of the machine: a difference is only `slower?`/`faster?` and never fails the gate; confirm it with `harness ab REF --rate OPS`.\n");
    }
    if let Some(k) = c.layouts {
        out.push_str(&format!(
            "--layouts {k}: the test's unit is the layout variant (the geometric mean of its pairs).\n"
        ));
    }
    out
}

/// Counts of the verdicts, one line.
fn summary_line(c: &Comparison) -> String {
    let count = |vs: &[Verdict]| c.rows.iter().filter(|r| vs.contains(&r.verdict)).count();
    let slower = count(&[Verdict::Slower, Verdict::SlowerSameInstructions]);
    let faster = count(&[Verdict::Faster, Verdict::FasterSameInstructions]);
    let unchanged = count(&[Verdict::WithinBand]);
    let looks = count(&[Verdict::LooksSlower, Verdict::LooksFaster]);
    let unconfirmed = if looks > 0 { format!("{looks} unconfirmed (one run per side), ") } else { String::new() };
    format!(
        "{slower} slower, {faster} faster, {unchanged} unchanged, {unconfirmed}{} undecided or untestable in {} latency",
        c.rows.len() - slower - faster - unchanged - looks,
        c.options.percentile.key()
    )
}

impl crate::compare::Comparison for Comparison {
    fn metric(&self) -> Metric {
        Metric::Latency
    }

    fn moves(&self) -> Vec<(CaseId, Move)> {
        let of = |r: &Row| match r.verdict {
            Verdict::Slower | Verdict::SlowerSameInstructions => Move::Worse,
            Verdict::Faster | Verdict::FasterSameInstructions => Move::Better,
            Verdict::WithinBand => Move::Same,
            _ => Move::Unknown(verdict_text(r, self.options.noise_band_pct)),
        };
        self.rows.iter().map(|r| (r.id.clone(), of(r))).collect()
    }

    fn summary_line(&self) -> String {
        summary_line(self)
    }

    fn retain_changed(&mut self) {
        self.rows.retain(|r| !matches!(r.verdict, Verdict::NoChange | Verdict::WithinBand));
    }

    fn text(&self) -> String {
        let painted = |r: &Row| {
            let mut cells = cells(r, self);
            cells[VERDICT] = crate::format::paint(std::mem::take(&mut cells[VERDICT]), r.verdict.tone());
            cells
        };
        let rows: Vec<Vec<String>> = std::iter::once(header(self)).chain(self.rows.iter().map(painted)).collect();
        crate::format::table(&rows, |i| (1..7).contains(&i)) + &legend(self)
    }

    fn markdown(&self) -> String {
        let mut out = format!("**{}**.\n\n", summary_line(self));
        let h = header(self);
        out.push_str(&format!("| {} |\n|---|{}\n", h.join(" | "), "---:|".repeat(h.len() - 1)));
        for r in &self.rows {
            let row: Vec<String> = cells(r, self).iter().map(|c| c.replace('|', "\\|")).collect();
            out.push_str(&format!("| {} |\n", row.join(" | ")));
        }
        out + "\n" + &legend(self)
    }

    fn json(&self, decision: json::Decision) -> json::Document {
        let cases = self
            .rows
            .iter()
            .map(|r| json::Case {
                missed_rate: Some([r.missed.0, r.missed.1]),
                ..json::Case::new(
                    r.id.to_string(),
                    r.base,
                    r.new,
                    r.verdict.token(),
                    verdict_text(r, self.options.noise_band_pct),
                )
                .with_fork_test(r.test.as_ref(), r.kept, r.runs, &r.pairs, r.instructions)
            })
            .collect();
        json::Document {
            schema_version: json::COMPARE_SCHEMA_VERSION,
            metric: Metric::Latency.name(),
            test: Some(json::TestSettings {
                paired: self.paired,
                unit: if self.paired {
                    "fork_pair"
                } else if self.by_runs() {
                    "run"
                } else {
                    "fork"
                },
                runs: [self.runs.0, self.runs.1],
                alpha: self.options.alpha,
                level: self.options.alpha,
                noise_band_pct: self.options.noise_band_pct,
                canary_ratio: None,
                machine_changed: false,
                layouts: self.layouts,
                percentile: Some(self.options.percentile.key()),
                method: Some(match self.options.method {
                    Method::T => "paired_t",
                    Method::Bootstrap => "bootstrap",
                }),
            }),
            summary: summary_line(self),
            cases,
            decision,
        }
    }

    /// Gates under `--fail-on-regression` as throughput does; a case without a kept fork on a
    /// side is untested (fails closed), and so is a comparison with no open-loop case at all.
    fn outcome(&self, policy: &Policy) -> Result<Outcome, BadInput> {
        let words = GateWords {
            nothing_shared: "--fail-on-regression --metric latency: the reports share no open-loop case, so nothing was compared: run both with the same --rate",
            worse: "has a higher latency",
        };
        let band = self.options.noise_band_pct;
        let untested = |r: &Row| format!("{} ({})", r.id, verdict_text(r, band));
        timed_outcome(&self.rows, |r| (&r.id, r.verdict), policy, &words, untested)
    }
}
