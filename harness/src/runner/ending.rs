//! How a fork ended, in words: a stop (interrupted, timed out), an exit status or a signal.

use crate::report::FailureKind;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Why a fork's wait ends early, if it does: the run was interrupted, or the fork timed out.
pub(super) fn stop_reason(stop: &AtomicBool, deadline: Instant, timeout: Duration) -> Option<(FailureKind, String)> {
    if stop.load(Ordering::SeqCst) {
        Some((FailureKind::Interrupted, "run interrupted; worker killed".into()))
    } else if Instant::now() >= deadline {
        let t = humantime::format_duration(Duration::from_millis(timeout.as_millis() as u64));
        Some((
            FailureKind::Timeout,
            format!(
                "still running after the fork timeout of {t}; worker killed (raise --fork-timeout if the workload is just slow)"
            ),
        ))
    } else {
        None
    }
}

/// The failure implied by an exit status when no message reported one.
pub(super) fn exit_failure(s: ExitStatus, done: bool, measured: usize, expected: u32) -> Option<(FailureKind, String)> {
    if let Some(sig) = s.signal() {
        return Some((FailureKind::Signal, describe(s).unwrap_or_else(|| format!("killed by signal {sig}"))));
    }
    match (s.code(), done) {
        (Some(0), true) => None,
        (Some(0), false) => Some((
            FailureKind::Exit,
            format!("exited with code 0 before reporting done, after {measured} of {expected} measured iterations"),
        )),
        (Some(101), _) => Some((FailureKind::Exit, "exited with code 101 (the workload panicked)".into())),
        (Some(c), _) => Some((FailureKind::Exit, format!("exited with code {c}"))),
        (None, _) => Some((FailureKind::Exit, "exit status unknown".into())),
    }
}

/// A failure's message with how the worker ended (unless the parent killed it).
pub(super) fn with_status(message: String, status: Option<ExitStatus>, killed: bool) -> String {
    match status.filter(|_| !killed).and_then(describe) {
        Some(d) => format!("{message} ({d})"),
        None => message,
    }
}

/// `killed by SIGSEGV (core dumped)` for a signal; None for a normal exit.
fn describe(s: ExitStatus) -> Option<String> {
    let sig = s.signal()?;
    let name =
        nix::sys::signal::Signal::try_from(sig).map_or_else(|_| format!("signal {sig}"), |n| n.as_str().to_string());
    Some(format!("killed by {name}{}", if s.core_dumped() { " (core dumped)" } else { "" }))
}

/// A line from the worker, quoted and cut to 120 bytes for an error message.
pub(super) fn clip(s: &str) -> String {
    let mut end = s.len().min(120);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}{}", &s[..end], if end < s.len() { "…" } else { "" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_statuses_are_described() {
        let code = |c: i32| ExitStatus::from_raw(c << 8);
        assert_eq!(exit_failure(code(0), true, 2, 2), None);
        assert!(exit_failure(code(0), false, 1, 2).unwrap().1.contains("after 1 of 2"));
        assert!(exit_failure(code(101), false, 0, 2).unwrap().1.contains("panicked"));
        let segv = exit_failure(ExitStatus::from_raw(libc::SIGSEGV), false, 0, 2).unwrap();
        assert_eq!((segv.0, segv.1.as_str()), (FailureKind::Signal, "killed by SIGSEGV"));
    }
}
