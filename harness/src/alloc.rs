//! A counting global allocator: allocations and bytes requested, for the worker's
//! allocations-per-op figures. Off until a worker turns it on (`--alloc`); when off, the cost
//! is one relaxed load per allocation.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(false);
/// Counting was asked for (`--alloc`): [`op_window`] may turn it on and off around ops.
static REQUESTED: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

/// The system allocator, counting every allocation and reallocation of every thread.
pub struct CountingAllocator;

// SAFETY: every call forwards to the system allocator unchanged; counting touches only atomics.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[inline(always)]
fn count(bytes: usize) {
    if ENABLED.load(Ordering::Relaxed) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

/// Starts counting.
pub(crate) fn enable() {
    REQUESTED.store(true, Ordering::SeqCst);
    ENABLED.store(true, Ordering::SeqCst);
}

/// Counts an allocation made outside Rust's allocator (SQLite's own, see
/// [`workloads::db::sqlite_alloc`]), when counting is on.
pub(crate) fn count_foreign(bytes: usize) {
    count(bytes);
}

/// Opens (`true`) or closes the counting window around one op of a workload that resets before
/// every op, so that the untimed reset's allocations are not counted; nothing without `--alloc`.
pub(crate) fn op_window(open: bool) {
    if REQUESTED.load(Ordering::Relaxed) {
        ENABLED.store(open, Ordering::SeqCst);
    }
}

/// `(allocations, bytes)` counted so far.
pub(crate) fn snapshot() -> (u64, u64) {
    (ALLOCATIONS.load(Ordering::Relaxed), BYTES.load(Ordering::Relaxed))
}
