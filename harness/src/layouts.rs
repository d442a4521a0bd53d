//! Code-layout variants of a harness build (`harness ab REF --layouts K`).
//!
//! A variant is the same build relinked with its code sections shuffled: lld's
//! `--shuffle-sections=.text*=SEED` reorders every function (rustc and the cc crate put each in
//! a section of its own), so the variants run the same instructions with the code at other
//! addresses and alignments. A variant costs a link, not a build: the build that makes a side's
//! binary once also asks lld for `--reproduce=link.tar` (every input of the final link and a
//! response file), which is unpacked once; each seed then reruns that link (about 0.2 s for
//! this harness on a 2-core VM) with the shuffle and `--strip-debug` (a timed fork needs no line
//! tables). Variants are made when a fork pair first needs one and kept beside the tar, like the
//! baselines, until the build changes. `run --baseline-bin B --layouts K` takes the links a user
//! built (`B.link.tar` beside each binary); `harness ab` builds them itself.

use crate::BadInput;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The relinkable build of one side, and where its variants go.
#[derive(Debug, Clone)]
pub(crate) struct Relinkable {
    /// The unpacked link (holding `response.txt`), run from there (`--chroot .`).
    link_dir: PathBuf,
    /// Where the variants are kept (`variant-<seed>`).
    dir: PathBuf,
    /// rust-lld of the toolchain that built it.
    lld: PathBuf,
}

/// K layout variants of both builds of an A/B run.
#[derive(Debug, Clone)]
pub(crate) struct Variants {
    /// Variants per side.
    pub count: u32,
    /// The baseline's relinkable build.
    pub baseline: Relinkable,
    /// The candidate's relinkable build.
    pub current: Relinkable,
}

impl Variants {
    /// The variant (shuffle seed, 1-based) fork pair `pair` runs on both sides.
    pub(crate) fn seed(&self, pair: u32) -> u32 {
        pair % self.count + 1
    }
}

impl Relinkable {
    /// The binary of variant `seed`, linked now if it is not kept yet.
    pub(crate) fn variant(&self, seed: u32) -> Result<PathBuf, String> {
        let out = self.dir.join(format!("variant-{seed}"));
        if out.is_file() {
            return Ok(out);
        }
        let partial = self.dir.join(format!("variant-{seed}.partial"));
        let output = Command::new(&self.lld)
            .current_dir(&self.link_dir)
            .args(["-flavor", "gnu", "@response.txt", "--strip-debug"])
            .arg(format!("--shuffle-sections=.text*={seed}"))
            .arg("-o")
            .arg(&partial)
            .output()
            .map_err(|e| format!("cannot run {} ({e})", self.lld.display()))?;
        if !output.status.success() {
            let why = String::from_utf8_lossy(&output.stderr);
            return Err(format!("relinking layout variant {seed} failed: {}", why.trim()));
        }
        std::fs::rename(&partial, &out).map_err(|e| format!("cannot keep {}: {e}", out.display()))?;
        Ok(out)
    }
}

/// When [`relinkable`] asks cargo again for a link it already has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rebuild {
    /// A commit's link: made once, kept.
    Never,
    /// A working tree's: cargo checks every time (a second or two when nothing changed).
    WhenChanged,
}

/// Builds the harness of the workspace in `src` into `target` so that its link can be rerun,
/// and unpacks that link into `home` (again only when the build changed); `who` names the side
/// in errors.
pub(crate) fn relinkable(
    src: &Path,
    target: &Path,
    home: &Path,
    who: &str,
    rebuild: Rebuild,
    quiet: bool,
) -> Result<Relinkable, BadInput> {
    let failed = |what: String| BadInput(format!("--layouts: {who}: {what}"));
    std::fs::create_dir_all(home).map_err(|e| failed(format!("cannot create {}: {e}", home.display())))?;
    let (tar, written) = (home.join("link.tar"), home.join("link.tar.partial"));
    if rebuild == Rebuild::WhenChanged || !tar.is_file() {
        if !quiet {
            say!("harness ab: building {who} so that its link can be rerun ({})", src.display());
        }
        // The linker writes the tar as the build links (not at all when cargo finds it fresh):
        // it becomes the link only once the build succeeded, so an interrupted one leaves none.
        if rebuild == Rebuild::Never {
            // A baseline's worktree, built into the target every baseline shares.
            crate::ab::refresh_times(src).map_err(failed)?;
        }
        let arg = format!("link-arg=-Wl,--reproduce={}", written.display());
        crate::ab::cargo_build(src, target, &["-C".into(), arg], quiet)
            .map_err(|e| failed(format!("{e}: fix the build of {}", src.display())))?;
        if written.is_file() {
            std::fs::rename(&written, &tar).map_err(|e| failed(format!("cannot keep {}: {e}", tar.display())))?;
        }
    }
    if !tar.is_file() {
        return Err(failed(format!(
            "the linker wrote no {}: --layouts needs lld (rustc's default linker on x86_64 Linux since 1.90); if the build was fresh, remove {} and try again",
            written.display(),
            target.display()
        )));
    }
    from_tar(&tar, home, src).map_err(failed)
}

/// The relinkable build of `binary` from the link lld wrote beside it (`BINARY.link.tar`), its
/// variants kept in `BINARY.layouts/`: how `run --baseline-bin B --layouts K` finds both sides.
pub(crate) fn beside(binary: &Path, who: &str) -> Result<Relinkable, BadInput> {
    let name = |suffix: &str| {
        let mut p = binary.as_os_str().to_owned();
        p.push(suffix);
        PathBuf::from(p)
    };
    let (tar, home) = (name(".link.tar"), name(".layouts"));
    if !tar.is_file() {
        return Err(BadInput(format!(
            "--layouts: {who} {} has no {} beside it: build it with `cargo rustc --release -p harness --bin harness -- -C link-arg=-Wl,--reproduce=$PWD/{}` (then copy both), or use `harness ab REF --layouts K`, which does that itself",
            binary.display(),
            tar.display(),
            tar.file_name().map_or(String::new(), |n| format!("target/release/{}", n.to_string_lossy()))
        )));
    }
    std::fs::create_dir_all(&home)
        .map_err(|e| BadInput(format!("--layouts: cannot create {}: {e}; choose a writable place", home.display())))?;
    from_tar(&tar, &home, Path::new(".")).map_err(|e| BadInput(format!("--layouts: {who}: {e}")))
}

/// A relinkable build from its link `tar`, unpacked into `home`, relinked by the rust-lld of
/// the toolchain that builds in `src`.
fn from_tar(tar: &Path, home: &Path, src: &Path) -> Result<Relinkable, String> {
    let link_dir = unpack(tar, home)?;
    Ok(Relinkable { link_dir, dir: home.to_path_buf(), lld: find_lld(src)? })
}

/// Unpacks `tar` into `home/link` unless the unpacked copy is of this very tar (its size and
/// time in `home/link.stamp`); a new tar also drops the variants of the old one.
fn unpack(tar: &Path, home: &Path) -> Result<PathBuf, String> {
    let meta = std::fs::metadata(tar).map_err(|e| format!("cannot read {}: {e}", tar.display()))?;
    let stamp = format!("{} {:?}", meta.len(), meta.modified().ok());
    let (unpacked, stamp_file) = (home.join("link"), home.join("link.stamp"));
    let root = |dir: &Path| -> Result<PathBuf, String> {
        // lld writes the tar with one top directory, named after the tar.
        std::fs::read_dir(dir)
            .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.join("response.txt").is_file())
            .ok_or_else(|| format!("{} holds no response.txt", dir.display()))
    };
    if std::fs::read_to_string(&stamp_file).is_ok_and(|s| s == stamp) {
        return root(&unpacked);
    }
    let _ = std::fs::remove_dir_all(&unpacked);
    for entry in std::fs::read_dir(home).map_err(|e| e.to_string())?.filter_map(Result::ok) {
        if entry.file_name().to_string_lossy().starts_with("variant-") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    let file = std::fs::File::open(tar).map_err(|e| format!("cannot open {}: {e}", tar.display()))?;
    tar::Archive::new(file).unpack(&unpacked).map_err(|e| format!("cannot unpack {}: {e}", tar.display()))?;
    std::fs::write(&stamp_file, stamp).map_err(|e| format!("cannot write {}: {e}", stamp_file.display()))?;
    root(&unpacked)
}

/// rust-lld of the toolchain that builds in `src` (its sysroot, for its host).
fn find_lld(src: &Path) -> Result<PathBuf, String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let ask = |args: &[&str]| -> Result<String, String> {
        let out =
            Command::new(&rustc).current_dir(src).args(args).output().map_err(|e| format!("cannot run rustc ({e})"))?;
        Ok(String::from_utf8_lossy(&out.stdout).to_string())
    };
    let sysroot = ask(&["--print", "sysroot"])?;
    let host = ask(&["-vV"])?
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .ok_or("rustc -vV names no host")?;
    let lld = Path::new(sysroot.trim()).join("lib/rustlib").join(host).join("bin/rust-lld");
    if lld.is_file() {
        Ok(lld)
    } else {
        Err(format!("{} is missing: --layouts relinks with the toolchain's rust-lld", lld.display()))
    }
}
