//! Environment metadata: what the report records about the build, the machine and the run
//! (the types; [`crate::machine`] collects them).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
        crate::stats::geometric_mean(self.readings.iter().map(|r| r.ops_per_sec).filter(|&r| r > 0.0))
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

impl Git {
    /// A warning when the checkout this source was built from (`self`) now holds another
    /// commit (`now`), or holds edits the build did not.
    pub(crate) fn drift_to(&self, now: &Git) -> Option<String> {
        let built = self;
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
    /// `--cache-sim`: the instruction forks also simulated the caches and the branch predictor.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cache_sim: bool,
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
    /// A/B runs with `--layouts K`: each build relinked K times with its functions
    /// reordered (seeds 1..=K, one order per seed for both), fork pair j running variant j mod K + 1 of both.
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
    /// The ids of every run whose forks this report holds: its own, and its merged parts'.
    pub(crate) fn run_ids(&self) -> Vec<&str> {
        let parts = self.merged.iter().flat_map(|m| &m.part_run_ids);
        self.run_id.iter().chain(parts).map(String::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_moved_or_edited_checkout_is_told_from_the_built_source() {
        let git = |c: &str, dirty: bool| Git { commit: Some(c.into()), dirty: Some(dirty), built_at: None };
        assert_eq!(git("aaaa", false).drift_to(&git("aaaa", false)), None);
        let moved = git("aaaa", false).drift_to(&git("bbbb", false)).unwrap();
        assert!(moved.contains("built from commit aaaa but the checkout is now at bbbb"), "{moved}");
        assert!(git("aaaa", false).drift_to(&git("aaaa", true)).unwrap().contains("uncommitted edits"));
        assert_eq!(git("aaaa", true).drift_to(&git("aaaa", true)), None, "built dirty: nothing new to say");
        let unknown = Git { commit: None, dirty: None, built_at: None };
        assert_eq!(unknown.drift_to(&git("aaaa", false)), None);
    }
}
