//! Language-model backends: the seam behind which milo's LLM agents (writer, mutator,
//! orchestrator) reach a model.
//!
//! A [`ChatBackend`] answers a [`ChatRequest`] (messages plus named attachments) with a
//! [`Completion`] (text and the tokens and dollars it cost). Two kinds implement it:
//!
//! - [`openai`]: an OpenAI-compatible chat-completions endpoint (vLLM, llama.cpp, Ollama, a
//!   hosted API), its key read from an environment variable named in the configuration;
//! - [`cli_agent`]: a coding CLI (`claude -p …`, `codex exec …`) run in a fresh work directory
//!   holding the attachments, killed with its process group at its timeout.
//!
//! [`config`] reads the agents file (`milo evolve --agents FILE`): the backends and, for each
//! role, the weighted pool ([`ModelPool`]) it draws from. Keys never appear in it, in records,
//! in logs or in errors: only the *name* of the variable holding one. Every answer and error a
//! backend returns is scrubbed of the secrets in use ([`Completion::scrubbed`],
//! [`LlmError::scrubbed`]): a model or its server may echo a key.

pub mod cli_agent;
pub mod config;
pub mod openai;
pub mod pool;
pub mod scripted;

pub use config::{AgentsConfig, BackendConfig, RoleConfig};
pub use pool::ModelPool;

use crate::cancel::CancelToken;
use serde::{Deserialize, Serialize};
use std::ops::AddAssign;

/// Characters of a model's answer an error message quotes.
pub const EXCERPT_CHARS: usize = 200;

/// The start of a model's answer for an error message: on one line (whitespace folded), at most
/// [`EXCERPT_CHARS`] characters, `…` where it was cut.
pub fn excerpt(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// Who speaks a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Speaker {
    /// Instructions that frame the conversation.
    System,
    /// The request.
    User,
    /// The model's earlier answer (fed back with an error for another try).
    Assistant,
}

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Who speaks.
    pub role: Speaker,
    /// What is said.
    pub content: String,
}

impl ChatMessage {
    /// A message from `role` saying `content`.
    pub fn new(role: Speaker, content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role,
            content: content.into(),
        }
    }
}

/// A named text file given to the model: inlined into the last user message by an HTTP backend,
/// written into the work directory by a CLI agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attachment {
    /// File name (no directories), e.g. `parent.toml`.
    pub name: String,
    /// Its text.
    pub content: String,
}

/// What an agent asks a model.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The conversation so far, oldest first.
    pub messages: Vec<ChatMessage>,
    /// Files that go with it.
    pub attachments: Vec<Attachment>,
    /// Files for a backend that works in a directory: a CLI agent writes them there beside the
    /// attachments (the construction, a note on how to run `milo`); a chat endpoint does not
    /// see them, as they may be far larger than a prompt.
    #[serde(default)]
    pub workspace: Vec<Attachment>,
    /// Most tokens the answer may have, if limited.
    pub max_tokens: Option<u32>,
    /// Sampling temperature (0 asks for the most likely answer).
    pub temperature: Option<f64>,
    /// Sampling seed, passed to backends that take one.
    pub seed: Option<u64>,
    /// Cancelling it abandons the request (a request in flight included) and every retry: the
    /// run's Ctrl-C and `--hours` token.
    #[serde(skip)]
    pub cancel: CancelToken,
}

/// Tokens (and dollars, where the backend reports them) spent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Cost in US dollars, where the backend reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Requests made (retries included).
    #[serde(default)]
    pub requests: u64,
}

/// Most tokens one answer may report (prompt or completion): a count past it is a malformed
/// answer, not a sum to wrap.
pub const MAX_REPORTED_TOKENS: u64 = 1_000_000_000;

/// A token count a server or agent reported for one answer, checked against
/// [`MAX_REPORTED_TOKENS`]; `what` names it (`usage.prompt_tokens`) in the one-line error.
pub fn reported_tokens(what: &str, tokens: u64) -> Result<u64, String> {
    if tokens <= MAX_REPORTED_TOKENS {
        Ok(tokens)
    } else {
        Err(format!(
            "{what} must be at most {MAX_REPORTED_TOKENS} for one answer, got {tokens}"
        ))
    }
}

impl Usage {
    /// Prompt plus completion tokens.
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }

    /// Whether nothing was spent (no request made): what a built-in part records.
    pub fn is_zero(&self) -> bool {
        *self == Usage::default()
    }

    /// One line: `T tokens (P prompt + C completion, R requests[, $D])`.
    pub fn summary(&self) -> String {
        let cost = self
            .cost_usd
            .map(|d| format!(", ${d:.4}"))
            .unwrap_or_default();
        format!(
            "{} tokens ({} prompt + {} completion, {} request{}{cost})",
            self.tokens(),
            self.prompt_tokens,
            self.completion_tokens,
            self.requests,
            if self.requests == 1 { "" } else { "s" }
        )
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        // Sums over a long run stay exact far below u64::MAX; saturating all the same.
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(other.completion_tokens);
        self.requests = self.requests.saturating_add(other.requests);
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    }
}

/// A model's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// The answer's text.
    pub text: String,
    /// The backend that answered (its configured name).
    pub backend: String,
    /// What it cost.
    pub usage: Usage,
    /// The agent's standard output and error, capped (CLI agents; `None` for HTTP backends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
}

impl Completion {
    /// The completion with its text and transcript scrubbed of the secrets in use.
    pub fn scrubbed(self) -> Completion {
        Completion {
            text: crate::secrets::scrub(&self.text).into_owned(),
            transcript: self
                .transcript
                .map(|t| crate::secrets::scrub(&t).into_owned()),
            ..self
        }
    }
}

/// Why a backend gave no answer. Messages never hold a key.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// No answer within the timeout (after every retry).
    #[error("{backend}: no answer within {seconds} s")]
    Timeout {
        /// The backend's name.
        backend: String,
        /// The timeout.
        seconds: f64,
    },
    /// The server answered with an error status (after every retry, where it was retryable).
    #[error("{backend}: HTTP {status}: {message}")]
    Status {
        /// The backend's name.
        backend: String,
        /// The HTTP status.
        status: u16,
        /// The start of the body, or the reason.
        message: String,
    },
    /// The answer arrived but could not be read (truncated or malformed JSON, no choices…).
    #[error("{backend}: unusable answer: {message}")]
    Unusable {
        /// The backend's name.
        backend: String,
        /// What was wrong.
        message: String,
    },
    /// The request was abandoned: the run was cancelled (Ctrl-C, or its `--hours` ran out).
    #[error("{backend}: abandoned, the run was cancelled")]
    Cancelled {
        /// The backend's name.
        backend: String,
    },
    /// The backend could not be reached or started (connection refused, missing executable,
    /// missing key variable…).
    #[error("{backend}: {message}")]
    Unavailable {
        /// The backend's name.
        backend: String,
        /// What failed.
        message: String,
    },
}

impl LlmError {
    /// The error with its message scrubbed of the secrets in use.
    pub fn scrubbed(self) -> LlmError {
        let scrub = |text: String| crate::secrets::scrub(&text).into_owned();
        match self {
            LlmError::Status {
                backend,
                status,
                message,
            } => LlmError::Status {
                backend,
                status,
                message: scrub(message),
            },
            LlmError::Unusable { backend, message } => LlmError::Unusable {
                backend,
                message: scrub(message),
            },
            LlmError::Unavailable { backend, message } => LlmError::Unavailable {
                backend,
                message: scrub(message),
            },
            other @ (LlmError::Timeout { .. } | LlmError::Cancelled { .. }) => other,
        }
    }
}

/// A language model, or an agent built on one, that answers chat requests.
pub trait ChatBackend: Send + Sync {
    /// The backend's configured name, recorded with each completion.
    fn name(&self) -> &str;

    /// Answers `request`, retrying where the configuration allows.
    fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError>;
}

/// A shared backend answers as the backend it shares (so a test can keep a handle on a
/// backend it gave to a pool).
impl<T: ChatBackend + ?Sized> ChatBackend for std::sync::Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        (**self).complete(request)
    }
}
