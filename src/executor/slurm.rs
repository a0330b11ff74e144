//! The Slurm executor: a batch of attempt tasks as one job array over the spool, driven through
//! the command-line tools (`sbatch --parsable`, `squeue`), surviving requeues, cancelled jobs,
//! node failures and a restarted controller.
//!
//! For a batch it writes the tasks into the spool (see [`super::spool`]), submits the tasks that
//! have no result and no live job as one array (`--array=i,j,…%throttle`, `--requeue`, `--chdir`
//! and `-o` into the spool, `--time` a backstop above milo's own budget), and polls `squeue -h -r
//! -t all -j IDS` until every task has a result. A task whose job left the queue without a result
//! (cancelled, failed, lost with its node) is submitted again, at most [`SlurmOptions::max_submits`]
//! times, then recorded as lost. The jobs of a batch are kept in its `jobs.json`, so a controller
//! resumed after a kill adopts the jobs still queued and submits only what is missing.

use super::spool::{install_binary, Batch, Submission, WorkerResult};
use super::{AttemptTask, Executor};
use crate::agent::Attempt;
use crate::cancel::CancelToken;
use crate::error::{MiloError, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Job states in which a task may still write its result.
const LIVE_STATES: [&str; 11] = [
    "PENDING",
    "RUNNING",
    "COMPLETING",
    "CONFIGURING",
    "REQUEUED",
    "REQUEUE_HOLD",
    "REQUEUE_FED",
    "RESIZING",
    "SIGNALING",
    "STAGE_OUT",
    "SUSPENDED",
];

/// How tasks are submitted (recorded in the run's settings, so `--resume` submits the same way).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlurmOptions {
    /// The partition (`--partition`); the cluster's default when absent.
    #[serde(default)]
    pub partition: Option<String>,
    /// At most this many tasks of a batch run at once (`--array=…%K`).
    #[serde(default)]
    pub throttle: Option<usize>,
    /// Minutes added to a task's own budget for Slurm's `--time` (a backstop; milo stops first).
    pub time_margin_minutes: u64,
    /// Seconds between two looks at the queue.
    pub poll_seconds: f64,
    /// Submissions of one task before it is recorded as lost.
    pub max_submits: usize,
    /// Extra `sbatch` options, passed as they are.
    #[serde(default)]
    pub sbatch_args: Vec<String>,
    /// Shell lines the job script runs before the worker (`module load …`, an environment).
    #[serde(default)]
    pub setup: Vec<String>,
}

impl Default for SlurmOptions {
    fn default() -> SlurmOptions {
        SlurmOptions {
            partition: None,
            throttle: None,
            time_margin_minutes: 5,
            poll_seconds: 2.0,
            max_submits: 3,
            sbatch_args: Vec::new(),
            setup: Vec::new(),
        }
    }
}

/// Runs attempts as Slurm job arrays over a spool directory on a shared filesystem.
pub struct Slurm {
    spool: PathBuf,
    options: SlurmOptions,
    /// The `milo` binary the workers run (a copy is spooled); default: this process's.
    worker: Option<PathBuf>,
}

impl Slurm {
    /// An executor spooling under `spool` (made absolute: the workers run elsewhere).
    pub fn new(spool: &Path, options: SlurmOptions) -> Result<Slurm> {
        if options.max_submits == 0 || options.throttle == Some(0) {
            return Err(MiloError::Usage(
                "--slurm-max-submits and --slurm-throttle must be at least 1".into(),
            ));
        }
        if !(options.poll_seconds.is_finite() && options.poll_seconds > 0.0) {
            return Err(MiloError::Usage(format!(
                "--slurm-poll must be a positive number of seconds, got {}",
                options.poll_seconds
            )));
        }
        let spool = std::path::absolute(spool).map_err(|source| MiloError::Io {
            path: spool.to_path_buf(),
            source,
        })?;
        Ok(Slurm {
            spool,
            options,
            worker: None,
        })
    }

    /// This executor, its workers running the `milo` binary at `binary` (for a program that
    /// embeds milo as a library and is not itself `milo`).
    #[must_use]
    pub fn with_worker(mut self, binary: &Path) -> Slurm {
        self.worker = Some(binary.to_path_buf());
        self
    }

    /// Submits `indices` of `batch` as one array job; returns the job id.
    fn submit(
        &self,
        batch: &Batch,
        binary: &Path,
        indices: &[usize],
        minutes: u64,
    ) -> Result<String> {
        let script = batch.dir().join("job.sh");
        if !script.exists() {
            let setup: String = self
                .options
                .setup
                .iter()
                .map(|l| format!("{l}\n"))
                .collect();
            let text = format!(
                "#!/bin/sh\n{setup}exec '{}' worker \"{}/task-$SLURM_ARRAY_TASK_ID.json\" \"{}/result-$SLURM_ARRAY_TASK_ID.json\"\n",
                binary.display(),
                batch.dir().display(),
                batch.dir().display()
            );
            crate::atomic_file::write(&script, text.as_bytes())?;
        }
        let list: Vec<String> = indices.iter().map(|i| i.to_string()).collect();
        let array = match self.options.throttle {
            Some(k) => format!("{}%{k}", list.join(",")),
            None => list.join(","),
        };
        let mut command = Command::new("sbatch");
        command
            .arg("--parsable")
            .arg(format!("--array={array}"))
            .arg("--requeue")
            .arg(format!("--time={minutes}"))
            .arg(format!("--job-name=milo-{}", name_of(batch)))
            .arg(format!("--chdir={}", batch.dir().display()))
            .arg(format!(
                "--output={}/slurm-%A_%a.out",
                batch.dir().display()
            ));
        if let Some(p) = &self.options.partition {
            command.arg(format!("--partition={p}"));
        }
        command.args(&self.options.sbatch_args).arg(&script);
        let out = run_tool(&mut command, "sbatch")?;
        // `--parsable` prints `jobid` or `jobid;cluster`.
        let job = out.trim().split(';').next().unwrap_or_default().to_string();
        if job.is_empty() || !job.chars().all(|c| c.is_ascii_digit()) {
            return Err(MiloError::Remote {
                url: "sbatch".into(),
                message: format!("expected a job id, got {:?}", out.trim()),
            });
        }
        Ok(job)
    }

    /// The live state of each task index among `jobs` (`squeue -h -r -t all`); `None` when the
    /// queue cannot be read (the controller restarting): the caller waits and asks again.
    fn live(&self, jobs: &[Submission]) -> Option<HashMap<usize, String>> {
        if jobs.is_empty() {
            return Some(HashMap::new());
        }
        let ids: Vec<&str> = jobs.iter().map(|s| s.job.as_str()).collect();
        let mut command = Command::new("squeue");
        command
            .args(["-h", "-r", "-t", "all", "-o", "%i %T", "-j"])
            .arg(ids.join(","));
        let out = run_tool(&mut command, "squeue").ok()?;
        let mut live = HashMap::new();
        for line in out.lines() {
            let mut parts = line.split_whitespace();
            let (Some(id), Some(state)) = (parts.next(), parts.next()) else {
                continue;
            };
            let Some((_, index)) = id.split_once('_') else {
                continue;
            };
            if let Ok(i) = index.parse::<usize>() {
                if LIVE_STATES.contains(&state) {
                    live.insert(i, state.to_string());
                }
            }
        }
        Some(live)
    }
}

impl Executor for Slurm {
    fn name(&self) -> &str {
        "slurm"
    }

    fn run(&self, tasks: &[AttemptTask], cancel: &CancelToken) -> Result<Vec<Result<Attempt>>> {
        if tasks.is_empty() {
            return Ok(Vec::new());
        }
        let binary = match &self.worker {
            Some(path) => install_binary(&self.spool, path)?,
            None => {
                let me = std::env::current_exe().map_err(|source| MiloError::Io {
                    path: "the milo binary".into(),
                    source,
                })?;
                install_binary(&self.spool, &me)?
            }
        };
        let batch = Batch::write(&self.spool, tasks)?;
        let seconds = tasks
            .iter()
            .map(|t| t.seconds.unwrap_or(3600.0))
            .fold(0.0, f64::max);
        let minutes = (seconds / 60.0).ceil() as u64 + self.options.time_margin_minutes;
        let poll = Duration::from_secs_f64(self.options.poll_seconds);
        loop {
            let missing = batch.missing();
            if missing.is_empty() {
                break;
            }
            if cancel.is_cancelled() {
                return Err(MiloError::Usage(format!(
                    "interrupted with {} tasks of batch {} still on Slurm; --resume adopts them",
                    missing.len(),
                    batch.dir().display()
                )));
            }
            let submissions = batch.submissions()?;
            let Some(live) = self.live(&submissions) else {
                std::thread::sleep(poll);
                continue;
            };
            // Tasks with neither a result nor a live job: lost (or never submitted).
            let orphans: Vec<usize> = missing
                .into_iter()
                .filter(|i| !live.contains_key(i) && !batch.result_path(*i).exists())
                .collect();
            let mut resubmit = Vec::new();
            for &i in &orphans {
                let tries = submissions
                    .iter()
                    .filter(|s| s.indices.contains(&i))
                    .count();
                if tries >= self.options.max_submits {
                    batch.give_up(
                        i,
                        &format!(
                            "task {} lost: its job left the queue without a result {tries} times (see {}/slurm-*_{i}.out)",
                            tasks[i].task,
                            batch.dir().display()
                        ),
                    )?;
                } else {
                    resubmit.push(i);
                }
            }
            if !resubmit.is_empty() {
                let reason = if submissions.is_empty() {
                    "initial".to_string()
                } else {
                    format!("no result and no live job for tasks {resubmit:?}")
                };
                let job = self.submit(&batch, &binary, &resubmit, minutes)?;
                batch.record(Submission {
                    job,
                    indices: resubmit,
                    reason,
                })?;
            }
            std::thread::sleep(poll);
        }
        (0..batch.len())
            .map(|i| {
                batch.result(i).map(|r| match r {
                    WorkerResult::Done(attempt) => Ok(*attempt),
                    WorkerResult::Failed(message) => Err(MiloError::Usage(message)),
                })
            })
            .collect()
    }
}

/// The batch's name (its directory's).
fn name_of(batch: &Batch) -> String {
    batch
        .dir()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Runs a Slurm tool; its standard output, or an error quoting its standard error.
fn run_tool(command: &mut Command, tool: &str) -> Result<String> {
    let out = command.output().map_err(|e| MiloError::Remote {
        url: tool.into(),
        message: format!("cannot run {tool}: {e} (is Slurm installed and on PATH?)"),
    })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(MiloError::Remote {
            url: tool.into(),
            message: format!("{tool} failed ({}): {}", out.status, stderr.trim()),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
