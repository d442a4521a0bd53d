//! Whose leftovers are stale: a worker's schema or temp dir names its pid (and a schema the
//! machine's boot), and it is stale once that process is gone. The sweep itself is
//! [`super::sweep_stale`].

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
}
