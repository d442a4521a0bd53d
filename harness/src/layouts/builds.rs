//! The two relinkable builds `--layouts` needs, made one way for `ab`, `bisect` and `history
//! confirm`: a commit's (once, in its worktree, kept) and the working tree's (in a target of its
//! own).

use super::{Rebuild, Relinkable, relinkable};
use crate::ab::{BaselineRev, Home};
use crate::error::BadInput;

/// A commit's build made relinkable: linked once in its worktree, into the target every
/// baseline shares, and kept (a commit never changes); `who` names it in errors.
pub(crate) fn of_commit(build: &BaselineRev, who: &str, quiet: bool) -> Result<Relinkable, BadInput> {
    let target = build.home.baselines_target();
    relinkable(&build.dir.join("src"), &target, &build.dir.join("layouts"), who, Rebuild::Never, quiet)
}

/// A commit's harness, built (or reused) as `ab` builds a baseline; with `layouts`, also made
/// relinkable, its link kept beside it as `harness.link.tar` (as `run --layouts` wants).
pub(crate) fn commit_binary(commit: &str, layouts: bool, quiet: bool) -> Result<std::path::PathBuf, String> {
    let short = &commit[..commit.len().min(12)];
    let built = crate::ab::prepare(commit, quiet).map_err(|e| e.0)?;
    if layouts {
        let beside = built.dir.join("harness.link.tar");
        if !beside.is_file() {
            of_commit(&built, &format!("commit {short}"), quiet).map_err(|e| e.0)?;
            std::fs::copy(built.dir.join("layouts/link.tar"), &beside)
                .map_err(|e| format!("cannot keep its link as {}: {e}", beside.display()))?;
        }
    }
    Ok(built.binary)
}

/// The working tree's build made relinkable, in a target directory of its own (cargo gives two
/// checkouts of one workspace the same artifact names, so sharing the baselines' would rebuild
/// both every time), which starts from the dependencies the baselines' builds made.
pub(crate) fn of_working_tree(home: &Home, quiet: bool) -> Result<Relinkable, BadInput> {
    let layouts = home.candidate_layouts();
    let (from, target) = (home.baselines_target(), layouts.join("target"));
    match crate::ab::seed::seed_target(&from, &target, crate::machine::build_profile(), home.root()) {
        Ok(true) if !quiet => {
            say!("harness ab: {} starts from the dependencies built in {}", target.display(), from.display());
        }
        Ok(_) => {}
        Err(e) => say!("warning: {e}; the candidate's build compiles them itself"),
    }
    let who = "this build (the working tree)";
    relinkable(home.root(), &target, &layouts.join("current"), who, Rebuild::WhenChanged, quiet)
}
