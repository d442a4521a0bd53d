//! Collecting what a report records about the build, the machine and the run: the toolchain
//! and the source (git), the OS, CPU, cgroup limits, load, and the system checks. The types
//! live in [`crate::report::meta`] and [`crate::report::system`]; this module only reads.

use crate::protocol::PROTOCOL_VERSION;
use crate::report::Meta;
use crate::report::meta::{Cgroup, Cpu, Git, Os, RunSettings};
use crate::report::system::{CpuSnapshot, SystemChecks};
use std::path::Path;
use std::process::Command;
use std::time::{Instant, SystemTime};
use workloads::redact::redact;

/// The run's metadata, collected now.
pub(crate) fn collect_meta(configuration: Option<String>, settings: Option<RunSettings>) -> Meta {
    Meta {
        harness_version: env!("CARGO_PKG_VERSION").into(),
        protocol_version: PROTOCOL_VERSION,
        git: build_git(),
        checkout_at_run: Some(checkout_now()).filter(|now| build_git().drift_to(now).is_some()),
        rustc: env!("HARNESS_RUSTC_VERSION").into(),
        build_profile: build_profile().into(),
        target: env!("HARNESS_TARGET").into(),
        os: os(),
        cpu: cpu(),
        cgroup: cgroup(Path::new("/sys/fs/cgroup")),
        load_average_start: load_average(),
        load_average_end: None,
        started_at: now_rfc3339(),
        ended_at: None,
        command_line: std::env::args().map(|a| redact(&a)).collect(),
        configuration,
        settings,
        hardware_counters: None,
        baseline: None,
        system: system_checks(),
        canary: None,
        merged: None,
        run_id: Some(uuid::Uuid::new_v4().to_string()),
    }
}

/// Records the end of the run.
pub(crate) fn finish_meta(meta: &mut Meta) {
    meta.load_average_end = load_average();
    meta.ended_at = Some(now_rfc3339());
    finish_system_checks(&mut meta.system);
    meta.system.warnings = crate::report::system::warnings(meta);
}

/// The source this binary was built from (embedded by `build.rs`).
pub(crate) fn build_git() -> Git {
    let commit = Some(env!("HARNESS_GIT_COMMIT")).filter(|c| !c.is_empty()).map(String::from);
    let dirty = match env!("HARNESS_GIT_DIRTY") {
        "true" => Some(true),
        "false" => Some(false),
        _ => commit.as_ref().map(|_| false),
    };
    let secs: u64 = env!("HARNESS_BUILT_AT").parse().unwrap_or(0);
    let built_at = (secs > 0).then(|| {
        humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs)).to_string()
    });
    Git { commit, dirty, built_at }
}

/// `harness --version`: the crate version, the commit it was built from and when.
pub(crate) fn long_version() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        let g = build_git();
        let commit = g.commit.as_deref().map_or("unknown commit".to_string(), |c| c.chars().take(12).collect());
        let dirty = if g.dirty == Some(true) { " (dirty)" } else { "" };
        let when = g.built_at.as_deref().map_or(String::new(), |t| format!(", built {t}"));
        format!("{} ({commit}{dirty}{when}; {})", env!("CARGO_PKG_VERSION"), env!("HARNESS_RUSTC_VERSION"))
    })
}

/// `release` when built with optimizations, else `debug`.
pub(crate) fn build_profile() -> &'static str {
    if cfg!(debug_assertions) { "debug" } else { "release" }
}

/// Current UTC time, RFC 3339 to the second.
pub(crate) fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// The checkout the binary was built from, as it is now (for [`Git::drift_to`]).
pub(crate) fn checkout_now() -> Git {
    checkout_state(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")))
}

/// The commit a checkout holds, and whether the built source has edits in it.
fn checkout_state(dir: &Path) -> Git {
    let run = |args: &[&str]| git(dir, args).ok();
    let commit = run(&["rev-parse", "HEAD"]);
    let dirty = commit.as_ref().and_then(|_| {
        run(&[
            "status",
            "--porcelain",
            "--untracked-files=no",
            "--",
            "harness",
            "workloads",
            "Cargo.toml",
            "Cargo.lock",
        ])
        .map(|s| !s.is_empty())
    });
    Git { commit, dirty, built_at: None }
}

/// A file's text, trimmed; `None` when it cannot be read.
pub(crate) fn read(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// Runs git in `dir` (taking no optional lock, so that a running editor or IDE is not
/// disturbed); its trimmed stdout, or its stderr as the error.
pub(crate) fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("--no-optional-locks")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

fn os() -> Os {
    let name = read("/etc/os-release")
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("PRETTY_NAME=").map(|v| v.trim_matches('"').to_string())))
        .unwrap_or_else(|| std::env::consts::OS.into());
    let uname = nix::sys::utsname::uname().ok();
    let kernel = uname.as_ref().map_or("unknown".into(), |u| u.release().to_string_lossy().into_owned());
    Os { name, kernel, arch: std::env::consts::ARCH.into() }
}

fn cpu() -> Cpu {
    let info = read("/proc/cpuinfo").unwrap_or_default();
    let model = info
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, v)| v.trim().to_string()))
        .unwrap_or_else(|| "unknown".into());
    // SAFETY: sysconf has no preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let available = std::thread::available_parallelism().map_or(1, |n| n.get());
    Cpu { model, logical_cpus: usize::try_from(online).unwrap_or(available), available_parallelism: available }
}

/// Reads cgroup v2 (`cpu.max`, `memory.max`) or v1 limits under `root`.
pub(crate) fn cgroup(root: &Path) -> Cgroup {
    let cpu_quota = match read(root.join("cpu.max")) {
        Some(s) => parse_cpu_max(&s),
        None => match (read(root.join("cpu/cpu.cfs_quota_us")), read(root.join("cpu/cpu.cfs_period_us"))) {
            (Some(q), Some(p)) if q != "-1" => parse_cpu_max(&format!("{q} {p}")),
            _ => "none".into(),
        },
    };
    let memory_limit = read(root.join("memory.max"))
        .or_else(|| read(root.join("memory/memory.limit_in_bytes")))
        .filter(|s| s != "max" && s.parse::<u64>().is_ok_and(|v| v < (1 << 62)))
        .unwrap_or_else(|| "none".into());
    Cgroup { cpu_quota, memory_limit }
}

fn parse_cpu_max(s: &str) -> String {
    let mut it = s.split_whitespace();
    match (it.next(), it.next().and_then(|p| p.parse::<f64>().ok())) {
        (Some(q), Some(period)) if q != "max" => match q.parse::<f64>() {
            Ok(quota) => format!("{:.2} CPUs ({q}/{period})", quota / period),
            Err(_) => "none".into(),
        },
        _ => "none".into(),
    }
}

fn load_average() -> Option<[f64; 3]> {
    let s = read("/proc/loadavg")?;
    let v: Vec<f64> = s.split_whitespace().take(3).filter_map(|x| x.parse().ok()).collect();
    v.try_into().ok()
}

/// Busy seconds of every CPU from the first line of `/proc/stat` (user, nice, system, irq,
/// softirq; idle, iowait and steal are not busy).
pub(crate) fn machine_busy_secs(proc_stat: &str, ticks_per_sec: f64) -> Option<f64> {
    let line = proc_stat.lines().next()?.strip_prefix("cpu ")?;
    let v: Vec<f64> = line.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    let busy = v.first()? + v.get(1)? + v.get(2)? + v.get(5).unwrap_or(&0.0) + v.get(6).unwrap_or(&0.0);
    Some(busy / ticks_per_sec)
}

fn own_secs() -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    [UsageWho::RUSAGE_SELF, UsageWho::RUSAGE_CHILDREN]
        .into_iter()
        .filter_map(|who| getrusage(who).ok())
        .map(|u| {
            let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
            t(u.user_time()) + t(u.system_time())
        })
        .sum()
}

fn snapshot() -> Option<CpuSnapshot> {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let machine_busy_secs = machine_busy_secs(&read("/proc/stat")?, if ticks > 0.0 { ticks } else { 100.0 })?;
    Some(CpuSnapshot { at: Instant::now(), machine_busy_secs, own_secs: own_secs() })
}

fn governors() -> Option<String> {
    let mut found: Vec<String> = std::fs::read_dir("/sys/devices/system/cpu")
        .ok()?
        .filter_map(|e| read(e.ok()?.path().join("cpufreq/scaling_governor")))
        .collect();
    found.sort();
    found.dedup();
    (!found.is_empty()).then(|| found.join(","))
}

fn turbo() -> Option<String> {
    if let Some(no_turbo) = read("/sys/devices/system/cpu/intel_pstate/no_turbo") {
        return Some(if no_turbo == "1" { "off" } else { "on" }.into());
    }
    read("/sys/devices/system/cpu/cpufreq/boost").map(|b| if b == "1" { "on" } else { "off" }.into())
}

/// Reads the machine's settings and starts counting other processes' CPU time.
pub(crate) fn system_checks() -> SystemChecks {
    SystemChecks {
        governor: governors(),
        turbo: turbo(),
        aslr: read("/proc/sys/kernel/randomize_va_space"),
        other_cpu_cores: None,
        warnings: vec![],
        start: snapshot(),
    }
}

/// Average cores other processes kept busy since [`system_checks`].
pub(crate) fn finish_system_checks(checks: &mut SystemChecks) {
    if let (Some(a), Some(b)) = (checks.start, snapshot()) {
        let wall = b.at.duration_since(a.at).as_secs_f64();
        if wall > 0.5 {
            let others = (b.machine_busy_secs - a.machine_busy_secs) - (b.own_secs - a.own_secs);
            checks.other_cpu_cores = Some((others / wall).max(0.0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_v2_limits_and_unlimited() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("cpu.max"), "150000 100000\n").unwrap();
        std::fs::write(dir.path().join("memory.max"), "1073741824\n").unwrap();
        let c = cgroup(dir.path());
        assert_eq!(c.cpu_quota, "1.50 CPUs (150000/100000)");
        assert_eq!(c.memory_limit, "1073741824");
        std::fs::write(dir.path().join("cpu.max"), "max 100000\n").unwrap();
        std::fs::write(dir.path().join("memory.max"), "max\n").unwrap();
        let c = cgroup(dir.path());
        assert_eq!((c.cpu_quota.as_str(), c.memory_limit.as_str()), ("none", "none"));
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(cgroup(empty.path()).cpu_quota, "none");
    }

    #[test]
    fn collected_meta_names_the_machine() {
        let m = collect_meta(None, None);
        assert!(m.rustc.starts_with("rustc "), "{}", m.rustc);
        assert!(m.cpu.logical_cpus >= 1);
        assert!(m.load_average_start.is_some());
        assert!(!m.target.is_empty());
    }

    #[test]
    fn the_build_records_its_commit_and_time() {
        let g = build_git();
        // Built inside this repository's checkout: a 40-hex commit and a build time.
        if let Some(c) = &g.commit {
            assert_eq!(c.len(), 40, "{c}");
            assert!(g.dirty.is_some());
        }
        assert!(g.built_at.as_deref().is_some_and(|t| t.ends_with('Z')), "{g:?}");
        assert!(long_version().starts_with(env!("CARGO_PKG_VERSION")), "{}", long_version());
    }

    #[test]
    fn busy_time_counts_user_nice_system_irq_softirq() {
        let stat = "cpu  100 20 30 1000 50 7 3 40 0 0\ncpu0 1 2 3 4\n";
        assert_eq!(machine_busy_secs(stat, 10.0), Some((100.0 + 20.0 + 30.0 + 7.0 + 3.0) / 10.0));
        assert_eq!(machine_busy_secs("intr 1 2", 100.0), None);
    }
}
