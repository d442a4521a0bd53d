//! A comparison of exact counts (instructions, I/O, and any count to come): one row per case,
//! a threshold verdict, one table rendered as text, Markdown and JSON, and a gate that fails
//! closed. A count metric implements [`CountRow`] for its row; [`Counts`] does the rest.

use super::comparison::{Comparison, Move, Outcome, Policy};
use super::{Verdict, json};
use crate::error::BadInput;
use crate::metric::Metric;
use crate::report::CaseId;

/// The accessors of a row with `id`, `verdict`, `base` and `new` fields whose module has a
/// `cells(&Row)` function: what every [`CountRow`] implements alike.
macro_rules! count_row_fields {
    () => {
        fn id(&self) -> &CaseId {
            &self.id
        }

        fn verdict(&self) -> Verdict {
            self.verdict
        }

        fn sides(&self) -> (bool, bool) {
            (self.base.is_some(), self.new.is_some())
        }

        fn cells(&self) -> Vec<String> {
            cells(self).to_vec()
        }
    };
}
pub(crate) use count_row_fields;

/// One case's row of a count comparison: what the table shows of it and its verdict.
pub(crate) trait CountRow {
    /// The metric the rows compare.
    const METRIC: Metric;
    /// The table's column names: the case first, the verdict last, numbers between.
    const HEADER: &'static [&'static str];
    /// What the numbers are, printed under the table.
    const LEGEND: &'static str;
    /// The Markdown summary's first line when some cases regressed (`{n}`: how many).
    const REGRESSED: &'static str;
    /// The Markdown summary's first line when none did.
    const NONE_REGRESSED: &'static str;
    /// The Markdown summary's first line, given how many cases regressed.
    fn headline(regressed: usize) -> String {
        match regressed {
            0 => Self::NONE_REGRESSED.to_string(),
            n => Self::REGRESSED.replace("{n}", &n.to_string()),
        }
    }
    /// The case.
    fn id(&self) -> &CaseId;
    /// Its verdict.
    fn verdict(&self) -> Verdict;
    /// Whether the base report and the new report have its counts.
    fn sides(&self) -> (bool, bool);
    /// Whether either report has its counts.
    fn counted(&self) -> bool {
        let (base, new) = self.sides();
        base || new
    }
    /// Its cells, one per [`Self::HEADER`] column.
    fn cells(&self) -> Vec<String>;
    /// What changed, in words (none by default).
    fn changes(&self) -> &[String] {
        &[]
    }
    /// Its `compare --json` case.
    fn json_case(&self) -> json::Case;
}

/// A whole comparison of counts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Counts<R> {
    /// One row per case of either report.
    pub rows: Vec<R>,
}

impl<R: CountRow> Counts<R> {
    /// Labels of the cases with the verdict `v`.
    pub(crate) fn labels(&self, v: Verdict) -> Vec<String> {
        self.rows.iter().filter(|r| r.verdict() == v).map(|r| r.id().to_string()).collect()
    }

    /// The cells of every row, the verdict painted when `paint`.
    fn table(&self, paint: bool) -> Vec<Vec<String>> {
        let row = |r: &R| {
            let mut cells = r.cells();
            if let Some(last) = cells.last_mut().filter(|_| paint) {
                *last = crate::format::paint(std::mem::take(last), r.verdict().tone());
            }
            cells
        };
        self.rows.iter().map(row).collect()
    }

    /// The changes of every row that has some, one line per case.
    fn change_lines(&self) -> Vec<String> {
        let changed = self.rows.iter().filter(|r| !r.changes().is_empty());
        changed.map(|r| format!("{}: {}", r.id(), r.changes().join("; "))).collect()
    }
}

impl<R: CountRow> Comparison for Counts<R> {
    fn metric(&self) -> Metric {
        R::METRIC
    }

    fn moves(&self) -> Vec<(CaseId, Move)> {
        let of = |v: Verdict| match v {
            Verdict::Regressed => Move::Worse,
            Verdict::Improved => Move::Better,
            Verdict::Unchanged => Move::Same,
            other => Move::Unknown(other.as_str().into()),
        };
        self.rows.iter().map(|r| (r.id().clone(), of(r.verdict()))).collect()
    }

    fn summary_line(&self) -> String {
        let n = |v: Verdict| self.rows.iter().filter(|r| r.verdict() == v).count();
        format!(
            "{} regressed, {} improved, {} unchanged, {} missing in new, {} new",
            n(Verdict::Regressed),
            n(Verdict::Improved),
            n(Verdict::Unchanged),
            n(Verdict::Missing),
            n(Verdict::Extra)
        )
    }

    fn retain_changed(&mut self) {
        self.rows.retain(|r| r.verdict() != Verdict::Unchanged);
    }

    fn text(&self) -> String {
        let header = R::HEADER.iter().map(|h| h.to_string()).collect();
        let rows: Vec<Vec<String>> = std::iter::once(header).chain(self.table(true)).collect();
        let numbers = 1..R::HEADER.len() - 1;
        let changes: String = self.change_lines().iter().map(|l| format!("{l}\n")).collect();
        crate::format::table(&rows, |i| numbers.contains(&i)) + R::LEGEND + &changes
    }

    fn markdown(&self) -> String {
        let regressed = self.labels(Verdict::Regressed).len();
        let mut out = format!("{}\n\n", R::headline(regressed));
        let aligned = "---:|".repeat(R::HEADER.len() - 2);
        out.push_str(&format!("| {} |\n|---|{aligned}---|\n", R::HEADER.join(" | ")));
        for cells in self.table(false) {
            out.push_str(&format!(
                "| {} |\n",
                cells.iter().map(|c| c.replace('|', "\\|")).collect::<Vec<_>>().join(" | ")
            ));
        }
        out.push('\n');
        out.push_str(R::LEGEND);
        let changes = self.change_lines();
        for line in &changes {
            out.push_str(&format!("\n- `{}`", line.replace('`', "'")));
        }
        if !changes.is_empty() {
            out.push('\n');
        }
        out
    }

    fn json(&self, decision: json::Decision) -> json::Document {
        json::Document {
            schema_version: json::COMPARE_SCHEMA_VERSION,
            metric: R::METRIC.name(),
            test: None,
            summary: self.summary_line(),
            cases: self.rows.iter().map(CountRow::json_case).collect(),
            decision,
        }
    }

    /// Fails closed without counts; fails on a regressed case and on a missing one (unless
    /// missing cases are allowed). Counts always gate.
    fn outcome(&self, policy: &Policy) -> Result<Outcome, BadInput> {
        let no_counts = self.labels(Verdict::NoData);
        if !no_counts.is_empty() || self.rows.iter().all(|r| !r.counted()) {
            let shown = if no_counts.is_empty() { "every case".to_string() } else { no_counts.join(", ") };
            let (flag, what) = (R::METRIC.name(), R::METRIC.recorded());
            let run = R::METRIC.run_flag().unwrap_or_default();
            let lacking = self.rows.iter().filter(|r| r.verdict() == Verdict::NoData || !r.counted());
            let (base, new) = lacking.fold((false, false), |(b, n), r| (b || !r.sides().0, n || !r.sides().1));
            let which = match (base, new) {
                (true, false) => "the base report",
                (false, true) => "the new report",
                _ => "either report",
            };
            return Err(BadInput(format!(
                "--metric {flag}: no {what} for {shown} in {which}: make it with `harness run {run}`; a gate that measured nothing cannot pass"
            )));
        }
        let mut failing = self.labels(Verdict::Regressed);
        if !policy.allow_missing {
            failing.extend(self.labels(Verdict::Missing).into_iter().map(|l| format!("{l} (missing in new)")));
        }
        Ok(Outcome { failing, ..Outcome::default() })
    }
}
