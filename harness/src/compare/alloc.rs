//! Allocations per op from `--alloc` runs, case by case: the allocations and the bytes requested
//! per op over each report's ok timed forks, each allowed to grow by a threshold (the thresholds
//! file's `[alloc]` table, default [`super::DEFAULT_GROWTH_PCT`]). A timed iteration amortises
//! its own few allocations over however many ops it ran, so the per-op figures of one build move
//! by a little between runs; hence a threshold and not an exact count, and a floor: a figure
//! moves only by half an allocation (or 8 bytes) per op or more, as I/O's round trips move by
//! half a trip (an op that allocates nothing reads a few thousandths from its iterations'
//! own). The gate fails closed like the other counts.

use super::Verdict;
use super::case_pairs;
use super::counts::{CountRow, Counts};
use super::instructions::IoThresholds;
use crate::report::{Benchmark, CaseId, Report};

/// One case's comparison.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    /// The case.
    pub id: CaseId,
    /// The base report's allocations and bytes per op.
    pub base: Option<(f64, f64)>,
    /// The new report's.
    pub new: Option<(f64, f64)>,
    /// Growth allowed in either, percent.
    pub threshold_pct: f64,
    /// Verdict.
    pub verdict: Verdict,
}

fn counted(b: &Benchmark) -> Option<(f64, f64)> {
    b.allocations.as_ref().map(|a| (a.per_op, a.bytes_per_op))
}

/// `(new - base) / base` in percent; none when the base is zero and the new is too, infinite
/// growth when only the base is zero.
fn growth_pct(base: f64, new: f64) -> f64 {
    match (base, new) {
        (b, n) if b > 0.0 => (n - b) / b * 100.0,
        (_, n) if n > 0.0 => f64::INFINITY,
        _ => 0.0,
    }
}

/// The least change per op that counts, in allocations and in bytes.
const FLOOR: (f64, f64) = (0.5, 8.0);

/// The verdict on both figures: regressed when either grew beyond `threshold` (and its floor),
/// improved when either shrank beyond them and neither grew beyond them.
fn judge(base: (f64, f64), new: (f64, f64), threshold: f64) -> Verdict {
    let moved = |b: f64, n: f64, floor: f64| if (n - b).abs() < floor { 0.0 } else { growth_pct(b, n) };
    let moves = [moved(base.0, new.0, FLOOR.0), moved(base.1, new.1, FLOOR.1)];
    if moves.iter().any(|g| *g > threshold) {
        Verdict::Regressed
    } else if moves.iter().any(|g| *g < -threshold) {
        Verdict::Improved
    } else {
        Verdict::Unchanged
    }
}

/// Compares `new` against `base`: growth beyond `thresholds.for_case(name, label)` in
/// allocations or bytes per op regresses.
pub(crate) fn compare(base: &Report, new: &Report, thresholds: &IoThresholds) -> Counts<Row> {
    let rows = case_pairs(base, new)
        .into_iter()
        .map(|(id, b, n)| {
            let name = b.or(n).map_or("", |c| c.name.as_str());
            let threshold_pct = thresholds.for_case(name, &id.to_string());
            let (bc, nc) = (b.and_then(counted), n.and_then(counted));
            let verdict = match (b, n, bc, nc) {
                (Some(_), None, _, _) => Verdict::Missing,
                (None, Some(_), _, _) => Verdict::Extra,
                (_, _, Some(bc), Some(nc)) => judge(bc, nc, threshold_pct),
                _ => Verdict::NoData,
            };
            Row { id, base: bc, new: nc, threshold_pct, verdict }
        })
        .collect();
    Counts { rows }
}

/// The registry's entry: one report per side, the thresholds file's `[alloc]` table.
pub(crate) fn comparison(
    base: &[Report],
    new: &[Report],
    thresholds: &IoThresholds,
) -> Result<Counts<Row>, crate::error::BadInput> {
    let (base, new) = super::comparison::one_each(crate::metric::Metric::Alloc, base, new)?;
    Ok(compare(base, new, thresholds))
}

fn cells(r: &Row) -> [String; 7] {
    let num = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
    let delta = |pick: fn((f64, f64)) -> f64| match (r.base, r.new) {
        (Some(b), Some(n)) => format!("{:+.2}%", growth_pct(pick(b), pick(n))),
        _ => "-".into(),
    };
    [
        r.id.to_string(),
        num(r.base.map(|b| b.0)),
        num(r.new.map(|n| n.0)),
        num(r.base.map(|b| b.1)),
        num(r.new.map(|n| n.1)),
        format!("{} / {}", delta(|s| s.0), delta(|s| s.1)),
        r.verdict.as_str().into(),
    ]
}

const HEADER: [&str; 7] =
    ["benchmark", "base allocs/op", "new allocs/op", "base B/op", "new B/op", "delta allocs / B", "verdict"];

/// What the numbers are, printed under the table.
pub(crate) const LEGEND: &str = "Allocations and bytes requested per op over each report's ok timed forks (--alloc: Rust's allocator and bundled SQLite's, not a server's); either may grow by the threshold (--thresholds [alloc]).\n";

impl CountRow for Row {
    const METRIC: crate::metric::Metric = crate::metric::Metric::Alloc;
    const HEADER: &'static [&'static str] = &HEADER;
    const LEGEND: &'static str = LEGEND;
    const REGRESSED: &'static str = "**{n} benchmark(s) allocate more per op.**";
    const NONE_REGRESSED: &'static str = "No benchmark allocates more per op.";

    super::counts::count_row_fields!();

    fn json_case(&self) -> super::json::Case {
        super::json::Case {
            threshold_pct: Some(self.threshold_pct),
            delta_pct: self.base.zip(self.new).map(|(b, n)| growth_pct(b.0, n.0)).filter(|d| d.is_finite()),
            ..super::json::Case::new(
                self.id.to_string(),
                self.base.map(|b| b.0),
                self.new.map(|n| n.0),
                self.verdict.token(),
                self.verdict.as_str().into(),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::report;
    use super::*;

    fn case(name: &str, counts: Option<(f64, f64)>) -> Benchmark {
        Benchmark {
            allocations: counts.map(|(per_op, bytes_per_op)| crate::report::AllocSummary {
                per_op,
                bytes_per_op,
                counted: String::new(),
            }),
            ..super::super::fixtures::case(name)
        }
    }

    #[test]
    fn either_figure_growing_past_the_threshold_regresses() {
        let base = report(vec![
            case("same", Some((10.0, 800.0))),
            case("more_allocs", Some((10.0, 800.0))),
            case("more_bytes", Some((10.0, 800.0))),
            case("fewer", Some((10.0, 800.0))),
            case("from_none", Some((0.0, 0.0))),
            case("amortised", Some((0.001, 0.1))),
            case("gone", Some((1.0, 8.0))),
        ]);
        let new = report(vec![
            case("same", Some((10.4, 820.0))),
            case("more_allocs", Some((11.0, 800.0))),
            case("more_bytes", Some((9.0, 900.0))),
            case("fewer", Some((5.0, 790.0))),
            case("from_none", Some((1.0, 16.0))),
            case("amortised", Some((0.004, 0.5))),
            case("fresh", Some((1.0, 8.0))),
        ]);
        let c = compare(&base, &new, &IoThresholds::default());
        let verdicts: Vec<(String, Verdict)> = c.rows.iter().map(|r| (r.id.to_string(), r.verdict)).collect();
        assert_eq!(
            verdicts,
            [
                ("same".into(), Verdict::Unchanged),
                ("more_allocs".into(), Verdict::Regressed),
                ("more_bytes".into(), Verdict::Regressed),
                ("fewer".into(), Verdict::Improved),
                ("from_none".into(), Verdict::Regressed),
                ("amortised".into(), Verdict::Unchanged),
                ("gone".into(), Verdict::Missing),
                ("fresh".into(), Verdict::Extra),
            ]
        );
        let t = IoThresholds { default: Some(20.0), ..IoThresholds::default() };
        assert_eq!(compare(&base, &new, &t).rows[1].verdict, Verdict::Unchanged, "10% is within 20%");
    }

    #[test]
    fn a_gate_without_counts_fails_closed_and_says_how_to_count() {
        use super::super::comparison::{Comparison, Policy};
        let counted = report(vec![case("a", Some((1.0, 8.0)))]);
        let bare = report(vec![case("a", None)]);
        let c = compare(&counted, &bare, &IoThresholds::default());
        assert_eq!(c.rows[0].verdict, Verdict::NoData);
        let e = c.outcome(&Policy { fail_on_regression: true, ..Policy::default() }).unwrap_err().0;
        assert!(
            e.contains("--metric alloc") && e.contains("harness run --alloc") && e.contains("the new report"),
            "{e}"
        );
        let markdown = c.markdown();
        assert!(markdown.contains("| a | 1.00 | - | 8.00 | - | - / - | no data |"), "{markdown}");
    }
}
