//! Records what built the harness, for `--version` and the report's metadata: the toolchain,
//! the target, and the source's git commit and dirty flag *at build time* (a binary run after a
//! checkout still names the source it was built from), and when it was built.
use std::path::Path;
use std::process::Command;

/// The workspace's source that goes into the binary: a change here reruns this script, so the
/// dirty flag is recomputed with every rebuild.
const SOURCES: [&str; 4] = ["harness", "workloads", "Cargo.toml", "Cargo.lock"];

fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").arg("--no-optional-locks").arg("-C").arg(root).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=HARNESS_RUSTC_VERSION={version}");
    println!("cargo:rustc-env=HARNESS_TARGET={}", std::env::var("TARGET").unwrap_or_default());

    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest).parent().expect("the harness crate sits in the workspace");
    let commit = git(root, &["rev-parse", "HEAD"]).unwrap_or_default();
    let dirty = match commit.is_empty() {
        true => String::new(),
        false => {
            let mut args = vec!["status", "--porcelain", "--untracked-files=no", "--"];
            args.extend(SOURCES);
            git(root, &args).map_or(String::new(), |s| (!s.is_empty()).to_string())
        }
    };
    println!("cargo:rustc-env=HARNESS_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=HARNESS_GIT_DIRTY={dirty}");
    println!("cargo:rustc-env=HARNESS_BUILT_AT={}", humantime_now());
    if let Some(dir) = git(root, &["rev-parse", "--absolute-git-dir"]) {
        let dir = Path::new(&dir);
        let head = git(root, &["symbolic-ref", "-q", "HEAD"]);
        // Only files that exist: cargo treats a missing one as changed on every build.
        let watched = ["HEAD", "index", "packed-refs"].into_iter().map(String::from).chain(head);
        for file in watched.map(|f| dir.join(f)).filter(|p| p.exists()) {
            println!("cargo:rerun-if-changed={}", file.display());
        }
    }
    for s in SOURCES {
        println!("cargo:rerun-if-changed={}", root.join(s).display());
    }
    println!("cargo:rerun-if-env-changed=RUSTC");
}

/// Seconds since the Unix epoch, UTC; formatted by the harness.
fn humantime_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
