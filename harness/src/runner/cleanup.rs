//! Removing what workers left behind, with bounded waits: after a failed fork (retried while a
//! server restarts), and at the start of a run for workers of earlier runs that are gone. A
//! silent server cannot hold the parent: each attempt runs on a thread of its own and is
//! abandoned at its bound or at an interrupt.

use super::{RunContext, servers};
use crate::plan::Case;
use crate::progress::Progress;
use crate::report::Fork;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use workloads::Server;
use workloads::redact::redact;

/// How long one cleanup attempt may take at most (a connect, a query, a few drops); less when
/// the fork timeout is shorter.
const ATTEMPT_LIMIT: Duration = Duration::from_secs(10);
/// Attempts after a failed fork: the server may be restarting (one that accepts and does not
/// answer within the bound is not retried).
const ATTEMPTS: u32 = 3;
/// The pause before the second attempt (doubled before the third).
const FIRST_PAUSE: Duration = Duration::from_secs(1);
/// After an interrupt: one attempt, this short, so that the run still ends within seconds.
const INTERRUPTED_LIMIT: Duration = Duration::from_secs(3);
/// After a second interrupt (a storm of Ctrl-C): the attempt is given up this soon, never at
/// once, since a reachable server drops a schema in milliseconds.
const HURRIED_LIMIT: Duration = Duration::from_secs(1);

/// Runs `work` on a thread of its own and waits at most `limit` for it, or less when
/// `give_up` says so: `None` when it did not finish (the thread is left to end on its own).
pub(crate) fn bounded<T: Send + 'static>(
    limit: Duration,
    give_up: &dyn Fn() -> bool,
    work: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new().name("harness-cleanup".into()).spawn(move || tx.send(work())).ok()?;
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left.min(Duration::from_millis(100))) {
            Ok(value) => return Some(value),
            Err(mpsc::RecvTimeoutError::Disconnected) => return None,
            Err(mpsc::RecvTimeoutError::Timeout) if left.is_zero() => return None,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if give_up() {
            return None;
        }
    }
}

/// How long one attempt may wait: [`ATTEMPT_LIMIT`], or the fork timeout when that is shorter.
fn attempt_limit(ctx: &RunContext<'_>) -> Duration {
    ATTEMPT_LIMIT.min(Duration::from_nanos(ctx.settings.fork_timeout_nanos)).max(Duration::from_secs(1))
}

/// The PostgreSQL URL a case uses, if any.
fn postgres_url(case: &Case, ctx: &RunContext<'_>) -> Option<String> {
    servers(case, ctx).into_iter().find(|(s, _)| *s == Server::Postgres).map(|(_, url)| url)
}

/// A failed worker may have been killed before its teardown: removes its SQLite files and its
/// PostgreSQL schemas (a growth table holds gigabytes), retrying while the server restarts,
/// and says what it removed, or that the next run will.
pub(super) fn clean_up_after(ctx: &RunContext<'_>, case: &Case, fork: &Fork, progress: &Progress) {
    let Some(pid) = fork.pid else { return };
    let url = postgres_url(case, ctx);
    let interrupted = || ctx.stop.load(Ordering::SeqCst);
    let attempt = |_| {
        let limit = if interrupted() { INTERRUPTED_LIMIT.min(attempt_limit(ctx)) } else { attempt_limit(ctx) };
        let url = url.clone();
        let started = Instant::now();
        let hurried = move || crate::interrupt::hurried() && started.elapsed() >= HURRIED_LIMIT;
        bounded(limit, &hurried, move || workloads::db::remove_leftovers(pid, url.as_deref())).ok_or_else(|| {
            let waited = if started.elapsed() < limit { HURRIED_LIMIT } else { limit };
            format!("the server did not answer within {}", humantime::format_duration(waited))
        })
    };
    match retried(attempt, &interrupted, &|pause| std::thread::sleep(pause)) {
        Ok(0) => {}
        Ok(n) => progress.warn(&format!("removed {n} database(s) worker {pid} left behind")),
        Err(last) => progress.warn(&format!(
            "cannot remove what worker {pid} left behind ({}); the next run that uses this server removes it",
            redact(&last)
        )),
    }
}

/// Runs `attempt` (numbered from 0) until it succeeds, [`ATTEMPTS`] times at most, pausing
/// [`FIRST_PAUSE`], then twice that, between: an attempt that got no answer (`Err`) or an
/// interrupt ends the retries. The last error when
/// none succeeded.
fn retried(
    mut attempt: impl FnMut(u32) -> Result<anyhow::Result<usize>, String>,
    interrupted: &dyn Fn() -> bool,
    pause: &dyn Fn(Duration),
) -> Result<usize, String> {
    let mut last = String::new();
    for n in 0..ATTEMPTS {
        if n > 0 {
            if interrupted() {
                break;
            }
            pause(FIRST_PAUSE * 2u32.pow(n - 1));
        }
        match attempt(n)? {
            Ok(removed) => return Ok(removed),
            Err(e) => last = format!("{e:#}"),
        }
    }
    Err(last)
}

/// At the start of a run: removes the SQLite temp dirs and the schemas (on every PostgreSQL
/// server the cases that run use) of workers that are gone, saying so in one line each.
pub(super) fn sweep_stale(cases: &[Case], skipped: &[Option<String>], ctx: &RunContext<'_>, progress: &Progress) {
    let mut urls: Vec<Option<String>> = cases
        .iter()
        .zip(skipped.iter().chain(std::iter::repeat(&None)))
        .filter(|(_, skip)| skip.is_none())
        .filter_map(|(case, _)| postgres_url(case, ctx).map(Some))
        .collect();
    urls.sort();
    urls.dedup();
    if urls.is_empty() {
        urls.push(None);
    }
    for url in urls {
        let shown = url.as_deref().map(redact);
        let limit = attempt_limit(ctx);
        let stopped = || ctx.stop.load(Ordering::SeqCst);
        match bounded(limit, &stopped, move || workloads::db::sweep_stale(url.as_deref())) {
            Some(Ok(swept)) => {
                if let Some(line) = swept.line() {
                    progress.warn(&line);
                }
            }
            Some(Err(e)) => {
                progress.warn(&format!("cannot look for what earlier runs left behind: {}", redact(&format!("{e:#}"))))
            }
            None => progress.warn(&format!(
                "PostgreSQL at {} did not answer within {} while looking for what earlier runs left behind",
                shown.unwrap_or_default(),
                humantime::format_duration(limit)
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_cleanup_is_retried_twice_with_pauses_and_a_silent_one_is_not() {
        let paused = std::cell::RefCell::new(vec![]);
        let pause = |d: Duration| paused.borrow_mut().push(d.as_secs());
        let never = || false;
        let failing_twice = |n: u32| Ok(if n < 2 { Err(anyhow::anyhow!("refused {n}")) } else { Ok(3) });
        assert_eq!(retried(failing_twice, &never, &pause), Ok(3));
        assert_eq!(*paused.borrow(), [1, 2]);
        let mut tries = 0;
        let always_failing = |n: u32| {
            tries += 1;
            Ok(Err(anyhow::anyhow!("refused {n}")))
        };
        assert_eq!(retried(always_failing, &never, &pause), Err("refused 2".into()));
        assert_eq!(tries, 3);
        let mut tries = 0;
        let silent = |_| {
            tries += 1;
            Err("no answer".to_string())
        };
        assert_eq!(retried(silent, &never, &pause), Err("no answer".into()));
        assert_eq!(tries, 1, "a silent server is not retried");
        let mut tries = 0;
        let refused = |_| {
            tries += 1;
            Ok(Err(anyhow::anyhow!("refused")))
        };
        assert_eq!(retried(refused, &|| true, &pause), Err("refused".into()));
        assert_eq!(tries, 1, "an interrupt stops the retries");
    }

    #[test]
    fn a_bounded_wait_returns_the_value_or_gives_up_at_its_bound_or_stop() {
        let never = || false;
        assert_eq!(bounded(Duration::from_secs(5), &never, || 7), Some(7));
        let started = Instant::now();
        assert_eq!(bounded(Duration::from_millis(200), &never, || std::thread::sleep(Duration::from_secs(30))), None);
        assert!(started.elapsed() < Duration::from_secs(5));
        let started = Instant::now();
        assert_eq!(bounded(Duration::from_secs(60), &|| true, || std::thread::sleep(Duration::from_secs(30))), None);
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
