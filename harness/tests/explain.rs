//! `harness explain`, end to end: planted changes named by function and component, a build
//! against itself unchanged, flame graphs written, bad inputs refused.

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The kept dump of `plant` among the dumps of one run of `planted/select`.
fn dump_of(dir: &Path, plant: &str) -> PathBuf {
    let prefix = format!("planted_select_plant={plant}_.fork");
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(&prefix))
        .unwrap_or_else(|| panic!("no dump of plant={plant} in {}", dir.display()))
}

fn explain_json(args: &[&std::ffi::OsStr]) -> Value {
    let out = harness().arg("explain").args(args).arg("--json").output().unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    all[0].clone()
}

#[test]
fn planted_changes_are_named_by_the_function_and_component_responsible() {
    let dir = tempfile::tempdir().unwrap();
    let dumps = dir.path().join("dumps");
    let mut args = vec!["--hidden", "-f", "^planted/select$", "-p", "plant=none,statement,allocation,vec_clone"];
    args.extend(["--instructions", "--instr-ops", "200", "--forks", "1", "--warmup", "0", "--iterations", "1"]);
    args.extend(["--time", "1ms", "--callgrind-dir", dumps.to_str().unwrap()]);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let base = dump_of(&dumps, "none");
    for (plant, function, component) in [
        ("statement", "workloads::planted::extra_statement", "SQLite (C)"),
        ("allocation", "workloads::planted::extra_allocation", "glibc"),
        ("vec_clone", "workloads::planted::clone_vec", "glibc"),
    ] {
        let new = dump_of(&dumps, plant);
        let e = explain_json(&[
            "--base-dump".as_ref(),
            base.as_os_str(),
            "--new-dump".as_ref(),
            new.as_os_str(),
            "--ops".as_ref(),
            "200".as_ref(),
            "--out-dir".as_ref(),
            dir.path().as_os_str(),
        ]);
        let diff = &e["diff"];
        assert_eq!(diff["cause"]["name"], function, "plant={plant}: {diff:#}");
        // The component the change is spent in: the largest in a release build; in a debug build
        // (these tests) unoptimized Rust std code takes a share of its own, so at least a fifth.
        let delta = |c: &Value| c["new"].as_f64().unwrap() - c["base"].as_f64().unwrap();
        let total = delta(&diff["events"][0]);
        let spent = diff["components"].as_array().unwrap().iter().find(|c| c["name"] == component);
        assert!(spent.is_some_and(|c| delta(c) >= 0.2 * total), "plant={plant}: {component} in {diff:#}");
        assert!(diff["appeared"].as_array().unwrap().iter().any(|f| f["name"] == function), "plant={plant}");
        let (b, n) = (diff["events"][0]["base"].as_f64().unwrap(), diff["events"][0]["new"].as_f64().unwrap());
        assert!(n > b, "plant={plant}: {b} -> {n} instructions per op");
        for graph in e["graphs"].as_array().unwrap() {
            let svg = std::fs::read_to_string(graph.as_str().unwrap()).unwrap();
            assert!(svg.contains("<svg") && svg.contains("planted"), "{graph}");
        }
    }
}

#[test]
fn a_build_against_itself_is_explained_as_instructions_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("ab.json");
    let me = assert_cmd::cargo::cargo_bin("harness");
    let out = harness()
        .args(["run", "-f", "^baseline/busy_loop$", "-p", "work=200", "--forks", "2", "--iterations", "2"])
        .args(["--time", "5ms", "--warmup", "0", "--layout-check", "off", "--quiet", "--baseline-bin"])
        .arg(&me)
        .arg("--out")
        .arg(&report)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let out = harness().arg("explain").arg(&report).args(["--instr-ops", "100"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("baseline/busy_loop[work=200]"), "{text}");
    assert!(text.contains("instructions unchanged"), "{text}");
    assert!(text.contains("--cache-sim"), "the way to look further is offered: {text}");
    let explained = dir.path().join("ab.explain");
    assert!(explained.join("explain.json").is_file());
    let svgs: Vec<_> = std::fs::read_dir(&explained)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".svg"))
        .collect();
    assert_eq!(svgs.len(), 3, "a differential and two plain flame graphs: {svgs:?}");
    explained_into_a_full_disk_says_so(&report);
    // The docs page of the report links them, copied beside it.
    let page = dir.path().join("page");
    let out = harness().arg("docs").arg(&report).arg("--out-dir").arg(&page).output().unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let readme = std::fs::read_to_string(page.join("README.md")).unwrap();
    assert!(readme.contains("## Explained differences"), "{readme}");
    for svg in &svgs {
        assert!(readme.contains(&format!("(explain/{svg})")), "{svg} linked: {readme}");
        assert!(page.join("explain").join(svg).is_file(), "{svg} copied");
    }
}

/// `--out-dir` on a file system with 8 KiB (a tmpfs in a mount namespace of its own, gone with
/// the process): the one line says the disk is full and what to do, not that forks failed.
fn explained_into_a_full_disk_says_so(report: &Path) {
    let (full, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mount = format!("mount -t tmpfs -o size=8k tmpfs '{}' && exec \"$0\" \"$@\"", full.path().display());
    let out = std::process::Command::new("unshare")
        .args(["--mount", "--map-root-user", "sh", "-c", &mount])
        .arg(assert_cmd::cargo::cargo_bin("harness"))
        .arg("explain")
        .arg(report)
        .args(["--instr-ops", "100", "--out-dir"])
        .arg(full.path().join("explained"))
        .current_dir(cwd.path()) // where the rerun's report falls back to, kept with what it measured
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 1, "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(last.contains(&format!("the disk holding {}/explained is full", full.path().display())), "{err}");
    assert!(last.contains("--out-dir") && !last.contains("instruction forks"), "{err}");
}

#[test]
fn bad_inputs_are_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.json");
    let out = harness()
        .args(["run", "-f", "^baseline/noop$", "--forks", "1", "--iterations", "1", "--time", "1ms", "--quiet"])
        .arg("--out")
        .arg(&plain)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let missing = dir.path().join("missing.json");
    let cases: [(Vec<&std::ffi::OsStr>, &str); 4] = [
        (vec![plain.as_os_str()], "is not an A/B report"),
        (vec![missing.as_os_str()], "cannot read"),
        (vec!["--base-dump".as_ref(), plain.as_os_str(), "--new-dump".as_ref(), plain.as_os_str()], "--base-dump"),
        (
            vec![
                "--base-dump".as_ref(),
                plain.as_os_str(),
                "--new-dump".as_ref(),
                plain.as_os_str(),
                "--ops".as_ref(),
                "0".as_ref(),
            ],
            "--ops",
        ),
    ];
    for (args, expected) in cases {
        let out = harness().arg("explain").args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(code(&out), 2, "{args:?}: {stderr}");
        assert!(stderr.lines().next().unwrap_or("").contains(expected), "{args:?}: the first line says it: {stderr}");
    }
}

#[test]
fn dumps_of_two_workloads_are_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let dumps = dir.path().join("dumps");
    let mut args = vec!["-f", "^baseline/(noop|busy_loop)$", "--instructions", "--instr-ops", "100", "--forks", "1"];
    args.extend(["--warmup", "0", "--iterations", "1", "--time", "1ms", "--callgrind-dir", dumps.to_str().unwrap()]);
    let (out, _) = run(&args);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let kept = |prefix: &str| {
        std::fs::read_dir(&dumps)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
            .unwrap_or_else(|| panic!("no dump starting {prefix} in {}", dumps.display()))
    };
    let (noop, busy) = (kept("baseline_noop.fork"), kept("baseline_busy_loop"));
    let out = harness().arg("explain").arg("--base-dump").arg(&noop).arg("--new-dump").arg(&busy).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!((code(&out), err.lines().count()), (2, 1), "{err}");
    assert!(err.contains("different workloads") && err.contains("counted baseline/noop"), "{err}");
    assert!(err.contains("counted baseline/busy_loop[work=100]"), "{err}");
    // The dump says what it counted and which build ran it.
    let text = std::fs::read_to_string(&noop).unwrap();
    assert!(text.contains("Client Request: harness-measure case=baseline/noop build="), "{text:.400}");
}

#[test]
fn without_valgrind_explain_says_what_it_needs_and_what_it_can_do() {
    let report = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/ab-async-held-connection.json");
    let no_valgrind = tempfile::tempdir().unwrap();
    let out = harness()
        .env("PATH", no_valgrind.path())
        .arg("explain")
        .arg(&report)
        .arg("--baseline-bin")
        .arg(env!("CARGO_BIN_EXE_harness"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!((code(&out), err.lines().count()), (2, 1), "{err}");
    assert!(err.contains("harness explain AB.json needs valgrind") && err.contains("--base-dump"), "{err}");
    assert!(!err.contains("drop --instructions"), "explain takes no --instructions: {err}");
}
