//! CLI tests of the servers a run talks to: their URLs checked when parsed, an unreachable or
//! lost server named in one line with the fix, and never a password shown.

mod common;
use common::*;

#[test]
fn unreachable_postgres_fails_the_case_and_never_shows_the_password() {
    let (_dir, path) = report_path();
    let out = harness()
        .args(["run", "sql", "-f", "^sql/thread", "-p", "db=postgres", "-p", "row_count=10", "--warmup", "0"])
        .args([
            "--iterations",
            "1",
            "--time",
            "20ms",
            "--quiet",
            "--database-url",
            "postgres://bench:s3cret@127.0.0.1:1/test",
        ])
        .arg("--out")
        .arg(&path)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(code(&out), 1, "{err}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("s3cret") && !err.contains("s3cret"), "password leaked:\n{err}\n{text}");
    let report = read_report(&path);
    let case = &report["benchmarks"][0];
    assert!(case["score"].is_null() && case["forks"].as_array().unwrap().is_empty(), "no substitute result");
    let reason = case["skipped"].as_str().unwrap();
    assert!(reason.contains("cannot reach PostgreSQL at postgres://bench:***@127.0.0.1:1/test"), "{reason}");
    assert!(reason.contains("start PostgreSQL or pass --database-url"), "{reason}");
    assert_eq!(err.lines().filter(|l| l.starts_with("error:")).count(), 1, "{err}");
    assert_eq!(report["meta"]["settings"]["database_url"], "postgres://bench:***@127.0.0.1:1/test");
    assert!(err.contains("postgres://bench:***@127.0.0.1:1/test"), "{err}");
}

#[test]
fn unreachable_redis_fails_fast_in_one_line_and_skips_its_cases() {
    let (_dir, path) = report_path();
    let started = std::time::Instant::now();
    let out = harness()
        .args(["run", "redis", "--quiet", "--redis-url", "redis://user:s3cretpw@127.0.0.1:1", "--out"])
        .arg(&path)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(code(&out), 1, "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "not fast: {:?}", started.elapsed());
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(errors[0].contains("cannot reach Redis at redis://user:***@127.0.0.1:1"), "{err}");
    assert!(errors[0].contains("start Redis or pass --redis-url"), "{err}");
    let text = std::fs::read_to_string(&path).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(![&err, &text, &stdout.to_string()].iter().any(|s| s.contains("s3cretpw")), "password leaked");
    let report = read_report(&path);
    for b in report["benchmarks"].as_array().unwrap() {
        assert!(b["skipped"].as_str().unwrap().contains("cannot reach Redis"), "{b}");
        assert!(b["score"].is_null() && b["forks"].as_array().unwrap().is_empty(), "{b}");
        assert_eq!(b["params"]["redis_url"], "redis://user:***@127.0.0.1:1");
    }
}

#[test]
fn server_urls_are_checked_when_parsed_and_nothing_is_written() {
    refused(&["run", "redis", "--redis-url", "not a url"], "is not a URL");
    refused(&["run", "redis", "--redis-url", "http://127.0.0.1:6379"], "redis:// or rediss://");
    refused(&["run", "sql", "--database-url", "mysql://root:pw@127.0.0.1:3306/test"], "postgres:// or postgresql://");
    refused(&["run", "redis", "-p", "redis_url=http://127.0.0.1:6379"], "Redis URL 'http://127.0.0.1:6379' of redis/");
    let out = harness().args(["list", "redis", "--redis-url", "not a url"]).output().unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let leaky = harness().args(["list", "redis", "--redis-url", "http://u:s3cretpw@h:1"]).output().unwrap();
    assert!(!stderr(&leaky).contains("s3cretpw"), "{}", stderr(&leaky));
    let from_env = harness().args(["list", "redis"]).env("REDIS_URL", "http://h:1").output().unwrap();
    assert!(stderr(&from_env).contains("environment variable REDIS_URL"), "{}", stderr(&from_env));
}

#[test]
fn list_json_names_every_case_and_its_servers_without_passwords() {
    let url = "redis://u:s3cretpw@127.0.0.1:6379";
    let out = harness().args(["list", "cache", "redis", "--json", "--redis-url", url]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("s3cretpw"), "{text}");
    let cases: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cases = cases.as_array().unwrap();
    let plain = harness().args(["list", "cache", "redis"]).output().unwrap();
    assert_eq!(cases.len(), String::from_utf8_lossy(&plain.stdout).lines().count());
    let fred = cases.iter().find(|c| c["workload"] == "redis/fred_get").unwrap();
    assert_eq!(fred["servers"], serde_json::json!(["Redis"]));
    assert_eq!(fred["params"]["redis_url"], "redis://u:***@127.0.0.1:6379");
    let noop = cases.iter().find(|c| c["workload"] == "cache/moka_hit").unwrap();
    assert_eq!((noop["servers"].as_array().unwrap().len(), noop["threads"].as_u64()), (0, Some(1)));
}

#[test]
fn a_server_lost_mid_run_is_a_server_error_and_skips_the_cases_that_need_it() {
    let mut redis = OwnRedis::start();
    let (_dir, path) = report_path();
    let url = format!("redis://127.0.0.1:{}", redis.1);
    let mut run = harness();
    run.args(["run", "redis", "--redis-url", &url, "--warmup", "0", "--iterations", "50", "--time", "100ms"])
        .arg("--out")
        .arg(&path)
        .arg("--quiet")
        .timeout(std::time::Duration::from_secs(120));
    let child = std::thread::spawn(move || run.output().unwrap());
    // The first fork measures for 5 s; lose the server in the middle of it.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let _ = redis.0.kill();
    let out = child.join().unwrap();
    let err = stderr(&out);
    assert_eq!(code(&out), 1, "{err}");
    let report = read_report(&path);
    let cases = report["benchmarks"].as_array().unwrap();
    let failures: Vec<&serde_json::Value> =
        cases.iter().flat_map(|b| b["forks"].as_array().unwrap()).filter_map(|f| f.get("failure")).collect();
    assert_eq!(failures.len(), 1, "one fork failed, the rest never ran: {failures:?}");
    assert_eq!(failures[0]["kind"], "server", "{failures:?}");
    assert!(failures[0]["message"].as_str().unwrap().starts_with("Redis failed an op: "), "{failures:?}");
    let skipped: Vec<&str> = cases.iter().filter_map(|b| b["skipped"].as_str()).collect();
    assert_eq!(skipped.len(), cases.len() - 1, "{cases:?}");
    assert!(skipped.iter().all(|s| s.contains(&format!("Redis at {url} failed during"))), "{skipped:?}");
    assert_eq!(err.lines().filter(|l| l.contains("remaining case(s) that need it")).count(), 1, "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// A Redis server of the test's own on a free port, killed when dropped.
struct OwnRedis(std::process::Child, u16);

impl OwnRedis {
    fn start() -> OwnRedis {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server (apt-get install redis-server) for this test");
        // Dropped (killed and waited for) on every path.
        let redis = OwnRedis(child, port);
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return redis;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("redis-server did not start on port {port}");
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
