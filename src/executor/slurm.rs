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
//!
//! With [`SlurmOptions::pilots`] K, the batch runs on at most K *pilots* instead (one array job
//! `--array=0-(K-1)`, each element `milo worker --pilot BATCH_DIR`) that claim its tasks from a
//! queue in the spool (see [`super::pilot`]). The controller returns to the queue the claims of
//! pilots that left the Slurm queue or whose heartbeat went stale, and submits pilots again when
//! none is left that can work and tasks remain, at most `max_submits` times for a task before it
//! is recorded as lost.

use super::pilot::{HeartbeatWatch, PilotPace, TaskQueue};
use super::spool::{install_binary, Batch, Submission, WorkerResult};
use super::{AttemptTask, Executor};
use crate::agent::Attempt;
use crate::cancel::CancelToken;
use crate::error::{MiloError, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The longest wait between two looks, in seconds (a day).
const MAX_WAIT_SECONDS: f64 = 86_400.0;

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
    /// Pilot mode: at most this many long-running workers per batch claim its tasks; absent, a
    /// job array runs one element per task.
    #[serde(default)]
    pub pilots: Option<usize>,
    /// Pilot mode: seconds a claim's heartbeat may stand still before the claim is returned to
    /// the queue.
    #[serde(default = "default_pilot_stale_seconds")]
    pub pilot_stale_seconds: f64,
}

/// The default of [`SlurmOptions::pilot_stale_seconds`].
pub const DEFAULT_PILOT_STALE_SECONDS: f64 = 60.0;

fn default_pilot_stale_seconds() -> f64 {
    DEFAULT_PILOT_STALE_SECONDS
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
            pilots: None,
            pilot_stale_seconds: DEFAULT_PILOT_STALE_SECONDS,
        }
    }
}

/// A live array element: its job id and array index.
type Element = (String, usize);

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
        if options.max_submits == 0 || options.throttle == Some(0) || options.pilots == Some(0) {
            return Err(MiloError::Usage(
                "--slurm-max-submits, --slurm-throttle and --slurm-pilots must be at least 1"
                    .into(),
            ));
        }
        if let (Some(throttle), Some(pilots)) = (options.throttle, options.pilots) {
            return Err(MiloError::Usage(format!(
                "--slurm-throttle {throttle} cannot go with --slurm-pilots {pilots} (the pilots are the throttle)"
            )));
        }
        for (option, seconds) in [
            ("--slurm-poll", options.poll_seconds),
            ("--slurm-pilot-stale", options.pilot_stale_seconds),
        ] {
            if !(seconds.is_finite() && seconds > 0.0 && seconds <= MAX_WAIT_SECONDS) {
                return Err(MiloError::Usage(format!(
                    "{option} must be a positive number of seconds up to {MAX_WAIT_SECONDS}, got {seconds}"
                )));
            }
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

    /// Writes the job script `name` into the batch's folder (once): the setup lines, then
    /// `exec BINARY worker ARGS`.
    fn script(&self, batch: &Batch, name: &str, binary: &Path, args: &str) -> Result<PathBuf> {
        let script = batch.dir().join(name);
        if !script.exists() {
            let setup: String = self
                .options
                .setup
                .iter()
                .map(|l| format!("{l}\n"))
                .collect();
            let text = format!(
                "#!/bin/sh\n{setup}exec '{}' worker {args}\n",
                binary.display()
            );
            crate::atomic_file::write(&script, text.as_bytes())?;
        }
        Ok(script)
    }

    /// Submits `script` as one array job with elements `array` (sbatch's `--array` value) and a
    /// time limit of `minutes`; returns the job id.
    fn submit(&self, batch: &Batch, script: &Path, array: &str, minutes: u64) -> Result<String> {
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
        command.args(&self.options.sbatch_args).arg(script);
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

    /// The live elements among `jobs` (`squeue -h -r -t all`), each `(job id, array index)`;
    /// `None` when the queue cannot be read (the controller restarting): the caller waits and
    /// asks again.
    fn live(&self, jobs: &[Submission]) -> Option<HashSet<Element>> {
        if jobs.is_empty() {
            return Some(HashSet::new());
        }
        let mut ids: Vec<&str> = jobs.iter().map(|s| s.job.as_str()).collect();
        // squeue fails ("Invalid job id specified") when it is asked about one job only and
        // has forgotten it (purged `MinJobAge` after it ended); asked about two or more, it lists
        // what it knows. A lone id goes twice, so a forgotten job reads as gone.
        if ids.len() == 1 {
            ids.push(ids[0]);
        }
        let mut command = Command::new("squeue");
        command
            .args(["-h", "-r", "-t", "all", "-o", "%i %T", "-j"])
            .arg(ids.join(","));
        let out = run_tool(&mut command, "squeue").ok()?;
        let mut live = HashSet::new();
        for line in out.lines() {
            let mut parts = line.split_whitespace();
            let (Some(id), Some(state)) = (parts.next(), parts.next()) else {
                continue;
            };
            if let Some(element) = element_of(id) {
                if LIVE_STATES.contains(&state) {
                    live.insert(element);
                }
            }
        }
        Some(live)
    }

    /// Job-array mode: one element per task, resubmitting the tasks whose element left the
    /// queue without a result, until every task has a result.
    fn run_arrays(
        &self,
        batch: &Batch,
        binary: &Path,
        tasks: &[AttemptTask],
        seconds_per_task: f64,
        cancel: &CancelToken,
    ) -> Result<()> {
        let minutes = minutes_for(seconds_per_task, self.options.time_margin_minutes);
        let poll = Duration::from_secs_f64(self.options.poll_seconds);
        let dir = batch.dir().display();
        let script = self.script(
            batch,
            "job.sh",
            binary,
            &format!(
                "\"{dir}/task-$SLURM_ARRAY_TASK_ID.json\" \"{dir}/result-$SLURM_ARRAY_TASK_ID.json\""
            ),
        )?;
        loop {
            let missing = batch.missing();
            if missing.is_empty() {
                return Ok(());
            }
            interrupted(batch, missing.len(), cancel)?;
            let submissions = batch.submissions()?;
            let Some(live) = self.live(&submissions) else {
                std::thread::sleep(poll);
                continue;
            };
            let live: HashSet<usize> = live.into_iter().map(|(_, i)| i).collect();
            // Tasks with neither a result nor a live job: lost (or never submitted).
            let orphans: Vec<usize> = missing
                .into_iter()
                .filter(|i| !live.contains(i) && !batch.result_path(*i).exists())
                .collect();
            let resubmit = self.give_up_or_resubmit(batch, tasks, &submissions, &orphans)?;
            if !resubmit.is_empty() {
                let reason = if submissions.is_empty() {
                    "initial".to_string()
                } else {
                    format!("no result and no live job for tasks {resubmit:?}")
                };
                let list: Vec<String> = resubmit.iter().map(|i| i.to_string()).collect();
                let array = match self.options.throttle {
                    Some(k) => format!("{}%{k}", list.join(",")),
                    None => list.join(","),
                };
                let job = self.submit(batch, &script, &array, minutes)?;
                batch.record(Submission {
                    job,
                    indices: resubmit,
                    reason,
                    pilots: None,
                })?;
            }
            std::thread::sleep(poll);
        }
    }

    /// Pilot mode: at most `pilots` workers claim the tasks from the batch's queue; claims of
    /// pilots gone from the Slurm queue or with a stale heartbeat go back to the queue, and
    /// pilots are submitted again while tasks remain and no pilot that can work is left.
    fn run_pilots(
        &self,
        batch: &Batch,
        binary: &Path,
        tasks: &[AttemptTask],
        seconds_per_task: f64,
        pilots: usize,
        cancel: &CancelToken,
    ) -> Result<()> {
        let poll = Duration::from_secs_f64(self.options.poll_seconds);
        let stale = Duration::from_secs_f64(self.options.pilot_stale_seconds);
        let pace = PilotPace::for_stale_limit(stale, poll);
        let script = self.script(
            batch,
            "pilot.sh",
            binary,
            &format!(
                "--pilot \"{}\" --heartbeat {} --idle {} --poll {}",
                batch.dir().display(),
                pace.heartbeat.as_secs_f64(),
                pace.idle.as_secs_f64(),
                pace.poll.as_secs_f64()
            ),
        )?;
        let queue = TaskQueue::new(batch.dir());
        let mut watch = HeartbeatWatch::new(stale);
        // Live pilots seen with a stale heartbeat: hung, they do not count as able to work.
        let mut hung: HashSet<Element> = HashSet::new();
        loop {
            let missing = batch.missing();
            if missing.is_empty() {
                return Ok(());
            }
            interrupted(batch, missing.len(), cancel)?;
            let submissions = batch.submissions()?;
            let Some(live) = self.live(&submissions) else {
                std::thread::sleep(poll);
                continue;
            };
            let held = queue.claims()?;
            let stale_claims = watch.stale(&held, Instant::now());
            // A hung pilot holding a claim with a live heartbeat has come back (its stale claim
            // was returned, so this one is new).
            hung.retain(|element| {
                !held.iter().any(|c| {
                    element_of(&c.holder).as_ref() == Some(element) && !stale_claims.contains(&c)
                })
            });
            for claim in &held {
                let holder = element_of(&claim.holder);
                let ours = holder
                    .as_ref()
                    .is_some_and(|(job, _)| submissions.iter().any(|s| &s.job == job));
                let reason = if ours && !holder.as_ref().is_some_and(|h| live.contains(h)) {
                    "its pilot left the Slurm queue".to_string()
                } else if stale_claims.contains(&claim) {
                    hung.extend(holder);
                    format!(
                        "its heartbeat stood still for {} s",
                        self.options.pilot_stale_seconds
                    )
                } else {
                    continue;
                };
                queue.give_back(claim, &reason)?;
            }
            if live.iter().any(|element| !hung.contains(element)) {
                std::thread::sleep(poll);
                continue;
            }
            let missing: Vec<usize> = batch.missing();
            let resubmit = self.give_up_or_resubmit(batch, tasks, &submissions, &missing)?;
            if !resubmit.is_empty() {
                queue.enqueue(&resubmit)?;
                let count = pilots.min(resubmit.len());
                let rounds = resubmit.len().div_ceil(count);
                let minutes = minutes_for(
                    seconds_per_task * rounds as f64,
                    self.options.time_margin_minutes,
                );
                let reason = if submissions.is_empty() {
                    "initial".to_string()
                } else {
                    format!("no result and no pilot left for tasks {resubmit:?}")
                };
                let job = self.submit(batch, &script, &format!("0-{}", count - 1), minutes)?;
                batch.record(Submission {
                    job,
                    indices: resubmit,
                    reason,
                    pilots: Some(count),
                })?;
            }
            std::thread::sleep(poll);
        }
    }

    /// Of `orphans` (tasks without a result and without a live job or pilot), records as lost
    /// those submitted `max_submits` times already and returns the others.
    fn give_up_or_resubmit(
        &self,
        batch: &Batch,
        tasks: &[AttemptTask],
        submissions: &[Submission],
        orphans: &[usize],
    ) -> Result<Vec<usize>> {
        let mut resubmit = Vec::new();
        for &i in orphans {
            let tries = submissions
                .iter()
                .filter(|s| s.indices.contains(&i))
                .count();
            if tries >= self.options.max_submits {
                let logs = match self.options.pilots {
                    Some(_) => "slurm-*.out".to_string(),
                    None => format!("slurm-*_{i}.out"),
                };
                batch.give_up(
                    i,
                    &format!(
                        "task {} lost: its job left the queue without a result {tries} times (see {}/{logs})",
                        tasks[i].task,
                        batch.dir().display()
                    ),
                )?;
            } else {
                resubmit.push(i);
            }
        }
        Ok(resubmit)
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
        let seconds_per_task = tasks
            .iter()
            .map(|t| t.seconds.unwrap_or(3600.0))
            .fold(0.0, f64::max);
        match self.options.pilots {
            Some(pilots) => {
                self.run_pilots(&batch, &binary, tasks, seconds_per_task, pilots, cancel)?
            }
            None => self.run_arrays(&batch, &binary, tasks, seconds_per_task, cancel)?,
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

/// Slurm's `--time` in minutes for work of `seconds`, plus `margin` minutes.
fn minutes_for(seconds: f64, margin: u64) -> u64 {
    ((seconds / 60.0).ceil() as u64).saturating_add(margin)
}

/// The error of a batch interrupted with `missing` tasks still on Slurm, if `cancel` is
/// cancelled.
fn interrupted(batch: &Batch, missing: usize, cancel: &CancelToken) -> Result<()> {
    if cancel.is_cancelled() {
        return Err(MiloError::Usage(format!(
            "interrupted with {missing} tasks of batch {} still on Slurm; --resume adopts them",
            batch.dir().display()
        )));
    }
    Ok(())
}

/// The job id and array index of an array element's id as `squeue -r` prints it (`123_4`).
fn element_of(id: &str) -> Option<Element> {
    let (job, index) = id.split_once('_')?;
    Some((job.to_string(), index.parse().ok()?))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_recorded_before_pilot_mode_load_as_job_arrays() {
        let old = r#"{"partition":null,"throttle":2,"time_margin_minutes":5,"poll_seconds":2.0,"max_submits":3,"sbatch_args":[],"setup":[]}"#;
        let options: SlurmOptions = serde_json::from_str(old).unwrap();
        assert_eq!(options.pilots, None);
        assert_eq!(
            options.pilot_stale_seconds.to_bits(),
            DEFAULT_PILOT_STALE_SECONDS.to_bits()
        );
        let pilots = SlurmOptions {
            pilots: Some(4),
            pilot_stale_seconds: 7.5,
            ..SlurmOptions::default()
        };
        let text = serde_json::to_string(&pilots).unwrap();
        assert_eq!(serde_json::from_str::<SlurmOptions>(&text).unwrap(), pilots);
    }

    #[test]
    fn pilot_options_out_of_range_are_refused_naming_the_rule_and_value() {
        let refused = |options: SlurmOptions| {
            Slurm::new(Path::new("spool"), options)
                .err()
                .expect("refused")
                .to_string()
        };
        let err = refused(SlurmOptions {
            pilots: Some(0),
            ..SlurmOptions::default()
        });
        assert!(
            err.contains("--slurm-pilots") && err.contains("at least 1"),
            "{err}"
        );
        let err = refused(SlurmOptions {
            pilots: Some(2),
            throttle: Some(3),
            ..SlurmOptions::default()
        });
        assert!(
            err.contains("--slurm-throttle 3") && err.contains("--slurm-pilots 2"),
            "{err}"
        );
        for stale in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e300] {
            let err = refused(SlurmOptions {
                pilots: Some(2),
                pilot_stale_seconds: stale,
                ..SlurmOptions::default()
            });
            assert!(
                err.contains("--slurm-pilot-stale") && err.contains(&format!("got {stale}")),
                "{err}"
            );
        }
    }

    #[test]
    fn an_array_element_id_is_its_job_and_index() {
        assert_eq!(element_of("123_4"), Some(("123".to_string(), 4)));
        assert_eq!(element_of("123_[0-3]"), None);
        assert_eq!(element_of("pid-77"), None);
    }
}
