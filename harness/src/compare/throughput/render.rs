//! How a throughput comparison is shown: the table (text and Markdown), its legend, the
//! summary line and the `--json` document.

use super::{Comparison, Row, Verdict};
use crate::compare::json;
use crate::format::si;

fn header(c: &Comparison) -> Vec<String> {
    let confidence = format!("{}% interval", fmt_pct(1.0 - c.level));
    let mut h: Vec<String> =
        ["benchmark", "base ops/s", "new ops/s", "new/base", confidence.as_str(), "p", "forks", "verdict"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    if c.paired {
        h.push("fork pairs new/base".into());
    }
    if counted_instructions(c) {
        h.push("instr new/base".into());
    }
    if c.by_runs() {
        h[6] = "forks (runs)".into();
    }
    h
}

fn fmt_pct(x: f64) -> String {
    let p = x * 100.0;
    if (p - p.round()).abs() < 0.05 { format!("{}", p.round()) } else { format!("{p:.1}") }
}

/// The column of the verdict in [`cells`].
const VERDICT: usize = 7;

fn cells(r: &Row, c: &Comparison) -> Vec<String> {
    let num = |v: Option<f64>| v.map_or("-".into(), si);
    let mut v = vec![
        r.id.to_string(),
        num(r.base),
        num(r.new),
        r.test.map_or("-".into(), |t| format!("{:.3}", t.ratio)),
        r.test.map_or("-".into(), |t| format!("{:.3}..{:.3}", t.lower, t.upper)),
        r.test.map_or("-".into(), |t| format!("{:.3}", t.p_value)),
        match r.runs {
            Some((b, n)) => format!("{}/{} ({b}/{n})", r.forks.0, r.forks.1),
            None => format!("{}/{}", r.forks.0, r.forks.1),
        },
        c.verdict_text(r.verdict),
    ];
    if c.paired {
        v.push(r.pairs.iter().map(|p| format!("{p:.3}")).collect::<Vec<_>>().join(" "));
    }
    if counted_instructions(c) {
        v.push(r.instructions.map_or("-".into(), |(b, n)| format!("{:.4}", n / b)));
    }
    v
}

/// Whether any case has instruction counts of both builds (the `instr new/base` column).
fn counted_instructions(c: &Comparison) -> bool {
    c.rows.iter().any(|r| r.instructions.is_some())
}

/// Why one run per side cannot decide, as the legend says it.
const ONE_RUN: &str = "One run per side cannot tell a change of the code from a change of the machine between the runs (reports/calibration.md measures how often two runs of one build differ here): a difference beyond the band is only `slower?`/`faster?` and never fails the gate; confirm it with one A/B run (`harness ab REF`) or with 2+ runs per side made alternately (`compare --base B1.json B2.json B3.json --new N1.json N2.json N3.json`).";

/// What one fork pair's ratio is, as the legend says it.
const PAIR_RATIO: &str = "the median ratio of its side-by-side iterations, or of its forks' medians";

/// What the verdicts mean and what to watch out for, printed under the table.
pub(crate) fn legend(c: &Comparison) -> String {
    let band = c.options.noise_band_pct;
    let mut out = match (&c.sequential, c.paired) {
        (Some(p), _) => format!(
            "Paired t-test on the log ratio of each fork pair ({PAIR_RATIO}), sequential (--forks auto, {}..{} pairs): every look tests at {:.4} so that a false alarm at any look has chance {}; faster/slower only when the whole interval lies beyond ±{band}%.\n",
            p.min_pairs, p.max_pairs, p.nominal_alpha, p.alpha
        ),
        (None, true) => format!(
            "Paired t-test on the log ratio of each fork pair ({PAIR_RATIO}; alpha {}); faster/slower only when the whole interval lies beyond ±{band}%.\n",
            c.options.alpha
        ),
        (None, false) if c.by_runs() => format!(
            "Welch's t-test on each run's log geometric mean of its fork medians ({} base and {} new runs: the run is the unit, so the machine's drift between runs is inside the interval; alpha {}); faster/slower only when the whole interval lies beyond ±{band}%.\n",
            c.runs.0, c.runs.1, c.options.alpha
        ),
        (None, false) => format!(
            "Welch's t-test on the log fork medians (alpha {}); ops/s are geometric means of the fork medians. {ONE_RUN}\n",
            c.options.alpha
        ),
    };
    out.push_str(&layout_legend(c));
    let too_few = c.rows.iter().filter(|r| r.verdict == Verdict::TooFewForks).count();
    if too_few > 0 {
        let what = if c.paired {
            "at least 2 fork pairs: rerun with --forks 5 or --forks auto"
        } else if c.by_runs() {
            "at least 2 runs with ok forks on each side"
        } else {
            "at least 2 ok forks on each side: rerun both with --forks 5 (2 at the very least), or make one A/B run with --baseline-bin"
        };
        out.push_str(&format!("{too_few} case(s) cannot be tested: the test needs {what}.\n"));
    }
    if let Some(r) = c.canary {
        let moved = if c.machine_changed() {
            format!(
                "the machine itself ran {:.1}% {} between the runs, beyond the ±{band}% band: a difference may be the machine's, not the code's; compare in one A/B run (`harness run --baseline-bin`)",
                (r - 1.0).abs() * 100.0,
                if r < 1.0 { "slower" } else { "faster" }
            )
        } else {
            format!("within ±{band}%: the machine kept its speed")
        };
        out.push_str(&format!(
            "Drift canary (the same CPU loop at the start and end of each run): new/base {r:.3}, {moved}.\n"
        ));
    } else if !c.paired {
        out.push_str("No drift canary in one of the reports: a change of the machine's speed between the runs cannot be told from a change of the code.\n");
    }
    if c.sampled {
        out.push_str("Latency percentiles (--mode sample) are not compared: these verdicts are on throughput.\n");
    }
    out
}

/// What the legend says of code layouts: the variants the pairs ran, and the instruction label.
fn layout_legend(c: &Comparison) -> String {
    let mut out = String::new();
    if let Some(k) = c.layouts {
        out.push_str(&format!(
            "Code layout as a random effect (--layouts {k}): each build ran {k} variants relinked with their functions reordered (one order per seed for both builds), fork pair j on variant j mod {k} of both; the test's unit is the variant (the geometric mean of its pairs), so a verdict holds across layouts, not for one lucky pair of binaries.\n"
        ));
    } else if c.paired && c.rows.iter().any(|r| r.verdict.is_difference()) {
        out.push_str("One code layout per build (no --layouts): each FASTER/SLOWER holds for these two binaries, and an unrelated commit that moves the code may move it; `harness ab REF --layouts K` tests it across layouts.\n");
    }
    if counted_instructions(c) {
        out.push_str(&format!(
            "instr new/base: instructions per op of the two builds, counted under callgrind for the decided cases. `(same instructions: layout?)`: they agree within {}%, so the time moved while the work did not: likely where the code landed (or a data layout), not what it does; `harness ab REF --layouts K` decides whether it holds across layouts.\n",
            super::SAME_INSTRUCTIONS * 100.0
        ));
    }
    out
}

/// Counts of the verdicts, one line.
pub(crate) fn summary_line(c: &Comparison) -> String {
    let count = |v: Verdict| c.rows.iter().filter(|r| r.verdict == v).count();
    let looks = count(Verdict::LooksSlower) + count(Verdict::LooksFaster);
    let same = count(Verdict::SlowerSameInstructions) + count(Verdict::FasterSameInstructions);
    let (slower, faster, unchanged) = (
        count(Verdict::Slower) + count(Verdict::SlowerSameInstructions),
        count(Verdict::Faster) + count(Verdict::FasterSameInstructions),
        count(Verdict::WithinBand),
    );
    let unconfirmed = if looks > 0 { format!("{looks} unconfirmed (one run per side), ") } else { String::new() };
    let layout = if same > 0 { format!(" ({same} with the same instructions: layout?)") } else { String::new() };
    format!(
        "{slower} slower, {faster} faster{layout}, {unchanged} unchanged, {unconfirmed}{} undecided or untestable",
        c.rows.len() - slower - faster - unchanged - looks
    )
}

/// The `compare --json` document of this comparison, with the gate's `decision`.
pub(crate) fn to_json(c: &Comparison, decision: json::Decision) -> json::Document {
    let cases = c
        .rows
        .iter()
        .map(|r| {
            json::Case::new(r.id.to_string(), r.base, r.new, r.verdict.token(), c.verdict_text(r.verdict))
                .with_fork_test(r.test.as_ref(), r.forks, r.runs, &r.pairs, r.instructions)
        })
        .collect();
    json::Document {
        schema_version: json::COMPARE_SCHEMA_VERSION,
        metric: "throughput",
        test: Some(json::TestSettings {
            paired: c.paired,
            unit: c.unit(),
            runs: [c.runs.0, c.runs.1],
            alpha: c.options.alpha,
            level: c.level,
            noise_band_pct: c.options.noise_band_pct,
            canary_ratio: c.canary,
            machine_changed: c.machine_changed(),
            layouts: c.layouts,
            percentile: None,
            method: None,
        }),
        summary: summary_line(c),
        cases,
        decision,
    }
}

/// A plain-text table.
pub(crate) fn render_text(c: &Comparison) -> String {
    let painted = |r: &Row| {
        let mut cells = cells(r, c);
        cells[VERDICT] = crate::format::paint(std::mem::take(&mut cells[VERDICT]), r.verdict.tone());
        cells
    };
    let rows: Vec<Vec<String>> = std::iter::once(header(c)).chain(c.rows.iter().map(painted)).collect();
    crate::format::table(&rows, |i| (1..7).contains(&i)) + &legend(c)
}

/// A Markdown table with a one-line verdict, for a CI job summary.
pub(crate) fn render_markdown(c: &Comparison) -> String {
    let mut out = format!("**{}** in throughput.\n\n", summary_line(c));
    let h = header(c);
    out.push_str(&format!("| {} |\n|---|{}\n", h.join(" | "), "---:|".repeat(h.len() - 1)));
    for r in &c.rows {
        out.push_str(&format!(
            "| {} |\n",
            cells(r, c).iter().map(|c| c.replace('|', "\\|")).collect::<Vec<_>>().join(" | ")
        ));
    }
    out.push('\n');
    out.push_str(&legend(c));
    out
}
