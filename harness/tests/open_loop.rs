//! CLI tests of open-loop mode (`--rate`): the scheduler against queueing theory, the
//! correction of coordinated omission, a rate the case cannot keep, and the inputs refused.
//!
//! `probe/fixed_service` spins a fixed service time D per op, so under Poisson arrivals a fork
//! is an M/D/1 queue whose mean latency is the Pollaczek–Khinchine value D·(1 + ρ/(2(1 − ρ))),
//! and under constant arrivals below saturation every op takes D. Every test takes a lock, so
//! that nothing else in this binary (not even a refused run's start) loads the two cores while
//! a timed one runs: CI saw a 0.5 ms p99 at half load when the tests ran side by side.

mod common;
use common::*;
use serde_json::Value;
use std::sync::Mutex;

/// One test at a time.
static TIMED: Mutex<()> = Mutex::new(());

/// Holds the machine for one test (a test that failed does not keep the others from running).
fn alone() -> std::sync::MutexGuard<'static, ()> {
    TIMED.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Service time of the probe, in microseconds.
const SERVICE_US: f64 = 100.0;

/// Runs the probe open-loop at `rate` and returns the output and its one case.
fn probe(rate: &str, arrivals: &str, extra: &[&str]) -> (std::process::Output, Value) {
    let _one = alone();
    let mut args = vec![
        "smoke",
        "--hidden",
        "-f",
        "^probe/fixed_service$",
        "-p",
        "service_us=100",
        "--rate",
        rate,
        "--arrivals",
        arrivals,
        "--forks",
        "2",
        "--warmup",
        "1",
        "--warmup-time",
        "200ms",
        "--iterations",
        "2",
        "--time",
        "1s",
    ];
    args.extend(extra);
    let (out, report) = run(&args);
    let case = report["benchmarks"][0].clone();
    (out, case)
}

/// The first two moments of a histogram's values, in nanoseconds.
fn moments(buckets: &Value) -> (f64, f64) {
    let (mut n, mut m1, mut m2) = (0.0, 0.0, 0.0);
    for b in buckets.as_array().unwrap() {
        let (v, c) = (nanos(&b[0]), nanos(&b[1]));
        n += c;
        m1 += v * c;
        m2 += v * v * c;
    }
    (m1 / n, m2 / n)
}

/// The Pollaczek–Khinchine mean latency of an M/G/1 queue at `per_sec` whose service time is
/// what one of the fork's ops took plus the lag before it (each measured, taken as
/// independent): E[S] + λE[S²] / (2(1 − λE[S])). A preemption of the worker, during an op or
/// between two, lengthens the service the queue sees; this is the value for the machine the
/// fork ran on.
fn mg1(per_sec: f64, fork: &Value) -> f64 {
    let (s1, s2) = moments(&fork["uncorrected"]);
    let (l1, l2) = moments(&fork["lag"]);
    let (m1, m2, lambda) = (s1 + l1, s2 + 2.0 * s1 * l1 + l2, per_sec / 1e9);
    m1 + lambda * m2 / (2.0 * (1.0 - lambda * m1))
}

/// Both forks kept the rate; else which did not and why, as a miss to try again: a host stall
/// (a neighbour preempting the VM for ms) makes one fork miss now and then, while a scheduler
/// that cannot keep the rate misses in every attempt.
fn kept_both(case: &Value) -> Result<(), String> {
    if case["open_loop"]["forks_kept"] == 2 {
        return Ok(());
    }
    let why: Vec<String> = case["forks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["open_loop"]["missed"].as_str().map(String::from))
        .collect();
    Err(format!("a fork did not keep the rate: {}", why.join("; ")))
}

fn nanos(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// How many runs a queueing check may take: a systematic error in the scheduler misses the
/// model in every one, while a neighbour's burst on a shared VM (a preempted worker at ρ 0.8
/// holds a queue for tens of ms; CI once saw 19% above the model) rarely hits them all. Such
/// bursts come in spells: on 2026-12-08 this VM, idle but for the test, had the generator start
/// ops 0.45 to 1.9 ms late at p99 in one attempt of two for minutes on end, so three attempts
/// failed a test now and then; each attempt is about 5 s.
const ATTEMPTS: usize = 8;

#[test]
fn poisson_arrivals_give_the_m_d_1_mean_latency_at_half_and_four_fifths_load() {
    for rho in [0.5, 0.8] {
        let misses: Vec<String> = (0..ATTEMPTS).map_while(|_| m_d_1_attempt(rho).err()).collect();
        assert!(misses.len() < ATTEMPTS, "rho {rho}, {ATTEMPTS} runs: {}", misses.join("; "));
    }
}

/// One run at load `rho`: its structure is asserted, and its mean's distance from the model
/// returned as an error when above 5%.
fn m_d_1_attempt(rho: f64) -> Result<(), String> {
    let rate = ((rho * 1e6 / SERVICE_US) as u64).to_string();
    let (out, case) = probe(&rate, "poisson", &[]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    kept_both(&case)?;
    let open = &case["open_loop"];
    for fork in case["forks"].as_array().unwrap() {
        let f = &fork["open_loop"];
        let ran = f["ran"].as_u64().unwrap();
        assert_eq!(f["scheduled"].as_u64(), Some(ran), "every scheduled op ran");
        for h in ["corrected", "uncorrected", "lag"] {
            let count: u64 = f[h].as_array().unwrap().iter().map(|b| b[1].as_u64().unwrap()).sum();
            assert_eq!(count, ran, "{h}: one value per op");
        }
    }
    let mean = nanos(&open["corrected"]["mean"]);
    let theory = SERVICE_US * 1e3 * (1.0 + rho / (2.0 * (1.0 - rho)));
    let forks = case["forks"].as_array().unwrap();
    let measured = forks.iter().map(|f| mg1(rho * 1e6 / SERVICE_US, &f["open_loop"])).sum::<f64>() / forks.len() as f64;
    // Each op alone still takes about D: the queueing is in the corrected latency only.
    let alone = nanos(&open["uncorrected"]["percentiles"]["p50"]);
    // Stated in docs/latency.md: within 5% of the value for the service the forks measured
    // (scripts/open-loop compares with D's value on a release build).
    if (mean / measured - 1.0).abs() < 0.05 && (alone / (SERVICE_US * 1e3) - 1.0).abs() < 0.05 {
        return Ok(());
    }
    Err(format!(
        "mean {mean:.0} ns, M/G/1 of the measured service {measured:.0} ns (of D: {theory:.0} ns), uncorrected p50 {alone:.0} ns"
    ))
}

#[test]
fn constant_arrivals_below_saturation_take_the_service_time() {
    let misses: Vec<String> = (0..ATTEMPTS).map_while(|_| constant_attempt().err()).collect();
    assert!(misses.len() < ATTEMPTS, "{ATTEMPTS} runs: {}", misses.join("; "));
}

/// One run of constant arrivals at half load; its percentiles' distance from D as an error.
fn constant_attempt() -> Result<(), String> {
    let (out, case) = probe("5000", "constant", &[]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    kept_both(&case)?;
    let open = &case["open_loop"];
    assert!(case["name"] == "probe/fixed_service" && open["rate"]["arrivals"] == "constant");
    let d = SERVICE_US * 1e3;
    let at = |h: &str, p: &str| nanos(&open[h]["percentiles"][p]);
    // No op waits for another: the median op takes D from its intended start, within 1%.
    if (at("corrected", "p50") / d - 1.0).abs() >= 0.01 {
        return Err(format!("corrected p50 {} ns for a {d} ns op", at("corrected", "p50")));
    }
    // At p99 the machine shows: a preempted op takes longer (its uncorrected time) and one the
    // worker wakes late starts late (its lag); on a shared VM either adds a quarter of D or more
    // (three runs of this probe on an AMD EPYC VM: uncorrected p99 121-129 µs, lag p99 2-33 µs,
    // corrected p99 129-168 µs; CI saw corrected p99s of 139-206 µs). An op that waits for
    // another adds nothing more, but for the rare op behind a preempted one: a tenth of D.
    let (corrected, alone, lag) = (at("corrected", "p99"), at("uncorrected", "p99"), at("lag", "p99"));
    if alone < d || corrected > alone + lag + 0.1 * d {
        return Err(format!("p99: corrected {corrected} ns, uncorrected {alone} ns, lag {lag} ns for a {d} ns op"));
    }
    Ok(())
}

#[test]
fn a_stall_shows_in_the_corrected_p99_and_hides_in_the_uncorrected_one() {
    let misses: Vec<String> = (0..ATTEMPTS).map_while(|_| stall_attempt().err()).collect();
    assert!(misses.len() < ATTEMPTS, "{ATTEMPTS} runs: {}", misses.join("; "));
}

/// One run with a 50 ms stall once a second at 2,000 ops/s: about 5% of ops arrive during a
/// stall and queue behind it, so the corrected p99 is tens of ms, while each op alone still
/// takes about D. The uncorrected bound is a tenth of the stall's queue, not a multiple of D: a
/// preempted op on a shared VM takes several D (CI once saw an uncorrected p99 above 2 D), but
/// never the stall's 10 ms and more.
fn stall_attempt() -> Result<(), String> {
    let (out, case) = probe("2000", "poisson", &["-p", "stall_ms=50"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    kept_both(&case)?;
    let open = &case["open_loop"];
    let corrected = nanos(&open["corrected"]["percentiles"]["p99"]);
    let uncorrected = nanos(&open["uncorrected"]["percentiles"]["p99"]);
    let stalled = nanos(&open["uncorrected"]["max"]);
    assert!(stalled > 45e6, "the stalled op itself is seen once: max {stalled} ns");
    if corrected > 10e6 && uncorrected < 10.0 * SERVICE_US * 1e3 {
        return Ok(());
    }
    Err(format!("p99: corrected {corrected} ns (the queue, > 10 ms), uncorrected {uncorrected} ns (< 1 ms)"))
}

#[test]
fn a_rate_the_case_cannot_keep_is_said_and_its_percentiles_left_out() {
    // 15,000 ops/s of a 100 µs op is 1.5 times what one measurer can run.
    let (out, case) = probe("15k", "constant", &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("2 of 2 forks did not keep the rate"), "{stdout}");
    assert!(stdout.contains("cannot keep 15000 ops/s; lower --rate"), "{stdout}");
    let open = &case["open_loop"];
    assert_eq!((open["forks_kept"].as_u64(), open["forks_missed"].as_u64()), (Some(0), Some(2)));
    assert!(open["corrected"].is_null(), "no percentiles from forks that missed: {open:#}");
    assert!(case["forks"][0]["open_loop"]["missed"].is_string());
    assert!(case["forks"][0]["open_loop"]["corrected"].as_array().is_some_and(|h| !h.is_empty()), "kept per fork");
}

#[test]
fn threads_share_the_rate() {
    let (out, case) = probe("4000", "constant", &["--threads", "2"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let iteration = &case["forks"][0]["iterations"][0];
    let per_thread: Vec<u64> =
        iteration["thread_ops"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    // 2,000 ops/s each for 1 s: exactly 2,000 each.
    assert_eq!(per_thread, [2000, 2000], "{iteration:#}");
    // Whether each fork kept the rate is the machine's to say (a busy shared VM may miss it);
    // the case counts the forks that did.
    let kept = case["forks"].as_array().unwrap().iter().filter(|f| f["open_loop"]["missed"].is_null()).count();
    assert_eq!(case["open_loop"]["forks_kept"], kept, "{case:#}");
}

/// N async tasks at a rate are one queue with N servers: `probe/task_in_flight`'s ops (a
/// runtime timer of 200 µs, which ends on the timer's next millisecond) due every 250 µs overlap
/// on 8 tasks (the probe counts them in flight), every scheduled op runs and the corrected mean
/// stays near one op's time; on one task the same schedule queues without bound, and its
/// corrected mean is many times larger.
#[test]
fn async_tasks_at_a_rate_are_one_queue_with_n_in_flight() {
    let _one = alone();
    let fork = |tasks: &str| {
        let mut args = vec!["smoke", "--hidden", "-f", "^probe/task_in_flight$", "--threads", tasks];
        args.extend(["--rate", "4000", "--arrivals", "constant", "--forks", "1", "--warmup", "0"]);
        args.extend(["--iterations", "1", "--time", "200ms"]);
        let (out, report) = run(&args);
        assert_eq!(code(&out), 0, "--threads {tasks}: {}", String::from_utf8_lossy(&out.stderr));
        report["benchmarks"][0]["forks"][0].clone()
    };
    let (eight, one) = (fork("8"), fork("1"));
    let open = &eight["open_loop"];
    assert_eq!((open["scheduled"].as_u64(), open["ran"].as_u64()), (Some(800), Some(800)), "{open:#}");
    let in_flight = eight["iterations"][0]["observed"]["max_in_flight"].as_i64().unwrap();
    assert!((2..=8).contains(&in_flight), "ops overlap, at most 8 at once: {in_flight}");
    let (mean_eight, mean_one) = (moments(&open["corrected"]).0, moments(&one["open_loop"]["corrected"]).0);
    assert!(mean_eight < 5e6, "eight tasks keep up: corrected mean {mean_eight:.0} ns");
    assert!(mean_one > 10.0 * mean_eight, "one task queues: {mean_one:.0} ns against {mean_eight:.0} ns");
}

#[test]
fn bad_rates_and_combinations_are_refused_before_anything_runs() {
    let _one = alone();
    let cases: &[(&[&str], &str)] = &[
        (&["--rate", "0"], "at least 1 op per second"),
        (&["--rate=-5"], "at least 1 op per second"),
        (&["--rate", "fast"], "is not a rate"),
        (&["--rate", "1e12"], "lower --rate"),
        (&["--rate", "1.5"], "whole number"),
        (&["--arrivals", "constant"], "--rate"),
        (&["--rate", "1000", "--mode", "sample"], "drop --mode sample"),
        (&["--rate", "1000", "--baseline-bin", "/bin/true", "--forks", "auto"], "give a fixed count"),
        (&["--rate", "0%"], "whole percentage from 1%"),
        (&["--rates", "250%"], "whole percentage from 1%"),
        (&["--rate", "80%", "--shard", "1/2"], "give rates in ops per second"),
    ];
    for (flags, says) in cases {
        let (_dir, path) = report_path();
        let out = harness()
            .args(["run", "smoke", "--hidden", "-f", "^probe/fixed_service$", "--out"])
            .arg(&path)
            .args(*flags)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(code(&out), 2, "{flags:?}: {stderr}");
        assert!(stderr.contains(says), "{flags:?} should say {says:?}: {stderr}");
        assert!(!path.exists(), "{flags:?}: nothing measured");
    }
    let out = harness().args(["run", "growth", "--rate", "100", "--quiet"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{stderr}");
    assert!(stderr.contains("cannot arrive at a rate"), "{stderr}");
}

#[test]
fn an_ab_run_at_a_rate_is_judged_on_its_p99_fork_pair_by_fork_pair() {
    let _one = alone();
    let (_dir, path) = report_path();
    let out = harness()
        .args(["run", "smoke", "--hidden", "-f", "^probe/fixed_service$", "-p", "service_us=100", "--rate", "4000"])
        .args(["--baseline-bin", env!("CARGO_BIN_EXE_harness"), "--forks", "3", "--warmup-time", "100ms"])
        .args(["--iterations", "3", "--time", "200ms", "--layout-check", "off", "--out"])
        .arg(&path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("base p99") && !stdout.contains("base ops/s"), "latency, not the rate's ops/s: {stdout}");
    let compare = |args: &[&str]| harness().arg("compare").arg(&path).args(args).output().unwrap();
    let c = compare(&["--metric", "latency", "--percentile", "p99.9", "--json"]);
    assert_eq!(code(&c), 0, "{}", String::from_utf8_lossy(&c.stderr));
    let doc = compare_json(&c.stdout);
    assert_eq!((doc["metric"].as_str(), doc["test"]["percentile"].as_str()), (Some("latency"), Some("p99.9")));
    let case = &doc["cases"][0];
    assert_eq!(case["benchmark"], "probe/fixed_service[service_us=100,stall_every_ms=1000,stall_ms=0,rate=4000/s]");
    // Every fork either kept the rate or is counted as missing it (a busy machine may miss).
    let side = |i: usize| case["forks"][i].as_u64().unwrap() + case["missed_rate"][i].as_u64().unwrap();
    assert_eq!((side(0), side(1)), (3, 3), "{case}");
    assert!(case["pairs"].as_array().unwrap().len() <= 3);
    assert!(case["base"].as_f64().unwrap() > 100_000.0, "a p99.9 above the service time: {case}");
    // Its throughput is the rate it was given: refused, with the way to read it.
    let t = compare(&[]);
    assert_eq!(code(&t), 2);
    assert!(String::from_utf8_lossy(&t.stderr).contains("--metric latency"), "{}", String::from_utf8_lossy(&t.stderr));
}

#[test]
fn latency_asked_of_a_closed_loop_report_names_it_and_exits_2() {
    let _one = alone();
    let (_dir, path) = report_path();
    let out = harness()
        .args(["run", "smoke", "-f", "^baseline/noop$", "--forks", "1", "--warmup", "0", "--iterations", "1"])
        .args(["--time", "20ms", "--quiet", "--out"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let c = harness().arg("compare").arg(&path).arg(&path).args(["--metric", "latency"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&c.stderr);
    assert_eq!(code(&c), 2, "{stderr}");
    assert!(stderr.contains("has no open-loop latency") && stderr.contains("--rate"), "{stderr}");
    let p = harness().arg("compare").arg(&path).args(["--metric", "latency", "--percentile", "p42"]).output().unwrap();
    assert_eq!(code(&p), 2);
    assert!(String::from_utf8_lossy(&p.stderr).contains("p99.9"), "{}", String::from_utf8_lossy(&p.stderr));
}

#[test]
fn shares_are_of_the_closed_loop_throughput_measured_first_and_docs_draw_the_curve() {
    let _one = alone();
    let (dir, path) = report_path();
    let out = harness()
        .args(["run", "smoke", "--hidden", "-f", "^probe/fixed_service$", "-p", "service_us=100", "--rates", "30%,60%"])
        .args(["--forks", "1", "--warmup-time", "100ms", "--iterations", "2", "--time", "300ms", "--quiet", "--out"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let report = read_report(&path);
    let cases = report["benchmarks"].as_array().unwrap();
    assert_eq!(cases.len(), 3, "the closed loop, then each share");
    assert!(cases[0].get("rate").is_none());
    let closed = cases[0]["score"]["mean"].as_f64().unwrap();
    for (case, pct) in cases[1..].iter().zip([30.0, 60.0]) {
        assert_eq!(case["rate_share_pct"].as_f64(), Some(pct));
        let per_sec = case["rate"]["per_sec"].as_f64().unwrap();
        assert!((per_sec - closed * pct / 100.0).abs() <= 1.0, "{per_sec} is {pct}% of {closed}");
    }
    let docs = dir.path().join("docs");
    let d = harness().arg("docs").arg(&path).arg("--out-dir").arg(&docs).output().unwrap();
    assert_eq!(code(&d), 0, "{}", String::from_utf8_lossy(&d.stderr));
    let page = std::fs::read_to_string(docs.join("README.md")).unwrap();
    assert!(page.contains("at a rate") && page.contains("| 30% |") && page.contains("| 60% |"), "{page}");
    let svg = std::fs::read_to_string(docs.join("probe-latency-1.svg")).unwrap();
    assert!(svg.contains("p99 (corrected)") && svg.contains("closed loop"), "the curve has its lines");
}
