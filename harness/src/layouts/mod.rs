//! Code-layout variants of a harness build (`harness ab REF --layouts K`).
//!
//! A variant is the same build relinked with its functions in another order: lld's
//! `--symbol-ordering-file` places every function (rustc and the cc crate put each in a section
//! of its own) in the order [`order::ordering`] gives for the variant's seed, so the variants run
//! the same instructions with the code at other addresses and alignments. The order comes from
//! the functions' names without rustc's hashes, so variant *i* of two builds lays out the code
//! they share alike: a fork pair compares the change at one layout, not two layouts' luck. A
//! variant costs a link, not a build: the build that makes a side's binary once also asks lld for
//! `--reproduce=link.tar` (every input of the final link and a response file), which is unpacked
//! once; a plain relink of it gives the functions' names, and each seed then reruns that link
//! (about 0.2 s for this harness on a 2-core VM) with its order and `--strip-debug` (a timed fork
//! needs no line tables). Variants are made when a fork pair first needs one and kept beside the
//! tar, like the baselines, until the build changes. `run --baseline-bin B --layouts K` takes the
//! links a user built (`B.link.tar` beside each binary); `harness ab` builds them itself.

pub(crate) mod builds;
pub(crate) mod order;

use crate::error::BadInput;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What went wrong making a build relinkable or a variant of it, naming the file or the tool.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LayoutError {
    /// A file or directory of the link could not be read or written.
    #[error("cannot {action} {path}: {error}")]
    File {
        /// `read`, `write`, `unpack`…
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A tool could not be started.
    #[error("cannot run {tool} ({error})")]
    Tool {
        /// rust-lld or rustc.
        tool: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The linker refused a relink.
    #[error("relinking {what} failed: {stderr}")]
    Link {
        /// `layout variant 3`, `the build as it was`.
        what: String,
        /// The linker's own words.
        stderr: String,
    },
    /// The unpacked link has no response file: not a tar lld's `--reproduce` wrote.
    #[error("{0} holds no response.txt: it is not a link lld's --reproduce wrote; remove it and build again")]
    NoResponse(PathBuf),
    /// The toolchain ships no rust-lld, or rustc does not say its host.
    #[error(
        "{0}: --layouts relinks with the rust-lld of the toolchain that builds (rustup's stable toolchains ship it on x86_64 Linux); build with such a toolchain or drop --layouts"
    )]
    NoLld(String),
    /// The plain relink's functions could not be read.
    #[error("{0}")]
    Functions(String),
}

impl LayoutError {
    /// A file error of `action` on `path`.
    fn file(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> LayoutError {
        let path = path.to_path_buf();
        move |error| LayoutError::File { action, path, error }
    }
}

/// The relinkable build of one side, and where its variants go.
#[derive(Debug, Clone)]
pub(crate) struct Relinkable {
    /// The unpacked link (holding `response.txt`), run from there (`--chroot .`).
    link_dir: PathBuf,
    /// Where the variants are kept (`ordered-<seed>`, beside the `plain` relink).
    dir: PathBuf,
    /// rust-lld of the toolchain that built it.
    lld: PathBuf,
    /// The functions of the plain relink, read once for every variant of this build.
    functions: std::sync::OnceLock<Vec<order::Function>>,
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
    /// The variant (order seed, 1-based) fork pair `pair` runs on both sides.
    pub(crate) fn seed(&self, pair: u32) -> u32 {
        pair % self.count + 1
    }
}

impl Relinkable {
    /// The binary of variant `seed`, linked now if it is not kept yet.
    pub(crate) fn variant(&self, seed: u32) -> Result<PathBuf, LayoutError> {
        let out = self.dir.join(format!("ordered-{seed}"));
        if out.is_file() {
            return Ok(out);
        }
        let functions = self.functions()?;
        // Inside the link's directory and named relatively: the response file may say
        // `--chroot .`, under which lld reads an absolute path from inside that directory.
        let order_file = format!("order-{seed}.txt");
        let order_path = self.link_dir.join(&order_file);
        std::fs::write(&order_path, order::ordering(functions, seed))
            .map_err(LayoutError::file("write", &order_path))?;
        let ordered = [format!("--symbol-ordering-file={order_file}"), "--no-warn-symbol-ordering".into()];
        let linked = self.link(&format!("layout variant {seed}"), &ordered, &out);
        let _ = std::fs::remove_file(&order_path);
        linked.map(|()| out)
    }

    /// The functions of the plain relink, read on the first variant this call makes.
    fn functions(&self) -> Result<&[order::Function], LayoutError> {
        if let Some(read) = self.functions.get() {
            return Ok(read);
        }
        let read = order::functions(&self.plain()?).map_err(LayoutError::Functions)?;
        Ok(self.functions.get_or_init(|| read))
    }

    /// The build relinked as it was (kept): where the functions' names are read.
    fn plain(&self) -> Result<PathBuf, LayoutError> {
        let out = self.dir.join("plain");
        if !out.is_file() {
            self.link("the build as it was", &[], &out)?;
        }
        Ok(out)
    }

    /// Reruns the link (of `what`) with `extra` arguments into `out` (written aside, then renamed).
    fn link(&self, what: &str, extra: &[String], out: &Path) -> Result<(), LayoutError> {
        let mut partial = out.as_os_str().to_owned();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        let output = Command::new(&self.lld)
            .current_dir(&self.link_dir)
            .args(["-flavor", "gnu", "@response.txt", "--strip-debug"])
            .args(extra)
            .arg("-o")
            .arg(&partial)
            .output()
            .map_err(|error| LayoutError::Tool { tool: self.lld.clone(), error })?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
            return Err(LayoutError::Link { what: what.into(), stderr });
        }
        std::fs::rename(&partial, out).map_err(LayoutError::file("keep", out))
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
    from_tar(&tar, home, src).map_err(|e| failed(e.to_string()))
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
fn from_tar(tar: &Path, home: &Path, src: &Path) -> Result<Relinkable, LayoutError> {
    let link_dir = unpack(tar, home)?;
    Ok(Relinkable { link_dir, dir: home.to_path_buf(), lld: find_lld(src)?, functions: std::sync::OnceLock::new() })
}

/// Unpacks `tar` into `home/link` unless the unpacked copy is of this very tar (its size and
/// time in `home/link.stamp`); a new tar also drops the variants of the old one (and those of a harness that shuffled sections).
fn unpack(tar: &Path, home: &Path) -> Result<PathBuf, LayoutError> {
    let meta = std::fs::metadata(tar).map_err(LayoutError::file("read", tar))?;
    let stamp = format!("{} {:?}", meta.len(), meta.modified().ok());
    let (unpacked, stamp_file) = (home.join("link"), home.join("link.stamp"));
    let root = |dir: &Path| -> Result<PathBuf, LayoutError> {
        // lld writes the tar with one top directory, named after the tar.
        std::fs::read_dir(dir)
            .map_err(LayoutError::file("read", dir))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.join("response.txt").is_file())
            .ok_or_else(|| LayoutError::NoResponse(dir.to_path_buf()))
    };
    if std::fs::read_to_string(&stamp_file).is_ok_and(|s| s == stamp) {
        return root(&unpacked);
    }
    let _ = std::fs::remove_dir_all(&unpacked);
    for entry in std::fs::read_dir(home).map_err(LayoutError::file("read", home))?.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().to_string();
        if name.starts_with("variant-") || name.starts_with("ordered-") || name == "plain" {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    let file = std::fs::File::open(tar).map_err(LayoutError::file("open", tar))?;
    tar::Archive::new(file).unpack(&unpacked).map_err(LayoutError::file("unpack", tar))?;
    std::fs::write(&stamp_file, stamp).map_err(LayoutError::file("write", &stamp_file))?;
    root(&unpacked)
}

/// rust-lld of the toolchain that builds in `src` (its sysroot, for its host).
fn find_lld(src: &Path) -> Result<PathBuf, LayoutError> {
    let rustc = PathBuf::from(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()));
    let ask = |args: &[&str]| -> Result<String, LayoutError> {
        let out = Command::new(&rustc)
            .current_dir(src)
            .args(args)
            .output()
            .map_err(|error| LayoutError::Tool { tool: rustc.clone(), error })?;
        Ok(String::from_utf8_lossy(&out.stdout).to_string())
    };
    let sysroot = ask(&["--print", "sysroot"])?;
    let host = ask(&["-vV"])?
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .ok_or_else(|| LayoutError::NoLld(format!("{} -vV names no host", rustc.display())))?;
    let lld = Path::new(sysroot.trim()).join("lib/rustlib").join(host).join("bin/rust-lld");
    if lld.is_file() { Ok(lld) } else { Err(LayoutError::NoLld(format!("{} is missing", lld.display()))) }
}
