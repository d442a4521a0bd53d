//! CLI tests of `--threads` (OS threads and tasks) and `--mode sample`.

mod common;
use common::*;
use serde_json::Value;

fn case<'a>(report: &'a Value, name: &str, threads: u64) -> &'a Value {
    report["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == name && b["concurrency"]["count"] == threads)
        .unwrap_or_else(|| panic!("no {name} with {threads} threads in {report:#}"))
}

/// One fork of two measured iterations, no warmup: `--time` is the caller's.
const ONE_FORK: [&str; 6] = ["--forks", "1", "--warmup", "0", "--iterations", "2"];

/// `run` with `args`, then [`ONE_FORK`] of `time` each.
fn run_one_fork(args: &[&str], time: &str) -> (std::process::Output, Value) {
    run(&[args, &ONE_FORK, &["--time", time]].concat())
}

fn measured(b: &Value) -> Vec<Value> {
    b["forks"].as_array().unwrap().iter().flat_map(|f| f["iterations"].as_array().unwrap().clone()).collect()
}

#[test]
fn threads_share_the_state_and_each_run_ops() {
    let (out, report) =
        run_one_fork(&["smoke", "--hidden", "-f", "^probe/(thread|task)_in_flight$", "--threads", "1,3"], "60ms");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(report["benchmarks"].as_array().unwrap().len(), 4, "two workloads x two thread counts");
    assert_eq!(report["meta"]["settings"]["threads"], serde_json::json!([1, 3]));
    for (name, kind) in [("probe/thread_in_flight", "threads"), ("probe/task_in_flight", "tasks")] {
        let b = case(&report, name, 3);
        assert_eq!(b["concurrency"]["kind"], kind, "{b:#}");
        assert!(b["concurrency"]["cores"].as_u64().unwrap() >= 1);
        assert!(b["concurrency"]["each"].as_str().unwrap().starts_with("3 "), "{b:#}");
        for it in measured(b) {
            let per: Vec<u64> = it["thread_ops"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
            assert_eq!(per.len(), 3, "{it}");
            assert!(per.iter().all(|&n| n > 0), "every measurer ran ops: {it}");
            assert_eq!(per.iter().sum::<u64>(), it["ops"].as_u64().unwrap(), "{it}");
            // Each op stays in flight 200 µs: three concurrent measurers overlap.
            assert_eq!(it["observed"]["max_in_flight"], 3, "{name} did not run 3 at once: {it}");
        }
        let single = case(&report, name, 1);
        assert!(
            measured(single).iter().all(|it| it.get("thread_ops").is_none() && it["observed"]["max_in_flight"] == 1)
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("threads=3"), "{text}");
    let cores = case(&report, "probe/thread_in_flight", 3)["concurrency"]["cores"].as_u64().unwrap();
    let warned = text.contains("probe/thread_in_flight[threads=3]: 3 threads on");
    assert_eq!(warned, cores < 3, "more threads than cores is warned about, and only then: {text}");
}

#[test]
fn workloads_that_cannot_share_refuse_threads() {
    let out = harness().args(["run", "ids", "-f", "batch_insert", "--threads", "1,2"]).output().unwrap();
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--threads 2: ids/batch_insert cannot share its state"), "{err}");
    let out = harness().args(["run", "smoke", "--threads", "0"]).output().unwrap();
    assert_eq!(code(&out), 2);
}

#[test]
fn sample_mode_puts_a_known_delay_in_the_tail_not_the_median() {
    let (out, report) =
        run_one_fork(&["smoke", "--hidden", "-f", "^probe/every_50th_sleeps$", "--mode", "sample"], "150ms");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let b = bench(&report, "probe/every_50th_sleeps");
    let l = &b["latency"];
    let p = |k: &str| l["percentiles"][k].as_u64().unwrap_or_else(|| panic!("no {k}: {l}"));
    assert_eq!(l["ops_per_sample"], 1);
    assert!(p("p50") < 500_000, "the median op spins 2 µs: {l}");
    assert!(p("p99") >= 1_000_000, "2% of ops sleep 1 ms: {l}");
    assert!(p("p99.9") >= 1_000_000 && l["max"].as_u64().unwrap() >= p("p99.9"), "{l}");
    assert!(l["clock_read_nanos"].as_f64().unwrap() > 0.0);
    assert!(b["forks"][0]["latency"]["histogram"].as_array().unwrap().len() > 1);
    assert_eq!(report["meta"]["settings"]["mode"], "sample");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("p50") && text.contains("p99.9") && text.contains(" ms"), "{text}");
}
