//! The table printed at the end of a run: one row per case.

use crate::format::si;
use crate::report::Report;

/// Renders the summary table of `report`.
pub fn render(report: &Report) -> String {
    let with_instr = report.benchmarks.iter().any(|b| b.instructions.is_some());
    let mut header = ["benchmark", "params", "ops/s", "± error (99.9%)", "forks ok"].map(String::from).to_vec();
    if with_instr {
        header.push("instr/op".into());
    }
    let mut rows = vec![header];
    for b in &report.benchmarks {
        let params = b.params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",");
        let (score, error) = match &b.score {
            Some(s) => (
                si(s.mean),
                match s.error {
                    Some(e) => format!("± {} ({:.1}%)", si(e), 100.0 * e / s.mean),
                    None => format!("n/a (n={})", s.n),
                },
            ),
            None => ("-".into(), "-".into()),
        };
        let forks = if b.skipped.is_some() { "skipped".into() } else { format!("{}/{}", b.forks_ok(), b.forks.len()) };
        let mut row = vec![b.name.clone(), params, score, error, forks];
        if with_instr {
            // "~" marks counts that vary run to run (the workload is not deterministic).
            row.push(
                b.instructions
                    .as_ref()
                    .map_or("-".into(), |i| format!("{}{:.1}", if i.deterministic { "" } else { "~" }, i.per_op)),
            );
        }
        rows.push(row);
    }
    crate::format::table(&rows, |c| c >= 2)
}
