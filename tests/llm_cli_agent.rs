//! The CLI-agent backend against fake `claude` and `codex` executables (shell scripts this test
//! writes into a directory put first on PATH): good answers in both formats, garbage, a non-zero
//! exit, a hang with a grandchild, killed at the timeout (or at a cancel) with no process left
//! behind, and a key in use scrubbed from what the agent prints.

mod common;
use common::processes_with;
use milo::llm::cli_agent::{CliAgent, CliOutput};
use milo::llm::{
    Attachment, BackendConfig, ChatBackend, ChatMessage, ChatRequest, LlmError, Speaker,
};
use std::path::PathBuf;
use std::sync::Once;
use std::time::{Duration, Instant};

/// The fake `claude`: `claude MODE PROMPT_FILE [MARKER]`.
const FAKE_CLAUDE: &str = r#"#!/bin/sh
mode=$1
prompt_file=$2
case $mode in
good)
  grep -q "the question" "$prompt_file" || { echo "prompt missing" >&2; exit 9; }
  attached="$(cat parent.toml) and $(cat start.json)"
  printf '{"type":"result","subtype":"success","is_error":false,"result":"answer with %s","session_id":"s","num_turns":1,"total_cost_usd":0.0125,"usage":{"input_tokens":321,"cache_read_input_tokens":100,"output_tokens":45}}\n' "$attached"
  echo "claude: done" >&2 ;;
error)
  printf '{"type":"result","subtype":"error_max_turns","is_error":true,"result":"Reached max turns"}\n' ;;
garbage)
  echo "<html>this is not json</html>" ;;
fail)
  echo "rate limited: try again later" >&2
  exit 2 ;;
hang)
  sh -c 'while :; do sleep 1; done' "$3" &
  while :; do sleep 1; done ;;
esac
"#;

/// The fake `codex`: `codex exec --json MODE PROMPT`.
const FAKE_CODEX: &str = r#"#!/bin/sh
mode=$3
case "$4" in *"the question"*) ;; *) echo "prompt missing" >&2; exit 9 ;; esac
echo '{"type":"thread.started","thread_id":"t1"}'
echo '{"type":"turn.started"}'
case $mode in
good)
  echo '{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"thinking"}}'
  echo '{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"draft"}}'
  echo '{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"ls","aggregated_output":"x","status":"completed"}}'
  echo '{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"final answer"}}'
  echo '{"type":"turn.completed","usage":{"input_tokens":1200,"cached_input_tokens":200,"output_tokens":80}}' ;;
garbage)
  echo '{"type":"item.completed","item":{"id":"item_1","type":"agent_mess' ;;
esac
"#;

/// Puts the fakes first on PATH (once for every test of this file).
fn fakes_on_path() {
    static SETUP: Once = Once::new();
    SETUP.call_once(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("milo-fake-agents");
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in [("claude", FAKE_CLAUDE), ("codex", FAKE_CODEX)] {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path = std::env::var("PATH").unwrap_or_default();
        std::env::set_var("PATH", format!("{}:{path}", dir.display()));
    });
}

fn agent(argv: &[&str], output: CliOutput, timeout_seconds: f64) -> CliAgent {
    fakes_on_path();
    CliAgent::new(&BackendConfig::Cli {
        name: "fake".into(),
        argv: argv.iter().map(|s| s.to_string()).collect(),
        output,
        weight: 1.0,
        timeout_seconds,
    })
    .unwrap()
}

fn claude(mode: &str, extra: &[&str], timeout_seconds: f64) -> CliAgent {
    let mut argv = vec!["claude", mode, "{prompt_file}"];
    argv.extend_from_slice(extra);
    agent(&argv, CliOutput::ClaudeJson, timeout_seconds)
}

fn codex(mode: &str) -> CliAgent {
    agent(
        &["codex", "exec", "--json", mode, "{prompt}"],
        CliOutput::CodexJsonl,
        30.0,
    )
}

fn request() -> ChatRequest {
    ChatRequest {
        messages: vec![
            ChatMessage::new(Speaker::System, "You write optimizer programs."),
            ChatMessage::new(Speaker::User, "Here is the question: improve it."),
        ],
        attachments: vec![Attachment {
            name: "parent.toml".into(),
            content: "parent-program".into(),
        }],
        workspace: vec![Attachment {
            name: "start.json".into(),
            content: "start-construction".into(),
        }],
        ..ChatRequest::default()
    }
}

#[test]
fn claude_json_answers_with_text_tokens_cost_and_transcript() {
    let completion = claude("good", &[], 30.0).complete(&request()).unwrap();
    assert_eq!(
        completion.text, "answer with parent-program and start-construction",
        "the attachment and the workspace file are in the work directory"
    );
    assert_eq!(completion.backend, "fake");
    assert_eq!(completion.usage.prompt_tokens, 421);
    assert_eq!(completion.usage.completion_tokens, 45);
    assert_eq!(completion.usage.cost_usd, Some(0.0125));
    assert_eq!(completion.usage.requests, 1);
    let transcript = completion.transcript.unwrap();
    assert!(transcript.contains("\"session_id\":\"s\""), "{transcript}");
    assert!(transcript.contains("claude: done"), "{transcript}");
}

#[test]
fn codex_jsonl_answers_with_the_last_agent_message_and_turn_usage() {
    let completion = codex("good").complete(&request()).unwrap();
    assert_eq!(completion.text, "final answer");
    assert_eq!(completion.usage.prompt_tokens, 1200);
    assert_eq!(completion.usage.completion_tokens, 80);
    assert_eq!(completion.usage.cost_usd, None);
}

#[test]
fn garbage_is_unusable_in_both_formats() {
    for (agent, expected) in [
        (claude("garbage", &[], 30.0), "not the JSON"),
        (codex("garbage"), "line 3"),
    ] {
        match agent.complete(&request()) {
            Err(LlmError::Unusable { message, .. }) => {
                assert!(message.contains(expected), "{message}")
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_reported_error_and_a_non_zero_exit_are_unavailable() {
    match claude("error", &[], 30.0).complete(&request()) {
        Err(LlmError::Unavailable { message, .. }) => {
            assert!(message.contains("Reached max turns"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    match claude("fail", &[], 30.0).complete(&request()) {
        Err(LlmError::Unavailable { message, .. }) => {
            assert!(message.contains("status 2"), "{message}");
            assert!(
                message.contains("rate limited: try again later"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    match agent(&["/nonexistent/claude"], CliOutput::Text, 5.0).complete(&request()) {
        Err(LlmError::Unavailable { message, .. }) => {
            assert!(message.contains("cannot start"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_hanging_agent_is_killed_at_its_timeout_with_its_grandchild() {
    let marker = format!("milo-cli-agent-test-hang-{}", std::process::id());
    let began = Instant::now();
    let result = claude("hang", &[&marker], 1.0).complete(&request());
    match result {
        Err(LlmError::Timeout { seconds, .. }) => assert_eq!(seconds, 1.0),
        other => panic!("{other:?}"),
    }
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(processes_with(&marker), Vec::<String>::new());
}

#[test]
fn a_cancel_kills_a_running_agent_with_its_grandchild_within_seconds() {
    let marker = format!("milo-cli-agent-test-cancel-{}", std::process::id());
    let request = request();
    let _deadline = request
        .cancel
        .cancel_at(Instant::now() + Duration::from_millis(300));
    let began = Instant::now();
    // Without the cancel, the agent would run for its whole hour.
    let result = claude("hang", &[&marker], 3600.0).complete(&request);
    assert!(
        matches!(result, Err(LlmError::Cancelled { .. })),
        "{result:?}"
    );
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(processes_with(&marker), Vec::<String>::new());
}

#[test]
fn an_agent_echoing_a_key_in_use_leaves_no_piece_of_it_in_the_answer_or_transcript() {
    const KEY: &str = "sk-cli/8d2f6a0c4e1b9d7f";
    // A key milo read (an agents file's api_key_env, the arena key) is a secret in use.
    milo::secrets::remember(KEY);
    let script = format!(
        "printf 'answer: %s then %s\\n' '{KEY}' \"$(printf %s '{KEY}' | base64)\"; \
         printf 'cut %s\\n' '{}' >&2",
        &KEY[..18]
    );
    let answer = agent(&["sh", "-c", &script], CliOutput::Text, 30.0)
        .complete(&request())
        .unwrap();
    assert!(
        answer.text.starts_with("answer: <redacted> then "),
        "{}",
        answer.text
    );
    let transcript = answer.transcript.unwrap();
    for text in [&answer.text, &transcript] {
        for piece in KEY.as_bytes().windows(8) {
            let piece = std::str::from_utf8(piece).unwrap();
            assert!(!text.contains(piece), "{piece} in {text}");
        }
        assert!(
            !text.contains("c2stY2xpLzhkMmY2"),
            "the base64 stays: {text}"
        );
    }
}
