//! Where builds and searches keep their files: every directory under `target/harness/` of the
//! checkout that `ab`, `--layouts` and `bisect` use is named here and nowhere else.

use crate::error::BadInput;
use crate::machine::git;
use std::path::{Path, PathBuf};

/// The checkout a command builds from, and its `target/harness/` directories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Home {
    root: PathBuf,
}

impl Home {
    /// The git checkout of the current directory; `command` (`harness ab main`) leads the error.
    pub(crate) fn of_current_checkout(command: &str) -> Result<Home, BadInput> {
        let root = git(Path::new("."), &["rev-parse", "--show-toplevel"]).map_err(|e| {
            BadInput(format!(
                "{command}: the current directory is not in a git repository ({e}): run it from the project's checkout"
            ))
        })?;
        Ok(Home { root: PathBuf::from(root) })
    }

    /// The checkout's top directory: the candidate's source.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Where the checkout's own build keeps its dependencies: `CARGO_TARGET_DIR` (relative to
    /// the checkout) when set, else `target/`. The first baseline build starts from them.
    pub(crate) fn checkout_target(&self) -> PathBuf {
        match std::env::var_os("CARGO_TARGET_DIR").filter(|v| !v.is_empty()) {
            Some(dir) => self.root.join(dir),
            None => self.root.join("target"),
        }
    }

    /// `target/harness/baselines/`: one directory a commit.
    fn baselines(&self) -> PathBuf {
        self.root.join("target/harness/baselines")
    }

    /// `target/harness/baselines/<commit>/`: a commit's worktree (`src/`), binary and links.
    pub(crate) fn baseline(&self, commit: &str) -> PathBuf {
        self.baselines().join(commit)
    }

    /// `target/harness/baselines/target/`: the target directory every baseline build shares.
    pub(crate) fn baselines_target(&self) -> PathBuf {
        self.baselines().join("target")
    }

    /// `target/harness/layouts/`: the working tree's relinkable build, in a target of its own.
    pub(crate) fn candidate_layouts(&self) -> PathBuf {
        self.root.join("target/harness/layouts")
    }

    /// `target/harness/history-runs/`: the reports of `history run`, one a commit and settings.
    pub(crate) fn history_runs(&self) -> PathBuf {
        self.root.join("target/harness/history-runs")
    }

    /// `target/harness/bisect/`: each search's state and its steps' runs.
    pub(crate) fn bisections(&self) -> PathBuf {
        self.root.join("target/harness/bisect")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_directory_is_under_target_harness_of_the_checkout() {
        let home = Home { root: PathBuf::from("/w") };
        assert_eq!(home.baseline("abc"), Path::new("/w/target/harness/baselines/abc"));
        assert_eq!(home.baselines_target(), Path::new("/w/target/harness/baselines/target"));
        assert_eq!(home.candidate_layouts(), Path::new("/w/target/harness/layouts"));
        assert_eq!(home.bisections(), Path::new("/w/target/harness/bisect"));
        assert_eq!(home.history_runs(), Path::new("/w/target/harness/history-runs"));
    }
}
