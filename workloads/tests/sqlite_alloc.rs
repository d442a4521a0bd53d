//! SQLite's allocations, counted through the allocator the harness installs with `--alloc`,
//! agree with SQLite's own statistics. A test binary of its own: the allocator must be installed
//! before anything in the process uses SQLite.

use rusqlite::ffi;
use std::sync::atomic::{AtomicU64, Ordering};
use workloads::Workload;
use workloads::db::{Backend, DbConfig, Storage, sqlite_alloc};
use workloads::sql::{SqlConfig, ThreadSelect};

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

fn count(_bytes: usize) {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
}

/// SQLite's current value of a status counter.
fn status(op: i32) -> i64 {
    let (mut current, mut high) = (0i64, 0i64);
    // SAFETY: a status query with valid out-pointers.
    let rc = unsafe { ffi::sqlite3_status64(op, &raw mut current, &raw mut high, 0) };
    assert_eq!(rc, ffi::SQLITE_OK);
    current
}

/// The counting allocator's live allocations and bytes, against SQLite's, within 1%.
fn assert_agrees(when: &str) {
    let (live, bytes) = sqlite_alloc::live();
    let (sqlite_live, sqlite_bytes) = (status(ffi::SQLITE_STATUS_MALLOC_COUNT), status(ffi::SQLITE_STATUS_MEMORY_USED));
    assert!(sqlite_live > 0 && sqlite_bytes > 0, "{when}: SQLite keeps its statistics");
    for (ours, theirs, what) in [(live, sqlite_live, "allocations"), (bytes, sqlite_bytes, "bytes")] {
        assert!(
            (ours - theirs).abs() as f64 <= 0.01 * theirs as f64,
            "{when}: {what}: counted {ours}, SQLite says {theirs}"
        );
    }
}

#[test]
fn counted_allocations_match_sqlites_own_statistics() {
    // SQLite keeps these statistics only when asked to, before it starts.
    // SAFETY: configuration before SQLite is initialised.
    assert_eq!(unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_MEMSTATUS, 1 as std::ffi::c_int) }, ffi::SQLITE_OK);
    sqlite_alloc::count_allocations(count).unwrap();
    let cfg = SqlConfig {
        db: DbConfig { backend: Backend::Sqlite(Storage::Memory), pool_size: 2, database_url: String::new() },
        row_count: 1000,
    };
    let select = ThreadSelect::create(&cfg).unwrap();
    assert_agrees("after seeding");
    let mut local = select.local(0).unwrap();
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    const OPS: u64 = 2000;
    let found: i64 = (0..OPS).map(|_| select.op(&mut local)).sum();
    assert_eq!(found, OPS as i64);
    let per_op = (ALLOCATIONS.load(Ordering::Relaxed) - before) as f64 / OPS as f64;
    assert_agrees("after the ops");
    println!("SQLite allocations per select-by-id transaction: {per_op}");
    // The window sees SQLite's allocations: a string of every name outgrows the connection's
    // lookaside slots (which serve the select's small allocations) and comes from the heap.
    let fixture = select.fixture();
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    for _ in 0..100 {
        fixture.execute_in_tx("SELECT group_concat(username) FROM benchmark_users", true).unwrap();
    }
    let parsed = (ALLOCATIONS.load(Ordering::Relaxed) - before) as f64 / 100.0;
    assert!(parsed >= 1.0, "a 9 KB string is allocated: counted {parsed} per call");
    assert_agrees("after parsed statements");
    // Installing twice is refused in one line.
    let again = sqlite_alloc::count_allocations(count).unwrap_err().to_string();
    assert!(again.contains("in use") || again.contains("already counted"), "{again}");
}
