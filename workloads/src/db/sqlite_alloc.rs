//! SQLite's own heap allocations, counted: bundled SQLite allocates through its own
//! `malloc`, which a Rust global allocator never sees. SQLite lets an application install its
//! allocator (`sqlite3_config(SQLITE_CONFIG_MALLOC, …)`) while it is not initialised; this module
//! installs SQLite's own default allocator wrapped in a count, so `--alloc` covers the C library
//! too. Allocations served from a connection's lookaside buffer never reach the allocator, as in
//! SQLite's own statistics.

use anyhow::Context;
use rusqlite::ffi;
use std::ffi::{c_int, c_void};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, Ordering};

/// SQLite's default allocator and who is told of every allocation.
struct Installed {
    default: ffi::sqlite3_mem_methods,
    count: fn(usize),
}

// SAFETY: the methods are plain function pointers; `pAppData` is SQLite's, passed back to it
// unchanged and never dereferenced here.
unsafe impl Send for Installed {}
// SAFETY: as above; the struct is never mutated after it is set.
unsafe impl Sync for Installed {}

static INSTALLED: OnceLock<Installed> = OnceLock::new();
/// Allocations made through the counting allocator and not yet freed.
static LIVE: AtomicI64 = AtomicI64::new(0);
/// Their bytes, as SQLite sizes them (`xSize`).
static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);

fn installed() -> &'static Installed {
    INSTALLED.get().expect("the counting allocator is installed before SQLite calls it")
}

/// `xSize` of the default allocator: the usable size SQLite accounts for `p`.
fn size(p: *mut c_void) -> i64 {
    let size_of = installed().default.xSize.expect("SQLite's default allocator has xSize");
    // SAFETY: `p` is a live allocation of the default allocator.
    i64::from(unsafe { size_of(p) })
}

unsafe extern "C" fn counted_malloc(n: c_int) -> *mut c_void {
    let i = installed();
    // SAFETY: forwarded to SQLite's default allocator with SQLite's own argument.
    let p = unsafe { (i.default.xMalloc.expect("xMalloc"))(n) };
    if !p.is_null() {
        (i.count)(n.max(0) as usize);
        LIVE.fetch_add(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_add(size(p), Ordering::Relaxed);
    }
    p
}

unsafe extern "C" fn counted_free(p: *mut c_void) {
    if !p.is_null() {
        LIVE.fetch_sub(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_sub(size(p), Ordering::Relaxed);
    }
    // SAFETY: forwarded to SQLite's default allocator, which made `p`.
    unsafe { (installed().default.xFree.expect("xFree"))(p) }
}

unsafe extern "C" fn counted_realloc(p: *mut c_void, n: c_int) -> *mut c_void {
    let i = installed();
    let old = if p.is_null() { 0 } else { size(p) };
    // SAFETY: forwarded to SQLite's default allocator, which made `p`.
    let q = unsafe { (i.default.xRealloc.expect("xRealloc"))(p, n) };
    if !q.is_null() {
        (i.count)(n.max(0) as usize);
        LIVE_BYTES.fetch_add(size(q) - old, Ordering::Relaxed);
        if p.is_null() {
            LIVE.fetch_add(1, Ordering::Relaxed);
        }
    }
    q
}

/// Installs the counting allocator; `count` hears the size of every allocation and
/// reallocation. Fails when SQLite is already in use in this process (call it first).
pub fn count_allocations(count: fn(usize)) -> anyhow::Result<()> {
    anyhow::ensure!(INSTALLED.get().is_none(), "SQLite's allocations are already counted");
    // SAFETY: plain libsqlite3 calls in the order SQLite documents: initialising fills in the
    // default allocator, which stays set after a shutdown; GETMALLOC copies it out, and SQLite,
    // not initialised, accepts a new one and copies the struct it is given.
    unsafe {
        anyhow::ensure!(ffi::sqlite3_initialize() == ffi::SQLITE_OK, "SQLite cannot initialise");
        anyhow::ensure!(ffi::sqlite3_shutdown() == ffi::SQLITE_OK, "SQLite is in use: it cannot be shut down");
        let mut default: ffi::sqlite3_mem_methods = std::mem::zeroed();
        let rc = ffi::sqlite3_config(ffi::SQLITE_CONFIG_GETMALLOC, &raw mut default);
        anyhow::ensure!(rc == ffi::SQLITE_OK, "SQLite would not tell its allocator (code {rc}): it is in use");
        INSTALLED.set(Installed { default, count }).ok().context("SQLite's allocations are already counted")?;
        let counting = ffi::sqlite3_mem_methods {
            xMalloc: Some(counted_malloc),
            xFree: Some(counted_free),
            xRealloc: Some(counted_realloc),
            ..default
        };
        let rc = ffi::sqlite3_config(ffi::SQLITE_CONFIG_MALLOC, &raw const counting);
        anyhow::ensure!(rc == ffi::SQLITE_OK, "SQLite refused the counting allocator (code {rc}): it is in use");
    }
    Ok(())
}

/// Allocations SQLite holds through the counting allocator, and their bytes: what SQLite's own
/// `SQLITE_STATUS_MALLOC_COUNT` and `SQLITE_STATUS_MEMORY_USED` report when it keeps them.
pub fn live() -> (i64, i64) {
    (LIVE.load(Ordering::Relaxed), LIVE_BYTES.load(Ordering::Relaxed))
}
