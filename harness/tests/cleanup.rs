//! What workers that are gone left behind is swept at the start of the next run that uses the
//! server, said in one line; what belongs to a live process or another machine is kept; Ctrl-C,
//! even twice, leaves neither a schema nor a report that says `running`.

mod common;

use common::{children, code, harness, read_report, report_path};

/// Runs `sql` on the test database through psql; returns its output.
fn psql(sql: &str) -> String {
    let out = std::process::Command::new("psql")
        .args(["-h", "127.0.0.1", "-U", "postgres", "-d", "test", "-v", "ON_ERROR_STOP=1", "-Atqc", sql])
        .output()
        .expect("psql runs");
    assert!(out.status.success(), "psql {sql}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
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
fn what_gone_workers_left_is_swept_at_the_next_run_and_the_rest_is_kept() {
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

#[test]
fn ctrl_c_twice_on_a_postgresql_run_leaves_no_schema_and_an_interrupted_report() {
    let (_dir, out) = report_path();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("harness"))
        .args(["run", "-f", "^sql/thread_select_by_id$", "-p", "db=postgres", "-p", "row_count=1000"])
        .args(["--forks", "3", "--iterations", "50", "--time", "1s", "--quiet", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let schemas_of =
        |pid: u32| psql(&format!("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'harness\\_{pid}\\_%'"));
    let started = std::time::Instant::now();
    let worker = loop {
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "no worker created its schema");
        if let Some(pid) = children(child.id()).into_iter().find(|&pid| schemas_of(pid) != "0") {
            break pid;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    for _ in 0..2 {
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert_eq!(read_report(&out)["status"], "interrupted");
    assert_eq!(schemas_of(worker), "0", "the killed worker's schema is dropped");
}
