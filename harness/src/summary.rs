//! The table printed at the end of a run: one row per case.

use crate::format::si;
use crate::report::Report;

/// Renders the summary table of `report`.
pub fn render(report: &Report) -> String {
    let with_instr = report.benchmarks.iter().any(|b| b.instructions.is_some());
    let with_latency = report.benchmarks.iter().any(|b| b.latency.is_some());
    let mut header = ["benchmark", "params", "ops/s", "± error (99.9%)", "forks ok"].map(String::from).to_vec();
    if with_instr {
        header.push("instr/op".into());
    }
    if with_latency {
        header.extend(["p50", "p99", "p99.9", "max"].map(String::from));
    }
    let mut rows = vec![header];
    for b in &report.benchmarks {
        let mut params: Vec<String> = b.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if let Some(c) = b.concurrency.as_ref().filter(|c| c.count != 1) {
            params.push(format!("threads={}", c.count));
        }
        let params = params.join(",");
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
        let forks =
            if b.skipped.is_some() { "skipped".into() } else { format!("{}/{}", b.forks_ok(), b.timed_forks()) };
        let mut row = vec![b.name.clone(), params, score, error, forks];
        if with_instr {
            // "~" marks counts that vary run to run (the workload is not deterministic).
            row.push(
                b.instructions
                    .as_ref()
                    .map_or("-".into(), |i| format!("{}{:.1}", if i.deterministic { "" } else { "~" }, i.per_op)),
            );
        }
        if with_latency {
            match &b.latency {
                Some(l) => {
                    for key in ["p50", "p99", "p99.9"] {
                        row.push(l.percentiles.get(key).map_or("-".into(), |&v| nanos(v as f64)));
                    }
                    row.push(nanos(l.max as f64));
                }
                None => row.extend(["-", "-", "-", "-"].map(String::from)),
            }
        }
        rows.push(row);
    }
    let mut out = crate::format::table(&rows, |c| c >= 2);
    for b in report.benchmarks.iter() {
        if let Some(w) = b.latency.as_ref().and_then(|l| l.clock_warning.as_ref()) {
            out.push_str(&format!("warning: {}: {w}\n", crate::compare::label(b)));
        }
        if let Some(l) = b.latency.as_ref().filter(|l| l.ops_per_sample > 1) {
            out.push_str(&format!(
                "note: {}: latency samples are groups of {} ops (each value is the group's mean per op)\n",
                crate::compare::label(b),
                l.ops_per_sample
            ));
        }
    }
    out
}

/// Nanoseconds for people: `812 ns`, `13.41 µs`, `1.002 ms`.
pub fn nanos(n: f64) -> String {
    match n {
        n if n >= 1e6 => format!("{} ms", si(n / 1e6)),
        n if n >= 1e3 => format!("{} µs", si(n / 1e3)),
        n => format!("{} ns", si(n)),
    }
}
