//! CLI tests: list, run, env, help and every kind of bad input.

mod common;
use common::*;

#[test]
fn help_documents_exit_codes_and_options() {
    let out = harness().args(["run", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code(&out), 0);
    for needle in ["Exit codes", "130", "--forks", "--warmup-time", "--fork-timeout", "HARNESS_FORKS", "-p, --param"] {
        assert!(text.contains(needle), "run --help lacks {needle}");
    }
}

#[test]
fn list_shows_cases_with_params_and_hides_faults() {
    let out = harness().args(["list", "smoke"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code(&out), 0);
    assert!(text.contains("baseline/noop") && text.contains("baseline/busy_loop[work=100]"), "{text}");
    assert!(!text.contains("fault/"), "{text}");
    let out = harness().args(["list", "--hidden", "-f", "fault", "-p", "work=1,2"]).output();
    // -p names a param no fault workload declares: refused.
    assert_eq!(code(&out.unwrap()), 2);
    let out = harness().args(["list", "--hidden", "-f", "^fault/panic$", "-p", "fork=0,1"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.contains("fault/panic[after_ms=150,fork=1]"), "{text}");
}

#[test]
fn env_prints_the_metadata() {
    let out = harness().arg("env").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for key in ["commit", "dirty", "rustc", "cpu", "cgroup cpu", "cgroup memory", "load average"] {
        assert!(text.lines().any(|l| l.starts_with(key)), "env lacks {key}:\n{text}");
    }
    let out = harness().args(["env", "--json"]).output().unwrap();
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(meta["rustc"].as_str().unwrap().starts_with("rustc"));
    assert!(meta["cpu"]["logical_cpus"].as_u64().unwrap() >= 1);
}

#[test]
fn bad_input_is_one_line_exit_2_and_measures_nothing() {
    refused(&["run", "nope"], "unknown configuration 'nope': choose one of main, smoke");
    refused(&["run", "--filter", "zzz"], "no workload matches --filter 'zzz'");
    refused(&["run", "--filter", "("], "invalid --filter '('");
    refused(&["run", "-p", "bogus=1"], "unknown param 'bogus'");
    refused(&["run", "-f", "busy", "-p", "work=abc"], "invalid value 'abc' for param 'work'");
    refused(&["run", "-f", "busy", "-p", "work"], "NAME=VALUE");
    refused(&["run", "--forks", "0"], "'--forks <N|auto>': must be at least 1, or `auto`");
    refused(&["run", "--forks", "-1"], "'--forks <N|auto>': must not be negative");
    refused(&["run", "--forks", "auto"], "--forks auto adds fork pairs until an A/B comparison is decided");
    refused(&["run", "--max-forks", "8"], "add --forks auto");
    refused(&["run", "--min-forks", "1"], "must be at least 2");
    refused(&["run", "--iterations", "0"], "--iterations");
    refused(&["run", "--warmup", "-3"], "--warmup");
    refused(&["run", "--time", "1x"], "expected a duration such as 500ms, 2s or 1m");
    refused(&["run", "--time", "0s"], "must be longer than zero");
    refused(&["run", "--fork-timeout", "soon"], "--fork-timeout");
    refused(&["run", "--bogus"], "--bogus");
    refused(&["run", "--instr-ops", "5"], "the following required arguments were not provided: --instructions");
    refused(&["export", "r.json", "--format", "xml"], "[possible values: jmh, bmf, csv, markdown, gab]");
    refused(&["run", "--layouts", "2"], "--layouts 2 spreads the fork pairs of an A/B run");
    refused(&["run", "--layouts", "1"], "must be at least 2");
    refused(
        &["run", "-f", "busy", "-p", "work=100", "-p", "work=200"],
        "-p work is given twice (work=100 and work=200): give it once, with every value, e.g. -p work=100,200",
    );
    // harness ab checks its inputs before it builds anything (the ref is never resolved here).
    refused(&["ab", "HEAD", "smoke", "-f", "no/such/workload"], "no workload matches --filter 'no/such/workload'");
    refused(&["ab", "HEAD", "smoke", "-p", "row_count=1", "-p", "row_count=2"], "-p row_count is given twice");
}

#[test]
fn a_read_only_or_odd_out_is_kept_and_refused_before_measuring() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let kept = dir.path().join("kept.json");
    std::fs::write(&kept, "an old report").unwrap();
    std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o444)).unwrap();
    let fifo = dir.path().join("fifo.json");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for (out, expect) in [(&kept, "is read-only, so it is kept"), (&fifo, "is not a regular file")] {
        let run = harness().args(["run", "smoke", "-f", "^baseline/noop$", "--out"]).arg(out).output().unwrap();
        let err = stderr(&run);
        assert_eq!(code(&run), 2, "{err}");
        assert!(err.lines().count() == 1 && err.contains("cannot write --out") && err.contains(expect), "{err}");
    }
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "an old report");
}

#[test]
fn a_report_whose_directory_vanishes_mid_run_goes_on_in_a_named_fallback() {
    let work = tempfile::tempdir().unwrap();
    let out_dir = work.path().join("gone");
    let out = out_dir.join("r.json");
    let bin = assert_cmd::cargo::cargo_bin("harness");
    let args =
        ["run", "smoke", "-f", "^baseline/noop$", "--forks", "4", "--iterations", "3", "--time", "100ms", "--quiet"];
    let child = std::process::Command::new(bin)
        .args(args)
        .arg("--out")
        .arg(&out)
        .current_dir(work.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let forks_in = |path: &std::path::Path| {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let report: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        report["benchmarks"][0]["forks"].as_array().map_or(0, Vec::len)
    };
    while forks_in(&out) == 0 {
        assert!(started.elapsed() < std::time::Duration::from_secs(120), "no fork was written to {}", out.display());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::fs::remove_dir_all(&out_dir).unwrap();
    let run = child.wait_with_output().unwrap();
    let err = stderr(&run);
    // The data is kept, and the run fails: a step that reads --out next must not go on.
    assert_eq!(code(&run), 1, "{err}");
    let fallback = work.path().join("target/harness/r.json");
    assert!(err.contains("the report goes to target/harness/r.json from now on"), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(last.starts_with("error: --out ") && last.ends_with("the report is at target/harness/r.json"), "{err}");
    assert_eq!(forks_in(&fallback), 4, "every fork is in the fallback:\n{err}");
    assert_eq!(read_report(&fallback)["status"], "complete");
}

#[test]
fn a_reader_whose_output_is_closed_ends_quietly_like_a_unix_tool() {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    // `list main --json` prints more than a pipe holds: it writes after the reader has gone.
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("harness"))
        .args(["list", "main", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.signal(), Some(nix::sys::signal::Signal::SIGPIPE as i32), "{:?}", out.status);
    assert!(out.stderr.is_empty(), "no panic, no message: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_run_whose_output_is_closed_still_finishes_and_writes_its_report() {
    let (_dir, out) = report_path();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("harness"))
        .args(["run", "smoke", "-f", "^baseline/noop$", "--forks", "2", "--iterations", "2", "--time", "20ms", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // `harness run 2>&1 | head -0`: every line it prints finds no reader.
    drop(child.stdout.take());
    drop(child.stderr.take());
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let report = read_report(&out);
    assert_eq!(report["status"], "complete");
    assert_eq!(report["benchmarks"][0]["forks"].as_array().unwrap().len(), 2);
}

#[test]
fn layouts_of_a_binary_without_its_link_are_refused_with_the_recipe() {
    let me = assert_cmd::cargo::cargo_bin("harness");
    let me = me.to_str().unwrap();
    refused(
        &["run", "smoke", "-f", "^baseline/noop$", "--baseline-bin", me, "--layouts", "2"],
        "harness.link.tar beside it",
    );
    refused(
        &["run", "smoke", "--baseline-bin", me, "--layouts", "3", "--forks", "auto", "--max-forks", "6"],
        "--layouts 3 with --forks auto",
    );
}

#[test]
fn a_bad_environment_variable_is_named() {
    let out = harness().args(["run", "smoke"]).env("HARNESS_FORKS", "abc").output().unwrap();
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("'abc' for '--forks") && err.contains("environment variable HARNESS_FORKS"), "{err}");
    let out = harness().args(["run", "smoke", "--forks", "abc"]).output().unwrap();
    assert!(!stderr(&out).contains("environment variable"), "{}", stderr(&out));
}

#[test]
fn unwritable_out_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "x").unwrap();
    let out = harness().args(["run", "-f", "baseline/noop", "--out"]).arg(file.join("r.json")).output().unwrap();
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot write --out") && err.contains("choose a writable path"), "{err}");
    let out = harness().args(["run", "-f", "baseline/noop", "--out"]).arg(dir.path()).output().unwrap();
    assert_eq!(code(&out), 2);
}

#[test]
fn run_writes_a_complete_report_and_prints_a_summary() {
    let (out, report) = run(&[
        "-f",
        "^baseline/(noop|busy_loop)$",
        "-p",
        "work=5,50",
        "--warmup",
        "1",
        "--iterations",
        "2",
        "--time",
        "30ms",
        "--warmup-time",
        "10ms",
    ]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(report["schema_version"], 3);
    assert_eq!(report["status"], "complete");
    assert_eq!(report["meta"]["settings"]["iterations"], 2);
    assert_eq!(report["meta"]["settings"]["params"][0], "work=5,50");
    assert!(report["meta"]["ended_at"].is_string());
    let names: Vec<_> =
        report["benchmarks"].as_array().unwrap().iter().map(|b| (b["name"].clone(), b["params"].clone())).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    for b in report["benchmarks"].as_array().unwrap() {
        let fork = &b["forks"][0];
        assert_eq!(fork["status"], "ok");
        assert_eq!(fork["warmup"].as_array().unwrap().len(), 1);
        assert_eq!(fork["iterations"].as_array().unwrap().len(), 2);
        assert!(fork["iterations"][0]["ops"].as_u64().unwrap() > 0);
        assert!(fork["iterations"][0]["nanos"].as_u64().unwrap() >= 30_000_000);
        assert_eq!(b["score"]["unit"], "ops/s");
        assert_eq!(b["score"]["n"], 2);
        assert!(b["score"]["error"].is_null(), "error is NaN-safe null for n <= 2");
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("benchmark") && stdout.contains("baseline/busy_loop") && stdout.contains("work=50"),
        "{stdout}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("DEBUG build"));
}

/// `-q` hides progress and keeps the summary; `-qq` leaves stdout empty, the report whole.
#[test]
fn quiet_twice_prints_no_summary_and_the_report_keeps_it_all() {
    let (_dir, path) = report_path();
    let args = ["run", "-f", "^baseline/noop$", "-qq", "--iterations", "1", "--time", "5ms", "--out"];
    let out = harness().args(args).arg(&path).output().unwrap();
    assert_eq!((code(&out), out.stdout.as_slice()), (0, &b""[..]), "{}", stderr(&out));
    assert!(stderr(&out).lines().any(|l| l.starts_with("report: ")), "{}", stderr(&out));
    assert_eq!(read_report(&path)["status"], "complete");
}

#[test]
fn settings_come_from_harness_env_vars() {
    let (_dir, path) = report_path();
    let out = harness()
        .args(["run", "-f", "baseline/noop", "--quiet", "--warmup", "0", "--iterations", "1"])
        .env("HARNESS_FORKS", "2")
        .env("HARNESS_TIME", "20ms")
        .env("HARNESS_OUT", &path)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let report = read_report(&path);
    assert_eq!(report["meta"]["settings"]["forks"], 2);
    assert_eq!(report["meta"]["settings"]["iteration_nanos"], 20_000_000);
}

#[test]
fn smoke_configuration_defaults_are_short() {
    let (out, report) = run(&["smoke", "-f", "baseline/noop"]);
    assert_eq!(code(&out), 0);
    let s = &report["meta"]["settings"];
    assert_eq!((s["iterations"].as_u64(), s["iteration_nanos"].as_u64()), (Some(1), Some(100_000_000)));
    assert_eq!(report["meta"]["configuration"], "smoke");
}

#[test]
fn worker_mode_refuses_to_run_by_hand() {
    let out = harness().arg("__worker").output().unwrap();
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("started by `harness run`"));
}

#[test]
fn several_configurations_run_the_union_of_their_cases() {
    let out = harness().args(["list", "cache", "redis"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code(&out), 0);
    assert!(text.contains("cache/moka_hit") && text.contains("redis/fred_get"), "{text}");
    refused(&["run", "smoke", "cache"], "different default settings: run them separately");
}

#[test]
fn completions_are_printed_for_each_shell() {
    for (shell, needle) in [("bash", "_harness()"), ("zsh", "#compdef harness"), ("fish", "complete -c harness")] {
        let out = harness().args(["completions", shell]).output().unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(needle) && text.contains("baseline-bin"), "{shell}: {}", &text[..text.len().min(300)]);
    }
    let out = harness().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("invalid value 'tcsh'") && stderr(&out).contains("bash"), "{}", stderr(&out));
}

#[test]
fn the_progress_bar_shows_an_eta_on_a_terminal() {
    let (_dir, path) = report_path();
    let me = assert_cmd::cargo::cargo_bin("harness");
    let line = format!(
        "{} run smoke -f '^baseline/noop$' --warmup 0 --iterations 3 --time 200ms --out {}",
        me.display(),
        path.display()
    );
    // `script` gives the run a terminal, where the bar is drawn.
    let out = std::process::Command::new("script").args(["-qec", &line, "/dev/null"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("forks, ETA "), "{text}");
}
