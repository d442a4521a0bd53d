//! System checks: what on the machine can make numbers noisy or wrong, recorded in the report
//! and turned into warnings (debug build, load, other processes, frequency scaling, quotas).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::Path;
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
    start: Option<CpuSnapshot>,
}

/// Busy CPU time of the whole machine and of this process tree, at one instant.
#[derive(Debug, Clone, Copy)]
struct CpuSnapshot {
    at: Instant,
    machine_busy_secs: f64,
    own_secs: f64,
}

fn read(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
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

impl SystemChecks {
    /// Reads the machine's settings and starts counting other processes' CPU time.
    pub(crate) fn collect() -> SystemChecks {
        SystemChecks {
            governor: governors(),
            turbo: turbo(),
            aslr: read("/proc/sys/kernel/randomize_va_space"),
            other_cpu_cores: None,
            warnings: vec![],
            start: snapshot(),
        }
    }

    /// Average cores other processes kept busy since [`SystemChecks::collect`].
    pub(crate) fn finish(&mut self) {
        if let (Some(a), Some(b)) = (self.start, snapshot()) {
            let wall = b.at.duration_since(a.at).as_secs_f64();
            if wall > 0.5 {
                let others = (b.machine_busy_secs - a.machine_busy_secs) - (b.own_secs - a.own_secs);
                self.other_cpu_cores = Some((others / wall).max(0.0));
            }
        }
    }
}

/// The warnings a run's metadata calls for, one line each.
pub(crate) fn warnings(meta: &super::Meta) -> Vec<String> {
    let mut w = vec![];
    if let Some(drift) = meta.checkout_at_run.as_ref().and_then(|now| super::meta::source_drift(&meta.git, now)) {
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
    fn busy_time_counts_user_nice_system_irq_softirq() {
        let stat = "cpu  100 20 30 1000 50 7 3 40 0 0\ncpu0 1 2 3 4\n";
        assert_eq!(machine_busy_secs(stat, 10.0), Some((100.0 + 20.0 + 30.0 + 7.0 + 3.0) / 10.0));
        assert_eq!(machine_busy_secs("intr 1 2", 100.0), None);
    }

    #[test]
    fn debug_quota_and_load_are_warned_about() {
        let mut meta = super::super::Meta::collect(None, None);
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
