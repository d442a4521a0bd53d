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

/// How a test server treats a connection before it holds it open for good.
#[derive(Clone, Copy, PartialEq)]
enum Held {
    /// Never answers.
    Silent,
    /// Answers the probe (an SSLRequest 'N', a PING +PONG), then nothing else.
    AfterProbe,
    /// Answers the probe, then the next message with the header of a 2 GiB PostgreSQL message
    /// (an authentication request) and a few bytes of it.
    Oversized,
}

/// A listener on a fresh port that holds every connection open, as `how` says. Returns the
/// port and how many connections it held without an answer to their first real message.
fn silent_server(how: Held) -> (u16, Arc<AtomicUsize>) {
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
                    b if how != Held::Silent && b == SSL_REQUEST => Some(b"N"),
                    b if how != Held::Silent && b == b"PING\r\n" => Some(b"+PONG\r\n"),
                    _ => None,
                };
                match reply {
                    Some(r) if how == Held::Oversized => {
                        let _ = conn.write_all(r).and_then(|()| conn.read(&mut buf));
                        let _ = conn.write_all(&[b"R".as_slice(), &0x7fff_fff0u32.to_be_bytes(), &[0; 16]].concat());
                        count.fetch_add(1, Ordering::SeqCst);
                    }
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
        let (port, _) = silent_server(Held::Silent);
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

/// A PostgreSQL that answers the SSLRequest with 'N' cannot serve a `db=postgres_tls` case:
/// its cases are skipped before any fork, in one line that names the server and the fix.
#[test]
fn a_server_without_tls_skips_the_tls_cases_before_any_fork() {
    let (port, held) = silent_server(Held::AfterProbe);
    let (_dir, out) = report_path();
    let args: Vec<String> =
        case_on("postgres", port).into_iter().map(|a| a.replace("db=postgres", "db=postgres_tls")).collect();
    let run = harness().arg("run").args(&args).arg("--out").arg(&out).output().unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(code(&run), 1, "{err}");
    let line = err.lines().find(|l| l.contains("does not offer TLS")).unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains(&format!("127.0.0.1:{port}")) && line.ends_with("skipping 1 case"), "{line}");
    assert_eq!(held.load(Ordering::SeqCst), 0, "nothing but the probe connected");
    let report = read_report(&out);
    assert!(report["benchmarks"][0]["skipped"].as_str().unwrap().contains("db=postgres_tls needs"), "{report:#}");
}

#[test]
fn a_server_that_falls_silent_fails_the_fork_at_its_timeout_and_the_run_ends() {
    for server in ["postgres", "redis"] {
        let (port, held) = silent_server(Held::AfterProbe);
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

/// A PostgreSQL that answers the probe, then sends the start of a message too large to be one
/// and holds the connection: each of the run's three waits on it (the sweep for what earlier
/// runs left, the fork, the cleanup of its schema) ends at the fork timeout, so the run ends
/// within three of them, the fork failed as a timeout, and each wait said why it gave up.
#[test]
fn a_server_that_sends_an_oversized_message_and_holds_costs_at_most_three_fork_timeouts() {
    let (port, held) = silent_server(Held::Oversized);
    let (_dir, out) = report_path();
    let started = Instant::now();
    let mut run = harness();
    let run = run.arg("run").args(case_on("postgres", port)).args(["--fork-timeout", "3s", "--out"]).arg(&out);
    let run = run.output().unwrap();
    let (err, took) = (String::from_utf8_lossy(&run.stderr), started.elapsed());
    assert_eq!(code(&run), 1, "{err}");
    assert!(took < Duration::from_secs(9 + 4), "took {took:?}: {err}");
    assert!(held.load(Ordering::SeqCst) >= 2, "the sweep and the worker were held: {err}");
    let report = read_report(&out);
    assert_eq!(report["benchmarks"][0]["forks"][0]["failure"]["kind"], "timeout", "{report:#}");
    assert!(err.contains("did not answer within 3s while looking for what earlier runs left"), "{err}");
    assert!(err.contains("cannot remove what worker") && err.contains("the next run"), "{err}");
}

/// Starts a run on a server that falls silent, waits until `connections` are held, then sends
/// `signals` SIGINTs `gap` apart; returns the exit code, the seconds from the first signal to
/// the exit, the report and the run's stderr.
fn interrupt(server: &str, connections: usize, signals: usize, gap: Duration) -> (i32, f64, serde_json::Value, String) {
    let (port, held) = silent_server(Held::AfterProbe);
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
