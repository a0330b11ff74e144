//! A coding CLI agent as a backend. (Being built: see issue 14.)

use super::{BackendConfig, ChatBackend, ChatRequest, Completion, LlmError};
use crate::error::Result as MiloResult;
use serde::{Deserialize, Serialize};

/// How a CLI agent's standard output carries its answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CliOutput {
    /// The whole standard output is the answer.
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
}

impl CliAgent {
    /// The agent `config` (a [`BackendConfig::Cli`]) describes.
    pub fn new(config: &BackendConfig) -> MiloResult<CliAgent> {
        Ok(CliAgent {
            name: config.name().to_string(),
        })
    }
}

impl ChatBackend for CliAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn complete(&self, _request: &ChatRequest) -> Result<Completion, LlmError> {
        Err(LlmError::Unavailable {
            backend: self.name.clone(),
            message: "not built yet".into(),
        })
    }
}
