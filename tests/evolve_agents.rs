//! `milo evolve --agents`: the parts that ask language models need an agents file, a bad one is
//! refused before anything is written (absurd retries included), a run of the LLM writer records
//! the file, its failures and its token cost, and resumes from the record, and a model that
//! echoes its key leaves no piece of it in the run's files.

mod common;
mod mock_openai;
use common::{milo, milo_within, tiny_suite};
use milo::error::{EXIT_INPUT, EXIT_USAGE};
use mock_openai::{MockOpenAi, Reply};
use std::path::Path;
use std::time::Duration;

/// `milo evolve` on the tiny suite in `run_dir` with `extra` arguments.
fn evolve(dir: &Path, run_dir: &Path, extra: &[&str]) -> common::Run {
    let args = evolve_args(dir, run_dir, extra);
    milo(&args.iter().map(String::as_str).collect::<Vec<_>>())
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
    // Three tasks over the two search slots: the seed round runs each slot's first task
    // unedited, the writer the third.
    let mut args = evolve_args(
        dir.path(),
        &run_dir,
        &["--writer", "llm", "--agents", &agents],
    );
    let per_round = args.iter().position(|a| a == "--tasks-per-round").unwrap();
    args[per_round + 1] = "3".into();
    let run = milo(&args.iter().map(String::as_str).collect::<Vec<_>>());
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
    // Its first two tasks ran their slot's program unedited (the seed round's `verbatim`
    // runs); the task the writer ran shows the failed answer.
    let tasks = seed["evaluation"]["tasks"].as_array().unwrap();
    assert_eq!(tasks[0]["edits"].to_string(), r#"["Minimal: "]"#);
    assert_eq!(tasks[1]["edits"].to_string(), r#"["Minimal: "]"#);
    let edits = tasks[2]["edits"].to_string();
    assert!(edits.contains("nowhere answer 1 (failed:"), "{edits}");

    let shown = milo(&["lineage", run_dir.to_str().unwrap()]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(
        shown.stdout.contains("cost is language-model tokens"),
        "{}",
        shown.stdout
    );
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

/// The arguments of `milo evolve` on the tiny suite (written in `dir`) into `run_dir`, then
/// `extra`.
fn evolve_args(dir: &Path, run_dir: &Path, extra: &[&str]) -> Vec<String> {
    let suite = tiny_suite(dir);
    let mut args: Vec<String> = [
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
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    args.extend(extra.iter().map(|a| a.to_string()));
    args
}

#[test]
fn absurd_retries_in_an_agents_file_are_refused_on_read_naming_the_field_and_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    let agents = agents_file(dir.path(), "[writer]\nbackends = [\"nowhere\"]\n");
    let text = std::fs::read_to_string(&agents).unwrap();
    std::fs::write(&agents, text.replace("retries = 0", "retries = 4294967295")).unwrap();
    let args = evolve_args(
        dir.path(),
        &run_dir,
        &["--writer", "llm", "--agents", &agents],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = milo_within(&args, &[], Duration::from_secs(60))
        .expect("refused at once, not retried for ever");
    assert_eq!(run.code, EXIT_INPUT, "{}", run.stderr);
    let line = run.stderr.trim();
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(
        line.contains("retries") && line.contains("4294967295"),
        "{line}"
    );
    assert!(!run_dir.exists(), "nothing is written");
}

#[test]
fn a_model_echoing_its_key_leaves_no_piece_of_it_in_the_run() {
    const KEY: &str = "sk-echo/4f1d9b2c7e5a3810";
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    let cut = &KEY[..18];
    let percent: String = KEY.bytes().map(|b| format!("%{b:02X}")).collect();
    // Not a program: the writer records the failure with an excerpt of the answer.
    let mock = MockOpenAi::start(vec![Reply::answer(&format!(
        "{KEY} is my key; {cut}; {percent}; {}",
        KEY.replace('/', "\\/")
    ))]);
    let agents = dir.path().join("agents.toml");
    std::fs::write(
        &agents,
        format!(
            "[[backend]]\nname = \"echo\"\nkind = \"openai\"\napi_base = \"{}\"\n\
             model = \"m\"\napi_key_env = \"MILO_TEST_ECHOED_KEY\"\nretries = 0\n\
             timeout_seconds = 10\n[writer]\nbackends = [\"echo\"]\n",
            mock.api_base
        ),
    )
    .unwrap();
    let agents = agents.to_string_lossy().into_owned();
    let args = evolve_args(
        dir.path(),
        &run_dir,
        &["--writer", "llm", "--agents", &agents],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = milo_within(
        &args,
        &[("MILO_TEST_ECHOED_KEY", KEY)],
        Duration::from_secs(300),
    )
    .expect("the run ends");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!mock.log().is_empty(), "the model was asked");
    let lineage = std::fs::read_to_string(run_dir.join("lineage.jsonl")).unwrap();
    assert!(lineage.contains("<redacted> is my key"), "{lineage}");
    let pieces: Vec<String> = KEY
        .as_bytes()
        .windows(8)
        .map(|w| String::from_utf8(w.to_vec()).unwrap())
        .chain(
            percent
                .as_bytes()
                .windows(8)
                .map(|w| String::from_utf8(w.to_vec()).unwrap()),
        )
        .collect();
    let mut stack = vec![run_dir.clone()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            for piece in &pieces {
                assert!(
                    !text.contains(piece.as_str()),
                    "{piece} in {}",
                    path.display()
                );
            }
        }
    }
    for piece in &pieces {
        assert!(!run.stdout.contains(piece.as_str()) && !run.stderr.contains(piece.as_str()));
    }
}
