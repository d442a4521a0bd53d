//! A server that accepts connections and never answers cannot hold a run: not the parent's
//! checks, not its cleanups, not an interrupt. On PostgreSQL and on Redis, each tested against
//! a listener that never answers, and one that answers the harness's first question and then
//! falls silent.

mod common;

use common::{code, harness, read_report, report_path};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// PostgreSQL's SSLRequest, the harness's first question to a PostgreSQL server.
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];

/// A listener on a fresh port that holds every connection open. With `answer_probe`, it
/// answers an SSLRequest ('N') or a PING (+PONG) first; either way it never answers anything
/// else. Returns the port and how many connections it held unanswered.
fn silent_server(answer_probe: bool) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = Arc::new(AtomicUsize::new(0));
    let count = held.clone();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let count = count.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 256];
                let n = conn.read(&mut buf).unwrap_or(0);
                let reply: Option<&[u8]> = match &buf[..n] {
                    b if answer_probe && b == SSL_REQUEST => Some(b"N"),
                    b if answer_probe && b == b"PING\r\n" => Some(b"+PONG\r\n"),
                    _ => None,
                };
                match reply {
                    Some(r) => drop(conn.write_all(r)),
                    None => drop(count.fetch_add(1, Ordering::SeqCst)),
                }
                std::thread::sleep(Duration::from_secs(600));
            });
        }
    });
    (port, held)
}

/// `run` arguments for one quick case on the server at `port`.
fn case_on(server: &str, port: u16) -> Vec<String> {
    let mut args: Vec<String> = match server {
        "postgres" => {
            ["-f", "^sql/thread_select_by_id$", "-p", "db=postgres", "-p", "row_count=1000", "--database-url"]
                .map(String::from)
                .into_iter()
                .chain([format!("postgres://postgres@127.0.0.1:{port}/test")])
                .collect()
        }
        _ => ["-f", "^redis/redis_rs_get$", "-p", "cache_size=1000", "--redis-url"]
            .map(String::from)
            .into_iter()
            .chain([format!("redis://127.0.0.1:{port}")])
            .collect(),
    };
    args.extend(["--forks", "1", "--iterations", "1", "--time", "10ms", "--warmup-time", "10ms"].map(String::from));
    args
}

#[test]
fn a_server_that_never_answers_skips_its_cases_at_once() {
    for server in ["postgres", "redis"] {
        let (port, _) = silent_server(false);
        let (_dir, out) = report_path();
        let started = Instant::now();
        let run = harness().arg("run").args(case_on(server, port)).arg("--out").arg(&out).output().unwrap();
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(code(&run), 1, "{server}: {err}");
        assert!(started.elapsed() < Duration::from_secs(20), "{server}: took {:?}", started.elapsed());
        assert!(
            err.contains("accepts connections but did not answer within 2s") && err.contains("skipping 1 case"),
            "{err}"
        );
        let report = read_report(&out);
        assert_eq!(report["status"], "complete");
        assert!(report["benchmarks"][0]["skipped"].as_str().unwrap().contains("did not answer"), "{report:#}");
    }
}

#[test]
fn a_server_that_falls_silent_fails_the_fork_at_its_timeout_and_the_run_ends() {
    for server in ["postgres", "redis"] {
        let (port, held) = silent_server(true);
        let (_dir, out) = report_path();
        let started = Instant::now();
        let run = harness()
            .arg("run")
            .args(case_on(server, port))
            .args(["--fork-timeout", "3s", "--out"])
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(code(&run), 1, "{server}: {err}");
        assert!(started.elapsed() < Duration::from_secs(40), "{server}: took {:?}\n{err}", started.elapsed());
        assert!(held.load(Ordering::SeqCst) >= 1, "{server}: the worker connected");
        let report = read_report(&out);
        assert_eq!(report["status"], "complete", "{report:#}");
        assert_eq!(report["benchmarks"][0]["forks"][0]["failure"]["kind"], "timeout", "{report:#}");
        if server == "postgres" {
            assert!(err.contains("did not answer within 3s"), "the bounded cleanup says why it gave up: {err}");
        }
    }
}

/// Starts a run on a server that falls silent, waits until `connections` are held, then sends
/// `signals` SIGINTs `gap` apart; returns the exit code, the seconds from the first signal to
/// the exit, the report and the run's stderr.
fn interrupt(server: &str, connections: usize, signals: usize, gap: Duration) -> (i32, f64, serde_json::Value, String) {
    let (port, held) = silent_server(true);
    let (dir, out) = report_path();
    let stderr = dir.path().join("stderr");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("harness"))
        .arg("run")
        .args(case_on(server, port))
        .args(["--fork-timeout", "6s", "--quiet", "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let waited = Instant::now();
    while held.load(Ordering::SeqCst) < connections {
        assert!(waited.elapsed() < Duration::from_secs(60), "{server}: nobody connected");
        std::thread::sleep(Duration::from_millis(20));
    }
    let signalled = Instant::now();
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    for _ in 0..signals {
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
        std::thread::sleep(gap);
    }
    let status = child.wait().unwrap();
    let err = std::fs::read_to_string(&stderr).unwrap();
    (status.code().unwrap_or(-1), signalled.elapsed().as_secs_f64(), read_report(&out), err)
}

#[test]
fn one_ctrl_c_ends_a_run_held_by_a_silent_server_within_seconds() {
    // PostgreSQL: the parent's sweep, then the worker; Redis: the worker.
    for (server, connections) in [("postgres", 2), ("redis", 1)] {
        let (code, seconds, report, _) = interrupt(server, connections, 1, Duration::from_millis(100));
        assert_eq!(code, 130, "{server}");
        assert!(seconds < 8.0, "{server}: {seconds:.1} s from Ctrl-C to exit");
        assert_eq!(report["status"], "interrupted", "{server}: {report:#}");
    }
}

#[test]
fn a_second_ctrl_c_still_leaves_an_interrupted_report() {
    let (code, seconds, report, _) = interrupt("postgres", 2, 2, Duration::from_millis(100));
    assert_eq!(code, 130);
    assert!(seconds < 5.0, "{seconds:.1} s from Ctrl-C to exit");
    assert_eq!(report["status"], "interrupted", "never `running`: {report:#}");
}

#[test]
fn a_storm_of_ctrl_c_ends_sooner_and_still_leaves_the_truth() {
    // One Ctrl-C here waits out the bounded cleanup on the silent server (3 s); 40 of them 5 ms
    // apart cut that wait to a second, and skip neither the report nor the line on the schema.
    let (code, seconds, report, err) = interrupt("postgres", 2, 40, Duration::from_millis(5));
    assert_eq!(code, 130, "{err}");
    assert!(seconds < 3.0, "{seconds:.1} s from the first Ctrl-C to exit");
    assert_eq!(report["status"], "interrupted", "never `running`: {report:#}");
    let line: Vec<&str> = err.lines().filter(|l| l.contains("cannot remove what worker")).collect();
    assert_eq!(line.len(), 1, "one line says what is left: {err}");
    assert!(line[0].contains("did not answer within 1s") && line[0].contains("the next run"), "{}", line[0]);
}
