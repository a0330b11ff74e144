//! An OpenAI-compatible chat-completions backend. (Being built: see issue 14.)

use super::{BackendConfig, ChatBackend, ChatRequest, Completion, LlmError};
use crate::error::Result as MiloResult;

/// An OpenAI-compatible endpoint.
pub struct OpenAiBackend {
    name: String,
}

impl OpenAiBackend {
    /// The backend `config` (a [`BackendConfig::Openai`]) describes.
    pub fn new(config: &BackendConfig) -> MiloResult<OpenAiBackend> {
        Ok(OpenAiBackend {
            name: config.name().to_string(),
        })
    }
}

impl ChatBackend for OpenAiBackend {
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
