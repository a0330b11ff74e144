//! The spool: a batch of attempt tasks as files on a filesystem the controller and the workers
//! share, and the workers' results beside them.
//!
//! A batch lives in `<spool>/<batch>/`, `<batch>` the first 16 hex digits of the sha256 of its tasks
//! (a resumed run that issues the same batch finds it again):
//! - `task-<i>.json`: an [`AttemptTask`];
//! - `result-<i>.json`: a [`WorkerResult`], written under a temporary name and renamed into place
//!   only if no result is there yet ([`publish`]: the first rename wins), so a result that exists
//!   is whole and final; a worker finding it exits at once (requeues are idempotent);
//! - `jobs.json`: the scheduler's submissions of this batch ([`Submission`]), replaced atomically;
//! - `job.sh`, or in pilot mode `pilot.sh`, `queue/`, `claims/` and `returned.jsonl` (see
//!   [`super::pilot`]).
//!
//! The `milo` binary is copied to `<spool>/bin/milo-<hash>` once: a rebuild during a run cannot
//! change what the workers run.

use super::{solve, AttemptTask};
use crate::agent::{writer_by_name, Attempt};
use crate::bounded_read::{read_json_capped, ATTEMPT_JSON, RECORDS_JSON};
use crate::cancel::CancelToken;
use crate::error::{write_error, MiloError, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// What a worker leaves for one task.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkerResult {
    /// The attempt ran.
    Done(Box<Attempt>),
    /// The task cannot run (an invalid program, an unknown writer…): deterministic, not retried.
    Failed(String),
}

/// One submission of (some of) a batch's tasks to the scheduler.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Submission {
    /// The scheduler's job id.
    pub job: String,
    /// The task indices it runs.
    pub indices: Vec<usize>,
    /// Why it was submitted: `initial`, or which tasks vanished without a result.
    pub reason: String,
    /// In pilot mode, the number of pilots (array elements `0..pilots`) sharing `indices`;
    /// absent for a job array with one element per task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pilots: Option<usize>,
}

/// A batch of tasks in the spool.
pub struct Batch {
    dir: PathBuf,
    len: usize,
}

impl Batch {
    /// Writes `tasks` into their batch directory under `spool` (kept as it is when a resumed run
    /// issues the same batch again).
    pub fn write(spool: &Path, tasks: &[AttemptTask]) -> Result<Batch> {
        let text: Vec<String> = tasks
            .iter()
            .map(|t| serde_json::to_string(t).expect("a task serializes"))
            .collect();
        let mut hash = Sha256::new();
        for t in &text {
            hash.update(t.as_bytes());
            hash.update(b"\n");
        }
        let name: String = hash.finalize()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let dir = spool.join(name);
        std::fs::create_dir_all(&dir).map_err(write_error(&dir))?;
        for (i, t) in text.iter().enumerate() {
            let path = task_file(&dir, i);
            if !path.exists() {
                replace(&path, t.as_bytes())?;
            }
        }
        Ok(Batch {
            dir,
            len: tasks.len(),
        })
    }

    /// The batch's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Number of tasks.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the batch has no task.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The result file of task `i`.
    pub fn result_path(&self, i: usize) -> PathBuf {
        result_file(&self.dir, i)
    }

    /// The indices without a result yet.
    pub fn missing(&self) -> Vec<usize> {
        (0..self.len)
            .filter(|&i| !self.result_path(i).exists())
            .collect()
    }

    /// The result of task `i` (it must exist).
    pub fn result(&self, i: usize) -> Result<WorkerResult> {
        read_json_capped(&self.result_path(i), ATTEMPT_JSON, "worker result")
    }

    /// Records a result for task `i` that no worker will write (a task lost too often); a result
    /// that a worker wrote meanwhile is kept.
    pub fn give_up(&self, i: usize, why: &str) -> Result<()> {
        publish(&self.result_path(i), &WorkerResult::Failed(why.to_string()))
    }

    /// The submissions so far.
    pub fn submissions(&self) -> Result<Vec<Submission>> {
        let path = self.dir.join("jobs.json");
        match read_json_capped(&path, RECORDS_JSON, "job list") {
            Ok(all) => Ok(all),
            Err(e) if e.is_missing_file() => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// Records one more submission.
    pub fn record(&self, submission: Submission) -> Result<()> {
        let mut all = self.submissions()?;
        all.push(submission);
        let text = serde_json::to_string_pretty(&all).expect("submissions serialize");
        replace(&self.dir.join("jobs.json"), text.as_bytes())
    }
}

/// The task file of task `i` in the batch directory `dir`.
pub fn task_file(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("task-{i}.json"))
}

/// The result file of task `i` in the batch directory `dir`.
pub fn result_file(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("result-{i}.json"))
}

/// Writes `result` to `path` under a temporary name and renames it into place unless a result is
/// there already: the first rename wins, and a later one (a requeued worker, a pilot whose claim
/// was returned to the queue) is dropped without error. Results of one task are the same bits but
/// for measured seconds, so which one wins does not matter; that a result never changes once
/// there does.
pub fn publish(path: &Path, result: &WorkerResult) -> Result<()> {
    let text = serde_json::to_string(result).expect("a result serializes");
    match crate::atomic_file::create_new(path, text.as_bytes()) {
        Err(MiloError::Write { source, .. })
            if source.kind() == std::io::ErrorKind::AlreadyExists =>
        {
            Ok(())
        }
        outcome => outcome,
    }
}

/// The worker's side: runs the task in `task_file` unless `result_file` exists, and writes its
/// result there ([`publish`]; a task that cannot run gets a [`WorkerResult::Failed`]). An
/// unreadable task file is an error (no result: the scheduler may retry).
pub fn work(task_file: &Path, result_file: &Path) -> Result<()> {
    if result_file.exists() {
        return Ok(());
    }
    let task: AttemptTask = read_json_capped(task_file, ATTEMPT_JSON, "attempt task")?;
    let outcome = writer_by_name(&task.writer, task.agents.as_ref())
        .and_then(|writer| solve(writer.as_ref(), &task, &CancelToken::new()));
    let result = match outcome {
        Ok(attempt) => WorkerResult::Done(Box::new(attempt)),
        Err(e) => WorkerResult::Failed(e.to_string()),
    };
    publish(result_file, &result)
}

/// Copies the `milo` binary at `binary` to `<spool>/bin/milo-<hash>` (once) and returns that
/// path.
pub fn install_binary(spool: &Path, binary: &Path) -> Result<PathBuf> {
    let bytes = std::fs::read(binary).map_err(io(binary))?;
    let hash: String = Sha256::digest(&bytes)[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let bin = spool.join("bin");
    std::fs::create_dir_all(&bin).map_err(write_error(&bin))?;
    let path = bin.join(format!("milo-{hash}"));
    if !path.exists() {
        replace(&path, &bytes)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .map_err(write_error(&path))?;
        }
    }
    Ok(path)
}

/// Writes `bytes` to a temporary sibling of `path`, syncs it, and renames it into place.
fn replace(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::atomic_file::write(path, bytes)
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> MiloError + '_ {
    move |source| MiloError::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bounded_read::{ATTEMPT_JSON, RECORDS_JSON};

    /// `[0,0,…]` of `n` zeros.
    fn zeros(n: u64) -> String {
        let mut text = "0,".repeat(n as usize);
        text.pop();
        format!("[{text}]")
    }

    #[test]
    fn an_attempt_task_past_its_items_is_refused_and_leaves_no_result() {
        let dir = tempfile::tempdir().unwrap();
        let task = dir.path().join("task-0.json");
        let result = dir.path().join("result-0.json");
        // A start of more values than any problem holds (6 MB of `0,`): refused as it is read,
        // never parsed into a task.
        let text = format!(
            r#"{{"task": "t", "problem": "third-autocorrelation-inequality", "start": {}}}"#,
            zeros(ATTEMPT_JSON.items)
        );
        std::fs::write(&task, text).unwrap();
        let err = work(&task, &result).unwrap_err();
        assert_eq!(err.exit_code(), crate::error::EXIT_INPUT);
        assert!(
            err.to_string().contains(&format!(
                "attempt task is past its cap of {} items",
                ATTEMPT_JSON.items
            )),
            "{err}"
        );
        assert!(!result.exists());
    }

    #[test]
    fn a_job_list_past_its_items_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let batch = Batch::write(dir.path(), &[]).unwrap();
        // 17 MB of task indices.
        let text = format!(
            r#"[{{"job": "1", "indices": {}, "reason": "initial"}}]"#,
            zeros(RECORDS_JSON.items)
        );
        std::fs::write(batch.dir().join("jobs.json"), text).unwrap();
        let err = batch.submissions().unwrap_err();
        assert!(
            err.to_string().contains(&format!(
                "job list is past its cap of {} items",
                RECORDS_JSON.items
            )),
            "{err}"
        );
    }
}
