//! Hardware counters (instructions retired and cycles) for the timed iterations, through
//! `perf_event_open`, inherited by threads the op starts after the counters open. Where the
//! kernel refuses (no PMU in a VM, `perf_event_paranoid`, a seccomp filter), the reason is
//! reported once and measuring goes on without them.

use perf_event::Builder;
use perf_event::events::Hardware;

/// Open counters for the measuring process.
pub(crate) struct HwCounters {
    instructions: perf_event::Counter,
    cycles: perf_event::Counter,
}

impl HwCounters {
    /// Opens both counters, disabled; or says why they cannot be had here.
    pub(crate) fn open() -> Result<HwCounters, String> {
        let open = |event| Builder::new(event).inherit(true).enabled(false).build().map_err(|e| explain(&e));
        Ok(HwCounters { instructions: open(Hardware::INSTRUCTIONS)?, cycles: open(Hardware::CPU_CYCLES)? })
    }

    /// Zeroes and starts both counters.
    pub(crate) fn start(&mut self) {
        for c in [&mut self.instructions, &mut self.cycles] {
            let _ = c.reset();
            let _ = c.enable();
        }
    }

    /// Stops both counters and reads `(instructions, cycles)`.
    pub(crate) fn stop(&mut self) -> Option<(u64, u64)> {
        let _ = self.instructions.disable();
        let _ = self.cycles.disable();
        Some((self.instructions.read().ok()?, self.cycles.read().ok()?))
    }
}

/// Why `perf_event_open` failed, with the fix where there is one.
pub(crate) fn explain(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ENODEV) => {
            format!("no hardware counters on this machine (perf_event_open: {e}; a VM without a virtual PMU)")
        }
        Some(libc::EACCES) | Some(libc::EPERM) => {
            let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap_or_default();
            format!(
                "perf_event_open refused ({e}; kernel.perf_event_paranoid = {}): lower it or run with CAP_PERFMON",
                paranoid.trim()
            )
        }
        Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) => {
            format!("hardware counters not supported here (perf_event_open: {e})")
        }
        _ => format!("perf_event_open failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs everywhere: where counters exist they count work, where they do not the reason says
    /// why (these development machines have no PMU, so the second branch runs here).
    #[test]
    fn counters_count_or_explain_why_not() {
        match HwCounters::open() {
            Ok(mut c) => {
                c.start();
                let mut x = 1u64;
                for i in 0..100_000u64 {
                    x = std::hint::black_box(x.wrapping_mul(i | 1));
                }
                let (instructions, cycles) = c.stop().expect("counters read");
                assert!(instructions >= 100_000 && cycles > 0, "{instructions} instructions, {cycles} cycles");
                eprintln!("hardware counters available: {instructions} instructions");
            }
            Err(reason) => {
                assert!(reason.contains("perf_event_open"), "{reason}");
                eprintln!("hardware counters unavailable here: {reason}");
            }
        }
    }

    #[test]
    fn reasons_name_the_cause() {
        let e = |code| std::io::Error::from_raw_os_error(code);
        assert!(explain(&e(libc::ENOENT)).starts_with("no hardware counters on this machine"));
        assert!(explain(&e(libc::EACCES)).contains("perf_event_paranoid"));
        assert!(explain(&e(libc::EOPNOTSUPP)).contains("not supported"));
    }
}
