//! What an instruction fork leaves behind: callgrind's dumps, read, summed and optionally kept.

use super::{file_stem, is_measurement, profile};
use crate::error::{Classify, Exit};
use std::path::{Path, PathBuf};

/// A dump that cannot be read as one, naming the file and what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DumpError {
    /// The file or directory cannot be read.
    #[error("cannot read the callgrind dump {path}: {error}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A dump without its `totals:` line: callgrind writes it last, so the file was cut short.
    #[error(
        "the callgrind dump {path} has no `totals:` line: it was cut short (a full disk, a killed valgrind); count it again"
    )]
    Truncated {
        /// The file.
        path: PathBuf,
    },
    /// Not callgrind's format.
    #[error("{path} is not a callgrind dump: {why}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What the parser found.
        why: String,
    },
    /// Two dumps to be compared name different workloads (see [`super::measure_reason`]).
    #[error(
        "the dumps are of different workloads: {base_path} counted {base_case}, {new_path} counted {new_case}; explain compares one workload in two builds (or two of its params), so give two dumps of one workload"
    )]
    OtherCase {
        /// The base side's dump.
        base_path: PathBuf,
        /// The case it names.
        base_case: String,
        /// The new side's dump.
        new_path: PathBuf,
        /// The case it names.
        new_case: String,
    },
    /// None of the files is a measurement dump (`harness-measure`).
    #[error("callgrind wrote no measurement dump in {where_}: the worker measured nothing under it")]
    NoMeasurement {
        /// The directory or files looked in.
        where_: String,
    },
}

impl Classify for DumpError {
    fn exit(&self) -> Exit {
        // A dump the user handed over (`explain --base-dump`) is input; one a fork wrote and the
        // runner reads makes that fork fail, which the runner records itself.
        Exit::BadInput
    }
}

fn unreadable(path: &Path) -> impl FnOnce(std::io::Error) -> DumpError + '_ {
    move |error| DumpError::Unreadable { path: path.to_path_buf(), error }
}

/// The files of `dir`, sorted (callgrind numbers its dumps `.1`, `.2` …).
fn files_in(dir: &Path) -> Result<Vec<PathBuf>, DumpError> {
    let mut files = std::fs::read_dir(dir)
        .map_err(unreadable(dir))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(unreadable(dir))?;
    files.sort();
    Ok(files)
}

/// The `totals:` of one dump's text: its cost. (`summary:` is unreliable once instrumentation
/// has been stopped and started: callgrind 3.19 prints an underflowed difference there.)
fn totals(text: &str, path: &Path) -> Result<u64, DumpError> {
    let line = text.lines().find_map(|l| l.strip_prefix("totals:"));
    let Some(line) = line else { return Err(DumpError::Truncated { path: path.to_path_buf() }) };
    let ir = line.split_whitespace().next().unwrap_or_default();
    ir.parse::<u64>()
        .map_err(|_| DumpError::Malformed { path: path.to_path_buf(), why: format!("its totals line is '{line}'") })
}

/// The instructions of the measured ops: the sum over every dump the worker requested
/// (one per instrumented window) among the callgrind output files in `dir`.
pub(crate) fn total(dir: &Path) -> Result<u64, DumpError> {
    let (mut sum, mut dumps) = (0u64, 0);
    for path in files_in(dir)? {
        let text = std::fs::read_to_string(&path).map_err(unreadable(&path))?;
        if is_measurement(&text) {
            sum += totals(&text, &path)?;
            dumps += 1;
        }
    }
    if dumps == 0 {
        return Err(DumpError::NoMeasurement { where_: dir.display().to_string() });
    }
    Ok(sum)
}

/// Copies the measurement dumps of `dir` into `keep` as `<name>.callgrind.out[.N]`, the name
/// made file-safe.
pub(crate) fn keep_dumps(dir: &Path, keep: &Path, name: &str) -> Result<(), DumpError> {
    let safe = file_stem(name);
    let mut n = 0;
    for path in files_in(dir)? {
        if is_measurement(&std::fs::read_to_string(&path).map_err(unreadable(&path))?) {
            let suffix = if n == 0 { String::new() } else { format!(".{n}") };
            let to = keep.join(format!("{safe}.callgrind.out{suffix}"));
            std::fs::copy(&path, &to).map_err(unreadable(&to))?;
            n += 1;
        }
    }
    Ok(())
}

/// The measurement dumps among `files` (a single file is read whatever it is), each checked
/// whole, summed into one profile.
pub(crate) fn read_dumps(files: &[PathBuf]) -> Result<profile::Profile, DumpError> {
    let mut sum = profile::Profile::default();
    let mut read = 0;
    for path in files {
        let text = std::fs::read_to_string(path).map_err(unreadable(path))?;
        if is_measurement(&text) || files.len() == 1 {
            totals(&text, path)?;
            let parsed = profile::parse(&text).map_err(|why| DumpError::Malformed { path: path.clone(), why })?;
            sum.merge(parsed);
            read += 1;
        }
    }
    if read == 0 {
        return Err(DumpError::NoMeasurement { where_: format!("{} file(s)", files.len()) });
    }
    Ok(sum)
}

/// The first of `files` that names what it counted, with its provenance.
fn named(files: &[PathBuf]) -> Result<Option<(PathBuf, super::Provenance)>, DumpError> {
    for path in files {
        let text = std::fs::read_to_string(path).map_err(unreadable(path))?;
        if let Some(p) = super::provenance(&text) {
            return Ok(Some((path.clone(), p)));
        }
    }
    Ok(None)
}

/// Refuses two sets of dumps that name different workloads (params may differ: one workload's
/// variants compare, as `planted/select[plant=…]` does); dumps that name none (an older
/// harness's) pass, having nothing to check.
pub(crate) fn same_workload(base: &[PathBuf], new: &[PathBuf]) -> Result<(), DumpError> {
    let workload = |case: &str| case.split('[').next().unwrap_or(case).to_string();
    match (named(base)?, named(new)?) {
        (Some((base_path, b)), Some((new_path, n))) if workload(&b.case) != workload(&n.case) => {
            Err(DumpError::OtherCase { base_path, base_case: b.case, new_path, new_case: n.case })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dump(dir: &Path, name: &str, trigger: &str, summary: &str, totals: Option<&str>) {
        let end = totals.map_or(String::new(), |t| format!("totals: {t}\n"));
        let text = format!("version: 1\ndesc: Trigger: {trigger}\nevents: Ir\nsummary: {summary}\nfn=x\n0 1\n{end}");
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn callgrind_totals_are_summed_over_measure_dumps_only() {
        let dir = tempfile::tempdir().unwrap();
        dump(dir.path(), "callgrind.out", "Program termination", "18446744073708920984", Some("9"));
        dump(dir.path(), "callgrind.out.1", "Client Request: harness-measure", "631806", Some("631806"));
        dump(dir.path(), "callgrind.out.2", "Client Request: harness-measure", "321", Some("632136"));
        assert_eq!(total(dir.path()).unwrap(), 631806 + 632136);
        let empty = tempfile::tempdir().unwrap();
        assert!(total(empty.path()).unwrap_err().to_string().contains("no measurement dump"));
    }

    #[test]
    fn a_dump_cut_short_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        dump(dir.path(), "cut.out", "Client Request: harness-measure", "5", None);
        let path = dir.path().join("cut.out");
        let err = read_dumps(std::slice::from_ref(&path)).unwrap_err();
        assert!(matches!(err, DumpError::Truncated { .. }), "{err}");
        assert!(err.to_string().contains("cut.out") && err.to_string().contains("cut short"), "{err}");
        assert!(matches!(total(dir.path()).unwrap_err(), DumpError::Truncated { .. }));
    }

    #[test]
    fn dumps_of_different_cases_are_refused_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        let named = |file: &str, case: &str| {
            let reason = super::super::measure_reason(case, "abc");
            dump(dir.path(), file, &format!("Client Request: {}", reason.to_string_lossy()), "5", Some("5"));
            vec![dir.path().join(file)]
        };
        let (noop, busy) = (named("a.out", "baseline/noop"), named("b.out", "baseline/busy_loop[work=100]"));
        let old = {
            dump(dir.path(), "old.out", "Client Request: harness-measure", "5", Some("5"));
            vec![dir.path().join("old.out")]
        };
        let err = same_workload(&noop, &busy).unwrap_err().to_string();
        assert!(err.contains("a.out counted baseline/noop") && err.contains("busy_loop[work=100]"), "{err}");
        same_workload(&noop, &named("c.out", "baseline/noop")).unwrap();
        same_workload(&named("d.out", "planted/select[plant=none]"), &named("e.out", "planted/select[plant=x]"))
            .unwrap();
        same_workload(&noop, &old).unwrap();
    }
}
