//! `milo evolve --agents`: the parts that ask language models need an agents file, a bad one is
//! refused before anything is written, and a run of the LLM writer records the file, its
//! failures and its token cost, and resumes from the record.

mod common;
use common::{milo, tiny_suite};
use milo::error::{EXIT_INPUT, EXIT_USAGE};
use std::path::Path;

/// `milo evolve` on the tiny suite in `run_dir` with `extra` arguments.
fn evolve(dir: &Path, run_dir: &Path, extra: &[&str]) -> common::Run {
    let suite = tiny_suite(dir);
    let mut args = vec![
        "evolve",
        "--suite",
        suite.to_str().unwrap(),
        "--run-dir",
        run_dir.to_str().unwrap(),
        "--rounds",
        "1",
        "--islands",
        "1",
        "--tasks-per-round",
        "1",
    ];
    args.extend_from_slice(extra);
    milo(&args)
}

/// An agents file whose one OpenAI-compatible backend listens nowhere (a port just closed on
/// 127.0.0.1), without retries; `roles` is appended.
fn agents_file(dir: &Path, roles: &str) -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let path = dir.join("agents.toml");
    std::fs::write(
        &path,
        format!(
            "[[backend]]\nname = \"nowhere\"\nkind = \"openai\"\n\
             api_base = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m\"\nretries = 0\n\
             timeout_seconds = 5\n{roles}"
        ),
    )
    .unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn parts_that_ask_a_model_without_an_agents_file_are_one_line_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    for (flags, named) in [
        (&["--writer", "llm"][..], "--writer llm"),
        (&["--mutators", "tuner,llm"][..], "llm mutator"),
        (&["--orchestrator", "llm"][..], "--orchestrator llm"),
    ] {
        let run = evolve(dir.path(), &run_dir, flags);
        assert_eq!(run.code, EXIT_USAGE, "{flags:?}: {}", run.stderr);
        let line = run.stderr.trim();
        assert_eq!(line.lines().count(), 1, "{line}");
        assert!(
            line.contains(named) && line.contains("--agents FILE"),
            "{line}"
        );
        assert!(!run_dir.exists(), "{flags:?}: nothing is written");
    }

    // An agents file without a [writer] pool names the missing role.
    let agents = agents_file(dir.path(), "[mutator]\nbackends = [\"nowhere\"]\n");
    let run = evolve(
        dir.path(),
        &run_dir,
        &["--writer", "llm", "--agents", &agents],
    );
    assert_eq!(run.code, EXIT_USAGE, "{}", run.stderr);
    assert!(run.stderr.contains("[writer]"), "{}", run.stderr);
    assert!(!run_dir.exists());

    // A missing agents file is an input error naming it.
    let missing = dir.path().join("absent.toml");
    let run = evolve(
        dir.path(),
        &run_dir,
        &["--writer", "llm", "--agents", missing.to_str().unwrap()],
    );
    assert_eq!(run.code, EXIT_INPUT, "{}", run.stderr);
    assert!(run.stderr.contains("absent.toml"), "{}", run.stderr);
    assert!(!run_dir.exists());
}

#[test]
fn an_llm_writer_run_records_its_agents_and_failed_answers_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    let agents = agents_file(dir.path(), "[writer]\nbackends = [\"nowhere\"]\n");
    let run = evolve(
        dir.path(),
        &run_dir,
        &["--writer", "llm", "--agents", &agents],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lineage = std::fs::read_to_string(run_dir.join("lineage.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = lineage
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let started = &records[0];
    assert_eq!(started["writer"], "llm");
    assert_eq!(started["cost"], "tokens");
    assert_eq!(started["agents"]["backend"][0]["name"], "nowhere");
    // The seed node ran the LLM writer's seed harness; no answer came, and the run went on.
    let seed = records
        .iter()
        .find(|r| r["record"] == "node")
        .expect("a seed node");
    assert_eq!(seed["name"], "llm-writer", "{seed}");
    let edits = seed["evaluation"]["tasks"][0]["edits"].to_string();
    assert!(edits.contains("nowhere answer 1 (failed:"), "{edits}");

    let shown = milo(&["lineage", run_dir.to_str().unwrap()]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(shown.stdout.contains("cost in tokens"), "{}", shown.stdout);
    assert!(shown.stdout.contains("tokens  verdict"), "{}", shown.stdout);

    // The agents file is read from the record on resume (the file itself may be gone).
    std::fs::remove_file(&agents).unwrap();
    let resumed = milo(&["evolve", "--resume", run_dir.to_str().unwrap()]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let refused = milo(&[
        "evolve",
        "--resume",
        run_dir.to_str().unwrap(),
        "--agents",
        "a.toml",
    ]);
    assert_eq!(refused.code, EXIT_USAGE, "{}", refused.stderr);
}
