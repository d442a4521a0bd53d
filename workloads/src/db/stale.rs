//! What workers that are gone left behind (a killed worker cannot clean up, and the parent's
//! cleanup can fail while a server restarts): found by the pid in its name or comment, removed
//! at the start of the next run that touches the same server.

use std::collections::BTreeSet;

/// This boot of this machine (`/proc/sys/kernel/random/boot_id`): a pid names a process only
/// together with it. Empty where the kernel does not say, so that nothing is ever matched.
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_string()).unwrap_or_default()
}

/// Whether process `pid` exists (a process we may not signal exists too).
pub fn is_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let sent = unsafe { libc::kill(pid, 0) };
    sent == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// What [`sweep`] removed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Swept {
    /// PostgreSQL schemas dropped.
    pub schemas: usize,
    /// SQLite temp dirs removed.
    pub dirs: usize,
    /// The gone workers they belonged to.
    pub pids: BTreeSet<u32>,
}

impl Swept {
    /// The one line that says what was removed, or `None` when nothing was.
    pub fn line(&self) -> Option<String> {
        if self.schemas + self.dirs == 0 {
            return None;
        }
        let pids: Vec<String> = self.pids.iter().map(u32::to_string).collect();
        Some(format!(
            "removed {} PostgreSQL schema(s) and {} SQLite temp dir(s) left by workers that are gone (pid {})",
            self.schemas,
            self.dirs,
            pids.join(", ")
        ))
    }
}

/// Removes the SQLite temp dirs and, given a PostgreSQL URL, the schemas whose workers are gone.
pub fn sweep(database_url: Option<&str>) -> anyhow::Result<Swept> {
    let dirs = super::sqlite::remove_stale_dirs();
    let schemas = match database_url {
        Some(url) => super::postgres::drop_stale_schemas(url)?,
        None => vec![],
    };
    Ok(Swept { schemas: schemas.len(), dirs: dirs.len(), pids: dirs.into_iter().chain(schemas).collect() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_reaped_child_is_not() {
        assert!(is_alive(std::process::id()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!is_alive(pid));
        assert!(!boot_id().is_empty());
    }

    #[test]
    fn the_line_names_counts_and_pids() {
        assert_eq!(Swept::default().line(), None);
        let swept = Swept { schemas: 2, dirs: 1, pids: [7, 9].into() };
        assert_eq!(
            swept.line().unwrap(),
            "removed 2 PostgreSQL schema(s) and 1 SQLite temp dir(s) left by workers that are gone (pid 7, 9)"
        );
    }
}
