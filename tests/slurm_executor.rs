//! The Slurm executor against a real single-node cluster started by each test
//! (`tests/slurm_cluster`): the same lineage as local threads, cancelled jobs resubmitted, a task
//! that always fails recorded once, and a controller killed mid-round that resumes by adopting its
//! queued jobs; in pilot mode, the same lineage, claims of a cancelled pilot and of a frozen one
//! returned to the queue, and adoption of live pilots on resume. Each test prints a SKIP note and
//! passes where Slurm cannot run.

mod common;
mod slurm_cluster;

use common::{suite_of_starts, tiny_suite};
use milo::cancel::CancelToken;
use milo::executor::{AttemptTask, Executor, LocalThreads, Slurm, SlurmOptions};
use serde_json::Value;
use slurm_cluster::{wait_for, Cluster};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Tests that set `SLURM_CONF` in this process (the executor's sbatch and squeue read it), look
/// pilots up by job id (every cluster numbers its jobs from 1) or measure run alone ([`alone`]);
/// the others drive their cluster through child processes only and may run at the same time
/// ([`beside_others`]): their clusters share nothing but the machine, and they mostly wait for
/// the scheduler's passes.
static SERIAL: RwLock<()> = RwLock::new(());

/// Holds [`SERIAL`] for a test that runs alone.
fn alone() -> RwLockWriteGuard<'static, ()> {
    SERIAL.write().unwrap_or_else(|e| e.into_inner())
}

/// Holds [`SERIAL`] for a test that may run beside others of its kind.
fn beside_others() -> RwLockReadGuard<'static, ()> {
    SERIAL.read().unwrap_or_else(|e| e.into_inner())
}

/// The evolve settings every run here shares.
const EVOLVE: [&str; 8] = [
    "--rounds",
    "2",
    "--islands",
    "2",
    "--tasks-per-round",
    "2",
    "--seed",
    "5",
];

fn milo(cluster: Option<&Cluster>, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_milo"));
    command.args(args);
    if let Some(c) = cluster {
        command.env("SLURM_CONF", &c.conf);
    }
    command
}

fn succeed(mut command: Command) {
    let out = command.output().expect("milo runs");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The lineage's records without what is measured or where it ran: timestamps, CPU and wall
/// seconds, the executor's name and options.
fn lineage(run: &Path) -> Vec<Value> {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                for key in ["at", "cpu_seconds", "wall_seconds", "executor", "slurm"] {
                    map.remove(key);
                }
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    std::fs::read_to_string(run.join("lineage.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            strip(&mut v);
            v
        })
        .collect()
}

/// Every submission recorded in the run's spool: `(batch, job, indices, reason)`.
fn submissions(run: &Path) -> Vec<(String, Value)> {
    let mut all = Vec::new();
    let Ok(batches) = std::fs::read_dir(run.join("spool")) else {
        return all;
    };
    for batch in batches {
        let dir = batch.unwrap().path();
        if let Ok(text) = std::fs::read_to_string(dir.join("jobs.json")) {
            let list: Vec<Value> = serde_json::from_str(&text).unwrap();
            for s in list {
                all.push((dir.file_name().unwrap().to_string_lossy().into_owned(), s));
            }
        }
    }
    all
}

/// The reference: the same run on local threads, started now, beside the run on Slurm.
fn local_run(dir: &Path, suite: &Path) -> LocalRun {
    let run = dir.join("local");
    let mut args = vec![
        "evolve",
        "--suite",
        suite.to_str().unwrap(),
        "--run-dir",
        run.to_str().unwrap(),
    ];
    args.extend(EVOLVE);
    let (out, err) = (dir.join("local.out"), dir.join("local.err"));
    let child = milo(None, &args)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("milo runs");
    LocalRun {
        run,
        child,
        output: [out, err],
    }
}

/// The reference run on local threads, running.
struct LocalRun {
    run: PathBuf,
    child: Child,
    /// Its standard output and error.
    output: [PathBuf; 2],
}

impl LocalRun {
    /// Its run directory, once it succeeded.
    fn finished(mut self) -> PathBuf {
        let status = self.child.wait().expect("milo runs");
        let [out, err] = self
            .output
            .map(|p| std::fs::read_to_string(p).unwrap_or_default());
        assert!(status.success(), "{out}{err}");
        self.run
    }
}

fn slurm_args<'a>(suite: &'a Path, run: &'a Path) -> Vec<&'a str> {
    let mut args = vec![
        "evolve",
        "--suite",
        suite.to_str().unwrap(),
        "--run-dir",
        run.to_str().unwrap(),
        "--executor",
        "slurm",
        "--slurm-poll",
        "0.2",
    ];
    args.extend(EVOLVE);
    args
}

#[test]
fn evolve_on_slurm_records_the_lineage_of_local_threads() {
    let _serial = beside_others();
    let Some(cluster) = Cluster::start("evolve_on_slurm_records_the_lineage_of_local_threads")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let suite = tiny_suite(dir.path());
    let local = local_run(dir.path(), &suite);
    let run = dir.path().join("slurm");
    succeed(milo(Some(&cluster), &slurm_args(&suite, &run)));
    assert_eq!(lineage(&run), lineage(&local.finished()));
    let subs = submissions(&run);
    assert!(!subs.is_empty(), "the tasks ran as Slurm jobs");
    assert!(
        subs.iter().all(|(_, s)| s["reason"] == "initial"),
        "{subs:?}"
    );
    assert!(
        run.join("spool/bin").read_dir().unwrap().count() == 1,
        "one copy of the binary"
    );
}

/// A third-problem task: `seed`, `evaluations`, the parent program's TOML.
fn task(seed: u64, parent: &str) -> AttemptTask {
    let problem = milo::problems::by_slug("third-autocorrelation-inequality").unwrap();
    let start: Vec<f64> = (0..60)
        .map(|i| 1.0 + 0.3 * ((i as f64) * 0.2).sin())
        .collect();
    AttemptTask {
        task: format!("t{seed}"),
        problem: problem.slug().to_string(),
        start_exact: problem.score_exact(&start),
        start,
        parent: parent.to_string(),
        seconds: None,
        evaluations: Some(400),
        seed,
        writer: "builtin".into(),
        harness: milo::harness::seed_harnesses()[0].to_toml(),
        library: Vec::new(),
        agents: None,
    }
}

const POLISH: &str = "name = \"polish\"\n\n[[steps]]\nkind = \"lbfgs\"\nparameterisation = \"raw\"\n\
                      betas = [1e3, 1e5]\nhistory = 10\niterations = 200\n\n[[steps]]\nkind = \"finalize\"\n";

#[test]
fn cancelled_jobs_are_resubmitted_and_a_task_that_always_fails_is_recorded_once() {
    let _serial = alone();
    let test = "cancelled_jobs_are_resubmitted_and_a_task_that_always_fails_is_recorded_once";
    let Some(cluster) = Cluster::start(test) else {
        return;
    };
    // SAFETY of the environment: this test runs alone (SERIAL); the executor's
    // sbatch and squeue read SLURM_CONF from this process.
    unsafe { std::env::set_var("SLURM_CONF", &cluster.conf) };
    let dir = tempfile::tempdir().unwrap();
    let tasks = vec![
        task(1, POLISH),
        task(2, "this is not TOML ["),
        task(3, POLISH),
        task(4, POLISH),
    ];
    let options = SlurmOptions {
        throttle: Some(1),
        poll_seconds: 0.2,
        ..SlurmOptions::default()
    };
    let spool = dir.path().join("spool");
    let milo_binary = Path::new(env!("CARGO_BIN_EXE_milo"));
    let slurm = Slurm::new(&spool, options)
        .unwrap()
        .with_worker(milo_binary);
    let handle = {
        let tasks = tasks.clone();
        std::thread::spawn(move || slurm.run(&tasks, &CancelToken::new()).unwrap())
    };
    // Cancel the first job while most of its elements wait behind the throttle.
    wait_for(|| !cluster.jobs().is_empty(), "the batch's job");
    let job = cluster.jobs()[0].0.split('_').next().unwrap().to_string();
    cluster.tool("scancel", &[&job]).expect("scancel");
    let results = handle.join().unwrap();

    let reference = LocalThreads::new(1)
        .run(&tasks, &CancelToken::new())
        .unwrap();
    for (i, (got, want)) in results.iter().zip(&reference).enumerate() {
        match (got, want) {
            // The same attempt as on local threads, but for its measured seconds.
            (Ok(a), Ok(b)) => {
                assert_eq!(a.best, b.best, "task {i}");
                assert_eq!(a.best_exact, b.best_exact, "task {i}");
                assert_eq!(a.best_program, b.best_program, "task {i}");
                assert_eq!(a.evaluations, b.evaluations, "task {i}");
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
            _ => panic!("task {i}: {got:?} against {want:?}"),
        }
    }
    assert!(results[1]
        .as_ref()
        .unwrap_err()
        .to_string()
        .contains("parent program"));
    let batch = std::fs::read_dir(&spool)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("jobs.json").exists())
        .unwrap();
    let subs: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(batch.join("jobs.json")).unwrap()).unwrap();
    assert!(
        subs.len() >= 2,
        "the cancelled tasks were submitted again: {subs:?}"
    );
    assert!(
        subs[1]["reason"].as_str().unwrap().contains("no live job"),
        "{subs:?}"
    );
    let failing_submits = subs
        .iter()
        .filter(|s| s["indices"].as_array().unwrap().contains(&Value::from(1)))
        .count();
    assert!(
        failing_submits <= 2,
        "a deterministic failure is written once, not retried: {subs:?}"
    );

    // With one submission allowed, a cancelled task is recorded as lost (the job is held, so
    // it is cancelled before it can run).
    let lost_spool = dir.path().join("lost");
    let one = SlurmOptions {
        poll_seconds: 0.2,
        max_submits: 1,
        sbatch_args: vec!["--hold".into()],
        ..SlurmOptions::default()
    };
    let slurm = Slurm::new(&lost_spool, one)
        .unwrap()
        .with_worker(milo_binary);
    let tasks = vec![task(7, POLISH), task(8, POLISH)];
    let newest = || {
        cluster
            .jobs()
            .iter()
            .filter_map(|(id, _)| id.split('_').next()?.parse::<u64>().ok())
            .max()
            .unwrap_or(0)
    };
    let before = newest();
    let handle = std::thread::spawn(move || slurm.run(&tasks, &CancelToken::new()).unwrap());
    wait_for(|| newest() > before, "the second batch's job");
    cluster
        .tool("scancel", &[&newest().to_string()])
        .expect("scancel");
    let results = handle.join().unwrap();
    assert!(
        results
            .iter()
            .all(|r| r.as_ref().is_err_and(|e| e.to_string().contains("lost"))),
        "{results:?}"
    );
}

/// A third-problem task of about a second: 1,000 values, a polish of up to 3,000 L-BFGS
/// iterations, 20,000 evaluations (an evaluation budget: the same bits anywhere).
fn long_task(seed: u64) -> AttemptTask {
    let problem = milo::problems::by_slug("third-autocorrelation-inequality").unwrap();
    let start: Vec<f64> = (0..1000)
        .map(|i| 1.0 + 0.3 * ((i as f64) * 0.2).sin() + 0.1 * ((i as f64) * 0.013).sin())
        .collect();
    AttemptTask {
        task: format!("long{seed}"),
        problem: problem.slug().to_string(),
        start_exact: problem.score_exact(&start),
        start,
        parent: POLISH.replace("iterations = 200", "iterations = 3000"),
        seconds: None,
        evaluations: Some(20_000),
        seed,
        writer: "builtin".into(),
        harness: milo::harness::seed_harnesses()[0].to_toml(),
        library: Vec::new(),
        agents: None,
    }
}

/// The process of the pilot `element` (`<array job>_<index>`) on this machine: the `milo worker
/// --pilot` whose environment names that element.
fn pilot_process(element: &str) -> Option<u32> {
    let (job, index) = element.split_once('_')?;
    let wanted = [
        format!("SLURM_ARRAY_JOB_ID={job}"),
        format!("SLURM_ARRAY_TASK_ID={index}"),
    ];
    std::fs::read_dir("/proc").ok()?.find_map(|entry| {
        let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
        let has = |bytes: &[u8], item: &str| bytes.split(|b| *b == 0).any(|v| v == item.as_bytes());
        (has(&cmdline, "--pilot") && wanted.iter().all(|w| has(&environ, w))).then_some(pid)
    })
}

/// The state letter of process `pid` (`T` when stopped).
fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.chars().next()
}

/// Sends `signal` (`STOP`, `CONT`) to process `pid`.
fn signal(pid: u32, signal: &str) {
    let sent = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(sent.success(), "kill -{signal} {pid}");
}

#[test]
fn claims_of_a_cancelled_pilot_and_of_a_frozen_one_return_to_the_queue_and_nothing_is_lost() {
    let _serial = alone();
    let test =
        "claims_of_a_cancelled_pilot_and_of_a_frozen_one_return_to_the_queue_and_nothing_is_lost";
    let Some(cluster) = Cluster::start(test) else {
        return;
    };
    // SAFETY of the environment: this test runs alone (SERIAL); the executor's
    // sbatch and squeue read SLURM_CONF from this process.
    unsafe { std::env::set_var("SLURM_CONF", &cluster.conf) };
    let dir = tempfile::tempdir().unwrap();
    let tasks: Vec<AttemptTask> = (1..=6).map(long_task).collect();
    let options = SlurmOptions {
        poll_seconds: 0.2,
        pilots: Some(2),
        pilot_stale_seconds: 4.0,
        ..SlurmOptions::default()
    };
    let spool = dir.path().join("spool");
    let slurm = Slurm::new(&spool, options)
        .unwrap()
        .with_worker(Path::new(env!("CARGO_BIN_EXE_milo")));
    let handle = {
        let tasks = tasks.clone();
        std::thread::spawn(move || slurm.run(&tasks, &CancelToken::new()).unwrap())
    };
    // The claims held now, `(task, holder)`.
    let claims = || -> Vec<(String, String)> {
        let Some(batch) = batches(&spool).pop() else {
            return Vec::new();
        };
        let Ok(entries) = std::fs::read_dir(batch.join("claims")) else {
            return Vec::new();
        };
        entries
            .filter_map(|e| {
                let name = e.ok()?.file_name().to_string_lossy().into_owned();
                let (task, holder) = name.split_once('.')?;
                Some((task.to_string(), holder.to_string()))
            })
            .collect()
    };
    wait_for(
        || {
            let mut holders: Vec<String> = claims().into_iter().map(|(_, h)| h).collect();
            holders.sort();
            holders.dedup();
            holders.len() == 2
        },
        "both pilots holding a claim",
    );
    let mut pilots: Vec<String> = claims().into_iter().map(|(_, h)| h).collect();
    pilots.sort();
    pilots.dedup();
    let (cancelled, frozen) = (pilots[0].clone(), pilots[1].clone());
    // Cancelled while it holds a claim (it holds one but for the instant between two tasks).
    cluster.tool("scancel", &[&cancelled]).expect("scancel");
    // Stopped (its heartbeat thread with it) while it holds a claim: between two tasks it holds
    // none, so let it go on and stop it again.
    let pid = pilot_process(&frozen).expect("the pilot's process");
    wait_for(
        || {
            signal(pid, "STOP");
            wait_for(|| process_state(pid) == Some('T'), "the pilot to stop");
            let holds = claims().iter().any(|(_, h)| *h == frozen);
            if !holds {
                signal(pid, "CONT");
            }
            holds
        },
        &format!("pilot {frozen} stopped while holding a claim"),
    );
    let frozen_task: usize = claims()
        .into_iter()
        .find(|(_, h)| *h == frozen)
        .and_then(|(t, _)| t.parse().ok())
        .unwrap();
    // The reference on local threads, computed while the frozen pilot's claim goes stale (the
    // node's CPUs idle then).
    let reference = {
        let tasks = tasks.clone();
        std::thread::spawn(move || {
            LocalThreads::new(2)
                .run(&tasks, &CancelToken::new())
                .unwrap()
        })
    };
    let results = handle.join().unwrap();

    // The same attempts as on local threads, each once.
    let reference = reference.join().unwrap();
    assert_eq!(results.len(), reference.len());
    for (i, (got, want)) in results.iter().zip(&reference).enumerate() {
        let (got, want) = (got.as_ref().unwrap(), want.as_ref().unwrap());
        assert_eq!(got.best, want.best, "task {i}");
        assert_eq!(got.best_exact, want.best_exact, "task {i}");
        assert_eq!(got.best_program, want.best_program, "task {i}");
        assert_eq!(got.evaluations, want.evaluations, "task {i}");
    }
    let batch = batches(&spool).pop().unwrap();
    let returned: Vec<Value> = std::fs::read_to_string(batch.join("returned.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        returned.iter().any(|r| r["holder"] == cancelled.as_str()
            && r["reason"]
                .as_str()
                .unwrap()
                .contains("left the Slurm queue")),
        "the cancelled pilot's claim was returned: {returned:?}"
    );
    assert!(
        returned.iter().any(|r| r["holder"] == frozen.as_str()
            && r["index"] == frozen_task
            && r["reason"].as_str().unwrap().contains("heartbeat")),
        "the frozen pilot's claim went stale and was returned: {returned:?}"
    );
    let subs: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(batch.join("jobs.json")).unwrap()).unwrap();
    assert_eq!(subs.len(), 2, "pilots submitted again once: {subs:?}");
    assert!(
        subs[1]["reason"]
            .as_str()
            .unwrap()
            .contains("no pilot left"),
        "{subs:?}"
    );

    // The frozen pilot, let go, finishes its task late: its result loses to the one there.
    let result = batch.join(format!("result-{frozen_task}.json"));
    let first = std::fs::read(&result).unwrap();
    signal(pid, "CONT");
    wait_for(
        || {
            cluster
                .jobs()
                .iter()
                .any(|(id, state)| *id == frozen && state == "COMPLETED")
        },
        "the frozen pilot to finish and leave",
    );
    assert_eq!(
        std::fs::read(&result).unwrap(),
        first,
        "the first result stays"
    );
    let out = std::fs::read_to_string(batch.join(format!("slurm-{frozen}.out"))).unwrap();
    assert!(out.contains(&format!("pilot {frozen} evaluated")), "{out}");
}

#[test]
fn a_batch_whose_pilot_job_the_cluster_never_knew_gets_pilots_again() {
    let _serial = alone();
    let test = "a_batch_whose_pilot_job_the_cluster_never_knew_gets_pilots_again";
    let Some(cluster) = Cluster::start(test) else {
        return;
    };
    // SAFETY of the environment: this test runs alone (SERIAL); the executor's
    // sbatch and squeue read SLURM_CONF from this process.
    unsafe { std::env::set_var("SLURM_CONF", &cluster.conf) };
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let tasks = vec![task(11, POLISH), task(12, POLISH)];
    // A batch left by a controller whose one pilot job the cluster has forgotten (purged after
    // MinJobAge; here an id it never gave out): squeue asked about it alone fails.
    let batch = milo::executor::spool::Batch::write(&spool, &tasks).unwrap();
    let forgotten = "999999";
    assert!(cluster.tool("squeue", &["-h", "-j", forgotten]).is_none());
    batch
        .record(milo::executor::spool::Submission {
            job: forgotten.into(),
            indices: vec![0, 1],
            reason: "initial".into(),
            pilots: Some(2),
        })
        .unwrap();
    let options = SlurmOptions {
        poll_seconds: 0.2,
        pilots: Some(2),
        ..SlurmOptions::default()
    };
    let slurm = Slurm::new(&spool, options)
        .unwrap()
        .with_worker(Path::new(env!("CARGO_BIN_EXE_milo")));
    let results = slurm.run(&tasks, &CancelToken::new()).unwrap();
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let subs = batch.submissions().unwrap();
    assert_eq!(subs.len(), 2, "{subs:?}");
    assert!(subs[1].reason.contains("no pilot left"), "{subs:?}");
}

#[test]
fn a_controller_killed_mid_round_resumes_by_adopting_its_queued_jobs() {
    let _serial = beside_others();
    let Some(cluster) =
        Cluster::start("a_controller_killed_mid_round_resumes_by_adopting_its_queued_jobs")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let suite = tiny_suite(dir.path());
    let local = local_run(dir.path(), &suite);
    let run = dir.path().join("slurm");
    // A throttle of 1 keeps jobs queued while the controller is killed.
    let mut args = slurm_args(&suite, &run);
    args.extend(["--slurm-throttle", "1"]);
    let mut controller: Child = milo(Some(&cluster), &args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(
        || submissions(&run).len() >= 2,
        "the second batch's submission",
    );
    controller.kill().unwrap();
    controller.wait().unwrap();
    let queued_at_kill = cluster
        .jobs()
        .iter()
        .filter(|(_, s)| s == "PENDING" || s == "RUNNING")
        .count();
    succeed(milo(
        Some(&cluster),
        &["evolve", "--resume", run.to_str().unwrap()],
    ));
    assert_eq!(lineage(&run), lineage(&local.finished()));
    let subs = submissions(&run);
    assert!(
        subs.iter().all(|(_, s)| s["reason"] == "initial"),
        "adopted, not resubmitted ({queued_at_kill} elements were queued at the kill): {subs:?}"
    );
}

/// The batch directories of a spool.
fn batches(spool: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(spool) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("task-0.json").exists())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn evolve_with_pilots_records_the_lineage_of_local_threads() {
    let _serial = beside_others();
    let Some(cluster) = Cluster::start("evolve_with_pilots_records_the_lineage_of_local_threads")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let suite = tiny_suite(dir.path());
    let local = local_run(dir.path(), &suite);
    let run = dir.path().join("slurm");
    let mut args = slurm_args(&suite, &run);
    args.extend(["--slurm-pilots", "2", "--slurm-pilot-stale", "5"]);
    succeed(milo(Some(&cluster), &args));
    assert_eq!(lineage(&run), lineage(&local.finished()));
    let subs = submissions(&run);
    assert!(!subs.is_empty(), "the tasks ran on Slurm");
    for (batch, s) in &subs {
        let tasks = s["indices"].as_array().unwrap().len();
        assert_eq!(s["reason"], "initial", "{batch}: {s}");
        assert_eq!(s["pilots"], Value::from(tasks.min(2)), "{batch}: {s}");
    }
    let spooled = batches(&run.join("spool"));
    assert_eq!(spooled.len(), subs.len(), "one pilot job per batch");
    for batch in spooled {
        assert!(batch.join("pilot.sh").exists() && !batch.join("job.sh").exists());
        assert!(
            !batch.join("returned.jsonl").exists(),
            "no claim went stale"
        );
    }
}

#[test]
fn a_controller_killed_in_pilot_mode_resumes_by_adopting_its_live_pilots() {
    let _serial = beside_others();
    let test = "a_controller_killed_in_pilot_mode_resumes_by_adopting_its_live_pilots";
    let Some(cluster) = Cluster::start(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let suite = tiny_suite(dir.path());
    let local = local_run(dir.path(), &suite);
    let run = dir.path().join("slurm");
    // The first pilot job's pilots start at once; those of every later one wait in their setup
    // until the gate (a file) opens after the kill: pilots are alive when the controller is
    // killed, whatever the machine's speed.
    let (first, gate) = (dir.path().join("first"), dir.path().join("gate"));
    let setup = format!(
        "ln -s \"$SLURM_ARRAY_JOB_ID\" '{first}' 2>/dev/null; \
         [ \"$(readlink '{first}')\" = \"$SLURM_ARRAY_JOB_ID\" ] || \
         until [ -e '{gate}' ]; do sleep 0.05; done",
        first = first.display(),
        gate = gate.display()
    );
    let mut args = slurm_args(&suite, &run);
    args.extend(["--slurm-pilots", "2", "--slurm-setup", &setup]);
    let mut controller: Child = milo(Some(&cluster), &args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(|| submissions(&run).len() >= 2, "the second batch's pilots");
    controller.kill().unwrap();
    controller.wait().unwrap();
    let live_at_kill = cluster
        .jobs()
        .iter()
        .filter(|(_, s)| s == "PENDING" || s == "RUNNING")
        .count();
    assert!(live_at_kill > 0, "pilots were alive at the kill");
    std::fs::write(&gate, "").unwrap();
    succeed(milo(
        Some(&cluster),
        &["evolve", "--resume", run.to_str().unwrap()],
    ));
    assert_eq!(lineage(&run), lineage(&local.finished()));
    let subs = submissions(&run);
    assert!(
        subs.iter().all(|(_, s)| s["reason"] == "initial"),
        "adopted, not resubmitted: {subs:?}"
    );
}

#[test]
fn a_node_set_down_mid_run_requeues_its_jobs_and_nothing_is_lost_or_duplicated() {
    let _serial = beside_others();
    let test = "a_node_set_down_mid_run_requeues_its_jobs_and_nothing_is_lost_or_duplicated";
    let Some(cluster) = Cluster::start(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let suite = tiny_suite(dir.path());
    let local = local_run(dir.path(), &suite);
    let run = dir.path().join("slurm");
    // Each job waits in its setup until the gate (a file) opens once the node went down and came
    // back: the node goes down under a running job, whatever the machine's speed.
    let gate = dir.path().join("gate");
    let setup = format!("until [ -e '{}' ]; do sleep 0.05; done", gate.display());
    let mut args = slurm_args(&suite, &run);
    args.extend(["--slurm-setup", &setup]);
    let mut controller: Child = milo(Some(&cluster), &args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let running = || {
        cluster
            .jobs()
            .into_iter()
            .find(|(_, state)| state == "RUNNING")
            .map(|(id, _)| id)
    };
    wait_for(|| running().is_some(), "a running job");
    let node = format!("nodename={}", cluster.node);
    cluster
        .tool(
            "scontrol",
            &["update", &node, "state=down", "reason=milo-test"],
        )
        .expect("the node goes down");
    // The node comes back by itself once slurmd re-registers (ReturnToService=2), or when told.
    wait_for(
        || {
            cluster
                .tool("scontrol", &["update", &node, "state=resume"])
                .is_some()
                || cluster
                    .tool("sinfo", &["-h", "-o", "%t"])
                    .is_some_and(|s| !s.trim().starts_with("down"))
        },
        "the node to come back",
    );
    std::fs::write(&gate, "").unwrap();
    // A requeued job waits for eligibility; make the waiting ones eligible now.
    while controller.try_wait().unwrap().is_none() {
        for (id, state) in cluster.jobs() {
            if state == "PENDING" {
                let job = format!("jobid={}", id.split('_').next().unwrap());
                let _ = cluster.tool("scontrol", &["update", &job, "StartTime=now"]);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    assert!(controller.wait().unwrap().success());
    let shown = cluster
        .tool("scontrol", &["show", "job"])
        .unwrap_or_default();
    assert!(
        shown.contains("Restarts=1") || shown.contains("Restarts=2"),
        "some job was requeued after the node failure"
    );
    assert_eq!(
        lineage(&run),
        lineage(&local.finished()),
        "nothing lost or duplicated"
    );
}

#[test]
fn bench_runs_its_evaluations_on_slurm() {
    let _serial = beside_others();
    let Some(cluster) = Cluster::start("bench_runs_its_evaluations_on_slurm") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Starts of 3,000 values: each search task takes tens of CPU milliseconds, so the first step
    // spends the budget and is the run's one evaluation (it ends past the budget: no candidate
    // is validated). A task of the tiny suite's 80 values takes less than the 10 ms in which a
    // thread's CPU time counts, so it counted 0 but about once in 150 tasks: the run went on
    // for a random number of steps (30 to 50 here), each a second or more on Slurm.
    let suite = suite_of_starts(dir.path(), 3000);
    let out = dir.path().join("bench");
    succeed(milo(
        Some(&cluster),
        &[
            "bench",
            "--suite",
            suite.to_str().unwrap(),
            "--methods",
            "best-of-n",
            "--seeds",
            "1",
            "--no-rerun",
            "--budget",
            "0.01",
            "--out",
            out.to_str().unwrap(),
            "--executor",
            "slurm",
            "--slurm-poll",
            "0.2",
        ],
    ));
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(
        results["runs"].as_array().map(Vec::len),
        Some(1),
        "{results}"
    );
    // The run's directory (runs/<method>/<seed>) holds its spool.
    let mut spooled = Vec::new();
    let mut stack = vec![out.join("runs")];
    while let Some(d) = stack.pop() {
        if d.join("spool").is_dir() {
            spooled.extend(submissions(&d));
        }
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() && path.file_name().unwrap() != "spool" {
                stack.push(path);
            }
        }
    }
    assert!(
        !spooled.is_empty(),
        "the benchmark's tasks ran as Slurm jobs"
    );
}

/// The overhead table of docs/search.md: the tiny suite, 2 rounds × 3 islands × 8 tasks per round, on
/// local threads, as job arrays and on 2 pilots, one after the other on one cluster; overheads
/// against local threads with `--jobs 2` (the cluster's two cores). Run with
/// `cargo test --release --test slurm_executor -- --ignored --nocapture overhead`.
#[test]
#[ignore = "a measurement of a few minutes; prints the table of docs/search.md"]
fn overhead_per_task_of_pilots_job_arrays_and_local_threads() {
    let _serial = alone();
    let test = "overhead_per_task_of_pilots_job_arrays_and_local_threads";
    let Some(cluster) = Cluster::start(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let suite = tiny_suite(dir.path());
    let settings = [
        "--rounds",
        "2",
        "--islands",
        "3",
        "--tasks-per-round",
        "8",
        "--seed",
        "1",
    ];
    let modes: [(&str, &[&str]); 4] = [
        ("local threads, `--jobs 1`", &["--jobs", "1"]),
        ("local threads, `--jobs 2`", &["--jobs", "2"]),
        (
            "Slurm job arrays",
            &["--executor", "slurm", "--slurm-poll", "0.2"],
        ),
        (
            "Slurm pilots, `--slurm-pilots 2`",
            &[
                "--executor",
                "slurm",
                "--slurm-poll",
                "0.2",
                "--slurm-pilots",
                "2",
            ],
        ),
    ];
    let mut rows = Vec::new();
    for (k, (mode, extra)) in modes.iter().enumerate() {
        let run = dir.path().join(format!("run{k}"));
        let mut args = vec![
            "evolve",
            "--suite",
            suite.to_str().unwrap(),
            "--run-dir",
            run.to_str().unwrap(),
        ];
        args.extend(settings);
        args.extend(*extra);
        let started = std::time::Instant::now();
        succeed(milo(Some(&cluster), &args));
        rows.push((mode, run, started.elapsed().as_secs_f64()));
    }
    // Every task the search ran is a task file in the Slurm runs' spools.
    let tasks = |run: &Path| {
        batches(&run.join("spool"))
            .iter()
            .map(|b| {
                std::fs::read_dir(b)
                    .unwrap()
                    .filter(|e| {
                        let name = e.as_ref().unwrap().file_name();
                        let name = name.to_string_lossy();
                        name.starts_with("task-") && name.ends_with(".json")
                    })
                    .count()
            })
            .sum::<usize>()
    };
    let count = tasks(&rows[2].1);
    assert_eq!(count, tasks(&rows[3].1));
    for (_, run, _) in &rows[1..] {
        assert_eq!(lineage(run), lineage(&rows[0].1));
    }
    let spooled = batches(&rows[2].1.join("spool")).len();
    assert_eq!(spooled, batches(&rows[3].1.join("spool")).len());
    let local = rows[1].2;
    println!(
        "{count} tasks in {spooled} batches\n\n\
         | where | wall | overhead per task | overhead per batch |\n|---|---:|---:|---:|"
    );
    for (mode, _, wall) in &rows {
        println!(
            "| {mode} | {wall:.2} s | {:.3} s | {:.2} s |",
            (wall - local) / count as f64,
            (wall - local) / spooled as f64
        );
    }
}

/// Process `pid` and every live process under it, by the parent IDs in `/proc`.
fn descendants(pid: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let child: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let parent = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((child, parent))
        })
        .collect();
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            parents
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(c, _)| *c),
        );
        i += 1;
    }
    found
}

#[test]
fn dropping_the_cluster_leaves_no_step_of_its_jobs_running() {
    let _serial = beside_others();
    let test = "dropping_the_cluster_leaves_no_step_of_its_jobs_running";
    let Some(cluster) = Cluster::start(test) else {
        return;
    };
    let script = cluster.dir().join("long.sh");
    std::fs::write(&script, "#!/bin/sh\nsleep 1000\n").unwrap();
    let submitted = cluster
        .tool(
            "sbatch",
            &["--parsable", "--output=/dev/null", script.to_str().unwrap()],
        )
        .expect("sbatch");
    let job = submitted.trim().to_string();
    wait_for(
        || !cluster.steps().is_empty(),
        "the job's slurmstepd to start",
    );
    let steps = cluster.steps();
    drop(cluster);
    let alive: Vec<u32> = steps
        .iter()
        .copied()
        .filter(|pid| process_state(*pid).is_some_and(|s| s != 'Z'))
        .collect();
    // Stop what survived and the job's processes under it (by PID) before failing, so a
    // failure leaves nothing running.
    for pid in alive.iter().flat_map(|pid| descendants(*pid)) {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    assert_eq!(
        alive,
        Vec::<u32>::new(),
        "slurmstepd of job {job} outlived the cluster"
    );
}
