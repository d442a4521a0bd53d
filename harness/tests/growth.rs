//! `harness run growth`: forks measured in steps carry the whole curve (steps in order of table
//! size, no warmup, the database's figures at each step), `harness docs` draws it, and an
//! interrupted run keeps the steps it finished.

mod common;
use common::*;
use serde_json::Value;
use std::io::BufRead;

/// Every fork's steps: they ran as announced, in order of table size, with the figures observed.
fn check_forks(b: &Value, rows: i64) {
    for f in b["forks"].as_array().unwrap() {
        assert_eq!(f["status"], "ok", "{f:#}");
        assert!(f["warmup"].as_array().unwrap().is_empty(), "a stepped fork has no warmup");
        let steps: Vec<u64> = f["steps"].as_array().unwrap().iter().map(|s| s.as_u64().unwrap()).collect();
        let its = f["iterations"].as_array().unwrap();
        let ops: Vec<u64> = its.iter().map(|i| i["ops"].as_u64().unwrap()).collect();
        assert_eq!(ops, steps, "each step ran its planned ops");
        let sizes: Vec<i64> = its.iter().map(|i| i["observed"]["table_rows"].as_i64().unwrap()).collect();
        assert!(sizes.windows(2).all(|w| w[0] < w[1]), "in order of table size: {sizes:?}");
        assert_eq!(sizes.last(), Some(&rows));
        assert!(its.iter().all(|i| i["observed"]["wal_bytes"].as_i64().unwrap() > 0), "{its:?}");
        let ran = f["observed"]["ops_run"].as_i64().unwrap();
        assert_eq!(ran * 1000, rows, "no op outside the steps: {f:#}");
        assert_eq!(f["observed"]["sqlite_statement_runs"].as_i64().unwrap(), ran * 1002, "{f:#}");
    }
}

#[test]
fn growth_forks_carry_the_curve_and_docs_draw_it() {
    let args = ["growth", "-p", "db=sqlite_file", "-p", "kind=uuid_v4,uuid_v7", "-p", "rows=5000", "--forks", "2"];
    let (out, report) = run(&args);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let cases = report["benchmarks"].as_array().unwrap();
    assert_eq!(cases.len(), 2);
    for b in cases {
        check_forks(b, 5000);
    }
    let dir = tempfile::tempdir().unwrap();
    let (_keep, path) = report_path();
    std::fs::write(&path, serde_json::to_string(&report).unwrap()).unwrap();
    let docs = harness().arg("docs").arg(&path).arg("--out-dir").arg(dir.path()).output().unwrap();
    assert_eq!(code(&docs), 0, "{}", String::from_utf8_lossy(&docs.stderr));
    let page = std::fs::read_to_string(dir.path().join("README.md")).unwrap();
    assert!(page.contains("![growth on sqlite_file/key_pk"), "{page}");
    assert!(page.contains("In the step that grew the table to 5.000 k rows"), "{page}");
    let svg = std::fs::read_to_string(dir.path().join("growth-sqlite_file-key_pk.svg")).unwrap();
    assert!(svg.contains("WAL bytes per row") && svg.contains("uuid_v7"), "{svg}");
}

#[test]
fn an_interrupted_growth_run_keeps_the_steps_it_finished() {
    let (_dir, out) = report_path();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("harness"))
        .args(["run", "growth", "-p", "db=sqlite_file", "-p", "kind=uuid_v4", "-p", "rows=5000000", "--out"])
        .arg(&out)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Progress prints one line per step when stderr is not a terminal.
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut lines = stderr.lines().map_while(Result::ok);
    let step = lines.find(|l| l.contains("step 5/")).expect("progress shows the steps");
    assert!(step.contains("6.000 k table rows") && step.contains("fork ETA"), "{step}");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    lines.for_each(drop);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let report = read_report(&out);
    let fork = &report["benchmarks"][0]["forks"][0];
    assert_eq!(fork["failure"]["kind"], "interrupted", "{fork:#}");
    let kept = fork["iterations"].as_array().unwrap();
    assert!(kept.len() >= 5, "the finished steps are kept: {fork:#}");
    assert!(kept.len() < fork["steps"].as_array().unwrap().len());
    let pid = fork["pid"].as_u64().unwrap();
    let left = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&format!("harness-sqlite-{pid}-")))
        .count();
    assert_eq!(left, 0, "the parent removes the database files of the worker it killed");
}

#[test]
fn an_instruction_count_of_a_growth_case_is_refused_with_the_reason() {
    let args = ["growth", "-p", "db=sqlite_file", "-p", "kind=uuid_v7", "-p", "rows=2000", "--instructions"];
    let (out, report) = run(&args);
    assert_eq!(code(&out), 1, "{}", String::from_utf8_lossy(&out.stderr));
    let forks = report["benchmarks"][0]["forks"].as_array().unwrap();
    let failed: Vec<&Value> = forks.iter().filter(|f| f["status"] != "ok").collect();
    assert_eq!(failed.len(), 1, "the timed fork runs, the instruction fork is refused: {forks:#?}");
    let message = failed[0]["failure"]["message"].as_str().unwrap();
    assert!(
        message.contains("measured in steps of table size") && message.contains("without --instructions"),
        "{message}"
    );
}
