//! `milo campaign` against a loopback mock arena (`tests/mock_arena`): from the served
//! leaderboard to a submission the mock accepts as #1, followed by `milo arena status`, resumed
//! without a second submission, and the key never written; a campaign killed mid-POST resumed
//! without posting again, a POST in flight abandoned at once on Ctrl-C, and a refused submission
//! told from a finished search by exit 12.

mod mock_arena;

use mock_arena::{MockArena, MockOptions, MockProblem};
use std::path::Path;

const FIRST: &str = "first-autocorrelation-inequality";
const KEY: &str = "campaign-key-0123456789";
const AGENT: &str = "milo-campaign";

fn milo(dir: &Path, key: Option<&str>, args: &[&str]) -> (i32, String, String) {
    let out = MockArena::milo_command(env!("CARGO_BIN_EXE_milo"), dir, key, args)
        .output()
        .expect("milo runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn bump(height: f64) -> Vec<f64> {
    (0..40)
        .map(|i| 1.0 + height * (std::f64::consts::PI * i as f64 / 40.0).sin())
        .collect()
}

#[test]
fn a_campaign_ends_with_a_submission_the_mock_accepts_as_first() {
    let dir = tempfile::tempdir().unwrap();
    let problem = milo::problems::by_slug(FIRST).unwrap();
    let arena = toy_arena(MockOptions::default());
    let (_, toy_best) = arena.leader(FIRST).unwrap();
    // A program that keeps the 40 values (no refinement): seconds, not minutes.
    let program =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("problems/optimizers/lbfgs-cascade.toml");
    let program = program.to_string_lossy();
    let campaign = dir.path().join("c");
    let campaign_arg = campaign.to_string_lossy();
    let run = [
        "campaign",
        FIRST,
        "--dir",
        &campaign_arg,
        "--base-url",
        &arena.base,
        "--rounds",
        "1",
        "--islands",
        "1",
        "--tasks-per-round",
        "2",
        "--task-evaluations",
        "400",
        "--limit",
        "2",
        "--programs",
        &program,
        "--agent",
        AGENT,
        "--submit",
    ];
    let (code, stdout, stderr) = milo(dir.path(), Some(KEY), &run);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("SUBMITTED"), "{stdout}");
    let ledger = campaign.join("ledger.jsonl");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&ledger)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "one submission: its intent and its outcome");
    assert_eq!(lines[0]["kind"], "intent");
    assert_eq!(lines[1]["assessment"]["verdict"], "new-first");
    // The submitted file is the run's best at the time, verified exactly.
    let file = Path::new(lines[1]["file"].as_str().unwrap());
    let file = if file.is_absolute() {
        file.to_path_buf()
    } else {
        dir.path().join(file)
    };
    let values = milo::construction::read_values(&file).unwrap();
    let exact = problem.score_exact(&values);
    assert_eq!(
        milo::exact::rational::decimal_string(&exact, 40),
        lines[1]["assessment"]["score_exact"].as_str().unwrap()
    );

    // The mock decides asynchronously; `milo arena status` resolves the ledger entry.
    let ledger_arg = ledger.to_string_lossy();
    let status = [
        "arena",
        "status",
        "--ledger",
        &ledger_arg,
        "--base-url",
        &arena.base,
    ];
    let (code, first, _) = milo(dir.path(), None, &status);
    assert_eq!(code, 0);
    assert!(first.contains("pending"), "{first}");
    let (_, second, _) = milo(dir.path(), None, &status);
    assert!(second.contains("evaluated"), "{second}");
    let (leader, score) = arena.leader(FIRST).unwrap();
    assert_eq!(leader, AGENT);
    assert!(score < toy_best - problem.spec().min_improvement);

    // Resumed: the run is done; the same construction is not sent again.
    let (code, stdout, stderr) = milo(
        dir.path(),
        Some(KEY),
        &["campaign", "--resume", &campaign_arg],
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(!stdout.contains("SUBMITTED"), "{stdout}");
    let posts = arena.log().iter().filter(|r| r.method == "POST").count();
    assert_eq!(posts, 1);

    let report = std::fs::read_to_string(campaign.join("report/index.html")).unwrap();
    assert!(
        report.contains("Submissions") && report.contains("evaluated"),
        "the report shows the status"
    );
    for entry in walk(dir.path()) {
        let text = String::from_utf8_lossy(&std::fs::read(&entry).unwrap()).into_owned();
        assert!(!text.contains(KEY), "the key is in {}", entry.display());
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

/// A mock serving the first problem with two toy entries, accepting [`KEY`] for [`AGENT`].
fn toy_arena(options: MockOptions) -> MockArena {
    let problem = milo::problems::by_slug(FIRST).unwrap();
    MockArena::start(
        vec![MockProblem {
            id: 2,
            slug: FIRST.into(),
            min_improvement: problem.spec().min_improvement,
        }],
        vec![
            (FIRST.into(), "toy-leader".into(), bump(0.5)),
            (FIRST.into(), "toy-rival".into(), bump(0.7)),
        ],
        MockOptions {
            keys: vec![(KEY.into(), AGENT.into())],
            ..options
        },
        0,
    )
}

/// The arguments of a one-round submitting campaign in `campaign` against `base`.
fn campaign_args(campaign: &Path, base: &str) -> Vec<String> {
    let program =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("problems/optimizers/lbfgs-cascade.toml");
    [
        "campaign",
        FIRST,
        "--dir",
        &campaign.to_string_lossy(),
        "--base-url",
        base,
        "--rounds",
        "1",
        "--islands",
        "1",
        "--tasks-per-round",
        "2",
        "--task-evaluations",
        "400",
        "--limit",
        "2",
        "--programs",
        &program.to_string_lossy(),
        "--agent",
        AGENT,
        "--submit",
    ]
    .map(String::from)
    .to_vec()
}

/// Waits (at most 300 s) until the campaign in `child` has sent its first POST to `arena`;
/// kills it and fails otherwise.
fn await_first_post(arena: &MockArena, child: &mut std::process::Child) {
    let started = std::time::Instant::now();
    while arena.solution_posts() == 0 {
        if started.elapsed() > std::time::Duration::from_secs(300) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the campaign posted nothing within 300 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_campaign_killed_mid_post_resumes_without_posting_again_and_exits_12() {
    let dir = tempfile::tempdir().unwrap();
    // The mock keeps the first submission and never answers it.
    let arena = toy_arena(MockOptions {
        unanswered_submissions: 1,
        ..MockOptions::default()
    });
    let campaign = dir.path().join("c");
    let mut child = MockArena::milo_command(
        env!("CARGO_BIN_EXE_milo"),
        dir.path(),
        Some(KEY),
        &campaign_args(&campaign, &arena.base),
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .expect("milo runs");
    await_first_post(&arena, &mut child);
    child.kill().unwrap(); // SIGKILL while the POST waits for its answer
    child.wait().unwrap();
    // Before intents were written, a kill mid-POST left no ledger at all.
    let ledger = std::fs::read_to_string(campaign.join("ledger.jsonl")).unwrap_or_default();
    let kinds: Vec<String> = ledger
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"].to_string())
        .collect();
    assert_eq!(kinds, ["\"intent\""], "{ledger}");

    let campaign_arg = campaign.to_string_lossy();
    let (code, stdout, stderr) = milo(
        dir.path(),
        Some(KEY),
        &["campaign", "--resume", &campaign_arg],
    );
    assert_eq!(code, 12, "{stdout}{stderr}");
    assert_eq!(arena.solution_posts(), 1, "not posted twice");
    assert!(!stdout.contains("SUBMITTED"), "{stdout}");
    let last = stderr.trim().lines().last().unwrap();
    assert!(last.contains("not submitted (exit 12)"), "{last}");
    assert!(last.contains("may already be on"), "{last}");
    assert!(last.contains("--send-again"), "{last}");
    // The report was still written, and names the unconfirmed submission.
    let report = std::fs::read_to_string(campaign.join("report/index.html")).unwrap();
    assert!(report.contains("unconfirmed:"), "the report says so");
    for entry in walk(dir.path()) {
        let text = String::from_utf8_lossy(&std::fs::read(&entry).unwrap()).into_owned();
        assert!(!text.contains(KEY), "the key is in {}", entry.display());
    }
}

#[test]
fn ctrl_c_abandons_a_campaign_post_in_flight_at_once_and_leaves_it_unconfirmed() {
    let dir = tempfile::tempdir().unwrap();
    // The mock keeps the first submission and never answers it; the client would wait the
    // whole --timeout for it.
    let arena = toy_arena(MockOptions {
        unanswered_submissions: 1,
        ..MockOptions::default()
    });
    let campaign = dir.path().join("c");
    let mut args = campaign_args(&campaign, &arena.base);
    args.extend(["--timeout", "600"].map(String::from));
    let mut child =
        MockArena::milo_command(env!("CARGO_BIN_EXE_milo"), dir.path(), Some(KEY), &args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("milo runs");
    await_first_post(&arena, &mut child);
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let interrupted = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if interrupted.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("Ctrl-C did not end the campaign within 20 s of its POST in flight");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(12), "{stderr}");
    assert!(stderr.contains("abandoned in flight"), "{stderr}");
    let last = stderr.trim().lines().last().unwrap();
    assert!(
        last.contains("the search was stopped (Ctrl-C), but its best was not submitted"),
        "a stopped search is not called finished: {last}"
    );
    let ledger = std::fs::read_to_string(campaign.join("ledger.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = ledger
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 2, "{ledger}");
    assert_eq!(records[1]["kind"], "submission");
    assert_eq!(records[1]["may_have_arrived"], true, "{ledger}");
    assert_eq!(arena.solution_posts(), 1, "nothing posted after Ctrl-C");
}

#[test]
fn a_campaign_whose_submission_is_refused_exits_12_and_a_resume_sends_it() {
    let dir = tempfile::tempdir().unwrap();
    let arena = toy_arena(MockOptions::default());
    let campaign = dir.path().join("c");
    let args = campaign_args(&campaign, &arena.base);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let wrong = "wrong-key-9876543210";
    let (code, stdout, stderr) = milo(dir.path(), Some(wrong), &args);
    assert_eq!(
        code, 12,
        "the search finished, the submission did not: {stdout}{stderr}"
    );
    assert!(arena.solution_posts() >= 1, "it was tried");
    let last = stderr.trim().lines().last().unwrap();
    assert!(last.contains("not submitted (exit 12)"), "{last}");
    assert!(last.contains("refused the key"), "{last}");
    assert!(last.contains("--resume"), "{last}");
    assert!(!stderr.contains(wrong), "{stderr}");

    // A refusal is no doubt: resumed with the right key, the best is sent.
    let campaign_arg = campaign.to_string_lossy();
    let (code, stdout, stderr) = milo(
        dir.path(),
        Some(KEY),
        &["campaign", "--resume", &campaign_arg],
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("SUBMITTED"), "{stdout}");
}
