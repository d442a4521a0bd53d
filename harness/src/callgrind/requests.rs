//! Callgrind client requests, issued with valgrind's "special instruction" sequence for amd64,
//! copied from `valgrind.h` and `callgrind.h` (valgrind 3.19) and checked against them: four
//! rotates of `rdi` that sum to 128 bits (a no-op on a real CPU) followed by `xchg rbx, rbx`,
//! with `rax` pointing at `[request, arg1..arg5]` and the result in `rdx`. Outside valgrind the
//! sequence does nothing and the request returns its default. A crate would do the same; the
//! ones that exist need valgrind's headers or libclang at build time, which a fresh machine
//! may lack.

use std::sync::atomic::{AtomicPtr, Ordering};

/// `VG_USERREQ_TOOL_BASE('C','T')`.
const CALLGRIND_BASE: u64 = ((b'C' as u64) << 24) | ((b'T' as u64) << 16);
/// `VG_USERREQ__ZERO_STATS`.
const ZERO_STATS: u64 = CALLGRIND_BASE + 1;
/// `VG_USERREQ__TOGGLE_COLLECT` (per-thread state: not used, see [`start_instrumentation`]).
#[cfg(test)]
const TOGGLE_COLLECT: u64 = CALLGRIND_BASE + 2;
/// `VG_USERREQ__DUMP_STATS_AT`.
const DUMP_STATS_AT: u64 = CALLGRIND_BASE + 3;
/// `VG_USERREQ__START_INSTRUMENTATION`.
const START_INSTRUMENTATION: u64 = CALLGRIND_BASE + 4;
/// `VG_USERREQ__STOP_INSTRUMENTATION`.
const STOP_INSTRUMENTATION: u64 = CALLGRIND_BASE + 5;
/// `VG_USERREQ__RUNNING_ON_VALGRIND` (core request).
const RUNNING_ON_VALGRIND: u64 = 0x1001;

#[cfg(target_arch = "x86_64")]
fn request(default: u64, request: u64, arg1: u64) -> u64 {
    let args: [u64; 6] = [request, arg1, 0, 0, 0, 0];
    let mut result = default;
    // SAFETY: the rotates leave rdi unchanged (3 + 13 + 61 + 51 = 128), xchg rbx, rbx changes
    // nothing; flags are clobbered (the default for asm!), memory may be read by valgrind
    // (no `nomem`), and `args` outlives the block.
    unsafe {
        std::arch::asm!(
            "rol rdi, 3",
            "rol rdi, 13",
            "rol rdi, 61",
            "rol rdi, 51",
            "xchg rbx, rbx",
            inout("rdx") result,
            in("rax") args.as_ptr(),
            options(nostack),
        );
    }
    result
}

#[cfg(not(target_arch = "x86_64"))]
fn request(default: u64, _request: u64, _arg1: u64) -> u64 {
    default
}

/// Whether the process runs under valgrind (0 on a real CPU).
pub(crate) fn running_on_valgrind() -> bool {
    request(0, RUNNING_ON_VALGRIND, 0) > 0
}

/// Zeroes every counter.
pub(crate) fn zero() {
    request(0, ZERO_STATS, 0);
}

/// Turns instrumentation on for the whole process. Unlike `TOGGLE_COLLECT`, whose state
/// callgrind keeps per thread, this counts the work of every thread, the op's helpers included.
pub(crate) fn start_instrumentation() {
    request(0, START_INSTRUMENTATION, 0);
}

/// Turns instrumentation off for the whole process: nothing is counted until the next start.
pub(crate) fn stop_instrumentation() {
    request(0, STOP_INSTRUMENTATION, 0);
}

/// The reason the measurement dumps carry ([`super::MEASURE_REASON`] until the worker names
/// them, [`name_measurements`]): read in the measured window by one load, as many instructions as
/// the constant it replaced, so that naming the dumps moves no case's count.
static REASON: AtomicPtr<std::ffi::c_char> = AtomicPtr::new(super::MEASURE_REASON.as_ptr().cast_mut());

/// Makes every later measurement dump carry `reason` (see [`super::measure_reason`]); kept for
/// the life of the process (a `fn()` does the dumping, so the reason lives here).
pub(crate) fn name_measurements(reason: std::ffi::CString) {
    REASON.store(reason.into_raw(), Ordering::Relaxed);
}

/// Dumps the counts of the window that is ending as a measurement ([`super::MEASURE_REASON`],
/// with the case and build once named; callgrind zeroes them with the dump), then stops
/// instrumentation: stopping discards what was not dumped.
pub(crate) fn dump_measure_and_stop() {
    dump(REASON.load(Ordering::Relaxed));
    stop_instrumentation();
}

/// Writes the counters so far as a dump named `reason` (a NUL-terminated string that lives on).
fn dump(reason: *const std::ffi::c_char) {
    request(0, DUMP_STATS_AT, reason as u64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_no_ops_on_a_real_cpu() {
        assert!(!running_on_valgrind());
        zero();
        start_instrumentation();
        stop_instrumentation();
        dump(c"nothing".as_ptr());
        assert_eq!(request(42, ZERO_STATS, 0), 42);
    }

    #[test]
    fn request_codes_match_callgrind_h() {
        // callgrind.h: DUMP_STATS = TOOL_BASE('C','T') = 0x43540000, then ZERO, TOGGLE, DUMP_AT, START, STOP.
        assert_eq!(CALLGRIND_BASE, 0x4354_0000);
        assert_eq!(
            (ZERO_STATS, TOGGLE_COLLECT, DUMP_STATS_AT, START_INSTRUMENTATION, STOP_INSTRUMENTATION),
            (0x43540001, 0x43540002, 0x43540003, 0x43540004, 0x43540005)
        );
    }
}
