//! Helpers shared by the CLI tests: run the harness binary, read its report, find processes.
#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

/// The harness binary built for these tests.
pub(crate) fn harness() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("harness").expect("harness binary");
    for var in [
        "HARNESS_FORKS",
        "HARNESS_WARMUP",
        "HARNESS_ITERATIONS",
        "HARNESS_TIME",
        "HARNESS_WARMUP_TIME",
        "HARNESS_OUT",
        "HARNESS_FORK_TIMEOUT",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// A fresh report path in its own temp dir (kept alive by the returned guard).
pub(crate) fn report_path() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.json");
    (dir, path)
}

/// Runs `harness run <args> --out <tmp> --quiet`; returns the output and the parsed report.
pub(crate) fn run(args: &[&str]) -> (Output, Value) {
    let (_dir, path) = report_path();
    let out = harness().arg("run").args(args).arg("--out").arg(&path).arg("--quiet").output().unwrap();
    let report = read_report(&path);
    (out, report)
}

/// Parses a report file (panics with its text when it is not JSON).
pub(crate) fn read_report(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("no report at {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("report is not JSON ({e}): {text}"))
}

/// The benchmark called `name` in a report.
pub(crate) fn bench<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {report:#}"))
}

/// The exit code of an output.
pub(crate) fn code(out: &Output) -> i32 {
    out.status.code().expect("exited normally")
}

/// Whether process `pid` is alive (a zombie counts as gone).
pub(crate) fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Direct children of `pid`, from /proc.
pub(crate) fn children(pid: u32) -> Vec<u32> {
    let mut out = vec![];
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let ppid =
            stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(1)).and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            out.push(child);
        }
    }
    out
}

/// Parses `compare --json` output and validates it against the committed JSON Schema.
#[allow(dead_code)]
pub(crate) fn compare_json(stdout: &[u8]) -> Value {
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/compare.v5.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let doc: Value = serde_json::from_slice(stdout).expect("compare --json prints JSON");
    let validator = jsonschema::validator_for(&schema).expect("the committed schema is a JSON Schema");
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "compare --json does not match schema/compare.v5.json: {errors:?}");
    doc
}

/// Starts `clone`'s `target/debug` as hard links to this build's dependencies, so that a build
/// of the clone (`ab`, `bisect`) copies them from there as it does from a user's checkout,
/// instead of compiling every crate again. Only links are made: the builds copy before writing.
pub(crate) fn seed_clone_target(clone: &Path) {
    let deps = Path::new(env!("CARGO_BIN_EXE_harness")).parent().unwrap().to_path_buf();
    std::fs::create_dir_all(clone.join("target/debug")).unwrap();
    for d in ["deps", "build", ".fingerprint"] {
        let linked =
            std::process::Command::new("cp").arg("-al").arg(deps.join(d)).arg(clone.join("target/debug")).status();
        assert!(linked.unwrap().success(), "cp -al {}", deps.join(d).display());
    }
}

/// A `workloads/build.rs` for a clone's commit: a no-op unless HARNESS_TEST_SLOW_BUILD names a
/// file, when it writes that file and holds the build for two minutes, so that a test's Ctrl-C
/// lands in the middle of one.
pub(crate) const SLOW_BUILD_SCRIPT: &str = r#"//! A build script a test can hold mid-build.
fn main() {
    println!("cargo:rerun-if-env-changed=HARNESS_TEST_SLOW_BUILD");
    if let Some(marker) = std::env::var_os("HARNESS_TEST_SLOW_BUILD") {
        std::fs::write(marker, "started\n").unwrap();
        std::thread::sleep(std::time::Duration::from_secs(120));
    }
}
"#;

/// Runs the harness with `args` in `dir`, its builds held by [`SLOW_BUILD_SCRIPT`], sends it
/// SIGINT once a build reached the script, and waits at most 10 s for it to end: its status
/// and stderr.
pub(crate) fn interrupt_during_build(dir: &Path, args: &[&str]) -> (std::process::ExitStatus, String) {
    use std::time::{Duration, Instant};
    let scratch = tempfile::tempdir().unwrap();
    let (marker, stderr) = (scratch.path().join("build-started"), scratch.path().join("stderr"));
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
        .current_dir(dir)
        .env("HARNESS_TEST_SLOW_BUILD", &marker)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let read = || std::fs::read_to_string(&stderr).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(300);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the build never reached the build script: {}", read());
        assert!(child.try_wait().unwrap().is_none(), "the harness ended before its build: {}", read());
        std::thread::sleep(Duration::from_millis(50));
    }
    let sent = Instant::now();
    // SAFETY: a plain kill(2) of the child this test spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status, read());
        }
        assert!(sent.elapsed() < Duration::from_secs(10), "still running 10 s after Ctrl-C: {}", read());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// No process whose command line names `dir` (a cargo, rustc or build script left behind).
pub(crate) fn assert_nothing_runs_in(dir: &Path) {
    let left = std::process::Command::new("pgrep").arg("-fa").arg(dir.to_str().unwrap()).output().unwrap();
    assert!(left.stdout.is_empty(), "left running: {}", String::from_utf8_lossy(&left.stdout));
}

/// A command's stderr as text.
pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs a command that must be refused: exit 2, exactly one stderr line containing `expect`,
/// and no report written.
pub(crate) fn refused(args: &[&str], expect: &str) {
    let (_dir, path) = report_path();
    let out = harness().args(args).arg("--out").arg(&path).output().unwrap();
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?} printed more than one line:\n{err}");
    assert!(err.contains(expect), "{args:?}: {err:?} does not contain {expect:?}");
    assert!(!path.exists(), "{args:?} wrote a report");
}
