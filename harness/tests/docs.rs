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
    assert!(svg.starts_with("<svg") && svg.contains("cache/moka_hit[cache_size=1000]"), "{svg}");
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
