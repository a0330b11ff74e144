//! A real single-node Slurm cluster for the tests: Debian's `slurm-wlm` and `munge`, configured
//! in a temporary directory (state, spool, logs, the munge socket), listening on free loopback
//! ports, started by the test and stopped by PID when dropped — after its jobs are cancelled
//! and their steps have ended, so no `slurmstepd` outlives it.
//!
//! Needs root and the binaries (`.ci/run` installs them: `apt-get install slurm-wlm munge`);
//! [`Cluster::start`] returns `None` with a SKIP note otherwise.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the node may take to become idle.
const START_PATIENCE: Duration = Duration::from_secs(60);
/// How long cancelled jobs may take to leave the queue and their steps to end.
const CANCEL_PATIENCE: Duration = Duration::from_secs(30);
/// The name of the job that [`Cluster::start`] runs to warm the scheduler up.
const WARM_UP: &str = "milo-test-warm-up";

/// A running cluster; its daemons are stopped when it is dropped.
pub struct Cluster {
    dir: tempfile::TempDir,
    /// `SLURM_CONF` for every Slurm command of the test.
    pub conf: PathBuf,
    /// The node's name.
    pub node: String,
    daemons: Vec<Child>,
}

impl Cluster {
    /// Starts munged, slurmctld and slurmd and runs a first job step ([`Cluster::warm_up`]);
    /// `None` (after a SKIP note naming `test`) when this machine cannot run them.
    pub fn start(test: &str) -> Option<Cluster> {
        let missing: Vec<&str> = [
            "munged",
            "slurmctld",
            "slurmd",
            "sbatch",
            "srun",
            "squeue",
            "scontrol",
        ]
        .into_iter()
        .filter(|tool| which(tool).is_none())
        .collect();
        if !missing.is_empty() {
            eprintln!(
                "SKIP {test}: Slurm is not installed (missing {}; `.ci/run` installs slurm-wlm and munge)",
                missing.join(", ")
            );
            return None;
        }
        if !is_root() {
            eprintln!("SKIP {test}: a test cluster runs its daemons as root");
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("milo-slurm-")
            .tempdir()
            .unwrap();
        let root = dir.path().to_path_buf();
        let root = root.as_path();
        for sub in ["state", "spool", "log", "munge"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        let munge = root.join("munge");
        Command::new("chown")
            .args(["munge:munge", munge.to_str().unwrap()])
            .status()
            .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::set_permissions(&munge, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let node = hostname();
        // An epilog, though it does nothing: slurmd then reports each job's end in an
        // EPILOG_COMPLETE message, on which slurmctld schedules at once; without one, the job's
        // CPUs are taken up again only by the scheduler's next pass (once a second at best), so
        // each element of an array held back by the throttle or by the node's CPUs waited up
        // to a second for nothing.
        let epilog = which("true").expect("true");
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (ctld_port, d_port) = (free_port(), free_port());
        let r = root.display();
        let conf = root.join("slurm.conf");
        std::fs::write(
            &conf,
            format!(
                "ClusterName=milotest\nSlurmctldHost={node}(127.0.0.1)\nSlurmUser=root\nSlurmdUser=root\n\
                 AuthType=auth/munge\nAuthInfo=socket={r}/munge/munge.socket.2\nCredType=cred/munge\n\
                 ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSelectType=select/cons_tres\n\
                 SelectTypeParameters=CR_Core\nAccountingStorageType=accounting_storage/none\n\
                 JobCompType=jobcomp/filetxt\nJobCompLoc={r}/log/jobcomp.txt\nMpiDefault=none\n\
                 StateSaveLocation={r}/state\nSlurmdSpoolDir={r}/spool\n\
                 SlurmctldPidFile={r}/slurmctld.pid\nSlurmdPidFile={r}/slurmd.pid\n\
                 SlurmctldLogFile={r}/log/slurmctld.log\nSlurmdLogFile={r}/log/slurmd.log\n\
                 SlurmctldPort={ctld_port}\nSlurmdPort={d_port}\nReturnToService=2\n\
                 SchedulerParameters=sched_interval=1\nMinJobAge=600\nEpilog={epilog}\n\
                 NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN\n\
                 PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
                epilog = epilog.display()
            ),
        )
        .unwrap();
        let mut cluster = Cluster {
            conf,
            node,
            daemons: Vec::new(),
            dir,
        };
        let quiet = |c: &mut Command| {
            c.stdout(Stdio::null()).stderr(Stdio::null());
        };
        let mut munged = Command::new("setpriv");
        munged
            .args(["--reuid=munge", "--regid=munge", "--init-groups"])
            .arg(which("munged").unwrap())
            .arg("-F")
            .arg(format!("--socket={r}/munge/munge.socket.2"))
            .arg(format!("--pid-file={r}/munge/munged.pid"))
            .arg(format!("--log-file={r}/munge/munged.log"))
            .arg(format!("--seed-file={r}/munge/seed"));
        quiet(&mut munged);
        cluster.daemons.push(munged.spawn().expect("munged starts"));
        let socket = root.join("munge/munge.socket.2");
        poll_until(SHORT_POLL, || socket.exists(), "the munge socket");
        for daemon in ["slurmctld", "slurmd"] {
            let mut command = Command::new(which(daemon).unwrap());
            command.arg("-D").env("SLURM_CONF", &cluster.conf);
            quiet(&mut command);
            cluster
                .daemons
                .push(command.spawn().expect("a Slurm daemon starts"));
            // slurmd registers as it starts and, refused, tries again only a second later: it
            // starts once slurmctld listens.
            if daemon == "slurmctld" {
                poll_until(
                    SHORT_POLL,
                    || std::net::TcpStream::connect(("127.0.0.1", ctld_port)).is_ok(),
                    "slurmctld to listen",
                );
            }
        }
        wait_for(
            || {
                cluster
                    .tool("sinfo", &["-h", "-o", "%t"])
                    .is_some_and(|s| s.trim() == "idle")
            },
            "the node to be idle",
        );
        cluster.warm_up();
        Some(cluster)
    }

    /// Runs one job step at once, so the test's first batch does not wait seconds for the
    /// scheduler. slurmctld reads its `SchedulerParameters` (`sched_interval=1`) only in its
    /// first scheduling pass, and until then schedules batch jobs `batch_sched_delay` (3 s)
    /// after it started at the earliest; an `srun` job is allocated as it is asked for, and its
    /// end (the epilog's report) runs that first pass. The job is named [`WARM_UP`] and left out
    /// of [`Cluster::jobs`].
    fn warm_up(&self) {
        let ran = Command::new("srun")
            .args(["--job-name", WARM_UP, "true"])
            .env("SLURM_CONF", &self.conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        assert!(
            ran.is_ok_and(|s| s.success()),
            "the cluster runs a job step (srun true)"
        );
    }

    /// Runs a Slurm command with this cluster's configuration; its stdout when it succeeds.
    pub fn tool(&self, tool: &str, args: &[&str]) -> Option<String> {
        let out = Command::new(tool)
            .args(args)
            .env("SLURM_CONF", &self.conf)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The cluster's temporary directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Every job the cluster knows but the warm-up's, `(id, state)` per array element.
    pub fn jobs(&self) -> Vec<(String, String)> {
        self.tool("squeue", &["-h", "-r", "-t", "all", "-o", "%i %T %j"])
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let mut p = l.split_whitespace();
                let job = (p.next()?.to_string(), p.next()?.to_string());
                (p.next() != Some(WARM_UP)).then_some(job)
            })
            .collect()
    }
}

impl Cluster {
    /// The `slurmstepd` processes of this cluster's jobs (their environment names its
    /// `SLURM_CONF`), by PID.
    pub fn steps(&self) -> Vec<u32> {
        let ours = format!("SLURM_CONF={}", self.conf.display());
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| {
                let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
                let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
                let environ = std::fs::read(entry.path().join("environ")).ok()?;
                let is_ours = environ.split(|b| *b == 0).any(|v| v == ours.as_bytes());
                (cmdline.starts_with(b"slurmstepd") && is_ours).then_some(pid)
            })
            .collect()
    }

    /// Cancels every job of the cluster and waits, at most [`CANCEL_PATIENCE`], until none is
    /// queued or running and no step of them is left.
    fn cancel_jobs(&self) {
        let deadline = Instant::now() + CANCEL_PATIENCE;
        loop {
            let active = self.tool("squeue", &["-h", "-o", "%i"]).unwrap_or_default();
            let mut jobs: Vec<&str> = active
                .lines()
                .filter_map(|l| l.trim().split('_').next())
                .filter(|j| !j.is_empty())
                .collect();
            jobs.dedup();
            if jobs.is_empty() && self.steps().is_empty() {
                return;
            }
            if Instant::now() >= deadline {
                eprintln!("slurm test cluster: jobs {jobs:?} still active after scancel");
                return;
            }
            if !jobs.is_empty() {
                let _ = self.tool("scancel", &jobs);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Cancel the jobs first: a step still running when slurmd stops would outlive it.
        self.cancel_jobs();
        // Stop the daemons by PID, newest first.
        for daemon in self.daemons.iter_mut().rev() {
            let _ = Command::new("kill").arg(daemon.id().to_string()).status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = daemon.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = daemon.kill();
            let _ = daemon.wait();
        }
        // A step that ignored the cancellation is stopped by PID, and waited for.
        let deadline = Instant::now() + CANCEL_PATIENCE;
        loop {
            let steps = self.steps();
            if steps.is_empty() || Instant::now() >= deadline {
                break;
            }
            for pid in steps {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Waits until `ready` holds, polling; panics naming `what` after [`START_PATIENCE`].
pub fn wait_for(ready: impl FnMut() -> bool, what: &str) {
    poll_until(Duration::from_millis(100), ready, what);
}

/// Between two looks at what costs no Slurm command (a file, a port).
const SHORT_POLL: Duration = Duration::from_millis(10);

/// Waits until `ready` holds, looking every `interval`; panics naming `what` after
/// [`START_PATIENCE`].
fn poll_until(interval: Duration, mut ready: impl FnMut() -> bool, what: &str) {
    let deadline = Instant::now() + START_PATIENCE;
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(interval);
    }
}

/// The tool's path: on PATH, or in /usr/sbin and /sbin (daemons live there).
fn which(tool: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&paths)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|p| p.join(tool))
        .find(|p| p.is_file())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn hostname() -> String {
    let out = Command::new("hostname").arg("-s").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A loopback port free at the moment of asking.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
