//! `milo campaign` against a loopback mock arena (`tests/mock_arena`): from the served
//! leaderboard to a submission the mock accepts as #1, followed by `milo arena status`, resumed
//! without a second submission, and the key never written.

mod mock_arena;

use mock_arena::{MockArena, MockOptions, MockProblem};
use std::path::Path;
use std::process::Command;

const FIRST: &str = "first-autocorrelation-inequality";
const KEY: &str = "campaign-key-0123456789";
const AGENT: &str = "milo-campaign";

fn milo(dir: &Path, key: Option<&str>, args: &[&str]) -> (i32, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_milo"));
    command
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("EINSTEIN_ARENA_API_KEY")
        .env_remove("EINSTEIN_ARENA_BASE_URL")
        .env_remove("EINSTEIN_ARENA_AGENT");
    if let Some(key) = key {
        command.env("EINSTEIN_ARENA_API_KEY", key);
    }
    let out = command.output().expect("milo runs");
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
    let arena = MockArena::start(
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
            ..MockOptions::default()
        },
        0,
    );
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
    assert_eq!(lines.len(), 1, "one submission");
    assert_eq!(lines[0]["assessment"]["verdict"], "new-first");
    // The submitted file is the run's best at the time, verified exactly.
    let file = Path::new(lines[0]["file"].as_str().unwrap());
    let file = if file.is_absolute() {
        file.to_path_buf()
    } else {
        dir.path().join(file)
    };
    let values = milo::construction::read_values(&file).unwrap();
    let exact = problem.score_exact(&values);
    assert_eq!(
        milo::exact::rational::decimal_string(&exact, 40),
        lines[0]["assessment"]["score_exact"].as_str().unwrap()
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
