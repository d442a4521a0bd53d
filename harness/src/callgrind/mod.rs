//! Everything the harness knows of callgrind, in one room: the client requests a worker issues
//! around its measured ops ([`requests`]), valgrind's command line for an instruction fork, how
//! the dumps are told apart and named, their totals, and the parser `explain` reads them with
//! ([`profile`]). A leaf: the runner, the worker and explain all come here, never to each other.

mod dump;
pub(crate) mod profile;
pub(crate) mod requests;

pub(crate) use dump::{DumpError, keep_dumps, read_dumps, same_workload, total};

use std::ffi::OsString;
use std::path::Path;

/// The reason the worker gives the dump of its measured ops: `desc: Trigger: Client Request:
/// harness-measure` in the dump.
pub(crate) const MEASURE_REASON: &std::ffi::CStr = c"harness-measure";

/// The longest case id a dump's trigger line carries: callgrind formats the reason into a
/// 512-byte buffer.
const MAX_CASE_IN_REASON: usize = 400;

/// What a measurement dump says it counted, from its trigger line: the case (workload and
/// params) and the commit of the build that ran it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Provenance {
    /// `group/name[params]`.
    pub case: String,
    /// The build's commit (`unknown` when it was built outside git).
    pub build: String,
}

/// The reason a worker gives its measurement dumps: [`MEASURE_REASON`], then the case and the
/// build (`harness-measure case=… build=…`), so that a dump says what it counted.
pub(crate) fn measure_reason(case: &str, build: &str) -> std::ffi::CString {
    let case: String = case.chars().filter(|&c| c != '\0' && c != '\n').take(MAX_CASE_IN_REASON).collect();
    let build: String = build.chars().filter(char::is_ascii_alphanumeric).take(64).collect();
    let reason = format!("{} case={case} build={build}", MEASURE_REASON.to_string_lossy());
    std::ffi::CString::new(reason).unwrap_or_else(|_| MEASURE_REASON.to_owned())
}

/// The case and build a measurement dump names (see [`measure_reason`]); `None` for dumps of
/// older harness builds, which name neither.
pub(crate) fn provenance(text: &str) -> Option<Provenance> {
    let trigger = format!("desc: Trigger: Client Request: {} case=", MEASURE_REASON.to_string_lossy());
    let rest = text.lines().find_map(|l| l.strip_prefix(trigger.as_str()))?;
    let (case, build) = rest.rsplit_once(" build=")?;
    Some(Provenance { case: case.to_string(), build: build.to_string() })
}

/// Whether a callgrind dump is one the worker requested around its measured ops (its
/// `harness-measure` client request), not the one at program exit.
pub(crate) fn is_measurement(text: &str) -> bool {
    let trigger = format!("desc: Trigger: Client Request: {}", MEASURE_REASON.to_string_lossy());
    text.lines().any(|l| l.starts_with(&trigger))
}

/// valgrind's command line for an instruction fork whose dumps go to `dir`: instrumentation off
/// until the worker starts it; with `simulate`, the caches and the branch predictor too.
pub(crate) fn command(valgrind: &Path, dir: &Path, simulate: bool) -> Vec<OsString> {
    let mut command: Vec<OsString> = vec![valgrind.into()];
    command.extend(["--tool=callgrind", "--instr-atstart=no"].map(OsString::from));
    if simulate {
        command.extend(["--cache-sim=yes", "--branch-sim=yes"].map(OsString::from));
    }
    let mut out = OsString::from("--callgrind-out-file=");
    out.push(dir.join("callgrind.out"));
    command.push(out);
    command
}

/// A case's name made a file name: what is not a letter, digit or one of `._-=` becomes `_`.
pub(crate) fn file_stem(case: &str) -> String {
    case.chars().map(|c| if c.is_ascii_alphanumeric() || "._-=".contains(c) { c } else { '_' }).collect()
}

/// What the baseline build's forks are called after their case's label (` (baseline)`).
pub(crate) const BASELINE_SUFFIX: &str = " (baseline)";

/// The name a fork's kept dumps start with (`--callgrind-dir`): `<label>.fork<N>`, the label
/// marked when the baseline build ran it.
pub(crate) fn kept_name(label: &str, baseline: bool, fork: u32) -> String {
    let suffix = if baseline { BASELINE_SUFFIX } else { "" };
    format!("{label}{suffix}.fork{fork}")
}

/// Whether a kept dump (see [`kept_name`], made file-safe) is one of the baseline build's.
pub(crate) fn kept_by_baseline(file_name: &str) -> bool {
    file_name.contains(&format!("{}.fork", file_stem(BASELINE_SUFFIX)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dump_names_its_case_and_build() {
        let reason = measure_reason("sql/x[db=sqlite,row_count=10]", "0123abc");
        let text = format!("version: 1\ndesc: Trigger: Client Request: {}\ntotals: 5\n", reason.to_string_lossy());
        assert!(is_measurement(&text), "{text}");
        let p = provenance(&text).unwrap();
        assert_eq!((p.case.as_str(), p.build.as_str()), ("sql/x[db=sqlite,row_count=10]", "0123abc"));
        assert_eq!(provenance("desc: Trigger: Client Request: harness-measure\n"), None, "an older dump names nothing");
        assert!(measure_reason(&"x".repeat(2000), "c").as_bytes().len() < 500, "callgrind's buffer is 512 bytes");
    }

    #[test]
    fn kept_dumps_say_which_build_ran_them() {
        let base = file_stem(&kept_name("sql/x[db=sqlite]", true, 0)) + ".callgrind.out";
        let new = file_stem(&kept_name("sql/x[db=sqlite]", false, 0)) + ".callgrind.out";
        assert!(kept_by_baseline(&base) && !kept_by_baseline(&new), "{base} {new}");
        assert_eq!(file_stem("a/b[c=1, d]"), "a_b_c=1__d_");
    }
}
