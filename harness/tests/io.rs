//! I/O forks (`--io`) and the I/O gate (`compare --metric io`), against the real servers: the
//! counts each case's report records, their repeatability, and faults the gate must catch and
//! name while their own checks pass.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;

const QUICK: &[&str] = &["--forks", "1", "--warmup", "0", "--iterations", "1", "--time", "10ms", "--io"];

/// `harness run ARGS --io` into `path`; panics unless it exits 0.
fn run_io(path: &Path, args: &[&str]) -> Value {
    let out = harness().arg("run").args(args).args(QUICK).arg("--out").arg(path).arg("--quiet").output().unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    read_report(path)
}

/// One case's I/O counts, with its ops.
fn io(b: &Value) -> &Value {
    let c = &b["io"]["count"];
    assert!(c["ops"].as_u64().unwrap() > 0, "{}: no I/O counts in {b:#}", b["name"]);
    c
}

/// A count of `c` per op, exactly: panics unless it is a whole number per op.
fn per_op(c: &Value, value: &Value) -> u64 {
    let (n, ops) = (value.as_u64().unwrap_or(0), c["ops"].as_u64().unwrap());
    assert_eq!(n % ops, 0, "{n} over {ops} ops is not a whole number per op: {c:#}");
    n / ops
}

/// `compare BASE NEW --metric io` and extra args: exit code, stdout, stderr.
fn gate(base: &Path, new: &Path, extra: &[&str]) -> (i32, String, String) {
    let out = harness().args(["compare", "--metric", "io"]).arg(base).arg(new).args(extra).output().unwrap();
    (code(&out), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Makes a fault's report stand for its twin's: the same case, as a commit that added the
/// fault's work would leave it.
fn rename(path: &Path, name: &str) {
    let mut report = read_report(path);
    for b in report["benchmarks"].as_array_mut().unwrap() {
        b["name"] = name.into();
    }
    std::fs::write(path, serde_json::to_string(&report).unwrap()).unwrap();
}

#[test]
fn cases_without_a_server_count_no_traffic_and_sqlite_its_statements() {
    let (_dir, path) = report_path();
    let filter = "^baseline/noop$|^sql/(thread|async)_select_by_id$|^orm/diesel_thread_select_by_id$";
    let report = run_io(&path, &["-f", filter, "-p", "db=sqlite", "-p", "row_count=50"]);
    for b in report["benchmarks"].as_array().unwrap() {
        let c = io(b);
        assert_eq!((c["round_trips"].as_u64(), c["bytes_to_server"].as_u64()), (Some(0), Some(0)), "{c:#}");
        let kinds: Vec<&str> = b["forks"].as_array().unwrap().iter().map(|f| f["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["time", "io"], "{}", b["name"]);
        if b["name"] == "baseline/noop" {
            assert_eq!(c["sources"][0]["server"], "none", "{c:#}");
            continue;
        }
        // rusqlite, sqlx and Diesel alike: BEGIN, the select, COMMIT, one row, traced by SQLite.
        assert_eq!(c["sources"][0]["server"], "SQLite", "{c:#}");
        let statements = c["statements"].as_object().unwrap();
        let per: Vec<(&str, u64)> = statements.iter().map(|(k, v)| (k.as_str(), per_op(c, v))).collect();
        assert_eq!(per.len(), 3, "{}: {c:#}", b["name"]);
        assert!(per.iter().all(|(_, n)| *n == 1) && statements.contains_key("BEGIN"), "{}: {c:#}", b["name"]);
        assert_eq!(per_op(c, &c["rows_returned"]), 1, "{c:#}");
    }
    // A report without I/O counts fails the gate closed.
    let (_d, plain) = report_path();
    let out = harness()
        .args(["run", "-f", "^baseline/noop$", "--iterations", "1", "--time", "10ms", "--warmup", "0", "-q"])
        .arg("--out")
        .arg(&plain)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0);
    let (code, _, err) = gate(&plain, &plain, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no I/O counts") && err.contains("harness run --io"), "{err}");
    // Only one side lacks them: the message names that report, and only it.
    let (code, _, err) = gate(&path, &plain, &[]);
    assert_eq!(code, 2, "{err}");
    let named = |p: &Path| err.contains(&p.display().to_string());
    assert!(named(&plain) && !named(&path), "the report without I/O counts is named: {err}");
}

#[test]
#[ignore = "needs PostgreSQL at DATABASE_URL: `cargo test -- --include-ignored` runs it (.ci/run does)"]
fn every_sql_shape_makes_three_round_trips_per_op_on_postgres_and_twice_the_same() {
    let (_dir, path) = report_path();
    let args = ["-f", "^sql/", "-p", "db=postgres", "-p", "row_count=100"];
    let first = run_io(&path, &args);
    let (_dir2, again) = report_path();
    let second = run_io(&again, &args);
    let cases = first["benchmarks"].as_array().unwrap();
    assert_eq!(cases.len(), 4, "{first:#}");
    for (b, twin) in cases.iter().zip(second["benchmarks"].as_array().unwrap()) {
        let c = io(b);
        assert_eq!(per_op(c, &c["round_trips"]), 3, "{}: {c:#}", b["name"]);
        let statements: u64 = c["statements"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
        assert_eq!(statements, 3 * c["ops"].as_u64().unwrap(), "{}: begin, select, commit: {c:#}", b["name"]);
        assert_eq!(per_op(c, &c["rows_returned"]), 1, "{}: {c:#}", b["name"]);
        assert_eq!(c["sources"][0]["server"], "PostgreSQL");
        let counts = |v: &Value| {
            let mut v = v["io"]["count"].clone();
            v.as_object_mut().unwrap().remove("sources");
            v
        };
        assert_eq!(counts(b), counts(twin), "{}: two runs of one build differ", b["name"]);
    }
    let (code, out, err) = gate(&path, &again, &[]);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
#[ignore = "needs PostgreSQL at DATABASE_URL: `cargo test -- --include-ignored` runs it (.ci/run does)"]
fn the_io_gate_names_an_extra_round_trip_and_an_n_plus_one_on_postgres() {
    let (_dir, base) = report_path();
    let args = ["-p", "db=postgres", "-p", "row_count=100"];
    run_io(&base, &[&["-f", "^sql/thread_select_by_id$"][..], &args].concat());
    let (_dir2, new) = report_path();
    run_io(&new, &[&["--hidden", "-f", "^fault/extra_round_trip$"][..], &args].concat());
    rename(&new, "sql/thread_select_by_id");
    let (_dir3, md) = report_path();
    let (code, out, err) = gate(&base, &new, &["--markdown", md.to_str().unwrap()]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("REGRESSED") && out.contains("round trip(s) per op (3 → "), "{out}");
    assert!(out.contains("+1 statement(s) per op (0 → 1): SELECT ?::int8"), "{out}");
    assert!(err.contains("regression: 1 case(s) fail the gate"), "{err}");
    let markdown = std::fs::read_to_string(&md).unwrap();
    assert!(
        markdown.contains("**1 benchmark(s) do more I/O per op.**") && markdown.contains("SELECT ?::int8"),
        "{markdown}"
    );
    let (code, json, _) = gate(&base, &new, &["--json"]);
    assert_eq!(code, 3);
    let doc = compare_json(json.as_bytes());
    assert_eq!((doc["metric"].as_str(), doc["cases"][0]["verdict"].as_str()), (Some("io"), Some("regressed")));
    assert!(doc["cases"][0]["changes"][0].as_str().unwrap().contains("round trip"), "{doc:#}");
    let (code, out, err) = gate(&base, &base, &[]);
    assert_eq!(code, 0, "A/A: {out}{err}");
    an_n_plus_one_is_named(&base, &args);
}

/// `fault/n_plus_one` (a list, then one select per listed row) run with `args`, as the new
/// report of `sql/thread_select_by_id` against `base`: exit 3, both statements named.
fn an_n_plus_one_is_named(base: &Path, args: &[&str]) {
    let (_dir, n_plus_one) = report_path();
    run_io(&n_plus_one, &[&["--hidden", "-f", "^fault/n_plus_one$"][..], args].concat());
    rename(&n_plus_one, "sql/thread_select_by_id");
    let (code, out, err) = gate(base, &n_plus_one, &[]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        out.contains("+1 statement(s) per op (0 → 1): SELECT id FROM benchmark_users ORDER BY id LIMIT ?"),
        "{out}"
    );
    assert!(
        out.contains("+5 statement(s) per op (0 → 5): SELECT username FROM benchmark_users WHERE id = $1"),
        "{out}"
    );
}

#[test]
#[ignore = "needs Redis at REDIS_URL: `cargo test -- --include-ignored` runs it (.ci/run does)"]
fn redis_gets_are_one_round_trip_with_either_client_and_the_gate_catches_one_too_many() {
    let (_dir, path) = report_path();
    let report = run_io(&path, &["-f", "^redis/", "-p", "cache_size=100"]);
    let expected = [("redis/redis_rs_get", 1), ("redis/fred_get", 1), ("redis/near_hit", 0), ("redis/near_miss", 1)];
    for (name, trips) in expected {
        let c = io(bench(&report, name));
        assert_eq!(per_op(c, &c["round_trips"]), trips, "{name}: {c:#}");
        assert_eq!(per_op(c, &c["messages"]["GET"]), trips, "{name}: {c:#}");
    }
    let (_dir2, base) = report_path();
    run_io(&base, &["-f", "^redis/redis_rs_get$", "-p", "cache_size=100"]);
    let (_dir3, new) = report_path();
    run_io(&new, &["--hidden", "-f", "^fault/extra_get$", "-p", "cache_size=100"]);
    rename(&new, "redis/redis_rs_get");
    let (code, out, err) = gate(&base, &new, &[]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        out.contains("+1 round trip(s) per op (1 → 2)") && out.contains("+1 statement(s) per op (1 → 2): GET"),
        "{out}"
    );
}

#[test]
#[ignore = "needs PostgreSQL at DATABASE_URL and valgrind: `cargo test -- --include-ignored` runs it (.ci/run does)"]
fn a_missing_index_passes_the_instruction_gate_and_fails_the_io_gate() {
    let args = ["-p", "db=postgres", "-p", "row_count=1000", "--instructions"];
    let (_dir, base) = report_path();
    run_io(&base, &[&["-f", "^sql/thread_select_by_id$"][..], &args].concat());
    let (_dir2, new) = report_path();
    run_io(&new, &[&["--hidden", "-f", "^fault/missing_index$"][..], &args].concat());
    rename(&new, "sql/thread_select_by_id");
    let blind = harness().args(["compare", "--metric", "instructions"]).arg(&base).arg(&new).output().unwrap();
    let shown = String::from_utf8_lossy(&blind.stdout);
    assert_eq!(
        code(&blind),
        0,
        "the client's instructions barely move: {shown}{}",
        String::from_utf8_lossy(&blind.stderr)
    );
    let (code, out, err) = gate(&base, &new, &[]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("sequential scans (pg_seq_scan) +1 per op (0 → 1)"), "{out}");
    assert!(out.contains("rows read by sequential scans (pg_seq_tup_read) +"), "{out}");
    assert!(out.contains("base trips/op") && !out.contains("round trip(s) per op"), "same traffic: {out}");
}

#[test]
fn sqlite_counts_its_engine_work_and_the_gate_catches_each_fault() {
    let args = ["-p", "db=sqlite", "-p", "row_count=1000"];
    let (_dir, base) = report_path();
    let report = run_io(&base, &[&["-f", "^sql/thread_select_by_id$"][..], &args].concat());
    let server = &report["benchmarks"][0]["io"]["server"];
    let ops = server["ops_run"].as_i64().unwrap();
    assert_eq!(server["sqlite_statement_runs"].as_i64(), Some(3 * ops), "BEGIN, the select, COMMIT: {server:#}");
    assert_eq!(server["sqlite_fullscan_steps"].as_i64(), Some(0), "a lookup by the row id: {server:#}");
    assert!(server["sqlite_vm_steps"].as_i64().unwrap() >= 3 * ops, "{server:#}");
    assert!(server["sqlite_cache_hits"].as_i64().unwrap() >= ops, "{server:#}");
    // A second run counts the same engine work: the gate passes it.
    let (_dir1, again) = report_path();
    run_io(&again, &[&["-f", "^sql/thread_select_by_id$"][..], &args].concat());
    let (code, out, err) = gate(&base, &again, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let (_dir2, new) = report_path();
    run_io(&new, &[&["--hidden", "-f", "^fault/missing_index$"][..], &args].concat());
    rename(&new, "sql/thread_select_by_id");
    let (code, out, err) = gate(&base, &new, &[]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("rows stepped through by full scans (sqlite_fullscan_steps) +"), "{out}");
    assert!(out.contains("SQLite VM steps (sqlite_vm_steps) +"), "{out}");
    assert!(!out.contains("statement(s) per op"), "the same statements: {out}");
    // An N+1 loop and an extra statement on SQLite: its statements are traced and named.
    an_n_plus_one_is_named(&base, &args);
    let (_dir3, extra) = report_path();
    run_io(&extra, &[&["--hidden", "-f", "^fault/extra_round_trip$"][..], &args].concat());
    rename(&extra, "sql/thread_select_by_id");
    let (code, out, err) = gate(&base, &extra, &[]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("+1 statement(s) per op (0 → 1): SELECT ?"), "{out}");
    assert!(!out.contains("round trip(s) per op"), "no server, no round trips: {out}");
}

#[test]
fn a_gate_on_counts_one_report_lacks_names_that_report() {
    let dir = tempfile::tempdir().unwrap();
    let counted = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/io-sqlite.json");
    let without = |keep: usize, name: &str| {
        let mut report = read_report(&counted);
        for b in report["benchmarks"].as_array_mut().unwrap().iter_mut().skip(keep) {
            b.as_object_mut().unwrap().remove("io");
        }
        let path = dir.path().join(name);
        std::fs::write(&path, serde_json::to_string(&report).unwrap()).unwrap();
        path
    };
    // No case counted: the file is named before anything is compared.
    let none = without(0, "no-io.json");
    for (base, new) in [(&counted, &none), (&none, &counted)] {
        let (code, _, err) = gate(base, new, &[]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("no-io.json has no I/O counts") && err.contains("harness run --io"), "{err}");
    }
    // Some cases counted: the gate names the cases and the side that lacks them.
    let some = without(1, "some-io.json");
    for (base, new, which) in [(&counted, &some, "in the new report"), (&some, &counted, "in the base report")] {
        let (code, _, err) = gate(base, new, &[]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(which) && err.contains("harness run --io"), "{which}: {err}");
    }
}

#[test]
fn transports_io_cannot_count_are_refused_before_any_fork() {
    let (_dir, path) = common::report_path();
    let refused = |args: &[&str]| {
        let out = harness().arg("run").args(args).arg("--out").arg(&path).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(common::code(&out), 2, "{args:?}: {err}");
        assert!(!path.exists(), "{args:?}: nothing runs, so no report: {err}");
        assert!(!err.contains("fork"), "{args:?}: refused before any fork: {err}");
        err
    };
    let err = refused(&["main", "-f", "^redis/", "--io", "--redis-url", "redis+unix:///tmp/none.sock"][..]);
    assert_eq!(err.lines().count(), 1, "one line, however many cases: {err}");
    assert!(err.contains("plain TCP only") && err.contains("redis://127.0.0.1:6379"), "{err}");
    let err =
        refused(&["main", "-f", "^redis/redis_rs_get$", "--io", "--redis-url", "rediss://u:s3cret@127.0.0.1:6380"][..]);
    assert!(err.contains("plain TCP only") && !err.contains("s3cret"), "{err}");
    let err = refused(&["main", "-f", "^sql/thread_select_by_id$", "-p", "db=postgres_tls", "--io"][..]);
    assert!(err.contains("over TLS") && err.contains("-p db=postgres"), "{err}");
    // A URL whose sslmode lets each driver choose, or says the other transport.
    let err = refused(&["main", "--database-url", "postgres://u:s3cret@127.0.0.1/test?sslmode=prefer"][..]);
    assert!(err.contains("sslmode=prefer") && err.contains("db=postgres_tls") && !err.contains("s3cret"), "{err}");
    let url = "postgres://u@127.0.0.1/test?sslmode=disable";
    let err = refused(&["main", "-f", "^sql/thread_select_by_id$", "-p", "db=postgres_tls", "--database-url", url][..]);
    assert!(err.contains("sslmode=disable") && err.contains("db=postgres_tls runs over TLS"), "{err}");
}

#[test]
fn an_io_count_over_no_ops_or_off_its_total_is_refused_as_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let counted = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/io-postgres.json");
    let edited = |name: &str, edit: &dyn Fn(&mut Value)| {
        let mut report = read_report(&counted);
        let io = &mut report["benchmarks"][0]["io"];
        edit(io);
        let path = dir.path().join(name);
        std::fs::write(&path, serde_json::to_string(&report).unwrap()).unwrap();
        path
    };
    let no_ops = edited("no-ops.json", &|io| io["count"]["ops"] = 0.into());
    let off = edited("off.json", &|io| io["per_op"]["round_trips"] = 2.0.into());
    for (bad, says) in
        [(&no_ops, "says 0 ops but 3000 round trips"), (&off, "says 2 round trips per op, but its total is")]
    {
        for (base, new) in [(&counted, bad), (bad, &counted)] {
            let (code, _, err) = gate(base, new, &[]);
            assert_eq!(code, 2, "{err}");
            let name = bad.file_name().unwrap().to_str().unwrap();
            assert!(err.contains(&format!("{name} is corrupt")) && err.contains(says), "{err}");
            assert!(err.contains("sql/thread_select_by_id"), "the case is named: {err}");
        }
    }
}
