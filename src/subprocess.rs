//! Running another program safely: in its own process group, under a wall limit and optional CPU
//! and memory limits, its output captured under a byte cap, and the whole group killed and reaped
//! at the end — and nothing it started outliving milo, even a process that calls `setsid`, even
//! when milo itself is killed with SIGKILL.
//!
//! The child leads a fresh process group (`process_group(0)`); `RLIMIT_CPU` and `RLIMIT_AS` are
//! set between fork and exec. The leader is polled (`waitid` with `WNOWAIT`, so it stays a zombie
//! and its group id cannot be reused) every few milliseconds until it exits, the wall limit
//! passes, or the [`CancelToken`] is cancelled; then SIGKILL goes to the whole group — also when
//! the leader exited by itself, so background grandchildren die with it — and the leader is
//! reaped. The call returns once no live process of the group is left (Linux `/proc`), within a
//! short grace period.
//!
//! **Tethering** (Linux). Between fork and exec the child asks for SIGKILL when milo's thread
//! that started it dies (`PR_SET_PDEATHSIG`), then makes a new PID namespace for its children
//! (`unshare(CLONE_NEWPID)`; where that needs privileges milo lacks, together with a new user
//! namespace mapping the user to itself) and forks twice into it: the namespace's init, a copy of
//! milo that closes every file, lets the kernel reap orphans and asks for SIGKILL when its parent
//! dies; then the program's process, which execs it. The child milo started stays outside as a
//! relay: it waits for the program and ends as it ended (exit status or signal). When the program
//! ends, is killed with its group, or milo dies, the relay ends, its init dies, and the kernel
//! kills every process left in the namespace, whatever process group or session it moved to.
//! (The program cannot be the process that made the namespace: such a process can no longer
//! start threads, so numpy's OpenBLAS failed to load.) Measured on Linux 6.18 (2026-12-06), after
//! SIGKILL of the parent of `sh -c 'setsid … & … & …'`: with the parent-death signal alone the
//! shell died but its background child and the `setsid` one survived; making the parent a child
//! subreaper changed nothing (it died too, and nothing reaps for a dead subreaper); the PID
//! namespace left none, as root and, with the user namespace, as an unprivileged user. A cgroup
//! was not tried: killing one needs a living process to do it. Where neither namespace can be
//! made (a container forbidding `unshare`, user namespaces disabled) the program runs without
//! one: the group is still killed whole, but a process that leaves it (`setsid`) can then outlive
//! milo, and its open pipes are abandoned rather than waited for.

use crate::cancel::CancelToken;
use nix::libc;
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

/// A last step in the program's own process just before it executes, after the tether and the
/// limits are in place (the Landlock restriction of [`crate::sandbox`]). It runs between fork
/// and exec, so it may only make system calls.
pub type BeforeExec = Box<dyn FnMut() -> std::io::Result<()> + Send + Sync>;

/// Runs `command` under `limits` (its standard input empty), honouring `cancel`; an error only
/// when it cannot be started.
pub fn run(command: Command, limits: &Limits, cancel: &CancelToken) -> std::io::Result<Finished> {
    run_with(command, limits, cancel, None)
}

/// [`run`], with `before_exec` as the program's last step before it executes.
pub fn run_with(
    mut command: Command,
    limits: &Limits,
    cancel: &CancelToken,
    mut before_exec: Option<BeforeExec>,
) -> std::io::Result<Finished> {
    let (cpu, memory) = (limits.cpu_seconds, limits.memory_bytes);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let tether = Tether::new();
    // SAFETY: between fork and exec the closure only makes system calls (see `Tether::attach`:
    // the processes it forks make only system calls too), and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            tether.attach()?;
            if let Some(seconds) = cpu {
                setrlimit(Resource::RLIMIT_CPU, seconds, seconds.saturating_add(1))?;
            }
            if let Some(bytes) = memory {
                setrlimit(Resource::RLIMIT_AS, bytes, bytes)?;
            }
            if let Some(step) = before_exec.as_mut() {
                step()?;
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

/// What the child needs between fork and exec to tie its fate, and that of everything it starts,
/// to milo's (see the module): prepared before the fork, so the child allocates nothing.
struct Tether {
    /// milo's process ID.
    parent: libc::pid_t,
    /// `/proc/self/uid_map` and `gid_map` lines mapping the user and group to themselves.
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl Tether {
    fn new() -> Tether {
        // SAFETY: these calls cannot fail and touch no memory of ours.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        Tether {
            parent: std::process::id() as libc::pid_t,
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        }
    }

    /// In the child, between fork and exec: the parent-death signal, then, where the system
    /// allows a PID namespace, the namespace's keeper and the program's process forked into it;
    /// this process stays outside to relay the program's end and never returns. Returns in the
    /// process that is to exec the program. Only system calls, no allocation.
    fn attach(&self) -> std::io::Result<()> {
        // SAFETY: plain system calls on values owned here.
        unsafe {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != self.parent {
                // milo died before the signal was asked for.
                libc::_exit(127);
            }
            if !self.enter_pid_namespace() {
                return Ok(());
            }
            // Lets the keeper see whether this process is still alive once it asked for its own
            // parent-death signal (-1 on kernels before 5.3: not checked).
            let me = libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) as libc::c_int;
            // The first process forked into the namespace is its init, the keeper.
            match libc::fork() {
                -1 => return Err(std::io::Error::last_os_error()),
                0 => keep_the_namespace(me),
                _ => {}
            }
            if me >= 0 {
                libc::close(me);
            }
            match libc::fork() {
                -1 => Err(std::io::Error::last_os_error()),
                0 => Ok(()),
                program => relay(program),
            }
        }
    }

    /// Puts the children this process will start into a new PID namespace: directly where
    /// allowed (root), else with a new user namespace mapping the user and group to themselves.
    /// Whether it worked.
    unsafe fn enter_pid_namespace(&self) -> bool {
        if libc::unshare(libc::CLONE_NEWPID) == 0 {
            return true;
        }
        if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWPID) != 0 {
            return false;
        }
        // Without the maps the program would see itself as the overflow user (files it creates
        // still belong to the user); a failed write leaves it so.
        write_proc(c"/proc/self/setgroups", b"deny");
        write_proc(c"/proc/self/uid_map", &self.uid_map);
        write_proc(c"/proc/self/gid_map", &self.gid_map);
        true
    }
}

/// Writes `bytes` to the `/proc` file `path`, ignoring failure (between fork and exec).
unsafe fn write_proc(path: &std::ffi::CStr, bytes: &[u8]) {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd >= 0 {
        libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::close(fd);
    }
}

/// Closes every file descriptor of a process that will never exec (so milo sees the program's
/// pipes close, and its spawn returns, when the program's own processes are done with them),
/// and gives the signals milo's handlers would catch their default action back.
unsafe fn close_everything() {
    if libc::syscall(libc::SYS_close_range, 0, libc::c_uint::MAX, 0) != 0 {
        let mut open_files = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut open_files);
        for fd in 0..open_files.rlim_cur.min(1 << 20) as libc::c_int {
            libc::close(fd);
        }
    }
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        libc::signal(signal, libc::SIG_DFL);
    }
}

/// The namespace's init (a copy of milo): dies by SIGKILL with the relay, its parent, and the
/// kernel then kills every process left in the namespace. Meanwhile it holds no file open and
/// lets the kernel reap the orphans it inherits. Never returns.
unsafe fn keep_the_namespace(relay: libc::c_int) -> ! {
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    if relay >= 0 {
        let mut exited = libc::pollfd {
            fd: relay,
            events: libc::POLLIN,
            revents: 0,
        };
        // Readable once the relay has exited: it died before the signal was asked for, so
        // nothing would ever send it.
        if libc::poll(&mut exited, 1, 0) != 0 {
            libc::_exit(0);
        }
    }
    close_everything();
    // Ignored SIGCHLD: the kernel reaps the children at once.
    libc::signal(libc::SIGCHLD, libc::SIG_IGN);
    loop {
        libc::pause();
    }
}

/// The process milo started, outside the namespace (a copy of milo): waits for the program
/// (`program`, its child inside) and ends as it ended — the same exit status, or killed by the
/// same signal — taking the keeper, and so the namespace, along. Never returns.
unsafe fn relay(program: libc::pid_t) -> ! {
    close_everything();
    let mut status = 0;
    while libc::waitpid(program, &mut status, 0) != program {
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            libc::_exit(127);
        }
    }
    if libc::WIFEXITED(status) {
        libc::_exit(libc::WEXITSTATUS(status));
    }
    let signal = libc::WTERMSIG(status);
    let no_core = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    libc::setrlimit(libc::RLIMIT_CORE, &no_core);
    libc::signal(signal, libc::SIG_DFL);
    let mut none = std::mem::zeroed::<libc::sigset_t>();
    libc::sigemptyset(&mut none);
    libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    libc::kill(libc::getpid(), signal);
    libc::_exit(128 + signal);
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

    /// Processes whose command line holds `marker`, by `/proc` (zombies have none).
    fn processes_with(marker: &str) -> Vec<String> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
                let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
                if text.contains(marker) {
                    found.push(text);
                }
            }
        }
        found
    }

    #[test]
    fn a_setsid_grandchild_dies_with_the_program() {
        let mark = format!("milo-subprocess-test-setsid-{}", std::process::id());
        let started = Instant::now();
        let done = run(
            sh(&format!(
                "setsid sh -c 'sleep 30; : {mark}' & readlink /proc/self/ns/pid"
            )),
            &Limits::wall(Duration::from_secs(20)),
            &CancelToken::new(),
        )
        .unwrap();
        assert_eq!(done.killed, None);
        // The program's children are in a PID namespace of their own.
        let ours = std::fs::read_link("/proc/self/ns/pid").unwrap();
        let theirs = done.stdout.text();
        assert!(theirs.starts_with("pid:["), "{theirs}");
        assert_ne!(
            theirs.trim(),
            ours.to_string_lossy(),
            "the same PID namespace"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        let deadline = Instant::now() + Duration::from_secs(5);
        while !processes_with(&mark).is_empty() {
            assert!(Instant::now() < deadline, "{:?}", processes_with(&mark));
            std::thread::sleep(Duration::from_millis(10));
        }
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
