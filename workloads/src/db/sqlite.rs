//! SQLite databases shared by every pooled connection of a fork (`sqlite::memory:` would give
//! each connection its own empty database). Two storages:
//! - [`Storage::Memory`] (`db=sqlite`): an in-memory database on SQLite's `memdb` VFS, which every
//!   connection of the process opens by name — the embedded default, as fast as `:memory:`;
//! - [`Storage::File`] (`db=sqlite_file`): a database file in WAL mode in a temp dir, where every
//!   transaction also pays for the file locks (3-4x slower on the development machine).
//!
//! Each pooled connection owns the statements its workload runs, prepared once when the
//! connection opens: no per-op statement-cache lookup.

use anyhow::Context;
use rusqlite::{Connection, OpenFlags, Statement};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The statement counters of SQLite a fork records (never checked), with their names in a
/// fork's `observed` and what they count (`sqlite3_stmt_status`).
pub const STATEMENT_WORK: [(&str, rusqlite::StatementStatus, &str); 4] = [
    ("sqlite_vm_steps", rusqlite::StatementStatus::VmStep, "virtual machine steps"),
    ("sqlite_fullscan_steps", rusqlite::StatementStatus::FullscanStep, "rows stepped through by full table scans"),
    ("sqlite_sorts", rusqlite::StatementStatus::Sort, "sorts"),
    ("sqlite_autoindex_rows", rusqlite::StatementStatus::AutoIndex, "rows put in automatic indexes"),
];

/// The page-cache counters of SQLite a fork records (never checked), in
/// [`SqliteDb::page_cache_counts`]' order, with their names in a fork's `observed`.
pub const PAGE_CACHE: [(&str, &str); 3] = [
    ("sqlite_cache_writes", "pages written"),
    ("sqlite_cache_hits", "page-cache hits"),
    ("sqlite_cache_misses", "page-cache misses"),
];

/// Where the database lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// In memory, on the `memdb` VFS, shared by name within the process.
    Memory,
    /// A file in WAL mode.
    File,
}

/// A workload's statements, prepared on their connection, in the order the workload listed them,
/// with their counters widened to 64 bits.
pub struct Statements<'c>(pub Vec<Statement<'c>>, Widened);

/// 64-bit totals of a connection's 32-bit statement counters (`sqlite3_stmt_status` keeps a
/// `u32` that wraps), by statement and counter: each reading adds what the counter moved since
/// the last, modulo 2^32. Exact while a counter moves less than 2^32 between two readings; a
/// fork reads them before its first op and after its last, where a plain sum of the `u32`s went
/// backwards when one wrapped in between.
#[derive(Default)]
struct Widened(std::cell::RefCell<std::collections::HashMap<(usize, i32), (u32, u64)>>);

impl Widened {
    /// Counter `status` of statement `index`, which reads `now`, as a 64-bit total.
    fn read(&self, index: usize, status: rusqlite::StatementStatus, now: u32) -> u64 {
        let mut seen = self.0.borrow_mut();
        let (last, total) = seen.entry((index, status as i32)).or_insert((0, 0));
        *total = widen(*last, *total, now);
        *last = now;
        *total
    }
}

/// The total of a wrapping `u32` counter that read `last` (the total then `total`) and reads `now`.
fn widen(last: u32, total: u64, now: u32) -> u64 {
    total + u64::from(now.wrapping_sub(last))
}

self_cell::self_cell!(
    /// A pooled connection with its workload's statements prepared on it.
    pub struct PreparedConn {
        owner: Connection,
        #[covariant]
        dependent: Statements,
    }
);

// SAFETY: the statements borrow only the owner connection and never leave the cell, so moving
// the cell moves a connection together with its own statements, as moving a `Connection` with
// its statement cache does (rusqlite's `StatementCache` is `Send` on the same ground). The cell
// is never shared between threads (it is not `Sync`).
unsafe impl Send for PreparedConn {}

impl std::fmt::Debug for PreparedConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PreparedConn")
    }
}

/// Opens connections to one database for an r2d2 pool.
#[derive(Debug)]
pub struct SqliteManager {
    path: PathBuf,
    storage: Storage,
    statements: Vec<String>,
}

impl SqliteManager {
    fn open(&self) -> Result<Connection, rusqlite::Error> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = match self.storage {
            Storage::Memory => Connection::open_with_flags_and_vfs(&self.path, flags, "memdb")?,
            Storage::File => Connection::open_with_flags(&self.path, flags)?,
        };
        conn.busy_timeout(Duration::from_secs(5))?;
        Ok(conn)
    }
}

impl r2d2::ManageConnection for SqliteManager {
    type Connection = PreparedConn;
    type Error = rusqlite::Error;

    /// Opens a connection and prepares the statements (their tables must exist).
    fn connect(&self) -> Result<PreparedConn, rusqlite::Error> {
        PreparedConn::try_new(self.open()?, |c| {
            let prepared = self.statements.iter().map(|sql| c.prepare(sql)).collect::<Result<_, _>>()?;
            Ok(Statements(prepared, Widened::default()))
        })
    }

    fn is_valid(&self, conn: &mut PreparedConn) -> Result<(), rusqlite::Error> {
        conn.borrow_owner().execute_batch("")
    }

    fn has_broken(&self, _: &mut PreparedConn) -> bool {
        false
    }
}

/// The start of a database file's temp dir name, before the process id.
const LEFTOVER_PREFIX: &str = "harness-sqlite-";

/// Removes the database temp dirs of the process `pid` (a killed worker cannot); returns how many.
pub fn remove_leftovers(pid: u32) -> usize {
    let prefix = format!("{LEFTOVER_PREFIX}{pid}-");
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return 0 };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .filter(|e| std::fs::remove_dir_all(e.path()).is_ok())
        .count()
}

/// Removes every database temp dir whose process is gone; returns their pids.
pub fn remove_stale_dirs() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return vec![] };
    let pid_of = |name: &str| name.strip_prefix(LEFTOVER_PREFIX)?.split('-').next()?.parse::<u32>().ok();
    entries
        .flatten()
        .filter_map(|e| pid_of(&e.file_name().to_string_lossy()).map(|pid| (pid, e.path())))
        .filter(|(pid, _)| !super::stale::is_alive(*pid))
        .filter(|(_, path)| std::fs::remove_dir_all(path).is_ok())
        .map(|(pid, _)| pid)
        .collect()
}

/// A database and a pool of connections to it.
#[derive(Debug)]
pub struct SqliteDb {
    /// For [`Storage::File`]: removed with the file when the fixture is dropped.
    _dir: Option<tempfile::TempDir>,
    /// Keeps a `memdb` database alive while the fixture lives (it vanishes with its last connection).
    _keeper: Mutex<Connection>,
    path: PathBuf,
    storage: Storage,
    /// The pool.
    pub pool: r2d2::Pool<SqliteManager>,
}

impl SqliteDb {
    /// Creates the database, runs `init` on it (schema, seed), then opens the pool whose
    /// connections prepare `statements`.
    pub fn create(
        storage: Storage,
        pool_size: u32,
        statements: Vec<String>,
        init: &mut dyn FnMut(&mut Connection) -> anyhow::Result<()>,
    ) -> anyhow::Result<SqliteDb> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let (dir, path) = match storage {
            Storage::Memory => {
                let name = format!("/harness-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
                (None, PathBuf::from(name))
            }
            Storage::File => {
                let dir = tempfile::Builder::new()
                    .prefix(&format!("{}{}-", LEFTOVER_PREFIX, std::process::id()))
                    .tempdir()
                    .context("cannot create a temp dir for SQLite")?;
                let path = dir.path().join("benchmark.db");
                (Some(dir), path)
            }
        };
        let manager = SqliteManager { path: path.clone(), storage, statements };
        let mut keeper = manager.open().context("cannot open the SQLite database")?;
        if storage == Storage::File {
            keeper.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")?;
        }
        init(&mut keeper).context("cannot set up the SQLite database")?;
        let pool = super::pool_builder(pool_size, Duration::from_secs(5))
            .build(manager)
            .context("cannot open the SQLite pool")?;
        Ok(SqliteDb { _dir: dir, _keeper: Mutex::new(keeper), path, storage, pool })
    }

    /// The database's name (`memdb`) or file path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many times the workload's prepared statements ran, summed over every pooled
    /// connection (SQLite's `SQLITE_STMTSTATUS_RUN`, widened past its 2^32 wrap).
    pub fn statement_runs(&self) -> anyhow::Result<i64> {
        Ok(self.statement_status(&[rusqlite::StatementStatus::Run])?[0])
    }

    /// What SQLite counted of the work the workload's prepared statements did, summed over
    /// every pooled connection, in [`STATEMENT_WORK`]'s order (each widened past its 2^32 wrap).
    pub fn statement_work(&self) -> anyhow::Result<Vec<i64>> {
        self.statement_status(&STATEMENT_WORK.map(|(_, status, _)| status))
    }

    /// `statuses` of the pooled connections' prepared statements, each summed.
    fn statement_status(&self, statuses: &[rusqlite::StatementStatus]) -> anyhow::Result<Vec<i64>> {
        let held = super::hold_all(&self.pool)?;
        let mut sums = vec![0u64; statuses.len()];
        for conn in &held {
            let Statements(statements, widened) = conn.borrow_dependent();
            for (index, st) in statements.iter().enumerate() {
                for (sum, &status) in sums.iter_mut().zip(statuses) {
                    *sum += widened.read(index, status, st.get_status(status) as u32);
                }
            }
        }
        Ok(sums.into_iter().map(|s| i64::try_from(s).unwrap_or(i64::MAX)).collect())
    }

    /// Pages written to disk (to the WAL in WAL mode), page-cache hits and misses, summed over
    /// every pooled connection (`sqlite3_db_status`: CACHE_WRITE, CACHE_HIT, CACHE_MISS).
    pub fn page_cache_counts(&self) -> anyhow::Result<[i64; 3]> {
        use rusqlite::ffi;
        let held = super::hold_all(&self.pool)?;
        let mut counts = [0i64; 3];
        for conn in &held {
            let ops =
                [ffi::SQLITE_DBSTATUS_CACHE_WRITE, ffi::SQLITE_DBSTATUS_CACHE_HIT, ffi::SQLITE_DBSTATUS_CACHE_MISS];
            for (count, op) in counts.iter_mut().zip(ops) {
                let (mut current, mut highwater) = (0, 0);
                // SAFETY: the handle is the pooled connection's own, open while `held` lives;
                // sqlite3_db_status only reads its counters (no reset).
                let rc = unsafe {
                    ffi::sqlite3_db_status(conn.borrow_owner().handle(), op, &mut current, &mut highwater, 0)
                };
                anyhow::ensure!(rc == ffi::SQLITE_OK, "sqlite3_db_status({op}) failed with code {rc}");
                *count += i64::from(current);
            }
        }
        Ok(counts)
    }

    /// Where the database lives.
    pub fn storage(&self) -> Storage {
        self.storage
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::StatementStatus::{Run, VmStep};

    #[test]
    fn a_counter_that_wraps_between_two_readings_keeps_counting() {
        assert_eq!(widen(7, 7, 12), 12);
        assert_eq!(widen(u32::MAX - 5, u64::from(u32::MAX - 5), 4), u64::from(u32::MAX) + 5);
        let widened = Widened::default();
        assert_eq!(widened.read(0, VmStep, u32::MAX - 1), u64::from(u32::MAX - 1));
        assert_eq!(widened.read(0, VmStep, 3), u64::from(u32::MAX) + 4, "wrapped once");
        assert_eq!(widened.read(0, Run, 3), 3, "each counter on its own");
        assert_eq!(widened.read(1, VmStep, 0), 0, "each statement on its own");
    }

    #[test]
    fn the_pool_schedules_no_reaper_into_a_measured_window() {
        let db = SqliteDb::create(Storage::Memory, 2, vec![], &mut |_| Ok(())).unwrap();
        assert_eq!((db.pool.idle_timeout(), db.pool.max_lifetime()), (None, None));
        assert_eq!(db.pool.max_size(), 2);
    }
}
