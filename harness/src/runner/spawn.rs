//! Starting one worker: fork+exec of a harness binary in worker mode, with its result pipe on
//! fd 3, its own process group, a parent-death signal, a whitelisted environment, and stdout and
//! stderr drained into bounded tails so a flood never blocks it.

use crate::protocol::{RESULT_FD, Task};
use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};

/// Environment variables a worker inherits; everything else is dropped.
pub(crate) const ENV_WHITELIST: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "RUST_BACKTRACE",
    "RUST_LIB_BACKTRACE",
];

/// Longest line accepted on the result pipe.
const MAX_LINE: usize = 1 << 20;
/// Bytes of stderr kept per worker.
const TAIL_BYTES: usize = 8 * 1024;

/// What the result-pipe reader thread sees.
#[derive(Debug)]
pub(crate) enum PipeEvent {
    /// One line, newline removed.
    Line(String),
    /// A line longer than the limit, or not UTF-8.
    Garbled(String),
    /// The worker closed the pipe (normally by exiting).
    Eof,
}

/// The last bytes written to one of the worker's output streams.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tail(Arc<Mutex<(VecDeque<u8>, u64)>>);

impl Tail {
    fn push(&self, bytes: &[u8]) {
        let mut g = self.0.lock().expect("tail lock");
        g.1 += bytes.len() as u64;
        let keep = &bytes[bytes.len().saturating_sub(TAIL_BYTES)..];
        let buf = &mut g.0;
        buf.extend(keep);
        let excess = buf.len().saturating_sub(TAIL_BYTES);
        buf.drain(..excess);
    }

    /// The kept bytes as text, at most `lines` last lines.
    pub(crate) fn text(&self, lines: usize) -> String {
        let g = self.0.lock().expect("tail lock");
        let (a, b) = g.0.as_slices();
        let s = String::from_utf8_lossy(&[a, b].concat()).into_owned();
        let all: Vec<&str> = s.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

/// A running worker.
#[derive(Debug)]
pub(crate) struct Worker {
    /// The child process; its pid is also its process group id.
    pub child: Child,
    /// Lines from the result pipe.
    pub events: Receiver<PipeEvent>,
    /// Tail of stderr.
    pub stderr: Tail,
    /// A lockstep worker's stdin, where each go byte lets it take one step.
    pub stdin: Option<std::process::ChildStdin>,
}

impl Worker {
    /// Lets a lockstep worker take its next step; false when it can no longer be told.
    pub(crate) fn go(&mut self) -> bool {
        self.stdin.as_mut().is_some_and(|s| s.write_all(b"g").and_then(|()| s.flush()).is_ok())
    }

    /// Kills the worker's whole process group (the worker and anything it started).
    pub(crate) fn kill_group(&self) {
        let pgid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
    }
}

/// Starts `command` (a harness binary's `__worker` mode, possibly wrapped in valgrind), hands
/// it `task` on stdin, and starts the reader threads; `pin` restricts it to those CPUs.
pub(crate) fn spawn(command: &[OsString], task: &Task, pin: Option<libc::cpu_set_t>) -> std::io::Result<Worker> {
    let (program, args) = command.split_first().ok_or_else(|| std::io::Error::other("empty worker command"))?;
    let (read_end, write_end): (OwnedFd, OwnedFd) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_clear()
        .envs(ENV_WHITELIST.iter().filter_map(|k| std::env::var_os(k).map(|v| (k, v))))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let wfd = write_end.as_raw_fd();
    let parent = nix::unistd::getpid().as_raw();
    // SAFETY: the closure runs between fork and exec and calls only async-signal-safe functions.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(set) = &pin
                && libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            prepare_child(wfd, parent)
        });
    }
    let mut child = cmd.spawn()?;
    drop(write_end);

    let mut stdin = child.stdin.take();
    if let Some(pipe) = stdin.as_mut() {
        let mut line = serde_json::to_vec(task).expect("task serializes");
        line.push(b'\n');
        // A worker that died before reading shows up in its exit status; ignore EPIPE here.
        let _ = pipe.write_all(&line);
    }
    // Only a lockstep worker (and an I/O fork's, at its window edges) reads on after its
    // task, one go byte per step.
    let stdin = stdin.filter(|_| task.lockstep || task.io.is_some());
    // Stdout is drained so a chatty workload never blocks on a full pipe; only stderr's tail
    // is kept for the failure record.
    drain(child.stdout.take().expect("piped stdout"));
    let stderr = drain(child.stderr.take().expect("piped stderr"));
    let events = read_lines(std::fs::File::from(read_end));
    Ok(Worker { child, events, stderr, stdin })
}

/// In the child: put the result pipe on fd 3, die with the parent.
fn prepare_child(wfd: i32, parent: i32) -> std::io::Result<()> {
    // SAFETY: plain syscalls on valid fds; no allocation.
    unsafe {
        if wfd == RESULT_FD {
            if libc::fcntl(wfd, libc::F_SETFD, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
        } else if libc::dup2(wfd, RESULT_FD) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // The parent may have died before PR_SET_PDEATHSIG took effect.
        if libc::getppid() != parent {
            return Err(std::io::Error::other("parent exited"));
        }
    }
    Ok(())
}

fn drain(mut stream: impl Read + Send + 'static) -> Tail {
    let tail = Tail::default();
    let t = tail.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        while let Ok(n) = stream.read(&mut buf) {
            if n == 0 {
                break;
            }
            t.push(&buf[..n]);
        }
    });
    tail
}

fn read_lines(file: std::fs::File) -> Receiver<PipeEvent> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(file);
        loop {
            let mut buf = Vec::new();
            let n = match (&mut reader).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut buf) {
                Ok(n) => n,
                Err(e) => {
                    let _ = tx.send(PipeEvent::Garbled(format!("read error: {e}")));
                    break;
                }
            };
            if n == 0 {
                let _ = tx.send(PipeEvent::Eof);
                break;
            }
            if buf.last() != Some(&b'\n') {
                let why = if buf.len() > MAX_LINE { "a line over 1 MiB" } else { "an unterminated line" };
                let _ = tx.send(PipeEvent::Garbled(why.into()));
                break;
            }
            buf.pop();
            let event = match String::from_utf8(buf) {
                Ok(s) => PipeEvent::Line(s),
                Err(_) => PipeEvent::Garbled("a line that is not UTF-8".into()),
            };
            if tx.send(event).is_err() {
                break;
            }
        }
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_lines_within_its_bound() {
        let t = Tail::default();
        for i in 0..5000 {
            t.push(format!("line {i}\n").as_bytes());
        }
        assert_eq!(t.text(2), "line 4998\nline 4999");
        assert!(t.0.lock().unwrap().0.len() <= TAIL_BYTES);
        assert!(t.0.lock().unwrap().1 > TAIL_BYTES as u64);
    }
}
