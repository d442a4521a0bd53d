//! Every report version stays readable: each committed report validates against the schema file
//! of its own version and reads in every reader; a fresh report is of the newest version and
//! validates against its schema.

mod common;

use common::{code, harness, read_report, run};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The errors of `report` against `harness/schema/report.v<its version>.json`.
fn schema_errors(report: &Value) -> Vec<String> {
    let version = report["schema_version"].as_u64().expect("a version");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("schema/report.v{version}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("no schema for version {version}: {e}"));
    let schema: Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a JSON Schema");
    validator.iter_errors(report).map(|e| format!("{e} at {}", e.instance_path())).collect()
}

fn committed_reports() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter(|p| std::fs::read_to_string(p).unwrap().contains("\"schema_version\""))
        .collect();
    found.sort();
    found
}

#[test]
fn every_committed_report_validates_against_its_version_and_reads() {
    let reports = committed_reports();
    assert!(reports.len() >= 5, "{reports:?}");
    for path in reports {
        let report = read_report(&path);
        let errors = schema_errors(&report);
        assert!(errors.is_empty(), "{}: {errors:?}", path.display());
        let ab = report["benchmarks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["baseline_forks"].as_array().is_some_and(|f| !f.is_empty()));
        let side: &[&str] = if ab { &["--side", "new"] } else { &[] };
        let out = harness().arg("export").arg(&path).args(["--format", "csv"]).args(side).output().unwrap();
        assert_eq!(code(&out), 0, "{}: {}", path.display(), String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn a_fresh_report_is_of_the_newest_version_and_validates() {
    let (out, report) = run(&["smoke", "-f", "^baseline/noop$", "--forks", "1", "--iterations", "2", "--time", "20ms"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let newest = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("schema"))
        .unwrap()
        .filter_map(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .strip_prefix("report.v")?
                .strip_suffix(".json")?
                .parse::<u64>()
                .ok()
        })
        .max()
        .unwrap();
    assert_eq!(report["schema_version"], newest);
    assert_eq!(schema_errors(&report), Vec::<String>::new());
    assert!(report["meta"]["run_id"].is_string());
}
