//! `harness ab REF`, end to end on a throwaway clone of this workspace: the ref is built once
//! (with this test binary's profile), reused on the next call, and a bad ref or a broken build
//! is one line and exit 2.

use crate::common::*;
use std::path::Path;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=harness-test", "-c", "user.email=test@example.invalid", "-C"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `harness ab <args>` in `dir`.
fn ab(dir: &Path, args: &[&str], out: &Path) -> std::process::Output {
    harness().current_dir(dir).arg("ab").args(args).arg("--out").arg(out).output().unwrap()
}

const RUN: [&str; 12] = [
    "smoke",
    "-f",
    "^baseline/noop$",
    "--forks",
    "2",
    "--warmup",
    "0",
    "--iterations",
    "2",
    "--time",
    "10ms",
    "--quiet",
];

/// `--layouts 2`: both builds relinked with their functions reordered, fork pair j on variant
/// `j mod 2 + 1` of both, variant i laying out the functions both builds have in one order; the
/// variants are kept for the next call; too few layouts for `--forks auto` are refused before
/// anything is built.
fn layouts_are_relinked_and_kept(clone: &Path, kept: &Path, report: &Path) {
    let layouts = ab(clone, &[&["HEAD~1", "--layouts", "2", "--layout-check", "off"][..], &RUN].concat(), report);
    let err = String::from_utf8_lossy(&layouts.stderr);
    assert_eq!(code(&layouts), 0, "{err}");
    let r = read_report(report);
    assert_eq!(r["meta"]["settings"]["layouts"], 2);
    let b = &r["benchmarks"][0];
    for side in ["forks", "baseline_forks"] {
        let seeds: Vec<_> = b[side].as_array().unwrap().iter().map(|f| f["layout"].as_u64()).collect();
        assert_eq!(seeds, [Some(1), Some(2)], "{side}: {b}");
    }
    let home = kept.parent().unwrap().join("layouts");
    let current = clone.join("target/harness/layouts/current");
    for dir in [&home, &current] {
        assert!(
            dir.join("ordered-1").is_file() && dir.join("ordered-2").is_file(),
            "variants kept in {}",
            dir.display()
        );
    }
    let (base, new) = (function_order(&home.join("ordered-1")), function_order(&current.join("ordered-1")));
    let shared = |of: &[String], other: &[String]| -> Vec<String> {
        let other: std::collections::HashSet<&String> = other.iter().collect();
        of.iter().filter(|f| other.contains(f)).cloned().collect()
    };
    assert!(base.len() > 1000, "{} functions in the baseline's variant 1", base.len());
    assert_eq!(shared(&base, &new), shared(&new, &base), "variant 1 orders the shared functions alike");
    assert_ne!(base, function_order(&home.join("ordered-2")), "variants 1 and 2 differ");
    let text = String::from_utf8_lossy(&layouts.stdout);
    assert!(text.contains("Code layout as a random effect (--layouts 2)"), "{text}");
    // --forks auto needs a layout per look: refused before anything is built.
    let few = ab(clone, &["HEAD~1", "smoke", "--layouts", "3", "--forks", "auto", "--max-forks", "6"], report);
    let err = String::from_utf8_lossy(&few.stderr);
    assert_eq!((code(&few), err.lines().count()), (2, 1), "{err}");
    assert!(err.contains("--layouts 3 with --forks auto"), "{err}");
}

/// The functions of a linked binary by address, each once, named without rustc's hashes.
fn function_order(binary: &Path) -> Vec<String> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let data = std::fs::read(binary).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let mut functions: Vec<(u64, String)> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0)
        .map(|s| (s.address(), format!("{:#}", rustc_demangle::demangle(s.name().unwrap()))))
        .collect();
    functions.sort();
    let mut seen = std::collections::HashSet::new();
    functions.into_iter().map(|f| f.1).filter(|name| seen.insert(name.clone())).collect()
}

/// The layout label against the calibration build (the ref every call here builds: its
/// `baseline/busy_loop` does 3% more work per op) as the baseline, every case forced to a verdict
/// (band 0, alpha 0.9999: a case with no change still ends undecided once in 10,000 runs, where
/// 0.99 left it so in one of 100): `noop`, whose code is the same in both, reads `(same
/// instructions: layout?)`; `busy_loop`, whose instructions really changed, is never labelled and
/// shows their ratio.
fn changed_instructions_are_never_labelled_layout(clone: &Path, report: &Path) {
    let args = [
        "HEAD~1",
        "smoke",
        "-f",
        "^baseline/(noop|busy_loop)$",
        "-p",
        "work=1000",
        "--forks",
        "3",
        "--warmup",
        "0",
        "--iterations",
        "3",
        "--time",
        "20ms",
        "--noise-band",
        "0",
        "--alpha",
        "0.9999",
        "--quiet",
    ];
    let out = ab(clone, &args, report);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 0, "{err}");
    let forced = ["--json", "--noise-band", "0", "--alpha", "0.9999"];
    let doc = compare_json(&harness().arg("compare").arg(report).args(forced).output().unwrap().stdout);
    let case = |name: &str| {
        doc["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["benchmark"].as_str().unwrap().starts_with(name))
            .unwrap()
            .clone()
    };
    let (noop, busy) = (case("baseline/noop"), case("baseline/busy_loop"));
    assert!(noop["verdict"].as_str().unwrap().ends_with("_same_instructions"), "{noop}");
    let ratio = busy["instructions"]["ratio"].as_f64().unwrap();
    assert!(matches!(busy["verdict"].as_str(), Some("faster" | "slower")), "never labelled: {busy}");
    assert!((ratio - 1.0 / 1.03).abs() < 0.01, "the new build runs 3% fewer instructions: {busy}");
    let text = String::from_utf8_lossy(&out.stdout);
    // The A/B table's row (the run's summary table, printed first, has no ratio column).
    let line = text.lines().rev().find(|l| l.starts_with("baseline/busy_loop")).unwrap();
    assert!(!line.contains("layout?") && line.contains(&format!("{ratio:.4}")), "{text}");
}

/// Adds to the index a build script the test can hold (see `crate::common::SLOW_BUILD_SCRIPT`).
fn add_slow_build_script(clone: &Path) {
    std::fs::write(clone.join("workloads/build.rs"), crate::common::SLOW_BUILD_SCRIPT).unwrap();
    git(clone, &["add", "workloads/build.rs"]);
}

/// Ctrl-C while `ab --layouts` builds the ref: cargo (and the build script it runs) is stopped,
/// the run exits 130 within seconds with one line that says so, no cargo is left running, no
/// build is kept, and no report is written.
fn interrupted_builds_stop_within_seconds(clone: &Path, parent: &str, report: &Path) {
    let mut args = vec!["ab", "HEAD~1", "--layouts", "2"];
    args.extend(RUN);
    args.extend(["--out", report.to_str().unwrap()]);
    let (status, err) = interrupt_during_build(clone, &args);
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.lines().last().is_some_and(|l| l.contains("cargo was stopped")), "{err}");
    let builds = clone.join("target/harness/baselines");
    assert_nothing_runs_in(&builds);
    assert!(!builds.join(parent).join("harness").exists(), "an interrupted build is not kept");
    assert!(!report.exists(), "nothing was measured, so no report");
}

#[test]
fn ab_builds_a_ref_once_reuses_it_and_refuses_bad_refs_and_broken_builds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let clone = dir.path().join("workspace");
    git(dir.path(), &["clone", "--quiet", root.to_str().unwrap(), clone.to_str().unwrap()]);
    seed_clone_target(&clone);
    // The ref: the calibration build, so that the layout label's check below reuses its build.
    let manifest = clone.join("workloads/Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, text.replace("[features]\n", "[features]\ndefault = [\"calibration-slow-3pct\"]\n"))
        .unwrap();
    add_slow_build_script(&clone);
    git(&clone, &["commit", "--quiet", "-am", "the calibration build: busy_loop does 3% more work"]);
    std::fs::write(clone.join("THROWAWAY"), "a commit to compare against its parent\n").unwrap();
    git(&clone, &["add", "THROWAWAY"]);
    git(&clone, &["commit", "--quiet", "-m", "throwaway"]);
    let parent = git(&clone, &["rev-parse", "HEAD~1"]);
    let report = dir.path().join("ab.json");

    interrupted_builds_stop_within_seconds(&clone, &parent, &report);
    // The next call after the interrupted one builds the same ref again, from where cargo was.
    let first = ab(&clone, &[&["HEAD~1"][..], &RUN].concat(), &report);
    let err = String::from_utf8_lossy(&first.stderr);
    assert_eq!(code(&first), 0, "{err}");
    let text = String::from_utf8_lossy(&first.stdout);
    assert!(text.contains("A/B: baseline") && text.lines().any(|l| l.starts_with("baseline/noop")), "{text}");
    let kept = clone.join("target/harness/baselines").join(&parent).join("harness");
    assert!(kept.is_file(), "the build is kept at {}", kept.display());
    let r = read_report(&report);
    assert_eq!(r["meta"]["baseline"]["git"]["commit"], parent.as_str());
    assert_eq!(r["meta"]["baseline"]["git"]["dirty"], false, "a baseline built from a commit is clean");

    let again = ab(&clone, &[&["HEAD~1"][..], &RUN[..11]].concat(), &report);
    let err = String::from_utf8_lossy(&again.stderr);
    assert_eq!(code(&again), 0, "{err}");
    let short = &parent[..12];
    assert!(err.contains(&format!("harness ab: baseline HEAD~1 ({short}) = reusing the build of")), "{err}");
    let r = read_report(&report);
    assert_eq!(r["meta"]["baseline"]["git"]["commit"], parent.as_str(), "the second call reuses the build");

    layouts_are_relinked_and_kept(&clone, &kept, &report);

    // Provenance: the kept binary, run after its source checkout moved to another commit, still
    // names the commit it was built from, records the checkout it found, and warns.
    let worktree = kept.parent().unwrap().join("src");
    let head = git(&clone, &["rev-parse", "HEAD"]);
    git(&worktree, &["checkout", "--quiet", "--detach", &head]);
    let moved = dir.path().join("moved.json");
    let out = std::process::Command::new(&kept).arg("run").args(RUN).arg("--out").arg(&moved).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 0, "{err}");
    let r = read_report(&moved);
    assert_eq!(
        (r["meta"]["git"]["commit"].as_str(), r["meta"]["checkout_at_run"]["commit"].as_str()),
        (Some(parent.as_str()), Some(head.as_str()))
    );
    assert!(err.contains("warning:") && err.contains(&head[..12]), "the moved checkout is warned about: {err}");

    changed_instructions_are_never_labelled_layout(&clone, &report);
    crate::confirm::a_step_between_builds_of_the_same_code_is_rerun_across_layouts(&clone, dir.path());

    bad_refs_and_broken_builds_are_one_line(&clone, &report);
}

/// A ref git does not know, and a commit that does not build: one line and exit 2 each.
fn bad_refs_and_broken_builds_are_one_line(clone: &Path, report: &Path) {
    let bad = ab(clone, &["no-such-ref"], report);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!((code(&bad), err.lines().count()), (2, 1), "{err}");
    assert!(err.contains("'no-such-ref' is not a commit"), "{err}");

    // The first crate built fails at once: the check needs a failed build, not a long one.
    std::fs::write(clone.join("workloads/src/lib.rs"), "this does not compile").unwrap();
    git(clone, &["commit", "--quiet", "-am", "broken"]);
    let broken = ab(clone, &[&["HEAD"][..], &RUN].concat(), report);
    let err = String::from_utf8_lossy(&broken.stderr);
    assert_eq!(code(&broken), 2, "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(last.starts_with("error: harness ab HEAD (") && last.contains("the build failed"), "{err}");
}
