//! `harness history run FROM..TO`: each first-parent commit of the range built as `ab` builds a
//! baseline (cached per commit), run by its own harness with the same flags, its report kept in
//! `target/harness/history-runs/` and stored. A commit whose report is there and complete is
//! stored again (once, by its run id) and not run; a commit that does not build, or whose harness
//! lacks a flag the run needs, is skipped and said. Run again after an interruption, it resumes.

use crate::ab::Home;
use crate::child::{ChildError, ChildRun, Counting, Selection, Timing};
use crate::cli::HistoryRunArgs;
use crate::error::{BadInput, Exit};
use crate::history::store::{Added, Location, Store};
use crate::machine::git;
use crate::report::{Report, RunStatus};
use std::path::Path;
use std::process::ExitCode;

/// What became of one commit.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    /// Run now and stored; with what its run said when some of it failed.
    Ran(Option<String>),
    /// Its report was kept from an earlier call: stored (or already stored), not run.
    Kept,
    /// Not run, and why.
    Skipped(String),
}

/// Runs every commit of the range that has no complete report yet, and stores each report.
pub(super) fn run(location: &Location, args: &HistoryRunArgs) -> anyhow::Result<ExitCode> {
    let home = Home::of_current_checkout("harness history run")?;
    let commits = range(home.root(), &args.range)?;
    let reports = args.reports.clone().unwrap_or_else(|| home.history_runs());
    std::fs::create_dir_all(&reports).map_err(|e| {
        BadInput(format!("--reports {}: cannot create it ({e}): give a writable directory", reports.display()))
    })?;
    let mut store = Store::open(location)?;
    let settings = settings_tag(args);
    let mut outcomes = vec![];
    for (i, commit) in commits.iter().enumerate() {
        let short = &commit[..12.min(commit.len())];
        let out = reports.join(format!("{short}-{settings}.json"));
        let outcome = one_commit(args, home.root(), commit, &out, &mut store)?;
        let said = match &outcome {
            Outcome::Ran(None) => format!("ran and stored as {}", out.display()),
            Outcome::Ran(Some(failed)) => format!("stored what it measured as {} ({failed})", out.display()),
            Outcome::Kept => format!("its report {} was complete: stored, not run again", out.display()),
            Outcome::Skipped(why) => format!("skipped: {why}"),
        };
        if crate::interrupt::requested() {
            anyhow::bail!(
                "harness history run: interrupted (Ctrl-C / SIGTERM) at {short}; what was stored is kept, and the next call resumes from there"
            );
        }
        say!("[{}/{}] {short} {}: {said}", i + 1, commits.len(), subject(home.root(), commit));
        outcomes.push(outcome);
    }
    let count = |f: fn(&Outcome) -> bool| outcomes.iter().filter(|o| f(o)).count();
    let (ran, kept) = (count(|o| matches!(o, Outcome::Ran(_))), count(|o| *o == Outcome::Kept));
    let skipped = outcomes.len() - ran - kept;
    show!(
        "{} commit(s) of {}: {ran} run, {kept} kept from an earlier call, {skipped} skipped; {location} holds {} runs\n",
        outcomes.len(),
        args.range,
        store.run_count()?
    );
    if ran + kept == 0 {
        say!("error: no commit of {} could be run: see the reasons above", args.range);
        return Ok(ExitCode::from(Exit::Failed.code()));
    }
    Ok(ExitCode::SUCCESS)
}

/// Builds and runs `commit` into `out` unless `out` holds its complete report already, then
/// stores the report. A store that fails is an error; a commit that fails is skipped.
fn one_commit(
    args: &HistoryRunArgs,
    root: &Path,
    commit: &str,
    out: &Path,
    store: &mut Store,
) -> anyhow::Result<Outcome> {
    let (report, outcome) = match complete_report(out) {
        Some(report) => (report, Outcome::Kept),
        None => match build_and_run(args, commit, out) {
            Ok(report) => (report, Outcome::Ran(None)),
            // A run with failed forks still reports what the rest measured: nothing is lost.
            Err(why) => match complete_report(out) {
                Some(report) => (report, Outcome::Ran(Some(why))),
                None => return Ok(Outcome::Skipped(why)),
            },
        },
    };
    let shown = out.display().to_string();
    let facts = |c: &str| super::commit_facts(root, c);
    let (run, points) = crate::history::ingest::ingest(&report, &shown, facts)?;
    match store.add(&run, &points, &shown)? {
        Added::New(_) | Added::Already => Ok(outcome),
    }
}

/// The report at `out` when it is there, readable and complete.
fn complete_report(out: &Path) -> Option<Report> {
    let report = crate::report::read::read_report(out, "a kept").ok()?;
    (report.status == RunStatus::Complete).then_some(report)
}

/// The commit's harness, built or reused, run with the flags of `args`; why not, in words.
fn build_and_run(args: &HistoryRunArgs, commit: &str, out: &Path) -> Result<Report, String> {
    let built = crate::ab::prepare(commit, args.quiet).map_err(|e| format!("it does not build: {}", e.0))?;
    match child_run(args, &built.binary, out, commit).run() {
        Ok(report) => Ok(report),
        Err(e @ ChildError::TooOld { .. }) => Err(e.to_string()),
        Err(e) => Err(format!("its run failed: {e}")),
    }
}

/// The `harness run` of `binary` that `args` asks for.
fn child_run(args: &HistoryRunArgs, binary: &Path, out: &Path, commit: &str) -> ChildRun {
    let s = &args.select;
    let select =
        Selection { configs: s.config.clone(), filters: s.filter.clone(), params: s.params.clone(), hidden: s.hidden };
    let what = format!("the run of commit {}", &commit[..12.min(commit.len())]);
    let mut run = ChildRun::new(binary, select, (&args.database_url, &s.redis_url), out, what);
    run.counting = match (args.instructions, args.io) {
        (true, true) => Counting::InstructionsAndIo,
        (true, false) => Counting::Instructions { ops: None, cache_sim: false, keep: None },
        (false, true) => Counting::Io,
        (false, false) => Counting::None,
    };
    run.timing = Timing {
        forks: args.forks,
        warmup: args.warmup,
        iterations: args.iterations,
        time: args.time,
        warmup_time: args.warmup_time,
        threads: None,
        rate: None,
    };
    run
}

/// A short tag of the flags that change a run's numbers (not the servers' URLs, which may hold
/// secrets), so that a call with other flags keeps its reports apart: FNV-1a of the command line.
fn settings_tag(args: &HistoryRunArgs) -> String {
    let run = child_run(args, Path::new("harness"), Path::new("out.json"), "");
    let line: Vec<String> = run.settings_argv().iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in line.join("\u{1f}").bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:08x}", hash >> 32)
}

/// The first-parent commits of `FROM..TO`, oldest first, as git reads the range.
fn range(root: &Path, text: &str) -> Result<Vec<String>, BadInput> {
    let bad = |why: String| BadInput(format!("harness history run {text}: {why}"));
    let Some((from, to)) = text.split_once("..").filter(|(_, to)| !to.starts_with('.')) else {
        return Err(bad("not a range: give FROM..TO (FROM~1..TO to include FROM)".into()));
    };
    let resolve = |rev: &str, what: &str| {
        let rev = if rev.is_empty() { "HEAD" } else { rev };
        git(root, &["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")])
            .map_err(|_| bad(format!("{what} '{rev}' is not a commit here: give a branch, tag or commit")))
    };
    let (f, t) = (resolve(from, "FROM")?, resolve(to, "TO")?);
    let list = git(root, &["rev-list", "--first-parent", "--reverse", &format!("{f}..{t}")])
        .map_err(|e| bad(format!("git rev-list failed: {e}")))?;
    let commits: Vec<String> = list.lines().map(String::from).collect();
    if commits.is_empty() {
        return Err(bad(format!(
            "no commit is after {from} up to {to}: give the older commit first (FROM~1..TO includes FROM)"
        )));
    }
    Ok(commits)
}

fn subject(root: &Path, commit: &str) -> String {
    git(root, &["log", "-1", "--format=%s", commit]).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_needs_two_dots_and_commits_git_knows() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        for (text, says) in [
            ("HEAD", "not a range"),
            ("HEAD...HEAD", "not a range"),
            ("nosuchref..HEAD", "FROM 'nosuchref' is not a commit"),
            ("HEAD..nosuchref", "TO 'nosuchref' is not a commit"),
            ("HEAD..HEAD", "no commit is after"),
        ] {
            let err = range(here, text).unwrap_err().0;
            assert!(err.contains(says), "{text}: {err}");
        }
    }
}
