//! Ctrl-C, SIGTERM and SIGHUP, for the whole process: one stop flag, set by the first signal,
//! and a count of them. A leaf: the runner, the builds and the child runs read it.
//!
//! The first signal stops what runs (a run's forks, a build, a child `harness run`); every wait
//! after it is bounded. Further signals only shorten those waits ([`hurried`]): they never skip
//! the two things that matter, the report's last write as `interrupted` and the removal of what
//! a killed worker left, so a storm of Ctrl-C ends the run as fast as one, and as truthfully.
//! A build or a child run is passed the interrupt (SIGINT) and given [`GRACE`] to end.

use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The process's stop flag, once its handlers are installed.
static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();
/// How many SIGINT, SIGTERM or SIGHUP the process has had.
static SIGNALS: AtomicUsize = AtomicUsize::new(0);

/// How long a build or a child run passed an interrupt may take to end before it is killed: a
/// child harness writes its report and removes its worker's leftovers in a few seconds.
const GRACE: Duration = Duration::from_secs(15);
/// How often a wait on a child looks at the stop flag.
const POLL: Duration = Duration::from_millis(50);
/// How long what an interrupted group's leader left behind may take to end on its own.
const LEFT_GRACE: Duration = Duration::from_secs(2);

/// Installs the handlers (once; later calls return the same flag): the flag is set by the
/// first signal and stays set.
pub(crate) fn install() -> std::io::Result<Arc<AtomicBool>> {
    if let Some(stop) = STOP.get() {
        return Ok(Arc::clone(stop));
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
        // SAFETY: the handler only adds to an atomic, which is async-signal-safe.
        unsafe {
            signal_hook::low_level::register(sig, || {
                SIGNALS.fetch_add(1, Ordering::SeqCst);
            })?;
        }
    }
    Ok(Arc::clone(STOP.get_or_init(|| stop)))
}

/// Whether the process was asked to stop.
pub(crate) fn requested() -> bool {
    STOP.get().is_some_and(|s| s.load(Ordering::SeqCst))
}

/// Whether more than one signal came: the bounded waits left are shortened, not skipped.
pub(crate) fn hurried() -> bool {
    SIGNALS.load(Ordering::SeqCst) >= 2
}

/// Runs `command` with its stdio as set, passing an interrupt on: at the stop flag the child
/// (or, with `own_group`, its whole process group, as cargo's rustc jobs are) gets SIGINT, then
/// SIGKILL after [`GRACE`]. Its status, and whether it was interrupted; an error, without
/// starting it, when the stop flag is already set.
pub(crate) fn status(command: &mut Command, own_group: bool) -> std::io::Result<(ExitStatus, bool)> {
    let mut child = spawn(command, own_group)?;
    wait(&mut child, own_group)
}

/// As [`status`], with stdout and stderr collected, as [`Command::output`] does.
pub(crate) fn output(command: &mut Command, own_group: bool) -> std::io::Result<(Output, bool)> {
    let mut child = spawn(command.stdout(Stdio::piped()).stderr(Stdio::piped()), own_group)?;
    let (stdout, stderr) = (drain(child.stdout.take()), drain(child.stderr.take()));
    let (status, interrupted) = wait(&mut child, own_group)?;
    let output =
        Output { status, stdout: stdout.join().unwrap_or_default(), stderr: stderr.join().unwrap_or_default() };
    Ok((output, interrupted))
}

/// Reads `pipe` to its end on a thread of its own, so that a child filling one pipe never
/// blocks while the other is read.
fn drain(pipe: Option<impl std::io::Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = vec![];
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

/// Starts `command` with the handlers installed, unless the process is already stopping.
fn spawn(command: &mut Command, own_group: bool) -> std::io::Result<Child> {
    install()?;
    if requested() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::Interrupted,
            "interrupted (Ctrl-C / SIGTERM) before it started",
        ));
    }
    if own_group {
        std::os::unix::process::CommandExt::process_group(command, 0);
    }
    command.spawn()
}

/// Waits for `child`, passing the interrupt on as [`status`] says.
fn wait(child: &mut Child, own_group: bool) -> std::io::Result<(ExitStatus, bool)> {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let send = |sig| {
        let _ = if own_group { nix::sys::signal::killpg(pid, sig) } else { nix::sys::signal::kill(pid, sig) };
    };
    let mut passed: Option<Instant> = None;
    loop {
        if let Some(status) = child.try_wait()? {
            if own_group && passed.is_some() {
                empty_group(pid);
            }
            return Ok((status, passed.is_some()));
        }
        match passed {
            None if requested() => {
                send(nix::sys::signal::Signal::SIGINT);
                passed = Some(Instant::now());
            }
            Some(at) if at.elapsed() >= GRACE => send(nix::sys::signal::Signal::SIGKILL),
            _ => {}
        }
        std::thread::sleep(POLL);
    }
}

/// After an interrupted group's leader has exited: what it left in its group (cargo's rustc
/// jobs, a build script), given [`LEFT_GRACE`] to end on the SIGINT they got, then killed, so
/// that nothing of an interrupted build outlives the harness.
fn empty_group(pid: nix::unistd::Pid) {
    let alive = || nix::sys::signal::killpg(pid, None).is_ok();
    let gone_within = |limit: Duration| {
        let start = Instant::now();
        while alive() && start.elapsed() < limit {
            std::thread::sleep(POLL);
        }
        !alive()
    };
    if !gone_within(LEFT_GRACE) {
        let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
        gone_within(LEFT_GRACE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_runs_to_its_end_with_its_output() {
        let (out, interrupted) =
            output(Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]), false).unwrap();
        assert_eq!((out.status.code(), interrupted), (Some(3), false));
        assert_eq!((out.stdout.as_slice(), out.stderr.as_slice()), (&b"out\n"[..], &b"err\n"[..]));
    }
}
