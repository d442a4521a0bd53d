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
    let filters = ["^baseline/busy_loop$", "^cache/hashmap_hit$", "^cache/moka_hit$"];
    let extra = ["-p", "work=1000", "-p", "cache_size=100"];
    let (a, b) = (instr_run(&filters, &extra), instr_run(&filters, &extra));
    // moka runs its housekeeping on a wall-clock timer too: its count is marked as varying.
    assert!(!per_op(&a, "cache/moka_hit").2, "cache/moka_hit is declared deterministic");
    for name in ["baseline/busy_loop", "cache/hashmap_hit"] {
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
fn the_report_says_whether_the_caches_were_simulated() {
    let plain = instr_run(&["^baseline/noop$"], &[]);
    assert!(plain["meta"]["settings"].get("cache_sim").is_none(), "{}", plain["meta"]["settings"]);
    let simulated = instr_run(&["^baseline/noop$"], &["--cache-sim"]);
    assert_eq!(simulated["meta"]["settings"]["cache_sim"], true);
    assert!(per_op(&simulated, "baseline/noop").0 > 0, "the instruction fork still counted");
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

/// Scales the instruction counts of case `index` by `factor` (median and first fork alike).
fn scale_counts(report: &Value, index: usize, factor: f64) -> Value {
    let mut r = report.clone();
    let i = &mut r["benchmarks"][index]["instructions"];
    for key in ["per_op", "median_per_op", "min_per_op", "max_per_op"] {
        i[key] = (i[key].as_f64().unwrap() * factor).into();
    }
    r
}

#[test]
#[allow(clippy::too_many_lines, reason = "one end-to-end scenario, told step by step")]
fn the_gate_fails_closed() {
    let report = instr_run(&["^baseline/busy_loop$"], &["-p", "work=100,1000"]);
    assert_eq!(report["benchmarks"].as_array().unwrap().len(), 2);
    let dir = tempfile::tempdir().unwrap();
    let path = |n: &str| dir.path().join(n);
    let save = |n: &str, v: &Value| std::fs::write(path(n), v.to_string()).unwrap();
    save("base.json", &report);
    save("slower.json", &scale_counts(&report, 1, 1.03));
    let mut missing = report.clone();
    missing["benchmarks"].as_array_mut().unwrap().remove(0);
    save("missing.json", &missing);
    let mut uncounted = report.clone();
    for b in uncounted["benchmarks"].as_array_mut().unwrap() {
        b.as_object_mut().unwrap().remove("instructions");
    }
    save("uncounted.json", &uncounted);
    let gate = |b: &str, n: &str, extra: &[&str]| {
        harness()
            .arg("compare")
            .arg(path(b))
            .arg(path(n))
            .args(["--metric", "instructions"])
            .args(extra)
            .output()
            .unwrap()
    };
    let err = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();
    let out_text = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).into_owned();

    // The same counts pass.
    assert_eq!(code(&gate("base.json", "base.json", &["--max-regression", "0"])), 0);
    // A 3% increase in one case fails, naming that case only.
    let md = path("gate.md");
    let out = gate("base.json", "slower.json", &["--markdown", md.to_str().unwrap()]);
    assert_eq!(code(&out), 3, "{}", err(&out));
    assert!(err(&out).contains("1 case(s) fail the gate: baseline/busy_loop[work=1000]"), "{}", err(&out));
    assert!(!err(&out).contains("work=100]"), "{}", err(&out));
    let table = out_text(&out);
    assert!(table.contains("REGRESSED") && table.contains("+3.00%"), "{table}");
    assert!(std::fs::read_to_string(&md).unwrap().contains("**1 benchmark(s) regressed**"));
    // --warn-only: the same table, exit 0.
    let warned = gate("base.json", "slower.json", &["--warn-only"]);
    assert_eq!(code(&warned), 0, "{}", err(&warned));
    assert_eq!(out_text(&warned), table);
    assert!(err(&warned).contains("warning (--warn-only)"), "{}", err(&warned));
    let json = gate("base.json", "slower.json", &["--json", "--warn-only"]);
    let doc = compare_json(&json.stdout);
    assert_eq!((doc["metric"].as_str(), doc["decision"]["exit_code"].as_u64()), (Some("instructions"), Some(0)));
    assert_eq!(doc["decision"]["warn_only"], true);
    assert_eq!(doc["decision"]["failing"], serde_json::json!(["baseline/busy_loop[work=1000]"]));
    assert!(doc["cases"].as_array().unwrap().iter().any(|c| c["verdict"] == "regressed"), "{doc}");
    // A threshold file lets the same change pass.
    std::fs::write(path("t.toml"), "[benchmarks]\n\"baseline/busy_loop\" = 5.0\n").unwrap();
    assert_eq!(code(&gate("base.json", "slower.json", &["--thresholds", path("t.toml").to_str().unwrap()])), 0);
    // A case missing from NEW fails and is named, unless allowed.
    let out = gate("base.json", "missing.json", &[]);
    assert_eq!(code(&out), 3, "{}", err(&out));
    assert!(err(&out).contains("baseline/busy_loop[work=100] (missing in new)"), "{}", err(&out));
    assert_eq!(code(&gate("base.json", "missing.json", &["--allow-missing"])), 0);
    // Reports without counts: exit 2, one line, whichever side lacks them.
    for (b, n) in
        [("uncounted.json", "uncounted.json"), ("base.json", "uncounted.json"), ("uncounted.json", "base.json")]
    {
        let out = gate(b, n, &[]);
        assert_eq!(code(&out), 2, "{b} {n}: {}", err(&out));
        assert_eq!(err(&out).lines().count(), 1, "{}", err(&out));
        assert!(err(&out).contains("no instruction counts") && err(&out).contains("--instructions"), "{}", err(&out));
    }

    let mut other = report.clone();
    other["meta"]["configuration"] = "smoke".into();
    save("other.json", &other);
    let out = gate("base.json", "other.json", &[]);
    assert_eq!(code(&out), 2);
    assert!(err(&out).contains("differs: configuration: base") && err(&out).contains("--force"), "{}", err(&out));
    std::fs::write(path("corrupt.json"), "{ not json").unwrap();
    let out = gate("base.json", "corrupt.json", &[]);
    assert_eq!(code(&out), 2);
    assert!(err(&out).contains("is not JSON"), "{}", err(&out));
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
