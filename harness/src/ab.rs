//! `harness ab REF`: the baseline of an A/B run built from a git ref. REF is resolved in the
//! repository of the current directory and built, with this binary's profile, in a worktree of
//! its own under `target/harness/baselines/<commit>/`; the binary is kept there and reused by
//! the next call for the same commit. A worktree checked out at a commit is clean, so the
//! baseline can never be dirty; the candidate (this binary) records its own dirty flag.

mod home;
pub(crate) mod seed;

pub(crate) use home::Home;

use crate::error::BadInput;
use crate::machine::git;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A baseline build ready to run.
#[derive(Debug)]
pub(crate) struct BaselineRev {
    /// The full commit REF resolved to.
    pub commit: String,
    /// Its worktree (`target/harness/baselines/<commit>/`), where its layout variants are kept.
    pub dir: PathBuf,
    /// The checkout it was resolved in (the candidate's source) and its build directories.
    pub home: Home,
    /// The harness binary built from it.
    pub binary: PathBuf,
    /// Whether it was built by this call (false: reused).
    pub built: bool,
}

/// Resolves `rev` and returns its build, building it first when there is none yet.
pub(crate) fn prepare(rev: &str, quiet: bool) -> Result<BaselineRev, BadInput> {
    let home = Home::of_current_checkout(&format!("harness ab {rev}"))?;
    let commit =
        git(home.root(), &["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")]).map_err(|_| {
            BadInput(format!(
                "harness ab: '{rev}' is not a commit in {}: give a branch, tag or commit that `git rev-parse` knows",
                home.root().display()
            ))
        })?;
    let dir = home.baseline(&commit);
    let binary = dir.join("harness");
    let built = !binary.is_file();
    if built {
        build(rev, &commit, &home, quiet)?;
    }
    Ok(BaselineRev { commit, dir, home, binary, built })
}

/// Checks out `commit` in its baseline directory's `src/` and builds the harness there with this
/// binary's profile (deps shared by every baseline), then keeps the binary beside it.
fn build(rev: &str, commit: &str, home: &Home, quiet: bool) -> Result<(), BadInput> {
    let short = &commit[..commit.len().min(12)];
    let failed = |what: String| BadInput(format!("harness ab {rev} ({short}): {what}"));
    let (root, dir) = (home.root(), home.baseline(commit));
    let src = dir.join("src");
    if !src.join("Cargo.toml").is_file() {
        // A worktree left half made by an interrupted call is replaced.
        let _ = git(root, &["worktree", "remove", "--force", &src.to_string_lossy()]);
        let _ = std::fs::remove_dir_all(&src);
        std::fs::create_dir_all(&dir).map_err(|e| failed(format!("cannot create {}: {e}", dir.display())))?;
        git(root, &["worktree", "add", "--detach", "--force", &src.to_string_lossy(), commit])
            .map_err(|e| failed(format!("cannot check it out in {}: {e}", src.display())))?;
    }
    let profile = crate::machine::build_profile();
    if !quiet {
        say!("harness ab: building {rev} ({short}) with the {profile} profile in {}", src.display());
    }
    // The first baseline build starts from the dependencies the checkout's own build made.
    match seed::seed_target(&home.checkout_target(), &home.baselines_target(), profile, root) {
        Ok(true) if !quiet => {
            say!(
                "harness ab: the baselines' builds start from the dependencies in {}",
                home.checkout_target().display()
            )
        }
        Ok(_) => {}
        Err(e) => say!("warning: {e}; the baseline's build compiles them itself"),
    }
    refresh_times(&src).map_err(failed)?;
    let built = cargo_build(&src, &home.baselines_target(), &[], quiet)
        .map_err(|e| failed(format!("{e}: fix the build at that commit or pick another ref")))?;
    let kept = dir.join("harness");
    let partial = dir.join("harness.partial");
    std::fs::copy(&built, &partial)
        .and_then(|_| std::fs::rename(&partial, &kept))
        .map_err(|e| failed(format!("cannot keep the built binary {} as {}: {e}", built.display(), kept.display())))?;
    Ok(())
}

/// Sets the modification time of every file of the baseline worktree `src` (its `.git` and
/// `target` aside) to now, before a build. Every baseline shares one target directory and cargo
/// names their artifacts alike, deciding freshness by file times: a worktree checked out before
/// another commit's build (one whose build failed or was interrupted, kept for the next call)
/// would otherwise pass that commit's artifacts off as its own.
pub(crate) fn refresh_times(src: &Path) -> Result<(), String> {
    let now = std::time::SystemTime::now();
    let entries = std::fs::read_dir(src).map_err(|e| format!("cannot read {}: {e}", src.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", src.display()))?;
        let (path, kind) = (entry.path(), entry.file_type().map_err(|e| e.to_string())?);
        if kind.is_dir() && !matches!(entry.file_name().to_str(), Some(".git" | "target")) {
            refresh_times(&path)?;
        } else if kind.is_file() {
            std::fs::File::options()
                .write(true)
                .open(&path)
                .and_then(|f| f.set_modified(now))
                .map_err(|e| format!("cannot set the time of {}: {e}", path.display()))?;
        }
    }
    Ok(())
}

/// Builds the harness of the workspace in `src` with this binary's profile into `target` (cargo
/// build, or `cargo rustc` passing `rustc_args` to the harness binary's own compile and link
/// only, so that no dependency is rebuilt for them); the built binary's path.
pub(crate) fn cargo_build(src: &Path, target: &Path, rustc_args: &[String], quiet: bool) -> Result<PathBuf, String> {
    let profile = crate::machine::build_profile();
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo.current_dir(src).env("CARGO_TARGET_DIR", target);
    if rustc_args.is_empty() {
        cargo.args(["build", "-p", "harness", "--locked"]);
    } else {
        cargo.args(["rustc", "-p", "harness", "--bin", "harness", "--locked"]);
    }
    if profile == "release" {
        cargo.arg("--release");
    }
    if quiet {
        cargo.arg("--quiet");
    }
    if !rustc_args.is_empty() {
        cargo.arg("--").args(rustc_args);
    }
    // Cargo's own progress goes to our stderr; its stdout would mix with the report's tables.
    // Ctrl-C is passed on to cargo and its rustc jobs (a process group of their own).
    let (status, interrupted) = crate::interrupt::status(cargo.stdout(Stdio::null()), true).map_err(|e| {
        if e.kind() == std::io::ErrorKind::Interrupted {
            e.to_string()
        } else {
            format!("cannot start cargo ({e}): install Rust's cargo or put it on PATH")
        }
    })?;
    if interrupted {
        return Err(format!(
            "interrupted (Ctrl-C / SIGTERM): cargo was stopped ({status}); the next call builds again"
        ));
    }
    if !status.success() {
        return Err(format!("the build failed ({status}; cargo's output is above)"));
    }
    Ok(target.join(profile).join("harness"))
}
