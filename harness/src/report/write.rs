//! Writing reports atomically: a temp file in the same directory, then a rename.

use super::Report;
use anyhow::Context;
use std::cell::RefCell;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where a run's report goes: `--out` until it can no longer be written (its directory removed,
/// the disk full, the file made read-only), then a fallback the run names, so that no finished
/// fork is lost: `target/harness/` under the working directory, else the temp directory.
#[derive(Debug)]
pub(crate) struct ReportFile {
    requested: PathBuf,
    current: RefCell<PathBuf>,
}

impl ReportFile {
    /// The report at `path` (checked writable beforehand with [`check_writable`]).
    pub(crate) fn new(path: &Path) -> Self {
        ReportFile { requested: path.to_path_buf(), current: RefCell::new(path.to_path_buf()) }
    }

    /// Where the report is now.
    pub(crate) fn path(&self) -> PathBuf {
        self.current.borrow().clone()
    }

    /// `--out` as given, when the report has moved away from it.
    pub(crate) fn moved_from(&self) -> Option<&Path> {
        (*self.current.borrow() != self.requested).then_some(self.requested.as_path())
    }

    /// Writes `report`; when its path fails, writes it to the first fallback that works and
    /// tells `warn` where. Fails only when every fallback fails too.
    pub(crate) fn save(&self, report: &Report, warn: &dyn Fn(&str)) -> anyhow::Result<()> {
        let current = self.path();
        let Err(first) = write_atomic(&current, report) else { return Ok(()) };
        let name = current.file_name().map_or_else(|| "report.json".into(), |n| n.to_string_lossy().into_owned());
        let fallbacks = [
            PathBuf::from("target/harness").join(&name),
            std::env::temp_dir().join(format!("harness-{}-{name}", std::process::id())),
        ];
        for fallback in fallbacks.into_iter().filter(|f| *f != current) {
            let written = std::fs::create_dir_all(parent_dir(&fallback)).map_err(anyhow::Error::from);
            if written.and_then(|()| write_atomic(&fallback, report)).is_ok() {
                warn(&format!(
                    "{:#}; the report goes to {} from now on, and the run goes on",
                    first,
                    fallback.display()
                ));
                *self.current.borrow_mut() = fallback;
                return Ok(());
            }
        }
        Err(first.context("and no fallback (target/harness/, the temp directory) could be written either"))
    }
}

/// Writes `report` to `path` so that a reader sees either the old file or the new one, whole,
/// with every string in it redacted (whatever field a URL or a password reached).
pub(crate) fn write_atomic(path: &Path, report: &Report) -> anyhow::Result<()> {
    let json = redact_json_strings(&serde_json::to_string_pretty(report)?);
    write_bytes_atomic(path, json.as_bytes())
}

/// `json` with [`crate::redact`] applied to every string literal in it, and nothing else
/// touched: a password can never turn into a key, a number or a broken document.
fn redact_json_strings(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut rest = json;
    while let Some(open) = rest.find('"') {
        out.push_str(&rest[..open]);
        let literal_len = string_literal_len(&rest[open..]);
        let literal = &rest[open..open + literal_len];
        match serde_json::from_str::<String>(literal) {
            Ok(text) => match workloads::redact::redact(&text) {
                shown if shown == text => out.push_str(literal),
                shown => out.push_str(&serde_json::Value::String(shown).to_string()),
            },
            Err(_) => out.push_str(literal),
        }
        rest = &rest[open + literal_len..];
    }
    out.push_str(rest);
    out
}

/// The byte length of the JSON string literal `s` starts with (its quotes included).
fn string_literal_len(s: &str) -> usize {
    let bytes = s.as_bytes();
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Writes `bytes` to `path` via a temp file in the same directory and a rename; the file ends
/// with a newline and is readable by everyone (0644), like any file the user writes.
pub(crate) fn write_bytes_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = parent_dir(path);
    let mut tmp = tempfile::Builder::new()
        .prefix(".harness-")
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o644))
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a temp file in {}", dir.display()))?;
    tmp.write_all(bytes)?;
    if !bytes.ends_with(b"\n") {
        tmp.write_all(b"\n")?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// [`check_writable`] for the path a flag names: the one line that names the flag, the path,
/// why, and the fix.
pub(crate) fn check_flag_writable(flag: &str, path: &Path) -> Result<(), crate::error::BadInput> {
    check_writable(path).map_err(|e| {
        crate::error::BadInput(format!("cannot write {flag} '{}': {e}; choose a writable path", path.display()))
    })
}

/// Makes `--out-dir` `dir` (if need be) and checks that `first` can be written in it; a bad
/// directory is bad input, named with the fix.
pub(crate) fn out_dir(dir: &Path, first: &str) -> Result<(), crate::error::BadInput> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string()).and_then(|()| check_writable(&dir.join(first))).map_err(
        |e| {
            crate::error::BadInput(format!(
                "cannot write to --out-dir '{}': {e}; choose a writable directory",
                dir.display()
            ))
        },
    )
}

/// Makes sure `path` can be written (creating its directory), before anything is measured.
pub(crate) fn check_writable(path: &Path) -> Result<(), String> {
    if path.is_dir() {
        return Err("it is a directory".into());
    }
    if let Ok(meta) = std::fs::metadata(path) {
        if !meta.is_file() {
            return Err("it exists and is not a regular file (a FIFO or device)".into());
        }
        if meta.permissions().readonly() {
            return Err("it exists and is read-only, so it is kept as it is (make it writable to replace it)".into());
        }
    }
    let dir = parent_dir(path);
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create directory {}: {e}", dir.display()))?;
    tempfile::Builder::new()
        .prefix(".harness-")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|e| format!("cannot write in {}: {e}", dir.display()))
}

/// When `failure` (any error's text) says a disk was full (`ENOSPC`), or the file system holding
/// `dir` has less than 64 KiB left: the one line that says so, with what is left, naming `dir`.
pub(crate) fn disk_full(dir: &Path, failure: &str) -> Option<String> {
    let free = nix::sys::statvfs::statvfs(dir).ok().map(|s| s.blocks_available() * s.fragment_size());
    let said = failure.contains("(os error 28)") || failure.contains("No space left on device");
    (said || free.is_some_and(|f| f < 64 * 1024)).then(|| {
        let left = free.map_or(String::new(), |f| format!(" ({} KiB left)", f / 1024));
        format!("the disk holding {} is full{left}", dir.display())
    })
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_string_in_the_json_is_redacted_and_nothing_else() {
        let json = r#"{"command_line": ["harness", "--database-url=postgres://bob@h/t?password=s3cr\"t"],
  "password=x": 1, "note": "a \\ b \"q\" redis://:hunter2@h", "n": 3}"#;
        let shown = redact_json_strings(json);
        assert!(!shown.contains("s3cr") && !shown.contains("hunter2"), "{shown}");
        let value: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(value["note"], "a \\ b \"q\" redis://:***@h");
        assert_eq!(value["n"], 3);
        assert_eq!(redact_json_strings("{\"a\": \"plain\", \"b\": [1, 2]}"), "{\"a\": \"plain\", \"b\": [1, 2]}");
    }

    #[test]
    fn writes_whole_file_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/r.json");
        check_writable(&path).unwrap();
        write_bytes_atomic(&path, b"{\"a\":1}").unwrap();
        write_bytes_atomic(&path, b"{\"a\":2}").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\":2}\n");
        let names: Vec<_> =
            std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("r.json")]);
    }

    #[test]
    fn a_full_disk_is_told_from_the_error_or_from_the_space_left() {
        let dir = tempfile::tempdir().unwrap();
        let enospc = std::io::Error::from_raw_os_error(28).to_string();
        let line = disk_full(dir.path(), &format!("cannot write x: {enospc}")).unwrap();
        assert!(line.starts_with(&format!("the disk holding {} is full (", dir.path().display())), "{line}");
        assert_eq!(disk_full(dir.path(), "killed by SIGSEGV"), None, "a temp dir with room is not full");
    }

    #[test]
    fn unwritable_paths_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        assert!(check_writable(&file.join("r.json")).is_err());
        assert!(check_writable(dir.path()).unwrap_err().contains("directory"));
    }
}
