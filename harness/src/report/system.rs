//! System checks: what on the machine can make numbers noisy or wrong, recorded in the report
//! and turned into warnings (debug build, load, other processes, frequency scaling, quotas).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// What the machine looked like for measuring.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub(crate) struct SystemChecks {
    /// CPU frequency governors in use (`performance`, `powersave`…); null where the kernel
    /// does not expose frequency scaling (common in VMs).
    pub governor: Option<String>,
    /// Turbo / boost: `on` or `off`; null when not readable.
    pub turbo: Option<String>,
    /// Address space layout randomization (`kernel.randomize_va_space`: 0 off, 2 full).
    pub aslr: Option<String>,
    /// Average number of cores that processes other than the harness and its workers kept
    /// busy during the run (servers the workloads call included).
    pub other_cpu_cores: Option<f64>,
    /// Warnings for the reader, one line each.
    pub warnings: Vec<String>,
    /// CPU counters when the run started (not reported).
    #[serde(skip)]
    #[schemars(skip)]
    pub start: Option<CpuSnapshot>,
}

/// Busy CPU time of the whole machine and of this process tree, at one instant.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CpuSnapshot {
    /// When.
    pub at: Instant,
    /// Busy seconds of every CPU since boot.
    pub machine_busy_secs: f64,
    /// CPU seconds of this process and its reaped children.
    pub own_secs: f64,
}

/// The warnings a run's metadata calls for, one line each.
pub(crate) fn warnings(meta: &super::Meta) -> Vec<String> {
    let mut w = vec![];
    if let Some(drift) = meta.checkout_at_run.as_ref().and_then(|now| meta.git.drift_to(now)) {
        w.push(drift);
    }
    if meta.build_profile != "release" {
        w.push("debug build: its numbers are meaningless; build with --release".to_string());
    }
    let cores = meta.cpu.available_parallelism.max(1) as f64;
    if let Some(l) = meta.load_average_start.filter(|l| l[0] > cores / 2.0) {
        w.push(format!(
            "load average {:.2} at the start on {cores} cores: something else was running; quiet the machine",
            l[0]
        ));
    }
    if let Some(l) = meta.load_average_end.filter(|l| l[0] > cores) {
        w.push(format!("load average {:.2} at the end on {cores} cores: more runnable threads than cores", l[0]));
    }
    let s = &meta.system;
    if let Some(o) = s.other_cpu_cores.filter(|&o| o > 0.1) {
        w.push(format!(
            "other processes kept {o:.2} cores busy during the run (servers the workloads call included); quiet the machine or pin with --pin"
        ));
    }
    if let Some(g) = s.governor.as_deref().filter(|g| *g != "performance") {
        w.push(format!("CPU frequency governor is '{g}': set 'performance' for stable clocks"));
    }
    if s.turbo.as_deref() == Some("on") {
        w.push("turbo/boost is on: clock speed follows temperature and load; turn it off for stable numbers".into());
    }
    if meta.cgroup.cpu_quota != "none" {
        w.push(format!("cgroup CPU quota {}: workers can be throttled mid-iteration", meta.cgroup.cpu_quota));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_quota_and_load_are_warned_about() {
        let mut meta = crate::machine::collect_meta(None, None);
        meta.build_profile = "debug".into();
        meta.cgroup.cpu_quota = "1.00 CPUs (100000/100000)".into();
        meta.load_average_start = Some([64.0, 1.0, 1.0]);
        meta.system.governor = Some("powersave".into());
        let w = warnings(&meta);
        for needle in ["debug build", "load average 64.00", "quota", "powersave"] {
            assert!(w.iter().any(|l| l.contains(needle)), "{needle}: {w:?}");
        }
    }
}
