//! `harness history confirm`'s A/B path, on the clone of the `ab` test (its builds reused): a
//! throughput step planted in the stored history between two commits whose code is the same
//! is re-run as a paired A/B of their builds across code layouts, with the layout check's
//! instruction forks and `--explain`, and the site links what explain drew.
//!
//! The A/B's verdict is a measurement, so it is not asserted: the checks are on what the
//! harness must do whatever it measured (which builds ran, over which layouts, and that two
//! builds of the same code are never called `not reproduced`).

use crate::common::*;
use serde_json::{Value, json};
use std::path::Path;

/// A copy of `run` (a real report of `baseline/busy_loop`) as if commit `commit` had run it,
/// `order`-th, at `level` times its throughput: what the history would have stored.
fn as_run_of(run: &Value, commit: &str, order: usize, level: f64) -> Value {
    let mut r = run.clone();
    r["meta"]["git"] = json!({ "commit": commit, "dirty": false });
    r["meta"]["run_id"] = json!(format!("planted-{order}"));
    r["meta"]["started_at"] = json!(format!("2026-01-01T00:00:{order:02}Z"));
    for b in r["benchmarks"].as_array_mut().unwrap() {
        for (f, fork) in b["forks"].as_array_mut().unwrap().iter_mut().enumerate() {
            for i in fork["iterations"].as_array_mut().unwrap() {
                // 1,000 ops a millisecond at level 1, each fork 0.2% off the next.
                i["ops"] = json!((level * (1.0 + 0.002 * f as f64) * 100_000.0).round() as u64);
                i["nanos"] = json!(100_000_000u64);
            }
        }
    }
    r
}

/// `history` with `args` in `clone`, on the store `store`.
fn history(clone: &Path, store: &Path, args: &[&str]) -> std::process::Output {
    harness().current_dir(clone).arg("history").args(args).arg("--history").arg(store).output().unwrap()
}

/// Makes a throwaway commit on `clone` (HEAD, whose code is HEAD~1's), then stores a history of
/// its five newest commits with a 10% throughput step planted at the throwaway commit before
/// it: the store, LAST GOOD and FIRST BAD.
fn planted_history(clone: &Path, scratch: &Path) -> (std::path::PathBuf, String, String) {
    std::fs::write(clone.join("THROWAWAY"), "another commit\n").unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git").current_dir(clone).args(args).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    git(&["-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-qam", "throwaway 2"]);
    let real = scratch.join("busy.json");
    let case = ["smoke", "-f", "^baseline/busy_loop$", "-p", "work=1000", "--warmup", "0", "--quiet"];
    let brief = ["--forks", "2", "--iterations", "1", "--time", "10ms", "--out"];
    let ran = harness().current_dir(clone).arg("run").args(case).args(brief).arg(&real).output().unwrap();
    assert_eq!(code(&ran), 0, "{}", stderr(&ran));
    let real = read_report(&real);
    let store = scratch.join("history.sqlite");
    let mut reports = vec![];
    for (order, (rev, level)) in
        [("HEAD~4", 1.0), ("HEAD~3", 1.0), ("HEAD~2", 1.0), ("HEAD~1", 0.9), ("HEAD", 0.9)].into_iter().enumerate()
    {
        let path = scratch.join(format!("run-{order}.json"));
        std::fs::write(&path, as_run_of(&real, &git(&["rev-parse", rev]), order, level).to_string()).unwrap();
        reports.push(path);
    }
    let mut add = harness();
    let add = add.current_dir(clone).args(["history", "add"]).args(&reports).arg("--history").arg(&store);
    let add = add.output().unwrap();
    assert_eq!(code(&add), 0, "{}", stderr(&add));
    (store, git(&["rev-parse", "HEAD~2"]), git(&["rev-parse", "HEAD~1"]))
}

/// A 10% throughput step planted at a throwaway commit of `clone` (see [`planted_history`]),
/// confirmed.
pub(crate) fn a_step_between_builds_of_the_same_code_is_rerun_across_layouts(clone: &Path, scratch: &Path) {
    let (store, good, bad) = planted_history(clone, scratch);
    let confirm = ["confirm", "--metric", "throughput", "--max-forks", "5", "--explain", "--format", "json"];
    let out = history(clone, &store, &confirm);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = rows.as_array().unwrap().iter().find(|r| r["first_bad"] == bad.as_str());
    let row = row.unwrap_or_else(|| panic!("the planted step at {bad} was not found: {rows:#}"));
    assert_eq!(row["last_good"], good.as_str(), "{row:#}");
    let (outcome, detail) = (row["outcome"].as_str().unwrap(), row["detail"].as_str().unwrap());
    assert_ne!(outcome, "not reproduced", "two builds of the same code: {row:#}");

    // The A/B ran FIRST BAD's build against LAST GOOD's, its pairs over five layouts.
    let runs = clone.join("target/harness/history-runs/confirm");
    let ab = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json") && p.to_string_lossy().contains("-ab-baseline_busy_loop"));
    let ab_path = ab.unwrap_or_else(|| panic!("no A/B report in {}: {row:#}", runs.display()));
    let ab = read_report(&ab_path);
    assert_eq!(
        (ab["meta"]["git"]["commit"].as_str(), ab["meta"]["baseline"]["git"]["commit"].as_str()),
        (Some(bad.as_str()), Some(good.as_str()))
    );
    assert_eq!(ab["meta"]["settings"]["layouts"], 5, "{}", ab["meta"]["settings"]);
    let seeds: Vec<u64> =
        ab["benchmarks"][0]["forks"].as_array().unwrap().iter().filter_map(|f| f["layout"].as_u64()).collect();
    assert!(!seeds.is_empty() && seeds.iter().all(|s| (1..=5).contains(s)), "{seeds:?}");
    // Explained whatever the A/B decided, beside its report.
    assert!(detail.contains("explained in"), "{row:#}");
    let explained = std::fs::read_to_string(ab_path.with_extension("explain").join("explain.json")).unwrap();
    let explained: Value = serde_json::from_str(&explained).unwrap();
    let ir = &explained[0]["diff"]["events"][0];
    let ratio = ir["new"].as_f64().unwrap() / ir["base"].as_f64().unwrap();
    assert!((ratio - 1.0).abs() < 0.001, "the same code: the same instructions per op: {ir}");
    if outcome == "undecided" {
        assert!(detail.contains("give --max-forks more"), "{row:#}");
        return;
    }
    assert!(detail.contains("same instructions"), "{row:#}");

    // The site links the flame graphs explain drew beside the A/B's report.
    let site = scratch.join("site");
    let docs = history(clone, &store, &["docs", "--metric", "throughput", "--out-dir", site.to_str().unwrap()]);
    assert_eq!(code(&docs), 0, "{}", stderr(&docs));
    let html = std::fs::read_to_string(site.join("index.html")).unwrap();
    let link = html.split("<a href=\"explain/1/").nth(1).unwrap_or_else(|| panic!("no flame graph linked: {html}"));
    let name = &link[..link.find('"').unwrap()];
    assert!(name.ends_with(".svg") && site.join("explain/1").join(name).is_file(), "{name}");
}
