//! The statements every SQLite connection of the process runs, by text, and the rows they
//! return: an automatic extension (`sqlite3_auto_extension`) installs a trace callback
//! (`sqlite3_trace_v2`, statement starts and rows) on each connection as it opens. rusqlite,
//! sqlx and Diesel all link the one libsqlite3-sys (it `links = "sqlite3"`), so this sees the
//! statements sqlx and Diesel prepare and cache themselves, which no pool of ours holds.
//!
//! An I/O fork installs it before setup opens a database and counts only inside its windows
//! ([`set_counting`]); nothing else installs it, so timed forks run untraced.

use rusqlite::trace::{TraceEvent, TraceEventCodes};
use rusqlite::{Connection, ffi};
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once, PoisonError};

/// What the traced connections ran while counting was on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Traced {
    /// Statement runs by SQL text as prepared (parameters are placeholders); a trigger's run is
    /// its `-- TRIGGER name` line.
    pub statements: BTreeMap<String, u64>,
    /// Rows the statements returned.
    pub rows: u64,
}

static COUNTING: AtomicBool = AtomicBool::new(false);
static TRACED: Mutex<Traced> = Mutex::new(Traced { statements: BTreeMap::new(), rows: 0 });
static INSTALLED: Once = Once::new();

/// Traces every SQLite connection opened from now on in this process (once; later calls do
/// nothing). Connections opened before are not traced.
pub fn trace_every_connection() -> anyhow::Result<()> {
    let mut result = Ok(());
    INSTALLED.call_once(|| {
        // SAFETY: `install` opens no database, closes none and leaves the extension list alone.
        result = unsafe { rusqlite::auto_extension::register_auto_extension(install) };
    });
    result.map_err(|e| anyhow::anyhow!("cannot trace SQLite's connections: {e}"))
}

/// Turns counting on or off (the windows of an I/O fork).
pub fn set_counting(on: bool) {
    COUNTING.store(on, Ordering::SeqCst);
}

/// What was counted so far, and a fresh start.
pub fn take() -> Traced {
    std::mem::take(&mut *TRACED.lock().unwrap_or_else(PoisonError::into_inner))
}

/// The automatic extension: SQLite calls it for every connection it opens.
unsafe extern "C" fn install(
    db: *mut ffi::sqlite3,
    err: *mut *mut c_char,
    _: *const ffi::sqlite3_api_routines,
) -> c_int {
    // SAFETY: SQLite hands over a connection it just opened and keeps it open.
    unsafe { rusqlite::auto_extension::init_auto_extension(db, err, install_on) }
}

/// Installs the trace callback on one connection (the handle is borrowed, never closed).
fn install_on(conn: Connection) -> rusqlite::Result<()> {
    conn.trace_v2(TraceEventCodes::SQLITE_TRACE_STMT | TraceEventCodes::SQLITE_TRACE_ROW, Some(on_event));
    Ok(())
}

/// Counts one statement start or row while counting is on.
fn on_event(event: TraceEvent<'_>) {
    if !COUNTING.load(Ordering::Relaxed) {
        return;
    }
    let mut traced = TRACED.lock().unwrap_or_else(PoisonError::into_inner);
    match event {
        TraceEvent::Stmt(_, sql) => match traced.statements.get_mut(sql) {
            Some(n) => *n += 1,
            None => {
                traced.statements.insert(sql.to_string(), 1);
            }
        },
        TraceEvent::Row(_) => traced.rows += 1,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_and_rows_are_counted_inside_the_window_only() {
        // Other tests of this process open connections too (and are traced while the window
        // is open): the statement's own table name tells its runs apart.
        trace_every_connection().unwrap();
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE traced_t (x INTEGER); INSERT INTO traced_t VALUES (1), (2), (3);").unwrap();
        let sql = "SELECT x FROM traced_t WHERE x >= ?1";
        take();
        set_counting(true);
        let mut select = conn.prepare(sql).unwrap();
        for _ in 0..2 {
            let rows: Vec<i64> = select.query_map([2], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap();
            assert_eq!(rows, [2, 3]);
        }
        set_counting(false);
        conn.execute_batch("SELECT x FROM traced_t").unwrap();
        let traced = take();
        assert_eq!(traced.statements.get(sql), Some(&2), "{traced:?}");
        assert_eq!(traced.statements.get("SELECT x FROM traced_t"), None, "after the window: {traced:?}");
        assert!(traced.rows >= 4, "{traced:?}");
    }
}
