//! `harness bisect`'s refusals, before anything is built (the search itself is tested in
//! `src/bisect.rs`; a whole bisection over built commits is ../shared/acceptance/27-bisect).

mod common;
use common::*;

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
    refused(&["HEAD~1", "HEAD", "smoke", "-f", "^baseline/"], "follows one case");
    refused(&["HEAD~1", "HEAD", "smoke", "-f", "^nothing/matches$"], "no workload matches");
    refused(
        &[&["HEAD~1", "HEAD"][..], &case[..], &["--layouts", "30"][..]].concat(),
        "--metric instructions runs none",
    );
    let few = ["HEAD~1", "HEAD", "smoke", "-f", "^baseline/busy_loop$", "-p", "work=100", "--layouts", "4"];
    refused(&few, "give at least --max-forks (30) layouts");
    refused(&["HEAD~1", "HEAD", "smoke", "--metric", "bytes"], "invalid value 'bytes'");
}
