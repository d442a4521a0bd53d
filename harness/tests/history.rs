//! `harness history`: reports stored once each, series kept apart by settings, planted changes
//! found at their commit and flat series left alone, on SQLite and on PostgreSQL.

mod common;

use common::{code, harness};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A report of one run of commit `commit` (run `i`, started `i` seconds in): one case of a
/// committed report with three timed forks at `speed` times its throughput (spread ±0.5%, and
/// a wobble of ±0.3% run to run) and one instruction fork counting `extra` more instructions.
fn synthetic(dir: &Path, i: usize, commit: &str, speed: f64, extra: u64) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/orm-counts.json");
    let mut r: Value = serde_json::from_str(&std::fs::read_to_string(root).unwrap()).unwrap();
    r["meta"]["run_id"] = json!(format!("run-{i}"));
    r["meta"]["git"]["commit"] = json!(commit);
    r["meta"]["git"]["dirty"] = json!(false);
    r["meta"]["started_at"] = json!(format!("2026-01-01T00:{:02}:{:02}Z", i / 60, i % 60));
    let mut b = r["benchmarks"][0].clone();
    let time = b["forks"][0].clone();
    let wobble = 1.0 + 0.003 * ((i * 7) % 5) as f64 / 4.0 - 0.0015;
    let mut forks: Vec<Value> = [0.995, 1.0, 1.005]
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let mut f = time.clone();
            f["index"] = json!(k);
            let nanos = f["iterations"][0]["nanos"].as_f64().unwrap() / (speed * s * wobble);
            f["iterations"][0]["nanos"] = json!(nanos.round() as u64);
            f
        })
        .collect();
    let mut instr = b["forks"][1].clone();
    instr["index"] = json!(3);
    let total = instr["instructions"]["total"].as_u64().unwrap() + extra;
    instr["instructions"]["total"] = json!(total);
    forks.push(instr);
    b["forks"] = json!(forks);
    let per_op = total as f64 / 1000.0;
    for k in ["per_op", "min_per_op", "max_per_op", "median_per_op"] {
        b["instructions"][k] = json!(per_op);
    }
    b["instructions"]["total"] = json!(total);
    r["benchmarks"] = json!([b]);
    let path = dir.join(format!("r{i}.json"));
    std::fs::write(&path, serde_json::to_string(&r).unwrap()).unwrap();
    path
}

fn history(store: &str, args: &[&str]) -> std::process::Output {
    harness().arg("history").args(&args[..1]).args(["--history", store]).args(&args[1..]).output().unwrap()
}

fn out(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
}

/// Twelve commits: throughput 10% lower from commit 7, 50 more instructions per op from commit 4.
fn planted(dir: &Path) -> Vec<PathBuf> {
    (0..12)
        .map(|i| {
            synthetic(dir, i, &format!("{i:040x}"), if i >= 7 { 0.9 } else { 1.0 }, if i >= 4 { 50_000 } else { 0 })
        })
        .collect()
}

/// Adds the planted series to `store` (four runners at once, each adding every report, in
/// two orders) and checks what detect finds in it.
fn planted_changes_are_found(dir: &Path, store: &str) {
    let reports = planted(dir);
    let paths: Vec<&str> = reports.iter().map(|p| p.to_str().unwrap()).collect();
    let reversed: Vec<&str> = paths.iter().rev().copied().collect();
    let runners: Vec<std::process::Child> = (0..4)
        .map(|k| {
            let order = if k % 2 == 0 { &paths } else { &reversed };
            let mut add = std::process::Command::new(env!("CARGO_BIN_EXE_harness"));
            add.args(["history", "add", "--history", store]).args(order.iter());
            add.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap()
        })
        .collect();
    let mut stored = 0;
    for runner in runners {
        let done = runner.wait_with_output().unwrap();
        assert_eq!(code(&done), 0, "{}", out(&done));
        stored += String::from_utf8_lossy(&done.stdout).lines().filter(|l| l.starts_with("stored ")).count();
    }
    assert_eq!(stored, 12, "each run stored by one runner only");
    let add = history(store, &[&["add"][..], &paths].concat());
    assert_eq!(code(&add), 0, "{}", out(&add));
    assert!(out(&add).contains("holds 12 runs"), "{}", out(&add));
    let again = history(store, &["add", paths[3]]);
    assert_eq!(code(&again), 0, "{}", out(&again));
    assert!(
        out(&again).contains("run run-3 is stored already") && out(&again).contains("holds 12 runs"),
        "{}",
        out(&again)
    );

    let det = history(store, &["detect", "--format", "json"]);
    assert_eq!(code(&det), 0, "{}", out(&det));
    let found: Value = serde_json::from_slice(&det.stdout).unwrap();
    let found = found.as_array().unwrap();
    let at = |metric: &str| -> Vec<(String, bool)> {
        found
            .iter()
            .filter(|c| c["metric"] == metric)
            .map(|c| (c["first_bad"].as_str().unwrap()[36..].to_string(), c["regression"].as_bool().unwrap()))
            .collect()
    };
    assert_eq!(at("instructions"), vec![("0004".to_string(), true)], "{found:#?}");
    assert_eq!(at("throughput"), vec![("0007".to_string(), true)], "{found:#?}");
    let tp = found.iter().find(|c| c["metric"] == "throughput").unwrap();
    let (lo, hi) = (tp["interval"][0].as_f64().unwrap(), tp["interval"][1].as_f64().unwrap());
    assert!(lo < -0.09 && hi > -0.11 && hi < 0.0, "{tp:#}");

    let gate = history(store, &["detect", "--fail-on-regression", "--format", "markdown"]);
    assert_eq!(code(&gate), 3, "{}", out(&gate));
    assert!(String::from_utf8_lossy(&gate.stdout).starts_with("| case and figure |"), "{}", out(&gate));
    assert!(out(&gate).contains("unconfirmed"), "{}", out(&gate));
}

#[test]
fn planted_changes_are_found_at_their_commit_and_a_run_is_stored_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.sqlite");
    planted_changes_are_found(dir.path(), store.to_str().unwrap());
}

#[test]
#[ignore = "needs PostgreSQL at 127.0.0.1:5432 and psql: `cargo test -- --include-ignored` runs it (.ci/run does)"]
fn a_postgres_store_holds_the_same_history() {
    let schema = format!("harness_history_test_{}", std::process::id());
    let psql = |sql: &str| {
        let ok = std::process::Command::new("psql")
            .env("PGOPTIONS", "--client-min-messages=warning")
            .args(["-h", "127.0.0.1", "-U", "postgres", "-d", "test", "-qAtc", sql])
            .status()
            .unwrap();
        assert!(ok.success(), "{sql}");
    };
    psql(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"));
    let dir = tempfile::tempdir().unwrap();
    let url = format!("postgres://postgres@127.0.0.1:5432/test?options=-csearch_path%3D{schema}");
    planted_changes_are_found(dir.path(), &url);
    psql(&format!("DROP SCHEMA {schema} CASCADE"));
}

#[test]
fn flat_series_and_other_settings_raise_no_change_point() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.sqlite");
    let store = store.to_str().unwrap();
    let mut reports: Vec<PathBuf> = (0..10).map(|i| synthetic(dir.path(), i, &format!("{i:040x}"), 1.0, 0)).collect();
    // A run with another --instr-ops counts other instructions per op: its own series.
    let other = synthetic(dir.path(), 10, &format!("{:040x}", 10), 1.0, 90_000);
    let mut r: Value = serde_json::from_str(&std::fs::read_to_string(&other).unwrap()).unwrap();
    r["meta"]["settings"]["instr_ops"] = json!(5000);
    std::fs::write(&other, r.to_string()).unwrap();
    reports.push(other);
    let paths: Vec<&str> = reports.iter().map(|p| p.to_str().unwrap()).collect();
    assert_eq!(code(&history(store, &[&["add"][..], &paths].concat())), 0);
    let det = history(store, &["detect", "--fail-on-regression"]);
    assert_eq!(code(&det), 0, "{}", out(&det));
    assert!(
        // Throughput, instructions (two settings) and the allocations and bytes per op of
        // orm-counts.json's `--alloc` forks.
        out(&det).contains("5 series on 1 machine(s): 0 change point(s), 0 regression(s), 0 of them at a series' head"),
        "{}",
        out(&det)
    );
}

#[test]
fn dirty_runs_are_stored_flagged_and_left_out_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.sqlite");
    let store = store.to_str().unwrap();
    let report = synthetic(dir.path(), 0, &format!("{:040x}", 0), 1.0, 0);
    let mut r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    r["meta"]["git"]["dirty"] = json!(true);
    std::fs::write(&report, r.to_string()).unwrap();
    let add = history(store, &["add", report.to_str().unwrap()]);
    assert!(out(&add).contains("uncommitted edits: stored and flagged"), "{}", out(&add));
    // Searching nothing is said and passes; a gate that searched nothing fails closed.
    let det = history(store, &["detect"]);
    assert_eq!(code(&det), 0, "{}", out(&det));
    assert!(out(&det).contains("0 series searched") && out(&det).contains("pass --include-dirty"), "{}", out(&det));
    let gate = history(store, &["detect", "--fail-on-regression"]);
    assert_eq!(code(&gate), 2, "{}", out(&gate));
    assert!(out(&gate).contains("pass --include-dirty"), "{}", out(&gate));
    let det = history(store, &["detect", "--include-dirty"]);
    assert_eq!(code(&det), 0, "{}", out(&det));
}

#[test]
fn bad_reports_and_stores_are_refused_in_one_line_before_anything_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.sqlite");
    let store = store.to_str().unwrap();
    let good = synthetic(dir.path(), 0, &format!("{:040x}", 0), 1.0, 0);
    let ab = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/ab-async-held-connection.json");
    let refused = history(store, &["add", good.to_str().unwrap(), ab.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!((code(&refused), err.lines().count()), (2, 1), "{err}");
    assert!(err.contains("is an A/B report of two builds"), "{err}");
    let empty = history(store, &["detect"]);
    let err = String::from_utf8_lossy(&empty.stderr);
    assert_eq!((code(&empty), err.lines().count()), (2, 1), "{err}");
    assert!(err.contains("holds no runs"), "the refused add stored nothing: {err}");

    let newer = dir.path().join("newer.sqlite");
    let c = rusqlite::Connection::open(&newer).unwrap();
    c.execute_batch("CREATE TABLE history_schema (version BIGINT NOT NULL); INSERT INTO history_schema VALUES (99)")
        .unwrap();
    let o = history(newer.to_str().unwrap(), &["add", good.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!((code(&o), err.lines().count()), (2, 1), "{err}");
    assert!(err.contains("has schema version 99"), "{err}");

    let unreachable = history("postgres://u:hunter22@127.0.0.1:9/x", &["detect"]);
    let err = String::from_utf8_lossy(&unreachable.stderr);
    assert_eq!((code(&unreachable), err.lines().count()), (2, 1), "{err}");
    assert!(err.contains("cannot open the history store") && !err.contains("hunter22"), "{err}");
    let bad_filter = history(store, &["detect", "-f", "("]);
    assert_eq!(code(&bad_filter), 2, "{}", out(&bad_filter));
    let few = history(store, &["confirm", "--max-forks", "4"]);
    let err = String::from_utf8_lossy(&few.stderr);
    assert_eq!((code(&few), err.lines().count()), (2, 1), "{err}");
    assert!(err.contains("give --max-forks 5 or more"), "refused before anything is built: {err}");
}
