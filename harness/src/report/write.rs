//! Writing reports atomically: a temp file in the same directory, then a rename.

use super::Report;
use anyhow::Context;
use std::io::Write;
use std::path::Path;

/// Writes `report` to `path` so that a reader sees either the old file or the new one, whole.
pub(crate) fn write_atomic(path: &Path, report: &Report) -> anyhow::Result<()> {
    let json = serde_json::to_vec_pretty(report)?;
    write_bytes_atomic(path, &json)
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
    fn unwritable_paths_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        assert!(check_writable(&file.join("r.json")).is_err());
        assert!(check_writable(dir.path()).unwrap_err().contains("directory"));
    }
}
