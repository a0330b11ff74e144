//! A backend that answers from a script, in order: for tests of the agents built on
//! [`super::ChatBackend`], without a network.

use super::{ChatBackend, ChatRequest, Completion, LlmError, Usage};
use std::sync::Mutex;

/// Answers each request with the next scripted reply (an answer's text or an error), and
/// remembers the requests it was sent.
pub struct ScriptedBackend {
    name: String,
    replies: Mutex<Vec<Result<String, LlmError>>>,
    seen: Mutex<Vec<ChatRequest>>,
}

impl ScriptedBackend {
    /// A backend called `name` that answers with `replies`, first to last; once they run out,
    /// every answer is an `Unavailable` error.
    pub fn new(name: &str, replies: Vec<Result<String, LlmError>>) -> ScriptedBackend {
        let mut replies = replies;
        replies.reverse();
        ScriptedBackend {
            name: name.into(),
            replies: Mutex::new(replies),
            seen: Mutex::new(Vec::new()),
        }
    }

    /// The requests received so far, oldest first.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.seen.lock().expect("not poisoned").clone()
    }
}

impl ChatBackend for ScriptedBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        self.seen
            .lock()
            .expect("not poisoned")
            .push(request.clone());
        let reply = self.replies.lock().expect("not poisoned").pop();
        let text = reply.unwrap_or_else(|| {
            Err(LlmError::Unavailable {
                backend: self.name.clone(),
                message: "the script has no more replies".into(),
            })
        })?;
        let prompt: usize = request.messages.iter().map(|m| m.content.len()).sum();
        Ok(Completion {
            usage: Usage {
                prompt_tokens: prompt.div_ceil(4) as u64,
                completion_tokens: text.len().div_ceil(4) as u64,
                cost_usd: None,
                requests: 1,
            },
            text,
            backend: self.name.clone(),
        })
    }
}
