//! Reading reports: any file a user names is checked for what it is (a regular file, JSON, a
//! report of a schema this harness reads, each case once) before anything reads a number from it.

use super::{READABLE_VERSIONS, Report};
use crate::error::BadInput;

/// Reads a report file; a missing or foreign file is bad input naming it.
pub(crate) fn read_report(path: &std::path::Path, which: &str) -> Result<Report, BadInput> {
    let shown = path.display();
    let kind = std::fs::metadata(path).map_err(|e| BadInput(format!("cannot read {which} report {shown}: {e}")))?;
    if !kind.is_file() {
        return Err(BadInput(format!(
            "{which} report {shown} is not a regular file (a directory, FIFO or device): pass a JSON report written by `harness run`"
        )));
    }
    let text =
        std::fs::read_to_string(path).map_err(|e| BadInput(format!("cannot read {which} report {shown}: {e}")))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        BadInput(format!("{which} report {shown} is not JSON ({e}): pass a JSON report written by `harness run`"))
    })?;
    match value.get("schema_version").and_then(serde_json::Value::as_u64) {
        Some(v) if READABLE_VERSIONS.iter().any(|&r| u64::from(r) == v) => {}
        Some(v) => {
            let readable: Vec<String> = READABLE_VERSIONS.iter().map(u32::to_string).collect();
            let (last, rest) = readable.split_last().expect("some version is readable");
            return Err(BadInput(format!(
                "{which} report {shown} has schema version {v}; this harness reads versions {} and {last} only: read it with the harness that wrote it, or measure again",
                rest.join(", ")
            )));
        }
        None => {
            return Err(BadInput(format!(
                "{which} report {shown} is not a harness report (it has no schema_version): pass a JSON report written by `harness run`"
            )));
        }
    }
    let report: Report = serde_json::from_value(value).map_err(|e| {
        BadInput(format!(
            "{which} report {shown} says a schema version this harness reads but does not have its shape ({e}): it was edited or cut short; measure again"
        ))
    })?;
    refuse_repeated_cases(&report, &format!("{which} report {shown}"))?;
    Ok(report)
}

/// A report that holds one case twice is bad input naming the case: a reader would silently
/// keep one copy.
fn refuse_repeated_cases(report: &Report, what: &str) -> Result<(), BadInput> {
    let mut seen = std::collections::BTreeSet::new();
    for b in &report.benchmarks {
        let label = b.id();
        if !seen.insert(label.clone()) {
            return Err(BadInput(format!(
                "{what} holds case {label} twice: it was edited or concatenated; measure again, or join shards with `harness merge`"
            )));
        }
    }
    Ok(())
}
