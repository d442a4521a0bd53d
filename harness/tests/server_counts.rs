//! Proof from the servers' side: every PostgreSQL and Redis fork records what the server counted
//! of its work (`observed`), the counts match the ops the worker ran, and a workload that skips
//! its statement fails its fork although its own checks pass.

mod common;
use common::*;
use serde_json::Value;

const QUICK: &[&str] =
    &["--forks", "1", "--warmup", "1", "--iterations", "2", "--time", "100ms", "--warmup-time", "50ms"];

/// The `observed` counts of every fork of every case, with the case's name.
fn observed(report: &Value) -> Vec<(String, Value)> {
    let mut out = vec![];
    for b in report["benchmarks"].as_array().unwrap() {
        for f in b["forks"].as_array().unwrap() {
            assert_eq!(f["status"], "ok", "{}: {f:#}", b["name"]);
            out.push((b["name"].as_str().unwrap().to_string(), f["observed"].clone()));
        }
    }
    out
}

/// Redis counts commands server-wide: its tests take turns, so that one counts only its own.
static REDIS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn redis_alone() -> std::sync::MutexGuard<'static, ()> {
    REDIS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn count(observed: &Value, name: &str) -> i64 {
    observed[name].as_i64().unwrap_or_else(|| panic!("no {name} in {observed}"))
}

#[test]
fn sqlite_forks_record_every_run_of_their_prepared_statements() {
    let mut args = vec!["-f", "^sql/(thread|held_connection)_|^ids/(insert_growth|batch_insert)$", "-p", "db=sqlite"];
    args.extend(["-p", "row_count=50", "-p", "kind=snowflake"]);
    args.extend_from_slice(QUICK);
    let (out, report) = run(&args);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let forks = observed(&report);
    assert_eq!(forks.len(), 4, "{forks:?}");
    for (name, seen) in forks {
        let per_op = match name.as_str() {
            "ids/insert_growth" => 1,
            "ids/batch_insert" => 50 + 3,
            _ => 3,
        };
        assert_eq!(count(&seen, "sqlite_statement_runs"), per_op * count(&seen, "ops_run"), "{name}: {seen}");
    }
}

#[test]
#[ignore = "needs PostgreSQL at DATABASE_URL: `cargo test -- --include-ignored` runs it (.ci/run does)"]
fn every_postgres_fork_records_server_counts_that_match_its_ops() {
    let mut args = vec!["-f", "^(sql|orm)/.*thread|^sql/async|^ids/(insert_growth|select_by_id)$", "-p", "db=postgres"];
    args.extend(["-p", "row_count=200", "-p", "kind=uuid_v7"]);
    args.extend_from_slice(QUICK);
    let (out, report) = run(&args);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let forks = observed(&report);
    assert!(forks.len() >= 5, "{forks:?}");
    for (name, seen) in forks {
        let ops = count(&seen, "ops_run");
        assert!(ops > 0, "{name}: {seen}");
        let per_op = if name == "ids/insert_growth" { "pg_rows_inserted" } else { "pg_table_scans" };
        assert_eq!(count(&seen, per_op), ops, "{name}: one {per_op} per op: {seen}");
        assert!(count(&seen, "pg_xact_commit") >= ops, "{name}: a commit per op: {seen}");
    }
}

#[test]
#[ignore = "needs PostgreSQL at DATABASE_URL: `cargo test -- --include-ignored` runs it (.ci/run does)"]
fn a_workload_that_skips_its_statement_fails_on_the_server_counts() {
    let mut args = vec!["--hidden", "-f", "^fault/skips_statement$", "-p", "db=postgres", "-p", "row_count=100"];
    args.extend_from_slice(QUICK);
    let (out, report) = run(&args);
    assert_eq!(code(&out), 1, "{}", String::from_utf8_lossy(&out.stderr));
    let fork = &bench(&report, "fault/skips_statement")["forks"][0];
    assert_eq!(fork["status"], "failed");
    assert_eq!(fork["failure"]["kind"], "verify", "{fork:#}");
    let message = fork["failure"]["message"].as_str().unwrap();
    assert!(message.contains("counted 0 pg_table_scans"), "{message}");
    assert!(message.contains("the op did not do the work it claims"), "{message}");
    // What the server counted stays in the report for the reader: commits, no scans.
    let seen = &fork["observed"];
    assert_eq!(count(seen, "pg_table_scans"), 0, "{seen}");
    assert!(count(seen, "pg_xact_commit") >= count(seen, "ops_run"), "{seen}");
}

#[test]
#[ignore = "needs Redis at REDIS_URL: `cargo test -- --include-ignored` runs it (.ci/run does)"]
fn redis_forks_record_gets_and_near_cache_loads() {
    let _turn = redis_alone();
    let mut args = vec!["-f", "^redis/(fred_get|near_hit|near_miss)$", "-p", "cache_size=100"];
    args.extend_from_slice(QUICK);
    let (out, report) = run(&args);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    for (name, seen) in observed(&report) {
        let ops = count(&seen, "ops_run");
        let gets = count(&seen, "redis_get_calls");
        match name.as_str() {
            "redis/near_hit" => assert_eq!(count(&seen, "near_cache_loads"), 0, "{name}: {seen}"),
            "redis/near_miss" => assert_eq!(count(&seen, "near_cache_loads"), ops, "{name}: {seen}"),
            _ => {}
        }
        if name != "redis/near_hit" {
            assert!(gets >= ops, "{name}: a GET per op reached Redis: {seen}");
        }
    }
}

#[test]
#[ignore = "needs PostgreSQL at DATABASE_URL and Redis at REDIS_URL: `cargo test -- --include-ignored` runs it (.ci/run does)"]
fn forks_at_a_rate_hold_the_servers_counts_to_every_op_they_ran() {
    // The Redis clients, the near cache (hit and miss) and two SQL shapes open-loop: every op
    // scheduled ran, and what the servers counted is one GET, one near-cache load or one index
    // scan per op the worker ran (its calibration and warmup included, as `ops_run` says).
    let _turn = redis_alone();
    let mut args = vec!["-f", "^(redis/(redis_rs_get|fred_get|near_hit|near_miss)|sql/(thread|async)_select_by_id)$"];
    args.extend_from_slice(&["-p", "cache_size=100", "-p", "db=postgres", "-p", "row_count=1000", "--rate", "1000"]);
    args.extend_from_slice(QUICK);
    let (out, report) = run(&args);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let cases = report["benchmarks"].as_array().unwrap();
    assert_eq!(cases.len(), 6, "{report:#}");
    for b in cases {
        let open = &b["forks"][0]["open_loop"];
        assert!(open["scheduled"].as_u64().unwrap() > 0 && open["ran"] == open["scheduled"], "{}: {open}", b["name"]);
    }
    for (name, seen) in observed(&report) {
        let ops = count(&seen, "ops_run");
        match name.as_str() {
            "redis/near_hit" => assert_eq!(count(&seen, "redis_get_calls"), 0, "{name}: {seen}"),
            "redis/near_miss" => {
                assert_eq!(count(&seen, "near_cache_loads"), ops, "{name}: {seen}");
                assert_eq!(count(&seen, "redis_get_calls"), ops, "{name}: {seen}");
            }
            "redis/redis_rs_get" | "redis/fred_get" => {
                assert_eq!(count(&seen, "redis_get_calls"), ops, "{name}: {seen}")
            }
            _ => assert_eq!(count(&seen, "pg_table_scans"), ops, "{name}: {seen}"),
        }
    }
}
