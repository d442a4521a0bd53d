//! CLI tests of `docs` and `export` on a real report.

mod common;
use common::*;

fn quick_report(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("r.json");
    let out = harness()
        .args(["run", "smoke", "-f", "^baseline/(noop|busy_loop)$|^cache/moka_hit$", "--forks", "2"])
        .args(["--warmup", "0", "--iterations", "3", "--time", "20ms", "--quiet", "--out"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    path
}

#[test]
fn docs_write_tables_and_charts_identically_twice() {
    let dir = tempfile::tempdir().unwrap();
    let report = quick_report(dir.path());
    let render = |name: &str| {
        let out_dir = dir.path().join(name);
        let out = harness().arg("docs").arg(&report).arg("--out-dir").arg(&out_dir).output().unwrap();
        assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&out_dir)
            .unwrap()
            .map(|e| {
                let p = e.unwrap().path();
                (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap())
            })
            .collect();
        files.sort();
        files
    };
    let first = render("a");
    let names: Vec<&str> = first.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(names, ["README.md", "baseline.svg", "cache.svg"]);
    assert_eq!(first, render("b"), "regenerating gives byte-identical files");
    let page = String::from_utf8(first[0].1.clone()).unwrap();
    assert!(page.contains("| workload | cache_size | score | ± error (99.9%) | unit | forks ok |"), "{page}");
    assert!(page.contains("![cache throughput](cache.svg)") && page.contains("| commit |"), "{page}");
    let svg = String::from_utf8(first[2].1.clone()).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("moka_hit") && svg.contains("every case: cache_size=1000"),
        "{svg}"
    );
    let bad = harness().args(["docs", "/nonexistent.json"]).output().unwrap();
    assert_eq!(code(&bad), 2);
}

#[test]
fn export_writes_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let report = quick_report(dir.path());
    let export = |format: &str| {
        let path = dir.path().join(format!("out.{format}"));
        let out = harness().arg("export").arg(&report).args(["--format", format, "--out"]).arg(&path).output().unwrap();
        assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
        std::fs::read_to_string(path).unwrap()
    };
    let jmh: serde_json::Value = serde_json::from_str(&export("jmh")).unwrap();
    let first = &jmh[0];
    assert_eq!(first["mode"], "thrpt");
    assert_eq!(first["forks"], 2);
    assert_eq!(first["primaryMetric"]["rawData"].as_array().unwrap().len(), 2, "one list per fork");
    assert_eq!(first["primaryMetric"]["rawData"][0].as_array().unwrap().len(), 3);
    for key in ["score", "scoreError", "scoreConfidence", "scorePercentiles", "scoreUnit"] {
        assert!(first["primaryMetric"].get(key).is_some(), "{key}: {first}");
    }
    let bmf: serde_json::Value = serde_json::from_str(&export("bmf")).unwrap();
    let moka = &bmf["cache/moka_hit[cache_size=1000]"]["throughput"];
    assert!(moka["lower_value"].as_f64().unwrap() <= moka["value"].as_f64().unwrap(), "{bmf}");
    let csv = export("csv");
    assert_eq!(csv.lines().count(), 1 + 3, "{csv}");
    assert!(csv.starts_with("benchmark,params,threads,"));
    let md = export("markdown");
    assert!(md.lines().nth(2).unwrap().starts_with("| baseline/noop |"), "{md}");
    let bad = harness().arg("export").arg(&report).args(["--format", "xml"]).output().unwrap();
    assert_eq!(code(&bad), 2);
}

#[test]
fn an_ab_report_exports_the_build_side_names_and_never_one_silently() {
    let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/ab-async-held-connection.json");
    let report = read_report(&committed);
    let export = |extra: &[&str]| {
        harness().args(["export"]).arg(&committed).args(["--format", "bmf"]).args(extra).output().unwrap()
    };
    let out = export(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{err}");
    assert!(err.contains("is an A/B report of two builds: pass --side new") && err.lines().count() == 1, "{err}");
    for (side, score) in [("new", "score"), ("base", "baseline_score")] {
        let out = export(&["--side", side]);
        assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
        let bmf: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for case in report["benchmarks"].as_array().unwrap() {
            let db = case["params"]["db"].as_str().unwrap();
            let (_, measures) =
                bmf.as_object().unwrap().iter().find(|(k, _)| k.contains(&format!("db={db},"))).unwrap();
            let exported = measures["throughput"]["value"].as_f64().unwrap();
            let recorded = case[score]["mean"].as_f64().unwrap();
            assert!(
                (exported - recorded).abs() < 1e-6 * recorded,
                "{side} {db}: {exported} against the report's {recorded}"
            );
        }
    }
    // A plain report has one build: --side is refused.
    let dir = tempfile::tempdir().unwrap();
    let plain = quick_report(dir.path());
    let out = harness().arg("export").arg(&plain).args(["--format", "csv", "--side", "base"]).output().unwrap();
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("drop --side"));
}

#[test]
fn failed_and_skipped_cases_are_kept_and_marked_in_every_export() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.json");
    // fault/panic fails every fork; the PostgreSQL case is skipped (nothing listens on port 1).
    let out = harness()
        .args([
            "run",
            "smoke",
            "--hidden",
            "-f",
            "^fault/panic$",
            "-f",
            "^baseline/noop$",
            "-f",
            "^sql/thread_select_by_id$",
        ])
        .args(["-p", "after_ms=0", "-p", "db=postgres", "-p", "row_count=1000"])
        .args(["--database-url", "postgres://postgres@127.0.0.1:1/test"])
        .args(["--forks", "2", "--iterations", "2", "--time", "50ms", "--warmup-time", "20ms", "--quiet", "--out"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}", String::from_utf8_lossy(&out.stderr));
    let export = |format: &str| {
        let out = harness().arg("export").arg(&path).args(["--format", format]).output().unwrap();
        assert_eq!(code(&out), 0, "{format}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let csv = export("csv");
    let mut rows = csv::Reader::from_reader(csv.as_bytes());
    let header = rows.headers().unwrap().clone();
    let at = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = rows.records().map(Result::unwrap).collect();
    let row = |name: &str| rows.iter().find(|r| &r[0] == name).unwrap_or_else(|| panic!("{name} dropped:\n{csv}"));
    assert_eq!((&row("fault/panic")[at("status")], &row("fault/panic")[at("forks_failed")]), ("failed", "2"));
    assert!(row("fault/panic")[at("note")].starts_with("all 2 forks failed (2 timed; first: "), "{csv}");
    assert_eq!(&row("sql/thread_select_by_id")[at("status")], "skipped");
    assert!(row("sql/thread_select_by_id")[at("note")].contains("cannot reach PostgreSQL"), "{csv}");
    assert_eq!(&row("baseline/noop")[at("status")], "ok");
    let bmf: serde_json::Value = serde_json::from_str(&export("bmf")).unwrap();
    let measures = |name: &str| {
        bmf.as_object().unwrap().iter().find(|(k, _)| k.starts_with(name)).map(|(_, v)| v.clone()).unwrap()
    };
    assert_eq!(measures("fault/panic")["forks_failed"]["value"], 2.0);
    assert_eq!(measures("sql/thread_select_by_id")["skipped"]["value"], 1.0);
    let jmh: serde_json::Value = serde_json::from_str(&export("jmh")).unwrap();
    let entry = |name: &str| {
        jmh.as_array().unwrap().iter().find(|e| e["benchmark"].as_str().unwrap().contains(name)).cloned().unwrap()
    };
    assert_eq!(entry("fault.panic")["primaryMetric"]["score"], "NaN");
    assert_eq!(entry("fault.panic")["harnessStatus"], "failed");
    assert_eq!(entry("sql.thread_select_by_id")["harnessStatus"], "skipped");
    assert!(entry("baseline.noop").get("harnessStatus").is_none(), "an ok case is as before");
    // github-action-benchmark: 0 ops/s for a case that did no op (the action alerts on it).
    let gab: serde_json::Value = serde_json::from_str(&export("gab")).unwrap();
    let bench = |name: &str| {
        gab.as_array().unwrap().iter().find(|e| e["name"].as_str().unwrap().contains(name)).cloned().unwrap()
    };
    assert_eq!(bench("fault.panic")["value"], 0.0);
    assert!(bench("fault.panic")["extra"].as_str().unwrap().starts_with("FAILED fault/panic["), "{gab:#}");
    assert!(bench("sql.thread_select_by_id")["extra"].as_str().unwrap().starts_with("SKIPPED sql/"), "{gab:#}");
    assert_eq!(gab.as_array().unwrap().len(), 3, "no case dropped");
}

#[test]
fn a_growth_case_is_exported_per_step_never_pooled_over_a_growing_table() {
    let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/growth/sqlite_file-key_pk.json");
    let report = read_report(&committed);
    let steps: usize = report["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let mut sizes: Vec<i64> = b["forks"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|f| {
                    f["iterations"].as_array().unwrap().iter().filter_map(|i| i["observed"]["table_rows"].as_i64())
                })
                .collect();
            sizes.sort_unstable();
            sizes.dedup();
            sizes.len()
        })
        .sum();
    let out = harness().arg("export").arg(&committed).args(["--format", "csv"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let mut rows = csv::Reader::from_reader(out.stdout.as_slice());
    let rows: Vec<csv::StringRecord> = rows.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), steps, "one row per case and step");
    assert!(rows.iter().all(|r| r[1].contains("table_rows=")), "no row pools the steps");
    let out = harness().arg("export").arg(&committed).args(["--format", "bmf"]).output().unwrap();
    let bmf: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(bmf.as_object().unwrap().len(), steps, "every step a name of its own");
}
