//! CLI tests of `compare` (throughput and allocations), A/B runs with `--baseline-bin`, `noise` and `--pin`.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A real report of two quick cases, 2 forks x 4 iterations.
fn real_report() -> Value {
    let (out, report) = run(&[
        "smoke",
        "-f",
        "^baseline/(noop|busy_loop)$",
        "-p",
        "work=100",
        "--forks",
        "2",
        "--warmup",
        "0",
        "--iterations",
        "4",
        "--time",
        "20ms",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    report
}

/// Sets every iteration's ops/s of every case by `rate(case, fork, iteration)`.
/// `report` as another run would have it (a run id of its own), every iteration at `rate`.
fn craft(report: &Value, rate: impl Fn(usize, usize, usize) -> f64) -> Value {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let mut r = report.clone();
    r["meta"]["run_id"] = format!("crafted-{}", RUNS.fetch_add(1, std::sync::atomic::Ordering::SeqCst)).into();
    for (c, b) in r["benchmarks"].as_array_mut().unwrap().iter_mut().enumerate() {
        for (f, fork) in b["forks"].as_array_mut().unwrap().iter_mut().enumerate() {
            for (i, it) in fork["iterations"].as_array_mut().unwrap().iter_mut().enumerate() {
                it["nanos"] = 1_000_000_000u64.into();
                it["ops"] = (rate(c, f, i).round() as u64).into();
            }
        }
    }
    r
}

fn write(dir: &Path, name: &str, v: &Value) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, v.to_string()).unwrap();
    p
}

fn compare(args: &[&std::ffi::OsStr]) -> std::process::Output {
    harness().arg("compare").args(args).output().unwrap()
}

#[test]
#[allow(clippy::too_many_lines, reason = "one end-to-end scenario, told step by step")]
fn compare_gives_verdicts_and_refuses_mismatched_runs() {
    let real = real_report();
    let dir = tempfile::tempdir().unwrap();
    // Iterations jitter by a fixed pattern of ±0.4% around 1e6 ops/s; `run` shifts a whole run
    // a little, as the machine does between runs.
    let jitter = |f: usize, i: usize| 1e6 * (1.0 + 0.001 * (((f * 7 + i * 3) % 9) as f64 - 4.0));
    let runs = |name: &str, scale: &dyn Fn(usize) -> f64| -> Vec<std::path::PathBuf> {
        [1.0, 1.002]
            .iter()
            .enumerate()
            .map(|(k, run)| {
                let crafted = craft(&real, |c, f, i| jitter(f, i) * run * scale(c));
                write(dir.path(), &format!("{name}-{}.json", k + 1), &crafted)
            })
            .collect()
    };
    let base = runs("base", &|_| 1.0);
    let slower = runs("slower", &|c| if c == 0 { 0.8 } else { 1.0 });
    let faster = runs("faster", &|_| 1.2);
    let sides = |b: &[std::path::PathBuf], n: &[std::path::PathBuf], extra: &[&str]| {
        let mut args: Vec<std::ffi::OsString> = vec!["--base".into()];
        args.extend(b.iter().map(|p| p.clone().into_os_string()));
        args.push("--new".into());
        args.extend(n.iter().map(|p| p.clone().into_os_string()));
        args.extend(extra.iter().map(std::ffi::OsString::from));
        harness().arg("compare").args(args).output().unwrap()
    };

    let same = compare(&[base[0].as_os_str(), base[0].as_os_str()]);
    assert_eq!(code(&same), 0, "{}", stderr(&same));
    let text = stdout(&same);
    // Two forks a side of one report: the interval reaches past the band, so it cannot tell.
    assert_eq!(text.matches("undecided").count(), 3, "{text}");
    assert!(text.contains("Welch's t-test on the log fork medians"), "{text}");

    // One run per side: a 20% drop only looks slower; the gate cannot decide on it (exit 2).
    let looks = compare(&[base[0].as_os_str(), slower[0].as_os_str()]);
    assert_eq!(code(&looks), 0, "{}", stderr(&looks));
    let text = stdout(&looks);
    assert!(text.lines().any(|l| l.starts_with("baseline/noop") && l.contains("slower? (1 run each)")), "{text}");
    assert!(text.contains("1 unconfirmed (one run per side)") && text.contains("harness ab REF"), "{text}");
    let gated = compare(&[base[0].as_os_str(), slower[0].as_os_str(), "--fail-on-regression".as_ref()]);
    assert_eq!(code(&gated), 2, "{}", stderr(&gated));
    assert!(stderr(&gated).contains("baseline/noop (slower? in one run per side)"), "{}", stderr(&gated));
    let doc = compare_json(&compare(&[base[0].as_os_str(), slower[0].as_os_str(), "--json".as_ref()]).stdout);
    assert_eq!(
        (doc["test"]["unit"].as_str(), doc["cases"][0]["verdict"].as_str()),
        (Some("fork"), Some("looks_slower"))
    );

    // Two runs per side: the run is the unit, and the drop is SLOWER.
    let slow = sides(&base, &slower, &["--fail-on-regression"]);
    assert_eq!(code(&slow), 3, "{}", stderr(&slow));
    let text = stdout(&slow);
    assert!(
        text.lines().any(|l| l.starts_with("baseline/noop") && l.contains("0.800") && l.contains("SLOWER")),
        "{text}"
    );
    assert!(text.lines().any(|l| l.starts_with("baseline/busy_loop") && l.contains("no change")), "{text}");
    assert!(text.contains("2 base and 2 new runs") && text.contains("4/4 (2/2)"), "{text}");
    assert!(stderr(&slow).contains("fail the gate: baseline/noop"), "{}", stderr(&slow));
    assert!(text.trim_end().lines().last().unwrap().starts_with("1 slower, 0 faster, "), "{text}");
    let only = sides(&base, &slower, &["--only-changed"]);
    let only_text = stdout(&only);
    assert!(only_text.contains("baseline/noop") && !only_text.contains("baseline/busy_loop"), "{only_text}");
    assert!(only_text.contains("1 slower, 0 faster"), "{only_text}");
    assert!(!only_text.contains('\x1b'), "no colour when stdout is not a terminal: {only_text:?}");
    let json = sides(&base, &slower, &["--json", "--fail-on-regression"]);
    assert_eq!(code(&json), 3, "{}", stderr(&json));
    let doc = compare_json(&json.stdout);
    assert_eq!((doc["metric"].as_str(), doc["test"]["paired"].as_bool()), (Some("throughput"), Some(false)));
    assert_eq!((doc["test"]["unit"].as_str(), &doc["test"]["runs"]), (Some("run"), &serde_json::json!([2, 2])));
    assert_eq!(doc["decision"]["exit_code"], 3);
    assert_eq!(doc["decision"]["failing"], serde_json::json!(["baseline/noop"]));
    let noop = doc["cases"].as_array().unwrap().iter().find(|c| c["benchmark"] == "baseline/noop").unwrap();
    assert_eq!((noop["verdict"].as_str(), &noop["runs"]), (Some("slower"), &serde_json::json!([2, 2])));
    assert!(noop["lower"].as_f64().unwrap() < 0.8 && noop["upper"].as_f64().unwrap() > 0.8, "{noop}");
    let always = sides(&base, &slower, &["--color", "always"]);
    assert!(stdout(&always).contains("\x1b[1;31mSLOWER\x1b[0m"), "{:?}", stdout(&always));
    // On a terminal (`script` gives the command one): coloured, unless NO_COLOR is set.
    let on_terminal = |no_color: Option<&str>| {
        let me = assert_cmd::cargo::cargo_bin("harness");
        let (b, n) = (&base, &slower);
        let line = format!(
            "{} compare --base {} {} --new {} {}",
            me.display(),
            b[0].display(),
            b[1].display(),
            n[0].display(),
            n[1].display()
        );
        let mut cmd = std::process::Command::new("script");
        cmd.args(["-qec", &line, "/dev/null"]).env_remove("NO_COLOR");
        if let Some(v) = no_color {
            cmd.env("NO_COLOR", v);
        }
        String::from_utf8_lossy(&cmd.output().unwrap().stdout).into_owned()
    };
    let tty = on_terminal(None);
    assert!(tty.contains("\x1b[1;31mSLOWER\x1b[0m"), "{tty:?}");
    let tty = on_terminal(Some("1"));
    assert!(tty.contains("SLOWER") && !tty.contains("\x1b[1;31m"), "{tty:?}");
    // Without --fail-on-regression a slower case is reported, not gated; --warn-only exits 0.
    assert_eq!(code(&sides(&base, &slower, &[])), 0);
    let warned = sides(&base, &slower, &["--fail-on-regression", "--warn-only"]);
    assert_eq!(code(&warned), 0);
    assert_eq!(stdout(&warned), text);
    // A case missing from NEW fails the gate; one fork per side cannot be tested: exit 2.
    let mut gone = craft(&real, |_, f, i| jitter(f, i));
    gone["benchmarks"].as_array_mut().unwrap().remove(1);
    let mut gone_again = craft(&real, |_, f, i| jitter(f, i) + 1.0);
    gone_again["benchmarks"].as_array_mut().unwrap().remove(1);
    let (gone, gone_again) = (write(dir.path(), "gone.json", &gone), write(dir.path(), "gone2.json", &gone_again));
    let out = sides(&base, &[gone, gone_again], &["--fail-on-regression"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("(missing in new)"), "{}", stderr(&out));
    let mut one = craft(&real, |_, f, i| jitter(f, i));
    for b in one["benchmarks"].as_array_mut().unwrap() {
        b["forks"].as_array_mut().unwrap().truncate(1);
    }
    let one = write(dir.path(), "one.json", &one);
    let out = compare(&[base[0].as_os_str(), one.as_os_str(), "--fail-on-regression".as_ref()]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("could not be tested") && stderr(&out).contains("--forks 5"), "{}", stderr(&out));

    let md = dir.path().join("cmp.md");
    let fast = sides(&base, &faster, &["--markdown", md.to_str().unwrap()]);
    assert_eq!(code(&fast), 0);
    assert_eq!(stdout(&fast).matches("FASTER").count(), 2, "{}", stdout(&fast));
    assert!(std::fs::read_to_string(&md).unwrap().starts_with("**0 slower, 2 faster"));

    // Another --time and another rustc: refused, every difference named; --force compares.
    let mut other = craft(&real, |_, f, i| jitter(f, i));
    other["meta"]["settings"]["iteration_nanos"] = 5_000_000u64.into();
    other["meta"]["rustc"] = "rustc 1.0.0".into();
    let other = write(dir.path(), "other.json", &other);
    let refused = compare(&[base[0].as_os_str(), other.as_os_str()]);
    assert_eq!(code(&refused), 2);
    let err = stderr(&refused);
    assert!(err.contains("differs: --time: base 20ms, new 5ms"), "{err}");
    assert!(err.contains("differs: rustc: base rustc") && err.contains("new rustc 1.0.0"), "{err}");
    assert!(err.contains("differ in 2 way(s)") && err.contains("--force"), "{err}");
    assert!(stdout(&refused).is_empty());
    let forced = compare(&[base[0].as_os_str(), other.as_os_str(), "--force".as_ref()]);
    assert_eq!(code(&forced), 0, "{}", stderr(&forced));
    assert!(stderr(&forced).contains("warning: compared anyway: --time"));
    assert!(stdout(&forced).contains("undecided"));
    // Among several runs, each difference names its run.
    let mixed = sides(&[base[0].clone(), other], &base, &[]);
    assert_eq!(code(&mixed), 2);
    assert!(stderr(&mixed).contains("differs: base run 2: --time: base 20ms, new 5ms"), "{}", stderr(&mixed));
    // Runs on one side only, or instruction counts by runs: refused by name.
    let lone = compare(&["--base".as_ref(), base[0].as_os_str()]);
    assert_eq!(code(&lone), 2);
    assert!(stderr(&lone).contains("--new"), "{}", stderr(&lone));
    let instr = sides(&base, &slower, &["--metric", "instructions"]);
    assert_eq!(code(&instr), 2);
    assert!(stderr(&instr).contains("one report per side"), "{}", stderr(&instr));

    // One report that is not an A/B report.
    let single = compare(&[base[0].as_os_str()]);
    assert_eq!(code(&single), 2);
    assert!(stderr(&single).contains("holds one build only"), "{}", stderr(&single));
}

/// `harness <args> --baseline-bin <this harness> --out <out>`: an A/B run of this build against itself.
fn against_itself(args: &[&str], out: &std::path::Path) -> std::process::Output {
    let me = assert_cmd::cargo::cargo_bin("harness");
    harness().args(args).arg("--baseline-bin").arg(me).arg("--out").arg(out).output().unwrap()
}

#[test]
fn ab_runs_default_to_short_iterations_which_flags_and_configurations_override() {
    let (_dir, path) = report_path();
    let settings = |args: &[&str]| {
        let out = against_itself(&[&["run"], args, &["--forks", "2", "--quiet"]].concat(), &path);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let s = &read_report(&path)["meta"]["settings"];
        [&s["warmup_iterations"], &s["warmup_nanos"], &s["iterations"], &s["iteration_nanos"]]
            .map(|v| v.as_u64().unwrap())
    };
    // `cache` sets no timing: the A/B defaults, one 50 ms warmup and ten 25 ms iterations.
    let plain = settings(&["cache", "-f", "^cache/hashmap_hit$", "-p", "cache_size=1000"]);
    assert_eq!(plain, [1, 50_000_000, 10, 25_000_000]);
    // `smoke`'s own settings win (one 100 ms iteration, 50 ms warmup), and a flag wins over them.
    let smoke = settings(&["smoke", "-f", "^baseline/noop$", "--time", "30ms"]);
    assert_eq!(smoke, [1, 50_000_000, 1, 30_000_000]);
}

#[test]
fn ab_runs_alternate_builds_and_compare_them_pair_by_pair() {
    let (_dir, path) = report_path();
    let run = ["run", "smoke", "-f", "^baseline/noop$", "--forks", "2", "--warmup", "0", "--iterations", "3"];
    let out = against_itself(&[&run[..], &["--time", "20ms", "--quiet"]].concat(), &path);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("A/B: baseline") && text.contains("fork pairs new/base"), "{text}");
    let report = read_report(&path);
    let b = bench(&report, "baseline/noop");
    let seq = |k: &str| b[k].as_array().unwrap().iter().map(|f| f["sequence"].as_u64().unwrap()).collect::<Vec<_>>();
    // The timed forks (a layout check may add an instruction fork of each build after them).
    assert_eq!(seq("baseline_forks")[..2], [0, 3], "pairs alternate their order: A B, then B A");
    assert_eq!(seq("forks")[..2], [1, 2]);
    // Timed forks only: a layout check's instruction forks (added when the pairs decided) run alone.
    let lockstep = |k: &str| {
        let timed: Vec<&serde_json::Value> = b[k].as_array().unwrap().iter().filter(|f| f["kind"] == "time").collect();
        timed.len() == 2 && timed.iter().all(|f| f["lockstep"] == true)
    };
    assert!(lockstep("forks") && lockstep("baseline_forks"), "pairs run side by side by default: {b:#}");
    assert_eq!(report["meta"]["settings"]["interleave"], "iterations");
    assert!(b["baseline_score"]["mean"].as_f64().unwrap() > 0.0 && b["score"]["mean"].as_f64().unwrap() > 0.0);
    assert_eq!(report["meta"]["baseline"]["protocol_version"], report["meta"]["protocol_version"]);
    let again = harness().arg("compare").arg(&path).output().unwrap();
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    let json = harness().arg("compare").arg(&path).arg("--json").output().unwrap();
    let doc = compare_json(&json.stdout);
    assert_eq!((doc["test"]["paired"].as_bool(), doc["decision"]["exit_code"].as_u64()), (Some(true), Some(0)));
    assert_eq!(doc["cases"][0]["pairs"].as_array().map(Vec::len), Some(2), "{doc}");
    assert!(stdout(&again).lines().any(|l| l.starts_with("baseline/noop")), "{}", stdout(&again));
}

#[test]
fn interleave_forks_runs_one_fork_after_the_other_and_needs_a_baseline() {
    let (_dir, path) = report_path();
    let run = ["run", "smoke", "-f", "^baseline/noop$", "--forks", "2", "--warmup", "0", "--iterations", "2"];
    let out = against_itself(&[&run[..], &["--time", "10ms", "--quiet", "--interleave", "forks"]].concat(), &path);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let report = read_report(&path);
    let b = bench(&report, "baseline/noop");
    assert!(b["forks"].as_array().unwrap().iter().all(|f| f.get("lockstep").is_none()));
    assert_eq!(report["meta"]["settings"]["interleave"], "forks");
    let alone = harness().args(["run", "smoke", "--interleave", "forks"]).output().unwrap();
    assert_eq!(code(&alone), 2);
    assert!(stderr(&alone).contains("--baseline-bin"), "{}", stderr(&alone));
}

#[test]
fn a_baseline_speaking_another_protocol_is_refused_before_measuring() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("old-harness");
    std::fs::write(&fake, "#!/bin/sh\necho '{\"protocol_version\": 0}'\n").unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (_d, path) = report_path();
    let out = harness()
        .args(["run", "smoke", "-f", "^baseline/noop$", "--baseline-bin"])
        .arg(&fake)
        .arg("--out")
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("speaks worker protocol 0, this harness speaks"), "{err}");
    assert!(!path.exists());
}

#[test]
fn noise_flags_a_trend_and_a_fork_shift() {
    let real = real_report();
    let dir = tempfile::tempdir().unwrap();
    // Case 0 rises 5% per iteration in every fork; case 1's second fork runs 10% faster.
    let crafted = craft(&real, |c, f, i| {
        let wiggle = 1.0 + 0.0005 * ((i * 5 + f) % 3) as f64;
        if c == 0 { 1e6 * (1.0 + 0.05 * i as f64) * wiggle } else { 1e6 * if f == 1 { 1.1 } else { 1.0 } * wiggle }
    });
    let p = write(dir.path(), "noisy.json", &crafted);
    let out = harness().arg("noise").arg(&p).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let line =
        |name: &str| text.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("{name}: {text}")).to_string();
    assert!(line("baseline/noop").contains("add warmup"), "{text}");
    // A 10% fork shift puts ±1% out of reach: the advice names the cheaper ways, with their time.
    let shifted = line("baseline/busy_loop");
    assert!(shifted.contains("±1% needs --forks") && shifted.contains("out of reach"), "{text}");
    assert!(shifted.contains("harness ab REF --forks auto") && shifted.contains("--instructions"), "{text}");
    assert!(text.contains("system: ") && text.contains("modified z-score > 3.5"), "{text}");
    let bad = harness().arg("noise").arg(dir.path().join("missing.json")).output().unwrap();
    assert_eq!(code(&bad), 2);
}

#[test]
fn pin_records_the_cpus_and_refuses_absent_ones() {
    let (out, report) =
        run(&["smoke", "-f", "^baseline/noop$", "--forks", "1", "--iterations", "1", "--time", "10ms", "--pin", "0"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(report["meta"]["settings"]["pin"], "0");
    let out = harness().args(["run", "smoke", "-f", "^baseline/noop$", "--pin", "1000"]).output().unwrap();
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("--pin 1000: CPU 1000 is not available here"), "{}", stderr(&out));
}

#[test]
fn every_reader_checks_the_schema_version_and_shape_first() {
    let dir = tempfile::tempdir().unwrap();
    let good = real_report();
    let mut future = good.clone();
    future["schema_version"] = 99.into();
    let mut unversioned = good.clone();
    unversioned.as_object_mut().unwrap().remove("schema_version");
    let mut bent = good;
    bent["benchmarks"] = "many".into();
    let cases = [
        ("future.json", future, "has schema version 99; this harness reads versions 1, 2 and 3 only"),
        ("unversioned.json", unversioned, "is not a harness report (it has no schema_version)"),
        ("bent.json", bent, "says a schema version this harness reads but does not have its shape"),
    ];
    for (name, value, expect) in cases {
        let p = write(dir.path(), name, &value);
        let p = p.to_str().unwrap();
        let (docs, merged) = (dir.path().join("docs"), dir.path().join("merged.json"));
        let commands: [Vec<&str>; 5] = [
            vec!["compare", p, p],
            vec!["export", p, "--format", "csv"],
            vec!["docs", p, "--out-dir", docs.to_str().unwrap()],
            vec!["merge", p, p, "--out", merged.to_str().unwrap()],
            vec!["noise", p],
        ];
        for args in commands {
            let out = harness().args(&args).output().unwrap();
            let err = stderr(&out);
            assert_eq!(code(&out), 2, "{args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(err.contains(name) && err.contains(expect), "{args:?}: {err}");
        }
        assert!(!docs.exists() && !merged.exists(), "a refused report wrote output");
    }
}

#[test]
fn one_run_twice_a_repeated_case_a_fifo_and_no_shared_case_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let good = real_report();
    let a = write(dir.path(), "a.json", &good);
    let copy = write(dir.path(), "copy.json", &good);
    let b = write(dir.path(), "b.json", &craft(&good, |_, _, _| 1000.0));
    let mut repeated = good.clone();
    let first = repeated["benchmarks"][0].clone();
    repeated["benchmarks"].as_array_mut().unwrap().push(first);
    let repeated = write(dir.path(), "repeated.json", &repeated);
    let mut renamed = good.clone();
    for b in renamed["benchmarks"].as_array_mut().unwrap() {
        b["name"] = format!("{}_renamed", b["name"].as_str().unwrap()).into();
    }
    let renamed = write(dir.path(), "renamed.json", &renamed);
    let fifo = dir.path().join("fifo.json");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // The same run edited: other numbers, the same run id.
    let mut edited = good.clone();
    edited["benchmarks"][0]["forks"][0]["iterations"][0]["ops"] = 12345.into();
    let edited = write(dir.path(), "edited.json", &edited);
    let cases: [(Vec<&std::ffi::OsStr>, &str); 6] = [
        (vec!["--base".as_ref(), a.as_ref(), a.as_ref(), "--new".as_ref(), b.as_ref()], "are the same run"),
        (vec!["--base".as_ref(), a.as_ref(), copy.as_ref(), "--new".as_ref(), b.as_ref()], "are the same run"),
        (
            vec!["--base".as_ref(), a.as_ref(), edited.as_ref(), "--new".as_ref(), b.as_ref()],
            "hold forks of the same run (run id",
        ),
        (vec![repeated.as_ref(), b.as_ref()], "twice: it was edited or concatenated"),
        (vec![fifo.as_ref(), b.as_ref()], "is not a regular file"),
        (vec![a.as_ref(), renamed.as_ref(), "--fail-on-regression".as_ref(), "--force".as_ref()], "share no case"),
    ];
    for (args, expect) in cases {
        let out = compare(&args);
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().last().map(|l| l.contains(expect)), Some(true), "{args:?}: {err}");
    }
    // One file on both sides is an A/A comparison, not evidence counted twice.
    let out = compare(&[a.as_ref(), a.as_ref()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // An A/B report beside a plain one: said which of its forks take part.
    let mut ab = good.clone();
    for b in ab["benchmarks"].as_array_mut().unwrap() {
        b["baseline_forks"] = b["forks"].clone();
    }
    let ab = write(dir.path(), "ab.json", &ab);
    let out = compare(&[ab.as_ref(), b.as_ref()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("ab.json is an A/B report: its candidate build's forks are compared here"),
        "{}",
        stderr(&out)
    );
}

/// `report` as another run would have it, each case making `extra` allocations more per op.
fn with_allocations(report: &Value, run_id: &str, extra: f64) -> Value {
    let mut r = report.clone();
    r["meta"]["run_id"] = run_id.into();
    for b in r["benchmarks"].as_array_mut().unwrap() {
        let per_op = &mut b["allocations"]["per_op"];
        *per_op = (per_op.as_f64().unwrap() + extra).into();
    }
    r
}

#[test]
fn alloc_gates_allocations_per_op_and_fails_closed_without_them() {
    let (out, counted) = run(&[
        "smoke",
        "-f",
        "^baseline/(noop|busy_loop)$",
        "-p",
        "work=100",
        "--alloc",
        "--forks",
        "1",
        "--warmup",
        "0",
        "--iterations",
        "2",
        "--time",
        "20ms",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &with_allocations(&counted, "base", 0.0));
    let same = write(dir.path(), "same.json", &with_allocations(&counted, "same", 0.0));
    let more = write(dir.path(), "more.json", &with_allocations(&counted, "more", 1.0));
    let gate = |new: &Path| {
        compare(&[
            base.as_os_str(),
            new.as_os_str(),
            "--metric".as_ref(),
            "alloc".as_ref(),
            "--fail-on-regression".as_ref(),
        ])
    };
    let out = gate(&same);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("allocs/op") && stdout(&out).contains("unchanged"), "{}", stdout(&out));
    let out = gate(&more);
    assert_eq!(code(&out), 3, "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("REGRESSED"), "{}", stdout(&out));
    let bare = write(dir.path(), "bare.json", &real_report());
    let out = gate(&bare);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("bare.json has no allocation counts: make it with `harness run --alloc`"), "{err}");
}
