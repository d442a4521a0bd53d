//! `harness bisect`: its refusals before anything is built, and one whole search over real builds
//! of a clone with a planted slowdown and an unbuildable commit (the search's logic is tested in
//! `src/bisect.rs`; how often it is right, by throughput too, is `scripts/bisect-trials`).

use crate::common::*;

fn refused(args: &[&str], expected: &str) {
    let out = harness().arg("bisect").args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{args:?}: {stderr}");
    assert!(stderr.lines().next().unwrap_or("").contains(expected), "{args:?}: {stderr}");
}

#[test]
fn bad_ranges_and_selections_are_refused_in_one_line() {
    let case = ["smoke", "-f", "^baseline/busy_loop$", "-p", "work=100", "--metric", "instructions"];
    let with = |good: &'static str, bad: &'static str| [&[good, bad][..], &case[..]].concat();
    refused(&with("HEAD", "HEAD"), "are the same commit");
    refused(&with("no-such-ref-anywhere", "HEAD"), "GOOD 'no-such-ref-anywhere' is not a commit");
    refused(&with("HEAD", "HEAD~1"), "is not an ancestor of BAD");
    refused(&["HEAD~1", "HEAD", "smoke", "-f", "^baseline/"], "follows one case and -f '^baseline/' selects");
    refused(&["HEAD~1", "HEAD", "smoke", "-f", "^baseline/"], "(baseline/");
    refused(&["HEAD~1", "HEAD", "smoke"], "follows one case and no -f selects");
    refused(&["HEAD~1", "HEAD", "smoke", "-f", "^nothing/matches$"], "no workload matches");
    refused(
        &[&["HEAD~1", "HEAD"][..], &case[..], &["--layouts", "30"][..]].concat(),
        "--metric instructions runs none",
    );
    let few = ["HEAD~1", "HEAD", "smoke", "-f", "^baseline/busy_loop$", "-p", "work=100", "--layouts", "4"];
    refused(&few, "give at least --max-forks (30) layouts");
    refused(&["HEAD~1", "HEAD", "smoke", "--metric", "bytes"], "invalid value 'bytes'");
}

/// A clone of this checkout (its HEAD) with commits made by `edits` (file, text to find, its
/// replacement; an empty find appends), each one commit; the commits, GOOD (HEAD) first. Its
/// target starts as hard links to this build's dependencies, from which the bisect's first
/// build copies them as it does from a user's checkout.
fn clone_with_commits(dir: &std::path::Path, edits: &[(&str, &str, &str, &str)]) -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git").current_dir(dir).args(args).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let cloned = std::process::Command::new("git").args(["clone", "-q", "--no-local"]).arg(root).arg(dir).status();
    assert!(cloned.unwrap().success());
    seed_clone_target(dir);
    let mut commits = vec![git(&["rev-parse", "HEAD"])];
    // Every commit after GOOD can have its build held mid-way by the test (SLOW_BUILD_SCRIPT),
    // which comes with the first edit; GOOD stays the checkout's own, whose build is the seed.
    std::fs::write(dir.join("workloads/build.rs"), SLOW_BUILD_SCRIPT).unwrap();
    git(&["add", "workloads/build.rs"]);
    for (file, find, replace, subject) in edits {
        let path = dir.join(file);
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let changed = if find.is_empty() { format!("{text}{replace}") } else { text.replacen(find, replace, 1) };
        assert_ne!(text, changed, "{file}: the edit for '{subject}' changed nothing");
        std::fs::write(&path, changed).unwrap();
        git(&["-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-qam", subject]);
        commits.push(git(&["rev-parse", "HEAD"]));
    }
    commits
}

/// The whole search over real builds (debug, as this test's harness is): GOOD, a commit that does
/// not build, its fix, a busy loop 5% slower (BAD). By instructions it names the planted commit
/// and the unbuildable one it skipped on the way (the first midpoint); a second bisect resumes
/// from the first and builds nothing; GOOD to the fix has no regression (exit 4), and by
/// allocations neither has BAD. Three builds.
#[test]
fn finds_the_planted_commit_past_one_that_does_not_build() {
    let tmp = tempfile::tempdir().unwrap();
    let broken = "compile_error!(\"planted: this commit does not build\");\n";
    let c = clone_with_commits(
        tmp.path(),
        &[
            ("workloads/src/lib.rs", "", broken, "broken: does not build"),
            ("workloads/src/lib.rs", broken, "", "fix the build"),
            ("workloads/src/baseline.rs", "} else {\n    0\n};", "} else {\n    5\n};", "plant: busy loop 5% slower"),
        ],
    );
    let case = ["main", "-f", "^baseline/busy_loop$", "-p", "work=1000", "--metric", "instructions"];
    let bisect_with = |good: &str, bad: &str, more: &[&str]| {
        harness().current_dir(tmp.path()).args(["bisect", good, bad]).args(case).args(more).output().unwrap()
    };
    let bisect = |good: &str, bad: &str, json: bool| bisect_with(good, bad, if json { &["--json"] } else { &[] });
    // Ctrl-C during BAD's build (GOOD's is the seed's): exit 130 within seconds, cargo stopped,
    // BAD not marked; the search below resumes it.
    let mut interrupted = vec!["bisect", &c[0], &c[3]];
    interrupted.extend(case);
    let (status, err) = interrupt_during_build(tmp.path(), &interrupted);
    assert_eq!(status.code(), Some(130), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(last.contains("interrupted") && last.contains("the next call resumes"), "{err}");
    assert!(!err.contains("does not build"), "an interrupted build is not called broken: {err}");
    assert_nothing_runs_in(&tmp.path().join("target/harness/baselines"));
    let out = bisect(&c[0], &c[3], true);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 0, "{stderr}");
    let search: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(search["outcome"], "found");
    assert_eq!(search["first_bad"][0].as_str(), Some(c[3].as_str()), "{search:#}");
    let skipped = &search["steps"][1]["mark"]["skipped"];
    assert!(skipped.as_str().is_some_and(|why| why.contains("does not build")), "{search:#}");
    let again = bisect(&c[0], &c[3], false);
    let (text, stderr) = (String::from_utf8_lossy(&again.stdout), String::from_utf8_lossy(&again.stderr));
    assert_eq!(code(&again), 0, "{stderr}");
    assert!(stderr.contains("resuming") && !stderr.contains("building"), "{stderr}");
    assert!(text.contains(&format!("first bad commit: {} plant: busy loop 5% slower", c[3])), "{text}");
    assert!(text.contains("skipped: it does not build"), "{text}");
    // A new search (another threshold) builds the unbuildable commit again, in the worktree its
    // failed build left, after other commits' builds: it must fail again, not pass one of theirs off.
    let anew = bisect_with(&c[0], &c[3], &["--threshold", "2", "--json"]);
    let search: serde_json::Value = serde_json::from_slice(&anew.stdout).unwrap();
    assert!(search["steps"][1]["mark"]["skipped"].is_string(), "{search:#}");
    let none = bisect(&c[0], &c[2], false);
    assert_eq!(code(&none), 4, "{}", String::from_utf8_lossy(&none.stderr));
    assert!(String::from_utf8_lossy(&none.stdout).contains("no regression found: BAD"));
    // By allocations (the builds reused): the busy loop allocates nothing in any commit.
    let by_alloc = harness()
        .current_dir(tmp.path())
        .args(["bisect", &c[0], &c[3]])
        .args(&case[..5])
        .args(["--metric", "alloc"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&by_alloc.stdout);
    assert_eq!(code(&by_alloc), 4, "{text}{}", String::from_utf8_lossy(&by_alloc.stderr));
    assert!(text.contains("no regression found: BAD") && text.contains("0.00 allocations"), "{text}");
    backfill_reuses_the_builds_resumes_and_finds_the_commit(tmp.path(), &c);
}

/// `history run` of the same commits (the searches' builds reused): the unbuildable commit is
/// skipped, the rest run and stored; a second call runs nothing; detection names the planted
/// commit exactly, and gates on it at the head.
fn backfill_reuses_the_builds_resumes_and_finds_the_commit(dir: &std::path::Path, c: &[String]) {
    let store = dir.join("target/history-test.sqlite");
    let history = |args: &[&str]| {
        harness().current_dir(dir).arg("history").args(args).arg("--history").arg(&store).output().unwrap()
    };
    let range = format!("{}~1..{}", c[0], c[3]);
    let run = ["run", &range, "main", "-f", "^baseline/busy_loop$", "-p", "work=1000", "--instructions"];
    let brief = ["--forks", "1", "--warmup", "0", "--iterations", "1", "--time", "1ms"];
    let first = history(&[&run[..], &brief].concat());
    let (stdout, stderr) = (String::from_utf8_lossy(&first.stdout), String::from_utf8_lossy(&first.stderr));
    assert_eq!(code(&first), 0, "{stderr}");
    assert!(stdout.contains("4 commit(s) of") && stdout.contains("3 run, 0 kept"), "{stdout}");
    assert!(stdout.contains("1 skipped") && stderr.contains("skipped: it does not build"), "{stderr}");
    assert_eq!(stderr.matches("building").count(), 1, "only the unbuildable commit is built again: {stderr}");
    let again = history(&[&run[..], &brief].concat());
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert!(stdout.contains("0 run, 3 kept") && stdout.contains("holds 3 runs"), "{stdout}");
    let detect = history(&["detect", "--metric", "instructions", "--format", "json"]);
    assert_eq!(code(&detect), 0, "{}", String::from_utf8_lossy(&detect.stderr));
    let found: serde_json::Value = serde_json::from_slice(&detect.stdout).unwrap();
    let planted = found.as_array().unwrap().iter().find(|p| p["first_bad"] == c[3].as_str());
    let planted = planted.unwrap_or_else(|| panic!("no change point at the planted commit: {found:#}"));
    assert_eq!((planted["last_good"].as_str(), planted["adjacent"].as_bool()), (Some(c[2].as_str()), Some(true)));
    assert!(planted["regression"] == true && planted["at_head"] == true, "{planted:#}");
    let gate = history(&["detect", "--metric", "instructions", "--fail-on-regression"]);
    assert_eq!(code(&gate), 3, "{}", String::from_utf8_lossy(&gate.stderr));
    assert!(
        String::from_utf8_lossy(&gate.stderr).contains("1 unconfirmed"),
        "{}",
        String::from_utf8_lossy(&gate.stderr)
    );
    // An exact count of adjacent commits is its commit's: confirmed without a run, and stored.
    let confirm = history(&["confirm", "--metric", "instructions", "--format", "json"]);
    assert_eq!(code(&confirm), 0, "{}", String::from_utf8_lossy(&confirm.stderr));
    let decided: serde_json::Value = serde_json::from_slice(&confirm.stdout).unwrap();
    let planted = decided.as_array().unwrap().iter().find(|d| d["first_bad"] == c[3].as_str()).unwrap();
    assert_eq!((planted["outcome"].as_str(), planted["commit"].as_str()), (Some("exact"), Some(c[3].as_str())));
    let gate = history(&["detect", "--metric", "instructions", "--fail-on-regression"]);
    let (text, stderr) = (String::from_utf8_lossy(&gate.stdout), String::from_utf8_lossy(&gate.stderr));
    assert_eq!(code(&gate), 3, "{stderr}");
    assert!(stderr.contains("1 confirmed") && text.contains(&format!("exact at {}", &c[3][..12])), "{text}{stderr}");
    // The site: the open change point links to its series' row, which names its commits.
    let site = dir.join("target/site");
    let docs = history(&["docs", "--metric", "instructions", "--out-dir", site.to_str().unwrap()]);
    assert_eq!(code(&docs), 0, "{}", String::from_utf8_lossy(&docs.stderr));
    let html = std::fs::read_to_string(site.join("index.html")).unwrap();
    let range = format!("{}..{}", &c[2][..12], &c[3][..12]);
    let link = html.split("<table id=\"open\">").nth(1).and_then(|t| t.split("href=\"#").nth(1)).unwrap();
    let anchor = &link[..link.find('"').unwrap()];
    let row = html.split(&format!("<tr id=\"{anchor}\">")).nth(1).unwrap_or_else(|| panic!("no row {anchor}: {html}"));
    assert!(row[..row.find("</tr>").unwrap()].contains(&range), "{anchor} names {range}: {html}");
    assert!(site.join("series-1.svg").is_file() && html.contains("src=\"series-1.svg\""));
}
