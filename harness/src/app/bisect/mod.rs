//! `harness bisect GOOD BAD`: the first first-parent commit that made one case slower. Each
//! commit is built as `harness ab` builds a baseline (cached per commit), tested by instructions
//! (one callgrind fork), by I/O counts (one I/O fork) or by a paired A/B run against GOOD, and
//! every finished step is kept in `target/harness/bisect/` so that a rerun resumes.

mod render;
mod step;

use crate::bisect::{Mark, Outcome, Search, max_steps, step_alpha};
use crate::cli::BisectArgs;
use crate::error::{BadInput, Exit};
use crate::machine::git;
use crate::metric::Metric;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

/// One commit's test.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Step {
    /// The commit.
    commit: String,
    /// Its subject line.
    subject: String,
    /// What the test said.
    mark: Option<Mark>,
    /// Instructions per op, or this commit's ops/s over GOOD's.
    value: Option<f64>,
    /// Throughput: the interval of that ratio.
    interval: Option<(f64, f64)>,
    /// I/O: the counts per op in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
    /// I/O: what changed against GOOD, in words (as `compare --metric io` says it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    changes: Vec<String>,
}

/// How a search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer {
    /// The first bad commit.
    Found,
    /// BAD is not slower than GOOD: nothing to find.
    NoRegression,
    /// The first bad commit is one of a range (skipped or undecided commits between).
    Range,
}

/// The search as `--json` prints it and the resume file keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Bisection {
    metric: Metric,
    alpha: f64,
    step_alpha: f64,
    threshold_pct: f64,
    /// The search is for the first commit that made the case faster.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    faster: bool,
    /// Throughput: the layout variants each A/B run spread its pairs over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    layouts: Option<u32>,
    case: String,
    /// GOOD first, BAD last.
    steps: Vec<Step>,
    /// What the search found, once it ended.
    outcome: Option<Answer>,
    /// The first bad commit, or the commits it is one of.
    first_bad: Vec<String>,
}

/// `harness bisect`.
pub(super) fn bisect(args: &BisectArgs) -> anyhow::Result<ExitCode> {
    check_layouts(args)?;
    let case = one_case(args)?;
    let home = crate::ab::Home::of_current_checkout("harness bisect")?;
    let root = home.root();
    let commits = first_parent_commits(root, &args.good, &args.bad)?;
    let key = state_key(args, &case, &commits);
    let state_path = home.bisections().join(format!("{key}.json"));
    let mut b = resume(&state_path).unwrap_or_else(|| Bisection {
        metric: args.metric,
        alpha: args.alpha,
        step_alpha: step_alpha(args.alpha, commits.len()),
        threshold_pct: args.threshold,
        faster: args.faster,
        layouts: args.layouts,
        case: case.clone(),
        steps: commits
            .iter()
            .map(|c| Step { commit: c.clone(), subject: subject(root, c), ..Step::default() })
            .collect(),
        outcome: None,
        first_bad: vec![],
    });
    let runs = state_path.with_extension("runs");
    std::fs::create_dir_all(&runs).map_err(|e| BadInput(format!("cannot create {}: {e}", runs.display())))?;
    if let Some(code) = test_ends(args, &mut b, &runs, &state_path)? {
        return finish(args, &mut b, &state_path, code);
    }
    let code = search_between(args, &mut b, &runs, &state_path)?;
    finish(args, &mut b, &state_path, code)
}

/// Tests the commits between GOOD and BAD (those not tested yet) until the search ends; the
/// exit code of its outcome.
fn search_between(args: &BisectArgs, b: &mut Bisection, runs: &Path, state: &Path) -> anyhow::Result<ExitCode> {
    let mut search = Search::new(b.steps.len());
    for (i, s) in b.steps.iter().enumerate() {
        if let Some(m) = &s.mark {
            search.mark(i, m.clone());
        }
    }
    let (started, most) = (Instant::now(), max_steps(b.steps.len()));
    let mut done = 0u32;
    while let Some(i) = search.next() {
        done += 1;
        if !args.quiet {
            let per_step = started.elapsed().as_secs_f64() / f64::from(done.max(2) - 1);
            let left = f64::from(most.saturating_sub(done - 1));
            let eta = if done > 1 {
                format!(", about {} left", crate::format::whole_seconds(per_step * left))
            } else {
                String::new()
            };
            say!(
                "harness bisect: step {done} of at most {most}: {} {}{eta}",
                short(&b.steps[i].commit),
                b.steps[i].subject
            );
        }
        let mark = step::test_commit(args, b, i, runs);
        stop_if_interrupted(state)?;
        b.steps[i].mark = Some(mark.clone());
        search.mark(i, mark);
        save(state, b)?;
    }
    Ok(match search.outcome() {
        Outcome::Found(i) => {
            b.outcome = Some(Answer::Found);
            b.first_bad = vec![b.steps[i].commit.clone()];
            ExitCode::SUCCESS
        }
        Outcome::Range(ids) => {
            b.outcome = Some(Answer::Range);
            b.first_bad = ids.iter().map(|&i| b.steps[i].commit.clone()).collect();
            ExitCode::from(Exit::Range)
        }
    })
}

/// Ends the search when Ctrl-C stopped the step's build or run: its mark (a build "that does
/// not build", a run that failed) would be a lie, so it is not kept, and the next call tests
/// that commit again.
fn stop_if_interrupted(state: &Path) -> anyhow::Result<()> {
    if crate::interrupt::requested() {
        anyhow::bail!(
            "harness bisect: interrupted (Ctrl-C / SIGTERM); the steps decided before it are kept in {}, and the next call resumes from them",
            state.display()
        );
    }
    Ok(())
}

/// Tests GOOD and BAD; `Some(exit code)` when the search stops there (no regression to find).
fn test_ends(args: &BisectArgs, b: &mut Bisection, runs: &Path, state: &Path) -> anyhow::Result<Option<ExitCode>> {
    let last = b.steps.len() - 1;
    for i in [0, last] {
        if b.steps[i].value.is_none() {
            let mark = step::test_commit(args, b, i, runs);
            stop_if_interrupted(state)?;
            if let Mark::Skipped(why) = &mark {
                return Err(
                    BadInput(format!("harness bisect: {} cannot be tested: {why}", end_name(args, i == 0))).into()
                );
            }
            if i == last && mark != Mark::Bad {
                b.steps[i].mark = Some(mark);
                b.outcome = Some(Answer::NoRegression);
                save(state, b)?;
                return Ok(Some(ExitCode::from(Exit::NotFound)));
            }
            b.steps[i].mark = Some(if i == 0 { Mark::Good } else { Mark::Bad });
            save(state, b)?;
        }
    }
    Ok(None)
}

/// `--layouts K` spreads A/B pairs: throughput only, and (with --forks auto) at least one
/// variant per pair of the budget.
fn check_layouts(args: &BisectArgs) -> Result<(), BadInput> {
    if args.metric == Metric::Latency {
        return Err(BadInput(
            "harness bisect --metric latency is not built yet: bisect by throughput, instructions or io, or compare two commits' latency with `harness ab REF --rate OPS`".into(),
        ));
    }
    match args.layouts {
        Some(_) if args.metric != Metric::Throughput => Err(BadInput(format!(
            "harness bisect --layouts spreads the fork pairs of A/B runs over code layouts, and --metric {} runs none: drop --layouts, or use --metric throughput",
            args.metric.name()
        ))),
        Some(k) if k < args.max_forks => Err(BadInput(format!(
            "harness bisect --layouts {k}: every look's pairs must run layouts of their own, so give at least --max-forks ({}) layouts, or lower --max-forks",
            args.max_forks
        ))),
        _ => Ok(()),
    }
}

fn end_name(args: &BisectArgs, good: bool) -> String {
    if good { format!("GOOD ({})", args.good) } else { format!("BAD ({})", args.bad) }
}

/// The one case the selection names, refused unless it is exactly one.
fn one_case(args: &BisectArgs) -> Result<String, BadInput> {
    let cases = super::select(&args.select)?.cases;
    let filters: Vec<String> = args.select.filter.iter().map(|f| format!("-f '{f}'")).collect();
    let chosen = if filters.is_empty() { "no -f".to_string() } else { filters.join(" ") };
    let mut named: Vec<String> = cases.iter().take(3).map(|c| c.id().to_string()).collect();
    if cases.len() > 3 {
        named.push("…".into());
    }
    match cases.as_slice() {
        [case] => Ok(case.id().to_string()),
        _ => Err(BadInput(format!(
            "harness bisect follows one case and {chosen} selects {} ({}): narrow it with -f '^group/name$' and one value per -p",
            cases.len(),
            named.join(", ")
        ))),
    }
}

/// GOOD, then the first-parent commits after it up to BAD, oldest first.
fn first_parent_commits(root: &Path, good: &str, bad: &str) -> Result<Vec<String>, BadInput> {
    let resolve = |rev: &str, what: &str| {
        git(root, &["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")]).map_err(|_| {
            BadInput(format!("harness bisect: {what} '{rev}' is not a commit here: give a branch, tag or commit"))
        })
    };
    let (g, b) = (resolve(good, "GOOD")?, resolve(bad, "BAD")?);
    if git(root, &["merge-base", "--is-ancestor", &g, &b]).is_err() {
        return Err(BadInput(format!(
            "harness bisect: GOOD {good} is not an ancestor of BAD {bad}: give the older commit first"
        )));
    }
    let list = git(root, &["rev-list", "--first-parent", "--reverse", &format!("{g}..{b}")])
        .map_err(|e| BadInput(format!("harness bisect: git rev-list failed: {e}")))?;
    let mut commits = vec![g];
    commits.extend(list.lines().map(String::from));
    if commits.len() < 2 {
        return Err(BadInput(format!("harness bisect: {good} and {bad} are the same commit: give BAD a later one")));
    }
    Ok(commits)
}

fn subject(root: &Path, commit: &str) -> String {
    git(root, &["log", "-1", "--format=%s", commit]).unwrap_or_default()
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// The resume file's name: what the search is over and how it decides.
fn state_key(args: &BisectArgs, case: &str, commits: &[String]) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (case, args.metric.name(), args.alpha.to_bits(), args.threshold.to_bits(), args.max_forks, args.layouts)
        .hash(&mut h);
    format!("{}-{}-{:016x}", short(&commits[0]), short(&commits[commits.len() - 1]), h.finish())
}

fn resume(path: &Path) -> Option<Bisection> {
    let b: Bisection = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    let tested = b.steps.iter().filter(|s| s.mark.is_some()).count();
    say!("harness bisect: resuming {} ({tested} commit(s) tested)", path.display());
    Some(b)
}

fn save(path: &Path, b: &Bisection) -> anyhow::Result<()> {
    crate::report::write::write_bytes_atomic(path, serde_json::to_string_pretty(b)?.as_bytes())
}

/// Prints the steps and the answer; saves the search.
fn finish(args: &BisectArgs, b: &mut Bisection, state: &Path, code: ExitCode) -> anyhow::Result<ExitCode> {
    save(state, b)?;
    if args.json {
        show!("{}\n", serde_json::to_string_pretty(b)?);
    } else {
        show!("{}", render::render(b));
    }
    Ok(code)
}
