//! A new target directory started from another's dependencies: `ab --layouts` builds the
//! candidate in a target directory of its own, and would otherwise compile every dependency
//! again, though the baselines' target holds them built with the same profile and features.
//!
//! Only the dependencies are copied. The workspace's own packages are left out: cargo names
//! their artifacts the same in every checkout of the workspace and decides freshness by file
//! times, so a copied artifact of the baseline's code could pass for the candidate's.

use std::path::Path;
use std::process::Command;

/// The directories of a profile's output that hold dependencies (not `incremental`, which
/// only the workspace's own packages use, nor the final binaries).
const COPIED: [&str; 3] = [".fingerprint", "build", "deps"];

/// Starts `to` as a copy of the dependencies `from` built with `profile`, unless `to` exists or
/// `from` holds no such build; the workspace in `src` names the packages left out. Best effort:
/// on any failure `to` is left absent and the build makes everything itself.
pub(crate) fn seed_target(from: &Path, to: &Path, profile: &str, src: &Path) -> Result<bool, String> {
    if to.exists() || !from.join(profile).join("deps").is_dir() {
        return Ok(false);
    }
    let members = workspace_packages(src)?;
    let partial = to.with_extension("partial");
    let _ = std::fs::remove_dir_all(&partial);
    let copied = COPIED.iter().try_for_each(|dir| {
        let (src_dir, dst_dir) = (from.join(profile).join(dir), partial.join(profile).join(dir));
        if !src_dir.is_dir() {
            return Ok(());
        }
        copy_entries(&src_dir, &dst_dir, &|name| !is_member_artifact(name, &members))
    });
    match copied.and_then(|()| std::fs::rename(&partial, to).map_err(|e| format!("cannot rename: {e}"))) {
        Ok(()) => Ok(true),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&partial);
            Err(format!("cannot copy the dependencies of {} to {}: {e}", from.display(), to.display()))
        }
    }
}

/// The names of the workspace's packages and of their targets (`cargo metadata --no-deps`).
fn workspace_packages(src: &Path) -> Result<Vec<String>, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(src)
        .args(["metadata", "--no-deps", "--format-version", "1", "--offline"])
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!("cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    let doc: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata printed no JSON: {e}"))?;
    let mut names = vec![];
    for package in doc["packages"].as_array().into_iter().flatten() {
        names.extend(package["name"].as_str().map(str::to_string));
        for target in package["targets"].as_array().into_iter().flatten() {
            names.extend(target["name"].as_str().map(str::to_string));
        }
    }
    if names.is_empty() {
        return Err("cargo metadata names no package".into());
    }
    Ok(names)
}

/// Whether `entry` (a name in `deps`, `build` or `.fingerprint`) is an artifact of one of the
/// `members`: `[lib]NAME-HASH[.ext]`, with `-` and `_` in NAME taken as one.
fn is_member_artifact(entry: &str, members: &[String]) -> bool {
    let stem = entry.split('.').next().unwrap_or(entry);
    let Some((name, hash)) = stem.rsplit_once('-') else { return false };
    if hash.is_empty() || !hash.chars().all(|c| c.is_ascii_hexdigit()) {
        return false;
    }
    let unify = |s: &str| s.replace('-', "_");
    let name = unify(name);
    members.iter().any(|m| {
        let m = unify(m);
        name == m || name.strip_prefix("lib") == Some(m.as_str())
    })
}

/// Copies the entries of `from` that `keep` accepts into `to`, recursively, keeping each file's
/// modification time (cargo compares them).
fn copy_entries(from: &Path, to: &Path, keep: &dyn Fn(&str) -> bool) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let entries = std::fs::read_dir(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| e.to_string())?;
        let name = entry.file_name().to_string_lossy().to_string();
        if !keep(&name) {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        let kind = entry.file_type().map_err(|e| e.to_string())?;
        if kind.is_dir() {
            copy_entries(&src, &dst, &|_| true)?;
        } else if kind.is_file() {
            copy_file(&src, &dst)?;
        }
    }
    Ok(())
}

/// Copies one file with its modification time.
fn copy_file(src: &Path, dst: &Path) -> Result<(), String> {
    let failed = |e: std::io::Error| format!("cannot copy {} to {}: {e}", src.display(), dst.display());
    std::fs::copy(src, dst).map_err(failed)?;
    let modified = std::fs::metadata(src).and_then(|m| m.modified()).map_err(failed)?;
    std::fs::File::options().write(true).open(dst).and_then(|f| f.set_modified(modified)).map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_packages_are_left_out_and_dependencies_kept() {
        let members = ["harness".to_string(), "workloads".to_string(), "my-tool".to_string()];
        for name in ["harness-0123456789abcdef", "libworkloads-0123456789abcdef.rlib", "my_tool-00ff.d"] {
            assert!(is_member_artifact(name, &members), "{name}");
        }
        for name in ["libtokio-0123456789abcdef.rlib", "harnessing-0011", "serde-abc.d", "harness", "lib-xyz"] {
            assert!(!is_member_artifact(name, &members), "{name}");
        }
    }

    #[test]
    fn a_seed_copies_dependencies_with_their_times_and_never_replaces_a_target() {
        let dir = tempfile::tempdir().unwrap();
        let (from, to) = (dir.path().join("from"), dir.path().join("to"));
        let deps = from.join("debug/deps");
        std::fs::create_dir_all(from.join("debug/.fingerprint/serde-00aa")).unwrap();
        std::fs::create_dir_all(&deps).unwrap();
        std::fs::write(from.join("debug/.fingerprint/serde-00aa/lib-serde"), "fp").unwrap();
        std::fs::write(deps.join("libserde-00aa.rlib"), "dep").unwrap();
        std::fs::write(deps.join("libharness-00bb.rlib"), "member").unwrap();
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        std::fs::File::options().write(true).open(deps.join("libserde-00aa.rlib")).unwrap().set_modified(old).unwrap();
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        assert_eq!(seed_target(&from, &to, "debug", root), Ok(true));
        let copied = to.join("debug/deps/libserde-00aa.rlib");
        assert_eq!(std::fs::metadata(&copied).unwrap().modified().unwrap(), old);
        assert!(to.join("debug/.fingerprint/serde-00aa/lib-serde").is_file());
        assert!(!to.join("debug/deps/libharness-00bb.rlib").exists(), "the workspace's own artifacts are left out");
        assert_eq!(seed_target(&from, &to, "debug", root), Ok(false), "an existing target is kept");
        assert_eq!(seed_target(&from, &dir.path().join("other"), "release", root), Ok(false));
    }
}
