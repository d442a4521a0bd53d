//! What workers that are gone left behind is swept at the start of the next run that uses the
//! server, said in one line; what belongs to a live process or another machine is kept; Ctrl-C,
//! even a storm of 40, leaves neither a schema, nor a SQLite database, nor a report that says
//! `running`; a cleanup that fails while the server restarts is retried. The tests take turns:
//! one's sweep would otherwise take what another's parent is about to remove.

mod common;

use common::{children, code, harness, read_report, report_path};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Held by each test for its whole length.
static TURN: Mutex<()> = Mutex::new(());

fn my_turn() -> std::sync::MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs `sql` on the test database through psql; returns its output.
fn psql(sql: &str) -> String {
    let out = std::process::Command::new("psql")
        .args(["-h", "127.0.0.1", "-U", "postgres", "-d", "test", "-v", "ON_ERROR_STOP=1", "-Atqc", sql])
        .output()
        .expect("psql runs");
    assert!(out.status.success(), "psql {sql}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// How many schemas worker `pid` has on the test server.
fn schemas_of(pid: u32) -> String {
    psql(&format!("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'harness\\_{pid}\\_%'"))
}

/// Waits (a minute at most) until a worker of the harness process `parent` has created its
/// schema; its pid.
fn worker_with_a_schema(parent: u32) -> u32 {
    let started = Instant::now();
    loop {
        assert!(started.elapsed() < Duration::from_secs(60), "no worker created its schema");
        if let Some(pid) = children(parent).into_iter().find(|&pid| schemas_of(pid) != "0") {
            return pid;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A pid no process has: a child that ran and was reaped.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

fn schema_with_owner(name: &str, comment: &str) {
    psql(&format!(
        "DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}; COMMENT ON SCHEMA {name} IS '{comment}'"
    ));
}

#[test]
#[ignore = "needs PostgreSQL at 127.0.0.1:5432 and psql: `cargo test -- --include-ignored` runs it (.ci/run does)"]
fn what_gone_workers_left_is_swept_at_the_next_run_and_the_rest_is_kept() {
    let _turn = my_turn();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap().trim().to_string();
    let (dead, me) = (dead_pid(), std::process::id());
    let stale = format!("harness_{dead}_1");
    let live = format!("harness_{me}_2");
    let foreign = format!("harness_{dead}_3");
    schema_with_owner(&stale, &format!("harness worker {dead} on boot {boot}"));
    schema_with_owner(&live, &format!("harness worker {me} on boot {boot}"));
    schema_with_owner(&foreign, &format!("harness worker {dead} on boot another-machine"));
    let stale_dir = std::env::temp_dir().join(format!("harness-sqlite-{dead}-test"));
    std::fs::create_dir_all(stale_dir.join("inside")).unwrap();

    let (_dir, out) = report_path();
    let run = harness()
        .args(["run", "-f", "^sql/thread_select_by_id$", "-p", "db=postgres", "-p", "row_count=1000"])
        .args(["--forks", "1", "--iterations", "1", "--time", "10ms", "--warmup-time", "10ms", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    let kept = psql(&format!(
        "SELECT string_agg(nspname, ',' ORDER BY nspname) FROM pg_namespace WHERE nspname IN ('{stale}', '{live}', '{foreign}')"
    ));
    psql(&format!(
        "DROP SCHEMA IF EXISTS {live} CASCADE; DROP SCHEMA IF EXISTS {foreign} CASCADE; DROP SCHEMA IF EXISTS {stale} CASCADE"
    ));
    assert_eq!(code(&run), 0, "{err}");
    // Leftovers of other runs on this machine may go too: the counts are at least ours.
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("left by workers that are gone")).collect();
    assert_eq!(lines.len(), 1, "one line says what went:\n{err}");
    let pids = lines[0].rsplit_once("(pid ").unwrap().1.trim_end_matches(')');
    assert!(pids.split(", ").any(|p| p == dead.to_string()), "{}", lines[0]);
    assert!(lines[0].contains("PostgreSQL schema(s)") && !lines[0].contains("removed 0 "), "{}", lines[0]);
    assert_eq!(kept, format!("{live},{foreign}"), "a live worker's and another machine's schemas are kept");
    assert!(!stale_dir.exists(), "the stale SQLite dir is removed");
}

/// Starts a run of the SQL select case on `db`, waits until `has_leftovers` says one of its
/// workers made its database, then sends 40 SIGINTs 5 ms apart; the worker, the report (read
/// after the exit) and the seconds from the first signal to the exit.
fn storm_of_ctrl_c(db: &str, has_leftovers: &dyn Fn(u32) -> bool) -> (u32, serde_json::Value, f64) {
    let (_dir, out) = report_path();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("harness"))
        .args(["run", "-f", "^sql/thread_select_by_id$", "-p", &format!("db={db}"), "-p", "row_count=1000"])
        .args(["--forks", "3", "--iterations", "50", "--time", "1s", "--quiet", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let worker = loop {
        assert!(started.elapsed() < Duration::from_secs(60), "{db}: no worker made its database");
        if let Some(pid) = children(child.id()).into_iter().find(|&pid| has_leftovers(pid)) {
            break pid;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let first = Instant::now();
    for _ in 0..40 {
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(child.wait().unwrap().code(), Some(130), "{db}");
    (worker, read_report(&out), first.elapsed().as_secs_f64())
}

/// The SQLite temp dirs worker `pid` has.
fn sqlite_dirs_of(pid: u32) -> usize {
    let prefix = format!("harness-sqlite-{pid}-");
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .count()
}

#[test]
#[ignore = "needs PostgreSQL at 127.0.0.1:5432 and psql: `cargo test -- --include-ignored` runs it (.ci/run does)"]
fn a_storm_of_ctrl_c_on_a_postgresql_run_leaves_no_schema_and_an_interrupted_report() {
    let _turn = my_turn();
    let (worker, report, seconds) = storm_of_ctrl_c("postgres", &|pid| schemas_of(pid) != "0");
    assert_eq!(report["status"], "interrupted", "never `running`: {report:#}");
    assert_eq!(schemas_of(worker), "0", "the killed worker's schema is dropped");
    assert!(seconds < 5.0, "{seconds:.1} s from the first Ctrl-C to the exit");
}

#[test]
fn a_storm_of_ctrl_c_on_a_sqlite_run_leaves_no_database_and_an_interrupted_report() {
    let _turn = my_turn();
    let (worker, report, seconds) = storm_of_ctrl_c("sqlite_file", &|pid| sqlite_dirs_of(pid) > 0);
    assert_eq!(report["status"], "interrupted", "never `running`: {report:#}");
    assert_eq!(sqlite_dirs_of(worker), 0, "the killed worker's database is removed");
    assert!(seconds < 5.0, "{seconds:.1} s from the first Ctrl-C to the exit");
}

/// A relay to the test server on a fresh port that, while `down` is set, closes every new
/// connection at once, as a restarting server does (connections made before carry on).
fn restartable_postgres() -> (u16, Arc<AtomicBool>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let down = Arc::new(AtomicBool::new(false));
    let is_down = down.clone();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            if is_down.load(Ordering::SeqCst) {
                continue;
            }
            let server = std::net::TcpStream::connect("127.0.0.1:5432").unwrap();
            let (mut from_client, mut to_server) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut from_client, &mut to_server);
                let _ = to_server.shutdown(std::net::Shutdown::Both);
            });
            std::thread::spawn(move || {
                let (mut from_server, mut to_client) = (server, client);
                let _ = std::io::copy(&mut from_server, &mut to_client);
                let _ = to_client.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    (port, down)
}

#[test]
#[ignore = "needs PostgreSQL at 127.0.0.1:5432 and psql: `cargo test -- --include-ignored` runs it (.ci/run does)"]
fn a_cleanup_that_fails_while_the_server_restarts_is_retried() {
    let _turn = my_turn();
    let (port, down) = restartable_postgres();
    let (_dir, out) = report_path();
    // The fork times out (killed at 2 s, mid-measurement), so the parent removes its schema.
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("harness"))
        .args(["run", "-f", "^sql/thread_select_by_id$", "-p", "db=postgres", "-p", "row_count=1000"])
        .args([
            "--forks",
            "1",
            "--iterations",
            "1",
            "--time",
            "20s",
            "--fork-timeout",
            "2s",
            "--quiet",
            "--database-url",
        ])
        .arg(format!("postgres://postgres@127.0.0.1:{port}/test"))
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let worker = worker_with_a_schema(child.id());
    // Its pool is open by the time it measures; the server then "restarts" past the kill.
    std::thread::sleep(Duration::from_millis(500));
    down.store(true, Ordering::SeqCst);
    while children(child.id()).contains(&worker) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(1500));
    down.store(false, Ordering::SeqCst);
    let run = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(code(&run), 1, "{err}");
    assert_eq!(read_report(&out)["benchmarks"][0]["forks"][0]["failure"]["kind"], "timeout");
    assert!(err.contains(&format!("removed 1 database(s) worker {worker} left behind")), "{err}");
    assert_eq!(schemas_of(worker), "0", "the retried cleanup dropped the schema");
}
