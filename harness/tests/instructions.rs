//! Instruction counts under callgrind and the regression gate, end to end.

mod common;
use common::*;
use serde_json::Value;

fn instr_run(filters: &[&str], extra: &[&str]) -> Value {
    let mut args = vec!["--instructions", "--warmup", "0", "--iterations", "1", "--time", "20ms", "--instr-ops", "100"];
    for f in filters {
        args.extend(["-f", f]);
    }
    args.extend_from_slice(extra);
    let (out, report) = run(&args);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    report
}

fn per_op(report: &Value, name: &str) -> (u64, f64, bool) {
    let i = &bench(report, name)["instructions"];
    (i["total"].as_u64().unwrap(), i["per_op"].as_f64().unwrap(), i["deterministic"].as_bool().unwrap())
}

#[test]
fn deterministic_counts_repeat_exactly_and_count_only_the_ops() {
    let filters = ["^baseline/busy_loop$", "^cache/moka_hit$"];
    let extra = ["-p", "work=1000", "-p", "cache_size=100"];
    let (a, b) = (instr_run(&filters, &extra), instr_run(&filters, &extra));
    for name in ["baseline/busy_loop", "cache/moka_hit"] {
        let (ta, _, det) = per_op(&a, name);
        assert!(det, "{name} is declared deterministic");
        assert_eq!(ta, per_op(&b, name).0, "{name}: counts differ between two runs");
        let fork = bench(&a, name)["forks"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(fork["kind"], "instructions");
        assert_eq!(fork["instructions"]["ops"], 100);
    }
    // 1000 xorshift steps cost thousands of instructions (tens of thousands unoptimized): the
    // count is the ops', not zero and not the whole process's (setup alone runs millions).
    let (total, busy, _) = per_op(&a, "baseline/busy_loop");
    assert!((5_000.0..200_000.0).contains(&busy), "{busy} instructions per op");
    assert!(total > 0);
}

#[test]
fn work_on_another_thread_is_counted() {
    let report = instr_run(&["^baseline/busy_loop$", "^baseline/other_thread_busy$"], &["-p", "work=20000"]);
    let (_, same_thread, _) = per_op(&report, "baseline/busy_loop");
    let (_, other_thread, deterministic) = per_op(&report, "baseline/other_thread_busy");
    assert!(!deterministic);
    assert!(
        other_thread >= same_thread,
        "work done on the helper thread went uncounted: {other_thread} < {same_thread} instructions per op"
    );
}

#[test]
fn the_gate_exits_3_on_a_regression_0_on_equal_and_2_on_bad_reports() {
    let report = instr_run(&["^baseline/busy_loop$"], &["-p", "work=100"]);
    let dir = tempfile::tempdir().unwrap();
    let path = |n: &str| dir.path().join(n);
    std::fs::write(path("new.json"), report.to_string()).unwrap();
    let mut base = report.clone();
    let per_op = base["benchmarks"][0]["instructions"]["per_op"].as_f64().unwrap();
    base["benchmarks"][0]["instructions"]["per_op"] = (per_op * 0.8).into();
    std::fs::write(path("base.json"), base.to_string()).unwrap();
    let gate = |b: &str, n: &str, extra: &[&str]| {
        harness()
            .args(["compare"])
            .arg(path(b))
            .arg(path(n))
            .args(["--metric", "instructions"])
            .args(extra)
            .output()
            .unwrap()
    };

    let out =
        gate("base.json", "new.json", &["--max-regression", "1", "--markdown", path("gate.md").to_str().unwrap()]);
    assert_eq!(code(&out), 3, "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("REGRESSED") && table.contains("+25.00%"), "{table}");
    assert!(std::fs::read_to_string(path("gate.md")).unwrap().contains("**1 benchmark(s) regressed**"));
    // A generous threshold from a file lets the same change pass.
    std::fs::write(path("t.toml"), "[benchmarks]\n\"baseline/busy_loop\" = 30.0\n").unwrap();
    assert_eq!(code(&gate("base.json", "new.json", &["--thresholds", path("t.toml").to_str().unwrap()])), 0);
    assert_eq!(code(&gate("new.json", "new.json", &["--max-regression", "0"])), 0);

    let mut other = report.clone();
    other["meta"]["configuration"] = "smoke".into();
    std::fs::write(path("other.json"), other.to_string()).unwrap();
    let out = gate("new.json", "other.json", &[]);
    assert_eq!(code(&out), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("differs: configuration: base") && err.contains("--force"), "{err}");
    std::fs::write(path("corrupt.json"), "{ not json").unwrap();
    let out = gate("new.json", "corrupt.json", &[]);
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a harness report"));
}

#[test]
fn missing_valgrind_is_one_line_and_exit_2() {
    let empty = tempfile::tempdir().unwrap();
    let out =
        harness().args(["run", "-f", "^baseline/noop$", "--instructions"]).env("PATH", empty.path()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{err}");
    assert!(err.contains("--instructions needs valgrind") && err.contains("apt-get install valgrind"), "{err}");
}
