//! Pilot mode of the Slurm executor: a few long-running workers per batch, the *pilots*, claim
//! the batch's tasks one at a time, so a task of seconds does not pay a job's start-up.
//!
//! Layout, in the batch's directory beside `task-<i>.json` and `result-<i>.json` (see
//! [`super::spool`]):
//! - `queue/<i>`: an empty file for each task waiting for a pilot;
//! - `claims/<i>.<holder>`: that file once a pilot holds task `i`. A pilot claims a task by
//!   renaming `queue/<i>` to `claims/<i>.<holder>`: the rename is the lock, of pilots racing for
//!   a task exactly one rename succeeds. `<holder>` names the pilot: `<array job id>_<array
//!   index>` under Slurm (as `squeue -r` shows it), `pid-<pid>` elsewhere.
//! - The claim file's modification time is its holder's heartbeat: while it evaluates, a thread
//!   of the pilot sets it every heartbeat interval.
//! - `returned.jsonl`: every claim the controller returned to the queue, and why
//!   ([`ReturnedClaim`]).
//!
//! A pilot ([`run_pilot`]) loops: claim the lowest queued task, evaluate it (skipped if it has a
//! result), publish the result as the array worker does ([`super::spool::work`]: temporary name,
//! then a rename that only the first result wins), delete its claim. It leaves when the queue and
//! the claims are empty, or when the queue has stayed empty for its idle limit while other pilots
//! hold claims.
//!
//! The controller ([`super::Slurm`]) returns a claim to the queue (renames it back) when its
//! holder is one of the batch's pilots that left the Slurm queue (cancelled, failed, lost with
//! its node), or when its heartbeat has not moved for the stale limit ([`HeartbeatWatch`],
//! measured on the controller's clock, so the nodes' clocks need not agree). A holder that was
//! only slow and finishes anyway publishes a result that loses to the first: harmless.

use super::spool::{result_file, task_file, work};
use crate::error::{read_error, write_error, MiloError, Result};
use crate::records::AppendLog;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

/// The folder of queued tasks in a batch directory.
const QUEUE_DIR: &str = "queue";

/// The folder of claimed tasks in a batch directory.
const CLAIMS_DIR: &str = "claims";

/// The record of returned claims in a batch directory.
const RETURNED_FILE: &str = "returned.jsonl";

/// A claim the controller returned to the queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReturnedClaim {
    /// The task's index in its batch.
    pub index: usize,
    /// The pilot that held it.
    pub holder: String,
    /// Why: its pilot left the Slurm queue, or its heartbeat stood still.
    pub reason: String,
}

/// The queue of a batch's tasks and the claims on them.
pub struct TaskQueue {
    dir: PathBuf,
}

/// A claim on a task, as found in `claims/`.
#[derive(Clone, Debug, PartialEq)]
pub struct HeldClaim {
    /// The task's index in its batch.
    pub index: usize,
    /// The pilot holding it.
    pub holder: String,
    /// Its heartbeat (the claim file's modification time), if it could be read.
    pub beat: Option<SystemTime>,
}

impl TaskQueue {
    /// The queue of the batch in directory `batch_dir`.
    pub fn new(batch_dir: &Path) -> TaskQueue {
        TaskQueue {
            dir: batch_dir.to_path_buf(),
        }
    }

    fn queued_path(&self, i: usize) -> PathBuf {
        self.dir.join(QUEUE_DIR).join(i.to_string())
    }

    fn claim_path(&self, i: usize, holder: &str) -> PathBuf {
        self.dir.join(CLAIMS_DIR).join(format!("{i}.{holder}"))
    }

    /// Queues each task of `indices` that has no result, no queue entry and no claim. (Checked
    /// in that order: a task claimed meanwhile is seen claimed, one finished meanwhile gets an
    /// entry that pilots skip.)
    pub fn enqueue(&self, indices: &[usize]) -> Result<()> {
        for sub in [QUEUE_DIR, CLAIMS_DIR] {
            let path = self.dir.join(sub);
            std::fs::create_dir_all(&path).map_err(write_error(&path))?;
        }
        let claimed: Vec<usize> = self.claims()?.iter().map(|c| c.index).collect();
        for &i in indices {
            let entry = self.queued_path(i);
            if result_file(&self.dir, i).exists() || entry.exists() || claimed.contains(&i) {
                continue;
            }
            match OpenOptions::new().write(true).create_new(true).open(&entry) {
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                    return Err(write_error(&entry)(e));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The queued task indices, lowest first.
    pub fn queued(&self) -> Result<Vec<usize>> {
        let mut indices: Vec<usize> = names(&self.dir.join(QUEUE_DIR))?
            .iter()
            .filter_map(|name| name.parse().ok())
            .collect();
        indices.sort_unstable();
        Ok(indices)
    }

    /// The claims held now.
    pub fn claims(&self) -> Result<Vec<HeldClaim>> {
        let dir = self.dir.join(CLAIMS_DIR);
        let mut claims: Vec<HeldClaim> = names(&dir)?
            .into_iter()
            .filter_map(|name| {
                let (index, holder) = name.split_once('.')?;
                Some(HeldClaim {
                    index: index.parse().ok()?,
                    holder: holder.to_string(),
                    beat: std::fs::metadata(dir.join(&name))
                        .and_then(|m| m.modified())
                        .ok(),
                })
            })
            .collect();
        claims.sort_by(|a, b| (a.index, &a.holder).cmp(&(b.index, &b.holder)));
        Ok(claims)
    }

    /// Claims the lowest queued task for `holder`; `None` when the queue is empty.
    pub fn claim(&self, holder: &str) -> Result<Option<usize>> {
        for i in self.queued()? {
            let claim = self.claim_path(i, holder);
            match std::fs::rename(self.queued_path(i), &claim) {
                Ok(()) => return Ok(Some(i)),
                // Another pilot renamed it first.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(write_error(&claim)(e)),
            }
        }
        Ok(None)
    }

    /// Sets the heartbeat of `holder`'s claim on task `i` to now; an error when the claim is
    /// gone (returned to the queue).
    pub fn beat(&self, i: usize, holder: &str) -> Result<()> {
        let path = self.claim_path(i, holder);
        OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|file| file.set_modified(SystemTime::now()))
            .map_err(write_error(&path))
    }

    /// Deletes `holder`'s claim on task `i` (its result is published); a claim returned to the
    /// queue meanwhile is not there to delete, which is fine.
    pub fn release(&self, i: usize, holder: &str) -> Result<()> {
        let path = self.claim_path(i, holder);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(write_error(&path)(e)),
            _ => Ok(()),
        }
    }

    /// Puts `claim`'s task back in the queue and records it with `reason` in `returned.jsonl`;
    /// `false` (and no record) when the claim was gone already (its holder released it).
    pub fn give_back(&self, claim: &HeldClaim, reason: &str) -> Result<bool> {
        let path = self.claim_path(claim.index, &claim.holder);
        match std::fs::rename(&path, self.queued_path(claim.index)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(write_error(&path)(e)),
        }
        let log = self.dir.join(RETURNED_FILE);
        let mut returned = match AppendLog::create(&log)? {
            Some(new) => new,
            None => AppendLog::open(&log)?.0,
        };
        returned.append(&ReturnedClaim {
            index: claim.index,
            holder: claim.holder.clone(),
            reason: reason.to_string(),
        })?;
        Ok(true)
    }
}

/// The file names in `dir` (none when it does not exist yet).
fn names(dir: &Path) -> Result<Vec<String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(read_error(dir)(e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(read_error(dir))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    Ok(names)
}

/// The controller's view of the claims' heartbeats: when each was last seen to move, on the
/// controller's clock.
pub struct HeartbeatWatch {
    stale: Duration,
    seen: HashMap<(usize, String), (Option<SystemTime>, Instant)>,
}

impl HeartbeatWatch {
    /// A watch calling a heartbeat stale once it has not moved for `stale`.
    pub fn new(stale: Duration) -> HeartbeatWatch {
        HeartbeatWatch {
            stale,
            seen: HashMap::new(),
        }
    }

    /// The claims of `held` (all claims now) whose heartbeat has not moved for the stale limit
    /// as of `now`. A claim seen for the first time counts from `now` (a resumed controller
    /// gives every claim one stale limit); claims no longer held are forgotten.
    pub fn stale<'a>(&mut self, held: &'a [HeldClaim], now: Instant) -> Vec<&'a HeldClaim> {
        self.seen
            .retain(|(i, holder), _| held.iter().any(|c| c.index == *i && &c.holder == holder));
        let mut stale = Vec::new();
        for claim in held {
            let key = (claim.index, claim.holder.clone());
            match self.seen.get(&key) {
                Some((beat, since)) if *beat == claim.beat => {
                    if now.saturating_duration_since(*since) >= self.stale {
                        stale.push(claim);
                    }
                }
                _ => {
                    self.seen.insert(key, (claim.beat, now));
                }
            }
        }
        stale
    }
}

/// How a pilot paces itself.
#[derive(Clone, Copy, Debug)]
pub struct PilotPace {
    /// Between two heartbeats of a claim.
    pub heartbeat: Duration,
    /// How long the queue may stay empty while other pilots hold claims (which may come back)
    /// before the pilot leaves.
    pub idle: Duration,
    /// Between two looks at an empty queue.
    pub poll: Duration,
}

impl PilotPace {
    /// The pace for a controller's stale limit `stale` and its poll interval `poll`: six
    /// heartbeats per stale limit, and an idle limit of two stale limits (a claim whose holder
    /// hangs comes back within about one).
    pub fn for_stale_limit(stale: Duration, poll: Duration) -> PilotPace {
        PilotPace {
            heartbeat: stale / 6,
            idle: stale * 2,
            poll,
        }
    }
}

/// The holder name of this process: `<array job id>_<array index>` under a Slurm job array (the
/// element's id as `squeue -r` shows it), `pid-<pid>` elsewhere.
pub fn holder_name() -> String {
    match (
        std::env::var("SLURM_ARRAY_JOB_ID"),
        std::env::var("SLURM_ARRAY_TASK_ID"),
    ) {
        (Ok(job), Ok(index)) => format!("{job}_{index}"),
        _ => format!("pid-{}", std::process::id()),
    }
}

/// Runs a pilot named `holder` over the batch in `batch_dir` until there is nothing left for it
/// (see the module's documentation); returns how many tasks it evaluated. An unreadable task
/// file is an error that ends the pilot with its claim held (the controller returns it).
pub fn run_pilot(batch_dir: &Path, holder: &str, pace: PilotPace) -> Result<usize> {
    if holder.is_empty() || holder.contains(['.', '/']) {
        return Err(MiloError::Usage(format!(
            "a pilot's holder name must be non-empty without '.' or '/', got {holder:?}"
        )));
    }
    let queue = TaskQueue::new(batch_dir);
    let mut evaluated = 0;
    let mut idle_since: Option<Instant> = None;
    loop {
        if let Some(i) = queue.claim(holder)? {
            idle_since = None;
            let result = result_file(batch_dir, i);
            if !result.exists() {
                evaluate_with_heartbeat(&queue, i, holder, pace.heartbeat, || {
                    work(&task_file(batch_dir, i), &result)
                })?;
                evaluated += 1;
            }
            queue.release(i, holder)?;
            continue;
        }
        if queue.claims()?.is_empty() {
            return Ok(evaluated);
        }
        let since = *idle_since.get_or_insert_with(Instant::now);
        if since.elapsed() >= pace.idle {
            return Ok(evaluated);
        }
        std::thread::sleep(pace.poll);
    }
}

/// Runs `evaluate` while a thread beats `holder`'s claim on task `i` every `heartbeat`.
fn evaluate_with_heartbeat(
    queue: &TaskQueue,
    i: usize,
    holder: &str,
    heartbeat: Duration,
    evaluate: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let (stop, stopped) = mpsc::channel::<()>();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(heartbeat) {
                // A claim returned to the queue cannot be beaten; the evaluation goes on, and
                // its result is harmless (the first published wins).
                let _ = queue.beat(i, holder);
            }
        });
        let outcome = evaluate();
        drop(stop);
        outcome
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::spool::{Batch, WorkerResult};
    use crate::executor::AttemptTask;

    /// A task that fails at once (its parent program is not TOML): a worker writes an error
    /// result for it without optimizing anything.
    fn quick_task(k: usize) -> AttemptTask {
        AttemptTask {
            task: format!("t{k}"),
            problem: "third-autocorrelation-inequality".into(),
            start: vec![1.0; 4],
            start_exact: "1/1".parse().unwrap(),
            parent: format!("not a program {k} ["),
            seconds: None,
            evaluations: Some(10),
            seed: k as u64,
            writer: "builtin".into(),
            harness: String::new(),
            library: Vec::new(),
            agents: None,
        }
    }

    fn pace() -> PilotPace {
        PilotPace {
            heartbeat: Duration::from_millis(5),
            idle: Duration::from_millis(50),
            poll: Duration::from_millis(5),
        }
    }

    #[test]
    fn each_queued_task_is_claimed_once_and_only_missing_tasks_are_queued() {
        let dir = tempfile::tempdir().unwrap();
        let queue = TaskQueue::new(dir.path());
        queue.enqueue(&[0, 1, 2, 3]).unwrap();
        assert_eq!(queue.claim("a").unwrap(), Some(0));
        assert_eq!(queue.claim("b").unwrap(), Some(1));
        std::fs::write(result_file(dir.path(), 2), b"{}").unwrap();
        // 0 and 1 are claimed, 2 has a result, 3 is queued: nothing is queued again.
        queue.enqueue(&[0, 1, 2, 3]).unwrap();
        assert_eq!(queue.queued().unwrap(), [2, 3]);
        let holders: Vec<(usize, String)> = queue
            .claims()
            .unwrap()
            .into_iter()
            .map(|c| (c.index, c.holder))
            .collect();
        assert_eq!(holders, [(0, "a".to_string()), (1, "b".to_string())]);
        queue.release(0, "a").unwrap();
        queue.release(0, "a").unwrap();
        assert_eq!(queue.claims().unwrap().len(), 1);
    }

    #[test]
    fn racing_pilots_claim_every_task_exactly_once() {
        let dir = tempfile::tempdir().unwrap();
        let queue = TaskQueue::new(dir.path());
        let indices: Vec<usize> = (0..200).collect();
        queue.enqueue(&indices).unwrap();
        let claimed: Vec<Vec<usize>> = std::thread::scope(|scope| {
            let pilots: Vec<_> = (0..4)
                .map(|p| {
                    let queue = &queue;
                    scope.spawn(move || {
                        let mut mine = Vec::new();
                        while let Some(i) = queue.claim(&format!("p{p}")).unwrap() {
                            mine.push(i);
                        }
                        mine
                    })
                })
                .collect();
            pilots.into_iter().map(|p| p.join().unwrap()).collect()
        });
        let mut all: Vec<usize> = claimed.concat();
        all.sort_unstable();
        assert_eq!(all, indices);
        assert_eq!(queue.claims().unwrap().len(), 200);
    }

    #[test]
    fn a_heartbeat_is_stale_only_once_it_has_not_moved_for_the_limit() {
        let limit = Duration::from_secs(10);
        let mut watch = HeartbeatWatch::new(limit);
        let t0 = Instant::now();
        let at = |s: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        let claim = |beat: u64| HeldClaim {
            index: 3,
            holder: "7_1".into(),
            beat: Some(at(beat)),
        };
        assert!(watch.stale(&[claim(100)], t0).is_empty());
        assert!(watch.stale(&[claim(100)], t0 + limit / 2).is_empty());
        // It moved: the limit counts from now.
        assert!(watch.stale(&[claim(101)], t0 + limit).is_empty());
        assert!(watch.stale(&[claim(101)], t0 + limit * 3 / 2).is_empty());
        assert_eq!(watch.stale(&[claim(101)], t0 + limit * 2), [&claim(101)]);
        // Released and claimed again: a new claim, counted afresh.
        assert!(watch.stale(&[], t0 + limit * 2).is_empty());
        assert!(watch.stale(&[claim(101)], t0 + limit * 5 / 2).is_empty());
    }

    #[test]
    fn a_claim_given_back_is_claimed_by_another_pilot_and_its_late_result_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let queue = TaskQueue::new(dir.path());
        queue.enqueue(&[0]).unwrap();
        assert_eq!(queue.claim("slow").unwrap(), Some(0));
        queue.beat(0, "slow").unwrap();
        let held = queue.claims().unwrap();
        assert!(queue.give_back(&held[0], "stale").unwrap());
        assert!(
            !queue.give_back(&held[0], "stale").unwrap(),
            "given back once"
        );
        let (returned, _) =
            crate::records::read_records::<ReturnedClaim>(&dir.path().join(RETURNED_FILE)).unwrap();
        assert_eq!(
            returned,
            [ReturnedClaim {
                index: 0,
                holder: "slow".into(),
                reason: "stale".into()
            }]
        );
        assert!(
            queue.beat(0, "slow").is_err(),
            "the old holder's claim is gone"
        );
        assert_eq!(queue.claim("fast").unwrap(), Some(0));
        let path = result_file(dir.path(), 0);
        crate::executor::spool::publish(&path, &WorkerResult::Failed("first".into())).unwrap();
        crate::executor::spool::publish(&path, &WorkerResult::Failed("late".into())).unwrap();
        queue.release(0, "slow").unwrap();
        queue.release(0, "fast").unwrap();
        assert!(std::fs::read_to_string(&path).unwrap().contains("first"));
        assert!(queue.claims().unwrap().is_empty());
    }

    #[test]
    fn pilots_evaluate_every_task_once_and_leave_when_the_queue_is_done() {
        let dir = tempfile::tempdir().unwrap();
        let tasks: Vec<AttemptTask> = (0..12).map(quick_task).collect();
        let batch = Batch::write(dir.path(), &tasks).unwrap();
        let queue = TaskQueue::new(batch.dir());
        queue.enqueue(&batch.missing()).unwrap();
        let dir = batch.dir();
        let evaluated: usize = std::thread::scope(|scope| {
            let pilots: Vec<_> = ["1_0", "1_1", "1_2"]
                .into_iter()
                .map(|holder| scope.spawn(move || run_pilot(dir, holder, pace())))
                .collect();
            pilots.into_iter().map(|p| p.join().unwrap().unwrap()).sum()
        });
        assert_eq!(evaluated, tasks.len());
        assert!(batch.missing().is_empty());
        assert!(queue.queued().unwrap().is_empty() && queue.claims().unwrap().is_empty());
        for (i, task) in tasks.iter().enumerate() {
            match batch.result(i).unwrap() {
                WorkerResult::Failed(message) => {
                    assert!(message.contains(&task.task), "{message}")
                }
                WorkerResult::Done(_) => panic!("task {i} cannot run"),
            }
        }
    }

    #[test]
    fn an_idle_pilot_waits_for_a_claim_that_comes_back_then_leaves() {
        let dir = tempfile::tempdir().unwrap();
        let tasks: Vec<AttemptTask> = (0..2).map(quick_task).collect();
        let batch = Batch::write(dir.path(), &tasks).unwrap();
        let queue = TaskQueue::new(batch.dir());
        queue.enqueue(&[0, 1]).unwrap();
        // A pilot that died holding task 0.
        assert_eq!(queue.claim("9_0").unwrap(), Some(0));
        let slow = PilotPace {
            idle: Duration::from_secs(30),
            ..pace()
        };
        std::thread::scope(|scope| {
            let pilot = scope.spawn(|| run_pilot(batch.dir(), "9_1", slow));
            let deadline = Instant::now() + Duration::from_secs(30);
            // Task 1 evaluated and its claim released: only the dead pilot's claim is left.
            while !(batch.result_path(1).exists() && queue.claims().unwrap().len() == 1) {
                assert!(Instant::now() < deadline, "task 1 evaluated");
                std::thread::sleep(Duration::from_millis(5));
            }
            let held = queue.claims().unwrap();
            assert_eq!(held[0].holder, "9_0");
            assert!(queue.give_back(&held[0], "its pilot left").unwrap());
            assert_eq!(pilot.join().unwrap().unwrap(), 2);
        });
        assert!(batch.missing().is_empty());

        // With the claim never coming back, the pilot leaves after its idle limit.
        let tasks: Vec<AttemptTask> = (2..3).map(quick_task).collect();
        let batch = Batch::write(dir.path(), &tasks).unwrap();
        let queue = TaskQueue::new(batch.dir());
        queue.enqueue(&[0]).unwrap();
        assert_eq!(queue.claim("9_0").unwrap(), Some(0));
        assert_eq!(run_pilot(batch.dir(), "9_1", pace()).unwrap(), 0);
        assert!(run_pilot(batch.dir(), "a.b", pace())
            .unwrap_err()
            .to_string()
            .contains("\"a.b\""));
    }
}
