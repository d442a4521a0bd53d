//! Runner tests: every fork is its own process, and every way a worker can fail is recorded
//! against that fork while the other forks and cases keep their results and the report stays
//! valid JSON. Ctrl-C and a killed parent leave no worker behind.

mod common;
use common::*;
use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const QUICK: &[&str] = &["--warmup", "0", "--iterations", "2", "--time", "40ms"];

fn run_fault(workload: &str, extra: &[&str]) -> (std::process::Output, Value) {
    let filter = format!("^{workload}$");
    let mut args = vec!["--hidden", "-f", filter.as_str()];
    args.extend_from_slice(extra);
    for pair in QUICK.chunks(2) {
        if !extra.contains(&pair[0]) {
            args.extend_from_slice(pair);
        }
    }
    run(&args)
}

fn failure(fork: &Value) -> (&str, &str, &str) {
    assert_eq!(fork["status"], "failed", "{fork:#}");
    let f = &fork["failure"];
    (f["kind"].as_str().unwrap(), f["message"].as_str().unwrap(), f["stderr_tail"].as_str().unwrap())
}

fn assert_ok(fork: &Value, iterations: usize) {
    assert_eq!(fork["status"], "ok", "{fork:#}");
    assert!(fork["failure"].is_null());
    assert_eq!(fork["iterations"].as_array().unwrap().len(), iterations);
}

#[test]
fn every_fork_is_a_fresh_process() {
    let (out, report) =
        run(&["-f", "^baseline/noop$", "--forks", "3", "--warmup", "0", "--iterations", "1", "--time", "20ms"]);
    assert_eq!(code(&out), 0);
    let forks = bench(&report, "baseline/noop")["forks"].as_array().unwrap().clone();
    let mut pids: Vec<u64> = forks.iter().map(|f| f["pid"].as_u64().unwrap()).collect();
    pids.sort_unstable();
    pids.dedup();
    assert_eq!(pids.len(), 3, "{forks:?}");
    assert!(!pids.contains(&u64::from(std::process::id())));
    let indexes: Vec<_> = forks.iter().map(|f| f["index"].as_u64().unwrap()).collect();
    assert_eq!(indexes, [0, 1, 2]);
}

#[test]
fn a_panicking_fork_fails_alone() {
    let (out, report) = run_fault("fault/panic", &["--forks", "3", "-p", "fork=1", "-p", "after_ms=0"]);
    assert_eq!(code(&out), 1);
    let b = bench(&report, "fault/panic");
    let forks = b["forks"].as_array().unwrap();
    assert_ok(&forks[0], 2);
    assert_ok(&forks[2], 2);
    let (kind, message, stderr) = failure(&forks[1]);
    assert_eq!(kind, "panic");
    assert!(
        message.starts_with("panicked at ") && message.contains("fault.rs") && message.contains("injected panic"),
        "{message}"
    );
    // The kept stderr tail holds the default hook's report (or its backtrace), naming the file.
    assert!(stderr.contains("fault.rs"), "{stderr}");
    // The score pools only the ok forks.
    assert_eq!(b["score"]["n"], 4);
    assert_eq!(report["status"], "complete");
}

#[test]
fn crashes_by_signal_are_named() {
    for (workload, signal) in [("fault/abort", "SIGABRT"), ("fault/segfault", "SIGSEGV")] {
        let (out, report) =
            run_fault(workload, &["--forks", "2", "-p", "fork=0", "-p", "after_ms=150", "--time", "100ms"]);
        assert_eq!(code(&out), 1, "{workload}");
        let forks = bench(&report, workload)["forks"].as_array().unwrap();
        let (kind, message, _) = failure(&forks[0]);
        assert_eq!(kind, "signal", "{workload}");
        assert!(message.starts_with(&format!("killed by {signal}")), "{workload}: {message}");
        // It struck during the second iteration: the first one is kept.
        assert_eq!(forks[0]["iterations"].as_array().unwrap().len(), 1, "{workload}: {:#}", forks[0]);
        assert_ok(&forks[1], 2);
    }
}

#[test]
fn a_hanging_fork_is_killed_at_the_timeout() {
    let started = Instant::now();
    let (out, report) = run_fault("fault/hang", &["-p", "after_ms=0", "--fork-timeout", "1s"]);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(code(&out), 1);
    let fork = &bench(&report, "fault/hang")["forks"][0];
    let (kind, message, _) = failure(fork);
    assert_eq!(kind, "timeout");
    assert!(message.contains("fork timeout of 1s") && message.contains("--fork-timeout"), "{message}");
    assert!(!alive(fork["pid"].as_u64().unwrap() as u32), "the hung worker survived");
}

#[test]
fn early_exit_garbage_and_failed_checks_are_recorded() {
    let cases = [
        ("fault/exit", "exit", "before reporting done"),
        ("fault/garbage", "protocol", "not a protocol message"),
        ("fault/setup_error", "setup", "injected setup failure"),
        ("fault/verify_error", "verify", "injected correctness failure"),
    ];
    for (workload, expected_kind, expected_message) in cases {
        let (out, report) = run_fault(workload, &["-p", "after_ms=0"]);
        assert_eq!(code(&out), 1, "{workload}");
        let fork = &bench(&report, workload)["forks"][0];
        let (kind, message, _) = failure(fork);
        assert_eq!(kind, expected_kind, "{workload}: {message}");
        assert!(message.contains(expected_message), "{workload}: {message}");
        assert!(bench(&report, workload)["score"].is_null(), "{workload}: a failed case has no score");
    }
}

#[test]
fn output_floods_do_not_block_the_worker() {
    let (out, report) = run_fault("fault/stdout_flood", &[]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_ok(&bench(&report, "fault/stdout_flood")["forks"][0], 2);
}

#[test]
fn other_cases_go_on_after_a_failure() {
    let (out, report) = run(&[
        "--hidden",
        "-f",
        "^fault/abort$",
        "-f",
        "^baseline/noop$",
        "-p",
        "after_ms=0",
        "--warmup",
        "0",
        "--iterations",
        "1",
        "--time",
        "20ms",
    ]);
    assert_eq!(code(&out), 1);
    assert_ok(&bench(&report, "baseline/noop")["forks"][0], 1);
    assert_eq!(failure(&bench(&report, "fault/abort")["forks"][0]).0, "signal");
}

fn spawn_hanging_run(out: &std::path::Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["run", "--hidden", "-f", "^baseline/noop$", "-f", "^fault/hang$", "-p", "after_ms=0"])
        .args(["--warmup", "0", "--iterations", "1", "--time", "20ms", "--fork-timeout", "120s", "--quiet", "--out"])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits until the noop case is in the report and the hang worker is running; returns its pid.
fn wait_for_hang_worker(parent: u32, out: &std::path::Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert!(Instant::now() < deadline, "the hang worker never started");
        // The noop case's fork is in the report (the drift canary's worker runs before it).
        let noop_done = std::fs::read_to_string(out)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|r| {
                r["benchmarks"][0]["name"] == "baseline/noop" && r["benchmarks"][0]["forks"][0].is_object()
            });
        if let (true, [worker]) = (noop_done, children(parent).as_slice()) {
            return *worker;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_keeps_a_valid_partial_report_and_no_child() {
    let (_dir, out) = report_path();
    let mut child = spawn_hanging_run(&out);
    let worker = wait_for_hang_worker(child.id(), &out);
    std::thread::sleep(Duration::from_millis(100));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(!alive(worker), "worker {worker} outlived Ctrl-C");
    let report = read_report(&out);
    assert_eq!(report["status"], "interrupted");
    assert_ok(&bench(&report, "baseline/noop")["forks"][0], 1);
    let (kind, _, _) = failure(&bench(&report, "fault/hang")["forks"][0]);
    assert_eq!(kind, "interrupted");
}

#[test]
fn a_killed_parent_takes_its_worker_along() {
    let (_dir, out) = report_path();
    let mut child = spawn_hanging_run(&out);
    let worker = wait_for_hang_worker(child.id(), &out);
    child.kill().unwrap();
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(worker) {
        assert!(Instant::now() < deadline, "worker {worker} was orphaned");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The last rewrite is still a whole JSON document.
    assert_eq!(read_report(&out)["status"], "running");
}
