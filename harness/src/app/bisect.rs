//! `harness bisect GOOD BAD`: the first first-parent commit that made one case slower. Each
//! commit is built as `harness ab` builds a baseline (cached per commit), tested by instructions
//! (one callgrind fork) or by a paired A/B run against GOOD, and every finished step is kept in
//! `target/harness/bisect/` so that a rerun resumes.

use crate::bisect::{Mark, Outcome, Search, max_steps, step_alpha};
use crate::cli::{BisectArgs, BisectMetric};
use crate::compare::throughput::{Options, Verdict, compare_sides};
use crate::machine::git;
use crate::report::read::read_report;
use crate::{BadInput, EXIT_NOT_FOUND, EXIT_RANGE};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

/// One commit's test.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    metric: BisectMetric,
    alpha: f64,
    step_alpha: f64,
    threshold_pct: f64,
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
    let case = one_case(args)?;
    let root = PathBuf::from(git(Path::new("."), &["rev-parse", "--show-toplevel"]).map_err(|e| {
        BadInput(format!(
            "harness bisect: the current directory is not in a git repository ({e}): run it from the project's checkout"
        ))
    })?);
    let commits = first_parent_commits(&root, &args.good, &args.bad)?;
    let key = state_key(args, &case, &commits);
    let state_path = root.join("target/harness/bisect").join(format!("{key}.json"));
    let mut b = resume(&state_path).unwrap_or_else(|| Bisection {
        metric: args.metric,
        alpha: args.alpha,
        step_alpha: step_alpha(args.alpha, commits.len()),
        threshold_pct: args.threshold,
        case: case.clone(),
        steps: commits
            .iter()
            .map(|c| Step { commit: c.clone(), subject: subject(&root, c), mark: None, value: None, interval: None })
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
        let mark = test_commit(args, b, i, runs);
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
            ExitCode::from(EXIT_RANGE)
        }
    })
}

/// Tests GOOD and BAD; `Some(exit code)` when the search stops there (no regression to find).
fn test_ends(args: &BisectArgs, b: &mut Bisection, runs: &Path, state: &Path) -> anyhow::Result<Option<ExitCode>> {
    let last = b.steps.len() - 1;
    for i in [0, last] {
        if b.steps[i].value.is_none() {
            let mark = test_commit(args, b, i, runs);
            if let Mark::Skipped(why) = &mark {
                return Err(
                    BadInput(format!("harness bisect: {} cannot be tested: {why}", end_name(args, i == 0))).into()
                );
            }
            if i == last && mark != Mark::Bad {
                b.steps[i].mark = Some(mark);
                b.outcome = Some(Answer::NoRegression);
                save(state, b)?;
                return Ok(Some(ExitCode::from(EXIT_NOT_FOUND)));
            }
            b.steps[i].mark = Some(if i == 0 { Mark::Good } else { Mark::Bad });
            save(state, b)?;
        }
    }
    Ok(None)
}

fn end_name(args: &BisectArgs, good: bool) -> String {
    if good { format!("GOOD ({})", args.good) } else { format!("BAD ({})", args.bad) }
}

/// Tests commit `i` against GOOD: builds it (as `ab` builds a baseline) and runs the case.
fn test_commit(args: &BisectArgs, b: &mut Bisection, i: usize, runs: &Path) -> Mark {
    let binary = match crate::ab::prepare(&b.steps[i].commit, args.quiet) {
        Ok(build) => build.binary,
        Err(e) => return Mark::Skipped(format!("it does not build: {e}")),
    };
    let out = runs.join(format!("{}.json", short(&b.steps[i].commit)));
    let verdict = match args.metric {
        BisectMetric::Instructions => count_instructions(args, &binary, &out).map(|per_op| {
            b.steps[i].value = Some(per_op);
            let good = b.steps[0].value.unwrap_or(per_op);
            if per_op > good * (1.0 + args.threshold / 100.0) { Mark::Bad } else { Mark::Good }
        }),
        BisectMetric::Throughput if i == 0 => Ok(Mark::Good),
        BisectMetric::Throughput => {
            let good = match crate::ab::prepare(&b.steps[0].commit, true) {
                Ok(build) => build.binary,
                Err(e) => return Mark::Skipped(format!("GOOD does not build: {e}")),
            };
            ab_against_good(args, b.step_alpha, (&binary, &good), &out).map(|(mark, ratio, interval)| {
                b.steps[i].value = Some(ratio);
                b.steps[i].interval = Some(interval);
                mark
            })
        }
    };
    verdict.unwrap_or_else(Mark::Skipped)
}

/// `harness run` of `binary` with the case and `extra` flags into `out`; its report.
fn run_case(args: &BisectArgs, binary: &Path, extra: &[String], out: &Path) -> Result<crate::report::Report, String> {
    let mut cmd = std::process::Command::new(binary);
    cmd.arg("run").args(&args.select.config);
    for f in &args.select.filter {
        cmd.args(["-f", f]);
    }
    for p in &args.select.params {
        cmd.args(["-p", p]);
    }
    if args.select.hidden {
        cmd.arg("--hidden");
    }
    cmd.args(["--redis-url", &args.select.redis_url, "--database-url", &args.database_url, "--quiet", "--out"]);
    cmd.arg(out).args(extra).stdin(std::process::Stdio::null());
    let done = cmd.output().map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
    if !done.status.success() {
        let stderr = crate::redact(&String::from_utf8_lossy(&done.stderr));
        return Err(format!("its case failed ({}): {}", done.status, stderr.lines().last().unwrap_or("").trim()));
    }
    read_report(out, "the step's").map_err(|e| e.0)
}

/// Instructions per op of the case in `binary`'s build.
fn count_instructions(args: &BisectArgs, binary: &Path, out: &Path) -> Result<f64, String> {
    let flags = ["--instructions", "--forks", "1", "--iterations", "1", "--time", "1ms", "--warmup", "0"];
    let report = run_case(args, binary, &flags.map(String::from), out)?;
    let b = report.benchmarks.first().ok_or("its run measured no case")?;
    b.instructions.as_ref().map(|i| i.median()).ok_or_else(|| "its instruction fork failed".into())
}

/// A paired A/B run of `builds.0` against GOOD's `builds.1` until decided at `alpha`.
fn ab_against_good(
    args: &BisectArgs,
    alpha: f64,
    builds: (&Path, &Path),
    out: &Path,
) -> Result<(Mark, f64, (f64, f64)), String> {
    let flags = [
        "--forks".to_string(),
        "auto".into(),
        "--max-forks".into(),
        args.max_forks.to_string(),
        "--alpha".into(),
        alpha.to_string(),
        "--noise-band".into(),
        args.threshold.to_string(),
        "--layout-check".into(),
        "off".into(),
        "--baseline-bin".into(),
        builds.1.display().to_string(),
    ];
    let report = run_case(args, builds.0, &flags, out)?;
    let options = Options { noise_band_pct: args.threshold, alpha };
    let row = compare_sides(&report, options).rows.into_iter().next().ok_or("its A/B run compared no case")?;
    let test = row.test.ok_or("its A/B run has too few fork pairs to test")?;
    let mark = match row.verdict {
        Verdict::Slower | Verdict::SlowerSameInstructions => Mark::Bad,
        Verdict::WithinBand | Verdict::Faster | Verdict::FasterSameInstructions => Mark::Good,
        _ => Mark::Undecided,
    };
    Ok((mark, test.ratio, (test.lower, test.upper)))
}

/// The one case the selection names, refused unless it is exactly one.
fn one_case(args: &BisectArgs) -> Result<String, BadInput> {
    let cases = super::select(&args.select)?.cases;
    match cases.as_slice() {
        [case] => Ok(case.id().to_string()),
        _ => Err(BadInput(format!(
            "harness bisect follows one case and the selection has {}: narrow it with -f '^group/name$' and one value per -p",
            cases.len()
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
    (case, args.metric.name(), args.alpha.to_bits(), args.threshold.to_bits(), args.max_forks).hash(&mut h);
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
        show!("{}", render(b));
    }
    Ok(code)
}

/// The search for people: the tested commits, then the answer.
fn render(b: &Bisection) -> String {
    let instructions = b.metric == BisectMetric::Instructions;
    let shown = |s: &Step| match (s.value, s.interval) {
        (Some(v), _) if instructions => format!("{} instructions/op", crate::format::si(v)),
        (Some(r), Some((lo, hi))) => format!("{r:.3}x GOOD [{lo:.3}, {hi:.3}]"),
        _ => "-".into(),
    };
    let mark = |m: &Option<Mark>| match m {
        Some(Mark::Good) => "good".to_string(),
        Some(Mark::Bad) => "bad".into(),
        Some(Mark::Undecided) => "undecided".into(),
        Some(Mark::Skipped(why)) => format!("skipped: {why}"),
        None => String::new(),
    };
    let mut rows = vec![vec!["commit".to_string(), "subject".into(), b.metric.name().into(), "step".into()]];
    for s in b.steps.iter().filter(|s| s.mark.is_some()) {
        rows.push(vec![short(&s.commit).into(), s.subject.chars().take(60).collect(), shown(s), mark(&s.mark)]);
    }
    let how = if instructions {
        format!(
            "a commit is bad past +{}% instructions per op over GOOD (counts of deterministic workloads are exact: no step can err by noise)",
            b.threshold_pct
        )
    } else {
        format!(
            "at most {:.0}% chance of a wrong answer (each of its tests at {:.4}: alpha over ⌈log2 n⌉ + 1 tests)",
            b.alpha * 100.0,
            b.step_alpha
        )
    };
    let mut out = format!("harness bisect: {} by {}: {how}\n\n", b.case, b.metric.name());
    out.push_str(&crate::format::table(&rows, |_| false));
    out.push('\n');
    out.push_str(&answer(b, &shown));
    out
}

/// The answer line(s): the first bad commit with its effect, the range left, or no regression.
fn answer(b: &Bisection, shown: &dyn Fn(&Step) -> String) -> String {
    let (good, bad) = (&b.steps[0], &b.steps[b.steps.len() - 1]);
    match b.outcome {
        Some(Answer::NoRegression) => format!(
            "no regression found: BAD ({}) is not slower than GOOD ({}) beyond {}%: {} against {}\n",
            short(&bad.commit),
            short(&good.commit),
            b.threshold_pct,
            shown(bad),
            shown(good)
        ),
        Some(Answer::Found) => {
            let i = b.steps.iter().position(|s| s.commit == b.first_bad[0]).unwrap_or(0);
            let before = b.steps[..i].iter().rev().find(|s| s.mark == Some(Mark::Good)).unwrap_or(good);
            let found = &b.steps[i];
            let mut text = format!(
                "first bad commit: {} {}\n  {} against {} at its last good ancestor {}\n",
                found.commit,
                found.subject,
                shown(found),
                shown(before),
                short(&before.commit)
            );
            text.push_str(&in_steps(b, before, found));
            text
        }
        _ => {
            let names: Vec<String> = b.first_bad.iter().map(|c| short(c).to_string()).collect();
            format!(
                "undecided: the first bad commit is one of {} (skipped or undecided between); test them by hand or rerun with a larger --max-forks\n",
                names.join(", ")
            )
        }
    }
}

/// Says so when the found commit carries much less than the whole GOOD-to-BAD change.
fn in_steps(b: &Bisection, before: &Step, found: &Step) -> String {
    let (good, bad) = (&b.steps[0], &b.steps[b.steps.len() - 1]);
    let level = |s: &Step| if b.metric == BisectMetric::Instructions { s.value } else { s.value.map(|r| 1.0 / r) };
    let (Some(g), Some(x), Some(y), Some(z)) = (level(good), level(before), level(found), level(bad)) else {
        return String::new();
    };
    let (step, whole) = ((y / x).ln(), (z / g).ln());
    if whole > 0.0 && step < 0.5 * whole {
        let others: Vec<&str> = b
            .steps
            .iter()
            .filter(|s| s.mark == Some(Mark::Bad) && s.commit != found.commit)
            .map(|s| short(&s.commit))
            .collect();
        return format!(
            "  the regression came in steps: this commit carries {:+.1}% of GOOD to BAD's {:+.1}%; the other bad commits tested: {}\n",
            100.0 * (step.exp() - 1.0),
            100.0 * (whole.exp() - 1.0),
            if others.is_empty() { "none".into() } else { others.join(", ") }
        );
    }
    String::new()
}
