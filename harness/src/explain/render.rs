//! An explained case as text: the total, the functions, the components, the simulated caches
//! and branches, the statements, and where the flame graphs are.

use super::Explained;
use super::diff::{Change, FunctionChange};
use crate::format::{si, table};

/// Names of callgrind's cache and branch simulation events, as people read them.
const SIMULATED: &[(&str, &str)] = &[
    ("I1mr", "L1 instruction misses"),
    ("D1mr", "L1 data read misses"),
    ("D1mw", "L1 data write misses"),
    ("ILmr", "last-level instruction misses"),
    ("DLmr", "last-level data read misses"),
    ("DLmw", "last-level data write misses"),
    ("Bcm", "mispredicted conditional branches"),
    ("Bim", "mispredicted indirect branches"),
];

/// The text of one explained case.
pub(crate) fn render(e: &Explained) -> String {
    let ir = e.diff.instructions();
    let mut out = format!("{}\n", e.case);
    if let Some(verdict) = &e.verdict {
        out.push_str(&format!("  timed forks: {verdict}\n"));
    }
    let same = crate::compare::throughput::same_instructions(ir.base, ir.new);
    out.push_str(&format!(
        "  instructions per op: {} -> {} ({} {}){}\n",
        si(ir.base),
        si(ir.new),
        signed(ir.delta()),
        percent(ir.delta(), ir.base),
        if same { ": instructions unchanged" } else { "" }
    ));
    if same {
        out.push_str(&unchanged_note(e));
    }
    if let Some(cause) = &e.diff.cause {
        let spent = e
            .diff
            .components
            .first()
            .map(|c| {
                format!("; most of it is spent in {} ({} {})", c.name, signed(c.delta()), percent(c.delta(), ir.base))
            })
            .unwrap_or_default();
        out.push_str(&format!(
            "  the change enters at {} ({} {} inclusive per op){spent}\n",
            cause.change.name,
            signed(cause.change.delta()),
            percent(cause.change.delta(), ir.base)
        ));
    }
    out.push_str(&functions("own instructions per op, largest changes", &e.diff.own, ir.base));
    out.push_str(&functions(
        "inclusive instructions per op (with callees), largest changes",
        &e.diff.inclusive,
        ir.base,
    ));
    out.push_str(&functions("functions only this build ran", &e.diff.appeared, ir.base));
    out.push_str(&functions("functions only the baseline ran", &e.diff.vanished, ir.base));
    out.push_str(&changes("instructions per op by component", &e.diff.components, ir.base));
    let simulated: Vec<Change> = SIMULATED
        .iter()
        .filter_map(|(event, name)| {
            let c = e.diff.events.iter().find(|c| c.name == *event)?;
            Some(Change { name: format!("{name} ({event})"), ..c.clone() })
        })
        .collect();
    if !simulated.is_empty() {
        out.push_str(&changes("cache and branch simulation per op", &simulated, 0.0));
    }
    if !e.io.is_empty() {
        out.push_str(&changes("round trips and statements per op that changed (I/O forks)", &e.io, 0.0));
    }
    if !e.graphs.is_empty() {
        out.push_str(&format!("  flame graphs: {}\n", e.graphs.join(", ")));
    }
    out
}

/// What an unchanged count means when the time moved, and where to look next.
fn unchanged_note(e: &Explained) -> String {
    let mut out = String::new();
    if e.time_moved {
        out.push_str("  the time moved and the instructions did not: code layout, caches, branch prediction or waiting (I/O, locks) moved it\n");
    }
    if !e.diff.events.iter().any(|c| c.name == "D1mr") {
        out.push_str("  to see cache misses and mispredicted branches per op, run it again with --cache-sim\n");
    }
    out
}

fn functions(title: &str, list: &[FunctionChange], total: f64) -> String {
    if list.is_empty() {
        return String::new();
    }
    let mut rows = vec![vec![
        "Δ/op".into(),
        "of total".into(),
        "base/op".into(),
        "new/op".into(),
        "function".into(),
        "component".into(),
    ]];
    for f in list {
        let c = &f.change;
        rows.push(vec![
            signed(c.delta()),
            percent(c.delta(), total),
            si(c.base),
            si(c.new),
            c.name.clone(),
            f.component.clone(),
        ]);
    }
    section(title, &rows, 4)
}

fn changes(title: &str, list: &[Change], total: f64) -> String {
    let mut rows = vec![vec!["Δ/op".into(), "of total".into(), "base/op".into(), "new/op".into(), "what".into()]];
    for c in list {
        let share = if total > 0.0 { percent(c.delta(), total) } else { percent(c.delta(), c.base) };
        rows.push(vec![signed(c.delta()), share, si(c.base), si(c.new), c.name.clone()]);
    }
    section(title, &rows, 4)
}

fn section(title: &str, rows: &[Vec<String>], text_from: usize) -> String {
    let body = table(rows, |c| c < text_from);
    let indented: String = body.lines().map(|l| format!("    {l}\n")).collect();
    format!("  {title}:\n{indented}")
}

/// A per-op change with its sign: `+30.0`, `-1.250 k`.
fn signed(x: f64) -> String {
    if x > 0.0 { format!("+{}", si(x)) } else { si(x) }
}

/// `x` as a signed share of `of`: `+3.00%`; `n/a` without a base.
pub(crate) fn percent(x: f64, of: f64) -> String {
    if of == 0.0 { "n/a".into() } else { format!("{:+.2}%", 100.0 * x / of) }
}
