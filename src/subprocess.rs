//! Running another program safely: in its own process group, under a wall limit and optional CPU
//! and memory limits, its output captured under a byte cap, and the whole group killed and reaped
//! at the end.
//!
//! The child leads a fresh process group (`process_group(0)`); `RLIMIT_CPU` and `RLIMIT_AS` are
//! set between fork and exec. The leader is polled (`waitid` with `WNOWAIT`, so it stays a zombie
//! and its group id cannot be reused) every few milliseconds until it exits, the wall limit
//! passes, or the [`CancelToken`] is cancelled; then SIGKILL goes to the whole group — also when
//! the leader exited by itself, so background grandchildren die with it — and the leader is
//! reaped. The call returns once no live process of the group is left (Linux `/proc`), within a
//! short grace period. A process that leaves the group (`setsid`) escapes; nothing short of a
//! cgroup catches it, and its open pipes are then abandoned rather than waited for.

use crate::cancel::CancelToken;
use nix::sys::resource::{setrlimit, Resource};
use nix::sys::signal::{killpg, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long the group may take to die, and its pipes to close, after the SIGKILL.
const GRACE: Duration = Duration::from_secs(2);
/// The longest pause between two polls of the leader.
const MAX_POLL: Duration = Duration::from_millis(20);

/// The limits of one run.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Wall time before the whole group is killed.
    pub wall: Duration,
    /// CPU seconds of each process (`RLIMIT_CPU`: SIGXCPU at the limit, SIGKILL a second later).
    pub cpu_seconds: Option<u64>,
    /// Address space of each process in bytes (`RLIMIT_AS`: allocations past it fail).
    pub memory_bytes: Option<u64>,
    /// Bytes of standard output kept (the first ones).
    pub stdout_cap: usize,
    /// Bytes of standard error kept (the last ones).
    pub stderr_cap: usize,
}

impl Limits {
    /// A wall limit, no CPU or memory limit, and 64 KiB of each stream kept.
    pub fn wall(wall: Duration) -> Limits {
        Limits {
            wall,
            cpu_seconds: None,
            memory_bytes: None,
            stdout_cap: 64 * 1024,
            stderr_cap: 64 * 1024,
        }
    }
}

/// Why the runner, or the kernel, ended the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kill {
    /// It ran past the wall limit.
    Wall,
    /// The cancel token was cancelled.
    Cancelled,
    /// It used its CPU seconds.
    Cpu,
    /// Another signal ended it (e.g. SIGSEGV after an allocation past the memory limit).
    Signal(i32),
}

/// Output of one stream: the bytes kept and how many were written in all.
#[derive(Clone, Debug, Default)]
pub struct Captured {
    /// The bytes kept (the first ones of standard output, the last ones of standard error).
    pub bytes: Vec<u8>,
    /// Bytes the program wrote, kept or not.
    pub total: u64,
}

impl Captured {
    /// Whether bytes were dropped at the cap.
    pub fn truncated(&self) -> bool {
        self.total > self.bytes.len() as u64
    }

    /// The kept bytes as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    /// At most the last `max_chars` characters of the text, trimmed.
    pub fn tail(&self, max_chars: usize) -> String {
        let text = self.text();
        let text = text.trim();
        let skip = text.chars().count().saturating_sub(max_chars);
        let tail: String = text.chars().skip(skip).collect();
        if skip > 0 || self.truncated() {
            format!("…{tail}")
        } else {
            tail
        }
    }
}

/// How a run ended.
#[derive(Debug)]
pub struct Finished {
    /// The leader's exit status.
    pub status: ExitStatus,
    /// Its standard output.
    pub stdout: Captured,
    /// Its standard error.
    pub stderr: Captured,
    /// Whether it was killed, and why (`None`: it exited by itself).
    pub killed: Option<Kill>,
    /// Wall seconds from start to the leader's end.
    pub wall_seconds: f64,
}

impl Finished {
    /// Whether it exited by itself with status 0.
    pub fn succeeded(&self) -> bool {
        self.killed.is_none() && self.status.success()
    }
}

/// Runs `command` under `limits` (its standard input empty), honouring `cancel`; an error only
/// when it cannot be started.
pub fn run(
    mut command: Command,
    limits: &Limits,
    cancel: &CancelToken,
) -> std::io::Result<Finished> {
    let (cpu, memory) = (limits.cpu_seconds, limits.memory_bytes);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: between fork and exec the closure only calls setrlimit, which is
    // async-signal-safe, and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if let Some(seconds) = cpu {
                setrlimit(Resource::RLIMIT_CPU, seconds, seconds.saturating_add(1))?;
            }
            if let Some(bytes) = memory {
                setrlimit(Resource::RLIMIT_AS, bytes, bytes)?;
            }
            Ok(())
        });
    }
    let started = Instant::now();
    let mut child = command.spawn()?;
    let pid = Pid::from_raw(child.id() as i32);
    let (sender, outputs) = mpsc::channel();
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    spawn_reader(stdout, limits.stdout_cap, false, 0, sender.clone());
    spawn_reader(stderr, limits.stderr_cap, true, 1, sender);

    let mut killed = None;
    let mut pause = Duration::from_millis(1);
    loop {
        if leader_exited(pid) {
            break;
        }
        let elapsed = started.elapsed();
        if elapsed >= limits.wall {
            killed = Some(Kill::Wall);
            break;
        }
        if cancel.is_cancelled() {
            killed = Some(Kill::Cancelled);
            break;
        }
        std::thread::sleep(pause.min(limits.wall - elapsed));
        pause = (pause * 2).min(MAX_POLL);
    }
    let wall_seconds = started.elapsed().as_secs_f64();
    // The leader is running or a zombie: its group id is still its own.
    let _ = killpg(pid, Signal::SIGKILL);
    let status = child.wait()?;
    let deadline = Instant::now() + GRACE;
    while group_alive(pid.as_raw()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut streams = [Captured::default(), Captured::default()];
    for _ in 0..2 {
        let left = deadline.saturating_duration_since(Instant::now());
        match outputs.recv_timeout(left) {
            Ok((index, captured)) => streams[index] = captured,
            // A process that left the group holds a pipe open: keep what was read.
            Err(_) => break,
        }
    }
    let [stdout, stderr] = streams;
    if killed.is_none() {
        killed = match status.signal() {
            Some(s) if s == Signal::SIGXCPU as i32 => Some(Kill::Cpu),
            Some(s) if s == Signal::SIGKILL as i32 && cpu.is_some() => Some(Kill::Cpu),
            Some(s) => Some(Kill::Signal(s)),
            None => None,
        };
    }
    Ok(Finished {
        status,
        stdout,
        stderr,
        killed,
        wall_seconds,
    })
}

/// Whether the child `pid` has exited (left as a zombie, not reaped).
fn leader_exited(pid: Pid) -> bool {
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    !matches!(waitid(Id::Pid(pid), flags), Ok(WaitStatus::StillAlive))
}

/// Reads `stream` to its end on a thread, keeping `cap` bytes (the last ones if `keep_tail`),
/// and sends the result tagged with `index`.
fn spawn_reader(
    mut stream: impl Read + Send + 'static,
    cap: usize,
    keep_tail: bool,
    index: usize,
    sender: mpsc::Sender<(usize, Captured)>,
) {
    std::thread::spawn(move || {
        let mut captured = Captured::default();
        let mut chunk = [0u8; 8192];
        loop {
            let read = match stream.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            captured.total += read as u64;
            if keep_tail {
                captured.bytes.extend_from_slice(&chunk[..read]);
                let excess = captured.bytes.len().saturating_sub(cap);
                captured.bytes.drain(..excess);
            } else {
                let room = cap.saturating_sub(captured.bytes.len()).min(read);
                captured.bytes.extend_from_slice(&chunk[..room]);
            }
        }
        let _ = sender.send((index, captured));
    });
}

/// Whether a process of group `pgid` is alive (not a zombie), by `/proc/*/stat`.
pub fn group_alive(pgid: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        // After the command's closing parenthesis: state, ppid, pgrp, …
        let Some((_, after)) = stat.rsplit_once(')') else {
            return false;
        };
        let mut fields = after.split_whitespace();
        let state = fields.next().unwrap_or("Z");
        let group = fields.nth(1).and_then(|g| g.parse::<i32>().ok());
        group == Some(pgid) && state != "Z" && state != "X"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut command = Command::new("sh");
        command.arg("-c").arg(script);
        command
    }

    #[test]
    fn output_is_captured_and_the_exit_status_kept() {
        let done = run(
            sh("echo out; echo err >&2; exit 3"),
            &Limits::wall(Duration::from_secs(10)),
            &CancelToken::new(),
        )
        .unwrap();
        assert_eq!(done.status.code(), Some(3));
        assert_eq!(done.killed, None);
        assert_eq!(done.stdout.text(), "out\n");
        assert_eq!(done.stderr.text(), "err\n");
        assert!(!done.succeeded());
    }

    #[test]
    fn caps_keep_the_head_of_stdout_and_the_tail_of_stderr() {
        let mut limits = Limits::wall(Duration::from_secs(10));
        limits.stdout_cap = 4;
        limits.stderr_cap = 4;
        let done = run(
            sh("printf abcdefgh; printf 12345678 >&2"),
            &limits,
            &CancelToken::new(),
        )
        .unwrap();
        assert_eq!((done.stdout.text(), done.stdout.total), ("abcd".into(), 8));
        assert_eq!(done.stderr.text(), "5678");
        assert!(done.stdout.truncated());
        assert_eq!(done.stderr.tail(3), "…678");
    }

    #[test]
    fn the_wall_limit_kills_the_whole_group() {
        let started = Instant::now();
        let done = run(
            sh("sleep 30 & sleep 30"),
            &Limits::wall(Duration::from_millis(300)),
            &CancelToken::new(),
        )
        .unwrap();
        assert_eq!(done.killed, Some(Kill::Wall));
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(done.wall_seconds >= 0.3, "{}", done.wall_seconds);
    }

    #[test]
    fn a_background_child_dies_when_the_leader_exits() {
        let started = Instant::now();
        let done = run(
            sh("sleep 30 & echo started"),
            &Limits::wall(Duration::from_secs(20)),
            &CancelToken::new(),
        )
        .unwrap();
        assert_eq!(done.killed, None);
        assert_eq!(done.stdout.text(), "started\n");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_cancelled_token_stops_the_program() {
        let cancel = CancelToken::new();
        cancel.cancel();
        let done = run(
            sh("sleep 30"),
            &Limits::wall(Duration::from_secs(30)),
            &cancel,
        )
        .unwrap();
        assert_eq!(done.killed, Some(Kill::Cancelled));
    }

    #[test]
    fn the_cpu_limit_ends_a_busy_loop() {
        let mut limits = Limits::wall(Duration::from_secs(20));
        limits.cpu_seconds = Some(1);
        let done = run(sh("while :; do :; done"), &limits, &CancelToken::new()).unwrap();
        assert_eq!(done.killed, Some(Kill::Cpu));
    }

    #[test]
    fn a_missing_program_is_an_error() {
        let e = run(
            Command::new("/nonexistent/milo-test-program"),
            &Limits::wall(Duration::from_secs(1)),
            &CancelToken::new(),
        );
        assert!(e.is_err());
    }
}
