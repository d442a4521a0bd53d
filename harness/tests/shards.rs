//! CLI tests of `run --shard K/N` and `harness merge`, and of export names a CI dashboard keys by.

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

const QUICK: [&str; 6] = ["--warmup", "0", "--iterations", "1", "--time", "10ms"];

fn labels(report: &Value) -> Vec<String> {
    report["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| format!("{}{}", b["name"].as_str().unwrap(), b["params"]))
        .collect()
}

#[test]
#[allow(clippy::too_many_lines, reason = "one end-to-end scenario, told step by step")]
fn shards_cover_a_configuration_once_and_merge_into_the_whole() {
    let dir = tempfile::tempdir().unwrap();
    let select = ["smoke", "-f", "^(baseline|cache)/"];
    let (out, whole) = run(&[&select[..], &QUICK[..]].concat());
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let mut parts = vec![];
    let mut seen = vec![];
    for k in 1..=3 {
        let path = dir.path().join(format!("part{k}.json"));
        let shard = format!("{k}/3");
        let out = harness()
            .arg("run")
            .args(select)
            .args(QUICK)
            .args(["--shard", &shard, "--quiet", "--out"])
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
        let part = read_report(&path);
        assert_eq!(part["meta"]["settings"]["shard"], shard);
        assert!(!labels(&part).is_empty(), "shard {shard} is empty");
        seen.extend(labels(&part));
        parts.push(path);
    }
    let mut sorted_seen = seen.clone();
    sorted_seen.sort();
    let mut sorted_whole = labels(&whole);
    sorted_whole.sort();
    assert_eq!(sorted_seen, sorted_whole, "the three shards cover every case exactly once");

    let merged_path = dir.path().join("all.json");
    let out = harness().arg("merge").args(&parts).arg("--out").arg(&merged_path).output().unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let merged = read_report(&merged_path);
    let set = |r: &Value| labels(r).into_iter().collect::<BTreeSet<_>>();
    assert_eq!(set(&merged), set(&whole));
    assert_eq!(merged["meta"]["settings"]["shard"], Value::Null);
    for key in ["forks", "iterations", "iteration_nanos", "warmup_iterations", "filters", "threads", "mode"] {
        assert_eq!(merged["meta"]["settings"][key], whole["meta"]["settings"][key], "{key}");
    }
    assert_eq!(merged["meta"]["merged"]["parts"].as_array().unwrap().len(), 3);
    assert_eq!(merged["meta"]["canary"]["readings"].as_array().unwrap().len(), 6, "each part's canary kept");
    // The merged report works with the other commands.
    let out = harness().arg("compare").arg(&merged_path).arg(&merged_path).output().unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    // A part beside the merge it is in: the same forks twice on one side, refused.
    let part_ids: Vec<&Value> = merged["meta"]["merged"]["part_run_ids"].as_array().unwrap().iter().collect();
    assert_eq!(part_ids.len(), 3);
    assert!(!part_ids.contains(&&merged["meta"]["run_id"]), "a merge has a run id of its own");
    let out = harness()
        .args(["compare", "--base"])
        .arg(&merged_path)
        .arg(&parts[1])
        .arg("--new")
        .arg(&parts[2])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{err}");
    assert!(err.contains("hold forks of the same run"), "{err}");

    // A part twice, or parts made differently: refused, every difference listed; --allow-differences merges.
    let out = harness().arg("merge").arg(&parts[0]).arg(&parts[0]).arg("--out").arg(&merged_path).output().unwrap();
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("is in both"), "{}", String::from_utf8_lossy(&out.stderr));
    let mut odd = read_report(&parts[2]);
    odd["meta"]["settings"]["iterations"] = 7.into();
    odd["meta"]["cpu"]["model"] = "Another CPU".into();
    let odd_path = dir.path().join("odd.json");
    std::fs::write(&odd_path, odd.to_string()).unwrap();
    let out = harness()
        .arg("merge")
        .arg(&parts[0])
        .arg(&parts[1])
        .arg(&odd_path)
        .arg("--out")
        .arg(&merged_path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{err}");
    assert!(err.contains("--iterations") && err.contains("cpu:") && err.contains("differ in 2 way(s)"), "{err}");
    assert!(err.contains("pass --allow-differences"), "{err}");
    // --force only replaces an --out; merging differing parts is --allow-differences.
    let odd = |flag: &str| {
        harness().arg("merge").args([&parts[0], &parts[1], &odd_path]).arg(flag).arg("--out").arg(&merged_path).output()
    };
    assert_eq!(code(&odd("--force").unwrap()), 2);
    let out = odd("--allow-differences").unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(read_report(&merged_path)["meta"]["merged"]["forced"], true);
    // Two of three shards: refused, unless --allow-partial, which records the missing one.
    let merge = |extra: &[&str], out_path: &Path| {
        harness().arg("merge").arg(&parts[0]).arg(&parts[1]).args(extra).arg("--out").arg(out_path).output().unwrap()
    };
    let out = merge(&[], &merged_path);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{err}");
    assert!(
        err.contains("shard(s) 3/3 of the run are not among the parts") && err.contains("--allow-partial"),
        "{err}"
    );
    let out = merge(&["--allow-partial"], &merged_path);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(read_report(&merged_path)["meta"]["merged"]["missing_shards"], serde_json::json!(["3/3"]));
    // An existing --out that is not an earlier merge of this run is kept, unless --force.
    let notes = dir.path().join("notes.json");
    std::fs::write(&notes, "my notes").unwrap();
    let out = merge(&["--allow-partial"], &notes);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{err}");
    assert!(err.contains("exists and would be replaced") && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my notes");
    let out = merge(&["--allow-partial", "--force"], &notes);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let out = harness().args(["run", "smoke", "--shard", "4/3"]).output().unwrap();
    assert_eq!(code(&out), 2);
}

#[test]
fn exports_of_threads_and_sample_mode_have_unique_names_and_numeric_errors() {
    let (out, report) =
        run(&[&["smoke", "-f", "^cache/moka_hit$", "--threads", "1,2", "--mode", "sample"][..], &QUICK[..]].concat());
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    std::fs::write(&path, report.to_string()).unwrap();
    let out = harness().arg("export").arg(&path).args(["--format", "jmh"]).output().unwrap();
    assert_eq!(code(&out), 0);
    let entries: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(entries.len(), 4, "thrpt and sample, for 1 and 2 threads");
    let keys: BTreeSet<String> =
        entries.iter().map(|e| format!("{} {} {}", e["benchmark"], e["params"], e["mode"])).collect();
    assert_eq!(keys.len(), entries.len(), "{keys:?}");
    for e in &entries {
        assert_eq!(e["benchmark"], "harness.cache.moka_hit");
        let names: BTreeSet<String> = entries.iter().map(|x| format!("{}{}", x["benchmark"], x["params"])).collect();
        assert_eq!(names.len(), entries.len());
        if e["mode"] == "sample" {
            let m = &e["primaryMetric"];
            let (score, error) = (m["score"].as_f64().unwrap(), m["scoreError"].as_f64().expect("a number"));
            assert!((m["scoreConfidence"][0].as_f64().unwrap() - (score - error)).abs() < 1e-6 * score.max(1.0));
        }
    }
    for metric in ["throughput", "instructions"] {
        let out = harness().arg("export").arg(&path).args(["--format", "gab", "--metric", metric]).output().unwrap();
        if metric == "instructions" {
            assert_eq!(code(&out), 2, "no counts: nothing to export");
            continue;
        }
        let gab: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        let names: BTreeSet<&str> = gab.iter().map(|e| e["name"].as_str().unwrap()).collect();
        assert_eq!((gab.len(), names.len()), (2, 2), "{gab:?}");
        assert!(gab.iter().all(|e| e["unit"] == "ops/s"));
    }
    let out =
        harness().arg("export").arg(&path).args(["--format", "csv", "--metric", "instructions"]).output().unwrap();
    assert_eq!(code(&out), 2);
}
