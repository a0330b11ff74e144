//! A coding CLI agent (`claude -p …`, `codex exec …`) as a backend.
//!
//! Each request runs the configured command line once, in a fresh temporary work directory
//! (removed afterwards) that holds every attachment and workspace file and `PROMPT.md`, the
//! conversation.
//! Placeholders in `argv`: `{prompt}` (the conversation's text), `{prompt_file}` (the path of
//! `PROMPT.md`), `{workdir}` (the directory). The agent runs through [`crate::subprocess`] in its
//! own process group, killed whole at the timeout ([`LlmError::Timeout`]), when the request's
//! token is cancelled ([`LlmError::Cancelled`]) and when it exits. A
//! non-zero exit is [`LlmError::Unavailable`] with the tail of its standard error; an answer that
//! cannot be read per [`CliOutput`] is [`LlmError::Unusable`]. Its standard output and error are
//! kept (capped) as the completion's transcript. The answer, the transcript and every error are
//! scrubbed of the secrets in use (the agent sees the environment and may echo a key).

use super::{
    excerpt, BackendConfig, ChatBackend, ChatRequest, Completion, LlmError, Speaker, Usage,
};
use crate::error::{MiloError, Result as MiloResult};
use crate::subprocess::{self, Finished, Kill, Limits};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// The file in the work directory holding the conversation.
pub const PROMPT_FILE: &str = "PROMPT.md";
/// Most bytes of an agent's standard output read as its answer.
const ANSWER_CAP: usize = 4 << 20;
/// Most bytes of standard error kept (the last ones).
const STDERR_CAP: usize = 64 << 10;
/// Most bytes of a completion's transcript.
pub const TRANSCRIPT_CAP: usize = 64 << 10;
/// Characters of standard error quoted in an error.
const STDERR_TAIL: usize = 400;

/// How a CLI agent's standard output carries its answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CliOutput {
    /// The whole standard output is the answer (no usage is reported: tokens count 0).
    #[default]
    Text,
    /// `claude -p --output-format json`: one JSON object with `result` and `total_cost_usd`.
    ClaudeJson,
    /// `codex exec --json`: JSON lines of events; the last agent message is the answer.
    CodexJsonl,
}

/// A coding CLI agent.
pub struct CliAgent {
    name: String,
    argv: Vec<String>,
    output: CliOutput,
    timeout_seconds: f64,
}

impl CliAgent {
    /// The agent `config` (a [`BackendConfig::Cli`]) describes.
    pub fn new(config: &BackendConfig) -> MiloResult<CliAgent> {
        match config {
            BackendConfig::Cli {
                name,
                argv,
                output,
                timeout_seconds,
                ..
            } => Ok(CliAgent {
                name: name.clone(),
                argv: argv.clone(),
                output: *output,
                timeout_seconds: *timeout_seconds,
            }),
            other => Err(MiloError::Usage(format!(
                "backend '{}' is not a CLI agent (kind = \"cli\")",
                other.name()
            ))),
        }
    }

    fn unavailable(&self, message: String) -> LlmError {
        LlmError::Unavailable {
            backend: self.name.clone(),
            message,
        }
    }

    fn unusable(&self, message: String) -> LlmError {
        LlmError::Unusable {
            backend: self.name.clone(),
            message,
        }
    }

    /// Runs the agent on `request` in `dir`.
    fn run_in(&self, dir: &Path, request: &ChatRequest) -> Result<Finished, LlmError> {
        for attachment in request.attachments.iter().chain(&request.workspace) {
            let name = &attachment.name;
            if !is_plain_file_name(name) || name == PROMPT_FILE {
                return Err(self.unavailable(format!(
                    "attachment name '{name}' must be a plain file name other than {PROMPT_FILE}"
                )));
            }
            std::fs::write(dir.join(name), &attachment.content)
                .map_err(|e| self.unavailable(format!("cannot write attachment '{name}': {e}")))?;
        }
        let prompt = render_prompt(request);
        let prompt_file = dir.join(PROMPT_FILE);
        std::fs::write(&prompt_file, &prompt)
            .map_err(|e| self.unavailable(format!("cannot write {PROMPT_FILE}: {e}")))?;
        let (prompt_path, workdir) = (prompt_file.to_string_lossy(), dir.to_string_lossy());
        let fill = |word: &str| {
            word.replace("{prompt_file}", &prompt_path)
                .replace("{workdir}", &workdir)
                .replace("{prompt}", &prompt)
        };
        let mut command = std::process::Command::new(fill(&self.argv[0]));
        command
            .args(self.argv[1..].iter().map(|w| fill(w)))
            .current_dir(dir);
        let limits = Limits {
            stdout_cap: ANSWER_CAP,
            stderr_cap: STDERR_CAP,
            ..Limits::wall(Duration::from_secs_f64(self.timeout_seconds))
        };
        subprocess::run(command, &limits, &request.cancel)
            .map_err(|e| self.unavailable(format!("cannot start '{}': {e}", self.argv[0])))
    }

    /// The answer in a finished run's output, or why there is none.
    fn answer(&self, finished: &Finished) -> Result<(String, Usage), LlmError> {
        let stderr_tail = || {
            let tail = finished.stderr.tail(STDERR_TAIL);
            if tail.is_empty() {
                String::new()
            } else {
                format!("; stderr: {}", tail.replace('\n', " | "))
            }
        };
        match finished.killed {
            Some(Kill::Wall) => {
                return Err(LlmError::Timeout {
                    backend: self.name.clone(),
                    seconds: self.timeout_seconds,
                })
            }
            Some(Kill::Cancelled) => {
                return Err(LlmError::Cancelled {
                    backend: self.name.clone(),
                })
            }
            Some(kill) => {
                return Err(self.unavailable(format!("killed ({kill:?}){}", stderr_tail())))
            }
            None => {}
        }
        if !finished.status.success() {
            let code = finished
                .status
                .code()
                .map_or("unknown".into(), |c| c.to_string());
            return Err(self.unavailable(format!("exited with status {code}{}", stderr_tail())));
        }
        if finished.stdout.truncated() {
            return Err(self.unusable(format!("the answer is longer than {ANSWER_CAP} bytes")));
        }
        let stdout = finished.stdout.text();
        let parsed = match self.output {
            CliOutput::Text => parse_text(&stdout),
            CliOutput::ClaudeJson => parse_claude_json(&stdout),
            CliOutput::CodexJsonl => parse_codex_jsonl(&stdout),
        };
        parsed.map_err(|failure| match failure {
            Failure::Unusable(message) => self.unusable(message),
            Failure::Reported(message) => self.unavailable(message),
        })
    }
}

impl ChatBackend for CliAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        self.complete_in_a_fresh_directory(request)
            .map(Completion::scrubbed)
            .map_err(LlmError::scrubbed)
    }
}

impl CliAgent {
    /// Runs the agent on `request` in a fresh work directory, removed afterwards.
    fn complete_in_a_fresh_directory(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let dir = tempfile::Builder::new()
            .prefix("milo-agent-")
            .tempdir()
            .map_err(|e| self.unavailable(format!("cannot create a work directory: {e}")))?;
        let finished = self.run_in(dir.path(), request)?;
        let (text, mut usage) = self.answer(&finished)?;
        usage.requests = 1;
        Ok(Completion {
            text,
            backend: self.name.clone(),
            usage,
            transcript: Some(transcript(&finished)),
        })
    }
}

/// Whether `name` names a file directly inside a directory (no separator, not `.` or `..`).
fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

/// The conversation as Markdown, with the attached files listed.
fn render_prompt(request: &ChatRequest) -> String {
    let mut text = String::new();
    for message in &request.messages {
        let heading = match message.role {
            Speaker::System => "Instructions",
            Speaker::User => "Request",
            Speaker::Assistant => "Your earlier answer",
        };
        text.push_str(&format!(
            "## {heading}\n\n{}\n\n",
            message.content.trim_end()
        ));
    }
    if !(request.attachments.is_empty() && request.workspace.is_empty()) {
        text.push_str("## Files in the working directory\n\n");
        for attachment in request.attachments.iter().chain(&request.workspace) {
            text.push_str(&format!("- `{}`\n", attachment.name));
        }
    }
    text
}

/// Standard output and error of a run, capped at [`TRANSCRIPT_CAP`] bytes.
fn transcript(finished: &Finished) -> String {
    let mut text = format!(
        "--- stdout ---\n{}\n--- stderr ---\n{}",
        finished.stdout.text(),
        finished.stderr.text()
    );
    if text.len() > TRANSCRIPT_CAP {
        let mut end = TRANSCRIPT_CAP;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("\n… (transcript truncated)");
    }
    text
}

/// Why an output holds no answer.
#[derive(Debug, PartialEq)]
enum Failure {
    /// It cannot be read.
    Unusable(String),
    /// It is readable and reports an error of the agent.
    Reported(String),
}

/// The whole output as the answer.
fn parse_text(stdout: &str) -> Result<(String, Usage), Failure> {
    let text = stdout.trim();
    if text.is_empty() {
        return Err(Failure::Unusable("empty answer".into()));
    }
    Ok((text.to_string(), Usage::default()))
}

/// A count at `key` of a JSON object (0 when absent).
/// The token count `key` of a usage object (0 when absent), bounded by
/// [`super::MAX_REPORTED_TOKENS`].
fn count(object: &Value, key: &str) -> Result<u64, Failure> {
    let tokens = object.get(key).and_then(Value::as_u64).unwrap_or(0);
    super::reported_tokens(&format!("usage.{key}"), tokens).map_err(Failure::Unusable)
}

/// `claude -p --output-format json`: `{"type": "result", "is_error": false, "result": "…",
/// "total_cost_usd": 0.01, "usage": {"input_tokens": …, "output_tokens": …,
/// "cache_creation_input_tokens": …, "cache_read_input_tokens": …}}`. Prompt tokens count the
/// cached ones too.
fn parse_claude_json(stdout: &str) -> Result<(String, Usage), Failure> {
    let value: Value = serde_json::from_str(stdout.trim()).map_err(|e| {
        Failure::Unusable(format!(
            "not the JSON of `--output-format json` ({e}): {}",
            excerpt(stdout)
        ))
    })?;
    let result = value.get("result").and_then(Value::as_str);
    if value.get("is_error").and_then(Value::as_bool) == Some(true) {
        let why = result
            .map(excerpt)
            .or_else(|| {
                value
                    .get("subtype")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .unwrap_or_else(|| "no reason given".into());
        return Err(Failure::Reported(format!(
            "the agent reported an error: {why}"
        )));
    }
    let text = result
        .ok_or_else(|| Failure::Unusable(format!("no string `result` in {}", excerpt(stdout))))?;
    let usage = value.get("usage").cloned().unwrap_or(Value::Null);
    let cost_usd = value.get("total_cost_usd").and_then(Value::as_f64);
    if let Some(cost) = cost_usd.filter(|c| !(0.0..=1e6).contains(c)) {
        return Err(Failure::Unusable(format!(
            "total_cost_usd must be in [0, 1e6] for one answer, got {cost}"
        )));
    }
    Ok((
        text.to_string(),
        Usage {
            prompt_tokens: count(&usage, "input_tokens")?
                + count(&usage, "cache_creation_input_tokens")?
                + count(&usage, "cache_read_input_tokens")?,
            completion_tokens: count(&usage, "output_tokens")?,
            cost_usd,
            requests: 1,
        },
    ))
}

/// `codex exec --json`: one event per line; the answer is the text of the last `item.completed`
/// whose item is an `agent_message`; usage sums the `turn.completed` events (`input_tokens`
/// includes the cached ones); `turn.failed` and `error` events report the agent's error.
fn parse_codex_jsonl(stdout: &str) -> Result<(String, Usage), Failure> {
    let mut answer = None;
    let mut usage = Usage {
        requests: 1,
        ..Usage::default()
    };
    let mut failure = None;
    for (i, line) in stdout.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let event: Value = serde_json::from_str(line).map_err(|e| {
            Failure::Unusable(format!(
                "line {} is not a JSON event ({e}): {}",
                i + 1,
                excerpt(line)
            ))
        })?;
        match event.get("type").and_then(Value::as_str) {
            Some("item.completed") => {
                let item = event.get("item").unwrap_or(&Value::Null);
                if item.get("type").and_then(Value::as_str) == Some("agent_message") {
                    answer = item.get("text").and_then(Value::as_str).map(str::to_string);
                }
            }
            Some("turn.completed") => {
                let u = event.get("usage").unwrap_or(&Value::Null);
                usage += Usage {
                    prompt_tokens: count(u, "input_tokens")?,
                    completion_tokens: count(u, "output_tokens")?,
                    ..Usage::default()
                };
            }
            Some("turn.failed") => {
                failure = event
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .map(excerpt);
            }
            Some("error") => {
                failure = event.get("message").and_then(Value::as_str).map(excerpt);
            }
            _ => {}
        }
    }
    match (answer, failure) {
        (Some(text), _) => Ok((text, usage)),
        (None, Some(why)) => Err(Failure::Reported(format!(
            "the agent reported an error: {why}"
        ))),
        (None, None) => Err(Failure::Unusable(format!(
            "no agent_message among the events: {}",
            excerpt(stdout)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Attachment, ChatMessage};

    #[test]
    fn claude_json_gives_the_result_tokens_and_cost() {
        let out = r#"{"type":"result","subtype":"success","is_error":false,"result":"hi",
            "total_cost_usd":0.25,"usage":{"input_tokens":10,"cache_read_input_tokens":5,
            "output_tokens":7}}"#;
        let (text, usage) = parse_claude_json(out).unwrap();
        assert_eq!(text, "hi");
        assert_eq!((usage.prompt_tokens, usage.completion_tokens), (15, 7));
        assert_eq!(usage.cost_usd, Some(0.25));
        let e = parse_claude_json(r#"{"is_error":true,"result":"Credit balance is too low"}"#);
        assert!(matches!(e, Err(Failure::Reported(m)) if m.contains("Credit balance")));
        assert!(matches!(
            parse_claude_json("{\"result\": 3}"),
            Err(Failure::Unusable(_))
        ));
        assert!(matches!(
            parse_claude_json("Error: no"),
            Err(Failure::Unusable(_))
        ));
        let wrapping = out.replace(
            "\"output_tokens\":7",
            "\"output_tokens\":18446744073709551615",
        );
        assert!(matches!(
            parse_claude_json(&wrapping),
            Err(Failure::Unusable(m)) if m.contains("usage.output_tokens") && m.contains("18446744073709551615")
        ));
        let priced = out.replace("0.25", "1e300");
        assert!(matches!(
            parse_claude_json(&priced),
            Err(Failure::Unusable(m)) if m.contains("total_cost_usd")
        ));
    }

    #[test]
    fn codex_jsonl_gives_the_last_agent_message_and_summed_usage() {
        let out = [
            r#"{"type":"thread.started","thread_id":"t"}"#,
            r#"{"type":"item.completed","item":{"id":"0","type":"agent_message","text":"a"}}"#,
            r#"{"type":"item.completed","item":{"id":"1","type":"reasoning","text":"r"}}"#,
            r#"{"type":"item.completed","item":{"id":"2","type":"agent_message","text":"b"}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":9,"cached_input_tokens":4,"output_tokens":2}}"#,
        ]
        .join("\n");
        let (text, usage) = parse_codex_jsonl(&out).unwrap();
        assert_eq!(text, "b");
        assert_eq!((usage.prompt_tokens, usage.completion_tokens), (9, 2));
        let failed = r#"{"type":"turn.failed","error":{"message":"stream disconnected"}}"#;
        assert!(
            matches!(parse_codex_jsonl(failed), Err(Failure::Reported(m)) if m.contains("stream"))
        );
        assert!(matches!(
            parse_codex_jsonl("{\"type\":\"turn.started\"}"),
            Err(Failure::Unusable(_))
        ));
        assert!(
            matches!(parse_codex_jsonl("{\"type\":"), Err(Failure::Unusable(m)) if m.contains("line 1"))
        );
    }

    #[test]
    fn the_prompt_holds_every_message_and_names_the_files() {
        let request = ChatRequest {
            messages: vec![
                ChatMessage::new(Speaker::System, "be brief"),
                ChatMessage::new(Speaker::User, "write a program"),
            ],
            attachments: vec![Attachment {
                name: "parent.toml".into(),
                content: "x".into(),
            }],
            workspace: vec![Attachment {
                name: "start.json".into(),
                content: "y".into(),
            }],
            ..ChatRequest::default()
        };
        let prompt = render_prompt(&request);
        let (system, user) = (prompt.find("be brief"), prompt.find("write a program"));
        assert!(system.unwrap() < user.unwrap(), "{prompt}");
        assert!(
            prompt.contains("`parent.toml`") && prompt.contains("`start.json`"),
            "{prompt}"
        );
    }

    #[test]
    fn attachment_names_must_be_plain() {
        for bad in ["", "..", "a/b", "../x"] {
            assert!(!is_plain_file_name(bad), "{bad}");
        }
        assert!(is_plain_file_name("parent.toml"));
    }
}
