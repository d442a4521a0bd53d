//! Environment metadata: what the report records about the build, the machine and the run.

use crate::protocol::PROTOCOL_VERSION;
use crate::redact;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::Command;
use std::time::SystemTime;

/// Everything a reader needs to reproduce or distrust a number.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Meta {
    /// Version of the harness crate.
    pub harness_version: String,
    /// Worker protocol version.
    pub protocol_version: u32,
    /// Source state of the build.
    pub git: Git,
    /// `rustc --version` of the toolchain that built the harness.
    pub rustc: String,
    /// `release` or `debug`; debug numbers are meaningless.
    pub build_profile: String,
    /// Target triple.
    pub target: String,
    /// Operating system.
    pub os: Os,
    /// Processor.
    pub cpu: Cpu,
    /// Limits of the control group the harness runs in.
    pub cgroup: Cgroup,
    /// 1, 5 and 15 minute load averages when the run started.
    pub load_average_start: Option<[f64; 3]>,
    /// The same when the run ended (or was last written).
    pub load_average_end: Option<[f64; 3]>,
    /// RFC 3339 UTC.
    pub started_at: String,
    /// RFC 3339 UTC; null while running.
    pub ended_at: Option<String>,
    /// The command line, credentials redacted.
    pub command_line: Vec<String>,
    /// Configuration name (`smoke`, `main`…); null for `env`.
    pub configuration: Option<String>,
    /// Run settings as given on the command line (null for `env`).
    pub settings: Option<RunSettings>,
    /// Hardware counters as the first fork found them: available, or why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware_counters: Option<String>,
    /// The other build of an A/B run (`--baseline-bin`), as it describes itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineBuild>,
    /// What the machine looked like for measuring, and warnings about it.
    #[serde(default)]
    pub system: crate::report::system::SystemChecks,
    /// The drift canary: a fixed CPU loop measured at the start and the end of the run, so that
    /// two runs made apart can tell a change of the machine's speed from a change of the code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<Canary>,
    /// The checkout the binary was built from, as it was at run time, when it no longer matches
    /// `git` (another commit, or new edits): the numbers are the built source's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkout_at_run: Option<Git>,
    /// `harness merge`: the parts this report was joined from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<MergeInfo>,
    /// This run's id, fresh for every `harness run` (and every merge): two reports holding the
    /// same id hold the same forks, however they were copied or edited. Absent in reports made
    /// before harness 0.1 recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

/// How a merged report was joined.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub(crate) struct MergeInfo {
    /// The part reports, as given.
    pub parts: Vec<String>,
    /// Merged with `--force` despite differences.
    pub forced: bool,
    /// Every way the parts differed (empty unless forced).
    pub differences: Vec<String>,
    /// Shards of the run not among the parts (`K/N`), merged with `--allow-partial`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_shards: Vec<String>,
    /// The parts' run ids (and those of the parts they were merged from).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub part_run_ids: Vec<String>,
}

/// The drift canary of a run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub(crate) struct Canary {
    /// The reference case, `name[params]`.
    pub workload: String,
    /// One reading per canary fork that finished ok.
    pub readings: Vec<CanaryReading>,
}

/// One fork of the drift canary.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub(crate) struct CanaryReading {
    /// `start` or `end`.
    pub at: String,
    /// Median ops/s of the fork's iterations.
    pub ops_per_sec: f64,
    /// Ops/s of each measured iteration.
    pub iterations: Vec<f64>,
}

impl Canary {
    /// Geometric mean of the readings' ops/s; `None` without a reading.
    pub(crate) fn ops_per_sec(&self) -> Option<f64> {
        let logs: Vec<f64> = self.readings.iter().filter(|r| r.ops_per_sec > 0.0).map(|r| r.ops_per_sec.ln()).collect();
        (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
    }
}

/// The baseline build of an A/B run, from its own `env --json`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub(crate) struct BaselineBuild {
    /// Path given to `--baseline-bin`.
    pub path: String,
    /// Its harness version.
    pub harness_version: String,
    /// Its worker protocol version (equal to this build's, or the run is refused).
    pub protocol_version: u32,
    /// Its source state.
    pub git: Git,
    /// Its toolchain.
    pub rustc: String,
    /// Its build profile.
    pub build_profile: String,
}

/// Commit and dirty state of the source tree the harness was built from, read when it was built.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub(crate) struct Git {
    /// Commit hash, or null when built outside a git checkout.
    pub commit: Option<String>,
    /// Uncommitted changes to the built source (harness/, workloads/, Cargo.toml, Cargo.lock);
    /// null when unknown.
    pub dirty: Option<bool>,
    /// When the binary was built (RFC 3339 UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built_at: Option<String>,
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

/// A warning when the checkout the binary was built from now holds another commit, or holds
/// edits the build did not.
pub(crate) fn source_drift(built: &Git, now: &Git) -> Option<String> {
    let (Some(b), Some(n)) = (built.commit.as_deref(), now.commit.as_deref()) else { return None };
    if b != n {
        return Some(format!(
            "this binary was built from commit {} but the checkout is now at {}: the report names the built commit; rebuild to measure the checkout",
            &b[..b.len().min(12)],
            &n[..n.len().min(12)]
        ));
    }
    (now.dirty == Some(true) && built.dirty == Some(false)).then(|| {
        "the checkout has uncommitted edits this binary was not built with: rebuild to measure them".to_string()
    })
}

/// Operating system.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Os {
    /// Distribution name (`PRETTY_NAME` of os-release).
    pub name: String,
    /// Kernel release.
    pub kernel: String,
    /// Machine architecture.
    pub arch: String,
}

/// Processor.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Cpu {
    /// Model name.
    pub model: String,
    /// Logical CPUs online.
    pub logical_cpus: usize,
    /// CPUs this process may use (affinity and cgroup quota applied).
    pub available_parallelism: usize,
}

/// Control group limits; "none" when unlimited.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Cgroup {
    /// CPU quota, e.g. `1.5 CPUs (150000/100000)` or `none`.
    pub cpu_quota: String,
    /// Memory limit in bytes, or `none`.
    pub memory_limit: String,
}

/// The settings of a run, as resolved from flags, environment and configuration.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub(crate) struct RunSettings {
    /// Forks per case.
    pub forks: u32,
    /// Warmup iterations per fork.
    pub warmup_iterations: u32,
    /// Duration of one warmup iteration.
    pub warmup_nanos: u64,
    /// Measured iterations per fork.
    pub iterations: u32,
    /// Duration of one measured iteration.
    pub iteration_nanos: u64,
    /// Per-fork timeout.
    pub fork_timeout_nanos: u64,
    /// `--filter` patterns.
    pub filters: Vec<String>,
    /// `-p` overrides, as given.
    pub params: Vec<String>,
    /// PostgreSQL URL, password redacted.
    pub database_url: String,
    /// Redis URL (`--redis-url`), password redacted.
    pub redis_url: String,
    /// `--instructions`: an instruction-count fork per case.
    #[serde(default)]
    pub instructions: bool,
    /// `--instr-ops`, when given.
    #[serde(default)]
    pub instr_ops: Option<u64>,
    /// `--io`: an I/O fork per case.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub io: bool,
    /// `--io-ops`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_ops: Option<u64>,
    /// `--alloc`: allocations counted.
    #[serde(default)]
    pub alloc: bool,
    /// `--pin`: the CPUs every worker was pinned to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<String>,
    /// `--threads`: the thread (or task) counts of the case matrix.
    #[serde(default = "one_thread")]
    pub threads: Vec<u32>,
    /// `--mode`: `throughput` or `sample`.
    #[serde(default = "throughput_mode")]
    pub mode: String,
    /// `--baseline-bin`, when the run was an A/B run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_bin: Option<String>,
    /// `--shard K/N`: this report holds one share of the cases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// A/B runs, `--interleave`: `iterations` (each fork pair in lockstep) or `forks`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleave: Option<String>,
    /// `--forks auto`: fork pairs were added until each case was decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<SequentialSettings>,
    /// A/B runs with `--layouts K`: each build relinked K times with its code sections
    /// shuffled (seeds 1..=K), fork pair j running variant j mod K + 1 of both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layouts: Option<u32>,
    /// A/B runs: whether a decided case had an instruction fork of each build to tell a change
    /// of code from one of layout (`--layout-check`); `false` when it was off or valgrind missing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub layout_check: bool,
}

/// The budget of a `--forks auto` A/B run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub(crate) struct SequentialSettings {
    /// `--min-forks`: pairs before the first look.
    pub min_forks: u32,
    /// `--max-forks`: the budget of pairs.
    pub max_forks: u32,
    /// Overall false-alarm rate the looks were planned for.
    pub alpha: f64,
    /// Nominal level of each look.
    pub nominal_alpha: f64,
    /// Noise band, in percent, that decided "outside" and "inside".
    pub noise_band_pct: f64,
}

fn one_thread() -> Vec<u32> {
    vec![1]
}

fn throughput_mode() -> String {
    "throughput".into()
}

impl Meta {
    /// Collects the metadata now.
    pub(crate) fn collect(configuration: Option<String>, settings: Option<RunSettings>) -> Meta {
        Meta {
            harness_version: env!("CARGO_PKG_VERSION").into(),
            protocol_version: PROTOCOL_VERSION,
            git: build_git(),
            checkout_at_run: Some(checkout_now()).filter(|now| source_drift(&build_git(), now).is_some()),
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
            system: crate::report::system::SystemChecks::collect(),
            canary: None,
            merged: None,
            run_id: Some(uuid::Uuid::new_v4().to_string()),
        }
    }

    /// The ids of every run whose forks this report holds: its own, and its merged parts'.
    pub(crate) fn run_ids(&self) -> Vec<&str> {
        let parts = self.merged.iter().flat_map(|m| &m.part_run_ids);
        self.run_id.iter().chain(parts).map(String::as_str).collect()
    }

    /// Records the end of the run.
    pub(crate) fn finish(&mut self) {
        self.load_average_end = load_average();
        self.ended_at = Some(now_rfc3339());
        self.system.finish();
        self.system.warnings = crate::report::system::warnings(self);
    }
}

/// `release` when built with optimizations, else `debug`.
pub(crate) fn build_profile() -> &'static str {
    if cfg!(debug_assertions) { "debug" } else { "release" }
}

/// Current UTC time, RFC 3339 to the second.
pub(crate) fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// The checkout the binary was built from, as it is now (for [`source_drift`]).
pub(crate) fn checkout_now() -> Git {
    git(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")))
}

fn git(dir: &Path) -> Git {
    let run = |args: &[&str]| {
        Command::new("git")
            .arg("--no-optional-locks")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
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

fn read(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
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
        let m = Meta::collect(None, None);
        assert!(m.rustc.starts_with("rustc "), "{}", m.rustc);
        assert!(m.cpu.logical_cpus >= 1);
        assert!(m.load_average_start.is_some());
        assert!(!m.target.is_empty());
    }

    #[test]
    fn a_moved_or_edited_checkout_is_told_from_the_built_source() {
        let git = |c: &str, dirty: bool| Git { commit: Some(c.into()), dirty: Some(dirty), built_at: None };
        assert_eq!(source_drift(&git("aaaa", false), &git("aaaa", false)), None);
        let moved = source_drift(&git("aaaa", false), &git("bbbb", false)).unwrap();
        assert!(moved.contains("built from commit aaaa but the checkout is now at bbbb"), "{moved}");
        assert!(source_drift(&git("aaaa", false), &git("aaaa", true)).unwrap().contains("uncommitted edits"));
        assert_eq!(source_drift(&git("aaaa", true), &git("aaaa", true)), None, "built dirty: nothing new to say");
        let unknown = Git { commit: None, dirty: None, built_at: None };
        assert_eq!(source_drift(&unknown, &git("aaaa", false)), None);
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
}
