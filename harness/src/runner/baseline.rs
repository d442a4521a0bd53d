//! `--baseline-bin`: checking that the other build can serve as a worker before anything runs.

use crate::error::BadInput;
use crate::protocol::PROTOCOL_VERSION;
use crate::report::meta::{BaselineBuild, Git};
use std::path::Path;
use std::process::Command;

/// Asks the binary at `path` to describe itself (`env --json`) and checks that it speaks this
/// harness's worker protocol.
pub(crate) fn probe(path: &Path) -> Result<BaselineBuild, BadInput> {
    let shown = path.display();
    let out = Command::new(path).args(["env", "--json"]).output().map_err(|e| {
        BadInput(format!(
            "--baseline-bin {shown}: cannot run it ({e}): pass the path of a built harness binary, e.g. ../base/target/release/harness"
        ))
    })?;
    let value: serde_json::Value = serde_json::from_slice(&out.stdout)
        .ok()
        .filter(|_| out.status.success())
        .ok_or_else(|| {
            BadInput(format!(
                "--baseline-bin {shown} is not a harness binary (`{shown} env --json` did not print its description): pass a harness built with `cargo build --release -p harness`"
            ))
        })?;
    let protocol = value["protocol_version"].as_u64().ok_or_else(|| {
        BadInput(format!(
            "--baseline-bin {shown} does not state a worker protocol version: it is too old or not a harness"
        ))
    })?;
    if protocol != u64::from(PROTOCOL_VERSION) {
        return Err(BadInput(format!(
            "--baseline-bin {shown} speaks worker protocol {protocol}, this harness speaks {PROTOCOL_VERSION}: build the baseline from a commit with protocol {PROTOCOL_VERSION}, or run each build on its own and use `harness compare`"
        )));
    }
    let text = |k: &str| value[k].as_str().unwrap_or("unknown").to_string();
    Ok(BaselineBuild {
        path: shown.to_string(),
        harness_version: text("harness_version"),
        protocol_version: PROTOCOL_VERSION,
        git: serde_json::from_value(value["git"].clone()).unwrap_or(Git { commit: None, dirty: None, built_at: None }),
        rustc: text("rustc"),
        build_profile: text("build_profile"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(dir: &Path, body: &str) -> std::path::PathBuf {
        let p = dir.join("fake-harness");
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Another test thread may fork while the file is open for writing, and its child holds
        // the descriptor until it execs: running the script then fails with ETXTBSY. Wait it out.
        for _ in 0..100 {
            match std::process::Command::new(&p).output() {
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                _ => break,
            }
        }
        p
    }

    #[test]
    fn a_protocol_mismatch_is_refused_by_number() {
        let dir = tempfile::tempdir().unwrap();
        let p = script(dir.path(), r#"echo '{"protocol_version": 999, "rustc": "rustc 1"}'"#);
        let e = probe(&p).unwrap_err().0;
        assert!(e.contains(&format!("speaks worker protocol 999, this harness speaks {PROTOCOL_VERSION}")), "{e}");
    }

    #[test]
    fn missing_and_foreign_binaries_are_named() {
        let e = probe(Path::new("/nonexistent/harness")).unwrap_err().0;
        assert!(e.contains("cannot run it"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = probe(&script(dir.path(), "echo hello")).unwrap_err().0;
        assert!(e.contains("is not a harness binary"), "{e}");
    }

    #[test]
    fn a_matching_binary_describes_itself() {
        let dir = tempfile::tempdir().unwrap();
        let body = r#"echo '{"protocol_version": P, "harness_version": "0.1.0", "rustc": "rustc 1.95", "build_profile": "release", "git": {"commit": "abc", "dirty": false}}'"#;
        let p = script(dir.path(), &body.replace('P', &PROTOCOL_VERSION.to_string()));
        let b = probe(&p).unwrap();
        assert_eq!((b.git.commit.as_deref(), b.rustc.as_str()), (Some("abc"), "rustc 1.95"));
    }
}
