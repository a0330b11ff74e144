//! An OpenAI-compatible chat-completions backend (a hosted API, or a local vLLM, llama.cpp or
//! Ollama server): `POST {api_base}/chat/completions` over `ureq`.
//!
//! - **Key.** The environment variable named by `api_key_env` is read at each request and sent
//!   as `Authorization: Bearer …`; a missing variable is an [`LlmError::Unavailable`] naming the
//!   variable. The key is never held by the backend; reading it adds it to the secrets in use,
//!   and the answer and every error are scrubbed of them ([`crate::secrets`]: a server may echo
//!   the header back, in any encoding).
//! - **Timeout.** Each request (connecting, sending, the whole answer) has the configured
//!   timeout; a request that runs out of it is retried, and the last one ends as
//!   [`LlmError::Timeout`]. All requests for one answer, and the waits between them, end
//!   within `timeout × (retries + 1) + MAX_WAIT × retries`, whatever the server does.
//! - **Retries.** A 429, a 5xx, a timeout or a refused, reset or dropped connection is retried
//!   up to `retries` times (at most [`MAX_RETRIES`], checked on reading the agents file). The
//!   wait before retry `k` (from 1) is the answer's `Retry-After` when it names one (seconds
//!   or an HTTP-date, [`crate::retry_after`]), else 1 s · 2^(k-1); either is at least [`MIN_WAIT`] and at
//!   most [`MAX_WAIT`]. There is no jitter, so waits are reproducible. Other 4xx answers,
//!   redirects (not followed) and unusable answers are not retried.
//! - **Cancellation.** The request's token ([`ChatRequest::cancel`]) abandons a request in
//!   flight and every wait within a fraction of a second ([`LlmError::Cancelled`]).
//! - **Answers.** The body is read up to [`ANSWER_CAP`] bytes. The text is
//!   `choices[0].message.content`; the tokens are `usage.prompt_tokens` and
//!   `usage.completion_tokens`, counted 0 when the server reports no usage. Malformed or
//!   truncated JSON, no choices or no text is an [`LlmError::Unusable`].
//!   [`Usage::requests`] counts every request made for the answer, retries included.

mod wire;

use super::{BackendConfig, ChatBackend, ChatRequest, Completion, LlmError, Usage};
use crate::cancel::Abandoned;
use crate::error::{MiloError, Result as MiloResult};
use std::fmt;
use std::io::ErrorKind;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Most retries a backend may ask for: each retry waits at least [`MIN_WAIT`] and may take the
/// whole timeout, so more would hold a run for hours without an answer.
pub const MAX_RETRIES: u32 = 10;

/// Largest answer body read (a longer one is refused before it is all read).
pub const ANSWER_CAP: u64 = 16 * 1024 * 1024;
/// Longest wait between two requests, whatever `Retry-After` asks.
pub const MAX_WAIT: Duration = Duration::from_secs(60);
/// Shortest wait between two requests, whatever `Retry-After` asks (`Retry-After: 0` included).
pub const MIN_WAIT: Duration = Duration::from_secs(1);
/// The wait before the first retry when the server names none; it doubles with each retry.
const FIRST_BACKOFF: Duration = MIN_WAIT;
/// Characters of an error answer's body quoted in a message.
const EXCERPT_CHARS: usize = 200;

/// An OpenAI-compatible endpoint. Its `Debug` shows the configuration (never a key: the
/// backend holds only the variable's name).
#[derive(Clone)]
pub struct OpenAiBackend {
    name: String,
    url: String,
    model: String,
    key_variable: Option<String>,
    timeout: Duration,
    retries: u32,
    max_tokens: Option<u32>,
    agent: ureq::Agent,
}

impl fmt::Debug for OpenAiBackend {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.debug_struct("OpenAiBackend")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("model", &self.model)
            .field("key_variable", &self.key_variable)
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .finish()
    }
}

impl OpenAiBackend {
    /// The backend `config` (a [`BackendConfig::Openai`]) describes; a usage error for another
    /// kind, an `api_base` that is not an `http://` or `https://` URL with a host, a timeout
    /// that is not a positive number of seconds, or more than [`MAX_RETRIES`] retries.
    pub fn new(config: &BackendConfig) -> MiloResult<OpenAiBackend> {
        let BackendConfig::Openai {
            name,
            api_base,
            model,
            api_key_env,
            timeout_seconds,
            retries,
            max_tokens,
            ..
        } = config
        else {
            return Err(MiloError::Usage(format!(
                "backend '{}': not an OpenAI-compatible backend (kind = \"openai\")",
                config.name()
            )));
        };
        let base = api_base.trim_end_matches('/');
        let has_host = ["http://", "https://"]
            .iter()
            .any(|scheme| base.strip_prefix(scheme).is_some_and(|h| !h.is_empty()));
        if !has_host {
            return Err(MiloError::Usage(format!(
                "backend '{name}': api_base must be an http:// or https:// URL with a host, got {api_base:?}"
            )));
        }
        let timeout = Duration::try_from_secs_f64(*timeout_seconds)
            .ok()
            .filter(|t| !t.is_zero())
            .ok_or_else(|| {
                MiloError::Usage(format!(
                    "backend '{name}': timeout_seconds must be a positive number, got {timeout_seconds}"
                ))
            })?;
        if *retries > MAX_RETRIES {
            return Err(MiloError::Usage(format!(
                "backend '{name}': retries must be at most {MAX_RETRIES}, got {retries}"
            )));
        }
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .max_redirects_will_error(false)
            .user_agent(concat!("milo/", env!("CARGO_PKG_VERSION")))
            .build()
            .new_agent();
        Ok(OpenAiBackend {
            name: name.clone(),
            url: format!("{base}/chat/completions"),
            model: model.clone(),
            key_variable: api_key_env.clone(),
            timeout,
            retries: *retries,
            max_tokens: *max_tokens,
            agent,
        })
    }

    /// The key from the configured variable (none when no variable is configured).
    fn key(&self) -> Result<Option<Key>, LlmError> {
        let Some(variable) = &self.key_variable else {
            return Ok(None);
        };
        let unavailable = |why: &str| LlmError::Unavailable {
            backend: self.name.clone(),
            message: format!("the API key variable {variable} {why}"),
        };
        let value = std::env::var_os(variable).ok_or_else(|| unavailable("is not set"))?;
        let value = value
            .into_string()
            .map_err(|_| unavailable("is not UTF-8 text"))?;
        let value = value.trim();
        if value.is_empty() {
            return Err(unavailable("is empty"));
        }
        if !value.chars().all(|c| c.is_ascii_graphic()) {
            return Err(unavailable(
                "holds characters an HTTP header cannot carry (printable ASCII without spaces)",
            ));
        }
        crate::secrets::remember(value);
        Ok(Some(Key(value.to_string())))
    }

    /// One request: the body of a 2xx answer, or why there is none.
    fn attempt(&self, body: &[u8], key: Option<&Key>) -> Result<Vec<u8>, Failure> {
        let mut request = self.agent.post(&self.url).content_type("application/json");
        if let Some(key) = key {
            request = request.header("Authorization", format!("Bearer {}", key.0));
        }
        let mut response = request.send(body).map_err(|e| self.transport(&e))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(retry_after);
        let body = response
            .body_mut()
            .with_config()
            .limit(ANSWER_CAP)
            .read_to_vec()
            .map_err(|e| self.transport(&e))?;
        if (200..300).contains(&status) {
            return Ok(body);
        }
        let excerpt = excerpt(&body);
        let message = match status {
            401 | 403 => match &self.key_variable {
                Some(variable) => format!("the server refused the key in {variable}{excerpt}"),
                None => format!("the server wants a key (set api_key_env){excerpt}"),
            },
            300..=399 => format!("the server redirects, and milo does not follow{excerpt}"),
            _ => format!("the server answered HTTP {status}{excerpt}"),
        };
        let error = LlmError::Status {
            backend: self.name.clone(),
            status,
            message,
        };
        if status == 429 || (500..600).contains(&status) {
            Err(Failure::Transient { error, retry_after })
        } else {
            Err(Failure::Final(error))
        }
    }

    /// A transport error as a failure: timeouts and lost connections are transient.
    fn transport(&self, error: &ureq::Error) -> Failure {
        let unavailable = |message: String| LlmError::Unavailable {
            backend: self.name.clone(),
            message: format!("{}: {message}", self.url),
        };
        let transient = |error: LlmError| Failure::Transient {
            error,
            retry_after: None,
        };
        match error {
            ureq::Error::Timeout(_) => transient(LlmError::Timeout {
                backend: self.name.clone(),
                seconds: self.timeout.as_secs_f64(),
            }),
            ureq::Error::Io(io) if io.kind() == ErrorKind::TimedOut => {
                transient(LlmError::Timeout {
                    backend: self.name.clone(),
                    seconds: self.timeout.as_secs_f64(),
                })
            }
            ureq::Error::Io(io) if lost_connection(io.kind()) => {
                transient(unavailable(format!("connection lost or refused ({io})")))
            }
            ureq::Error::ConnectionFailed => transient(unavailable("connection failed".into())),
            ureq::Error::BodyExceedsLimit(limit) => Failure::Final(LlmError::Unusable {
                backend: self.name.clone(),
                message: format!("the answer is larger than {limit} bytes"),
            }),
            ureq::Error::Protocol(_) | ureq::Error::Decompress(..) => {
                Failure::Final(LlmError::Unusable {
                    backend: self.name.clone(),
                    message: format!("not a readable HTTP answer: {error}"),
                })
            }
            ureq::Error::HostNotFound => Failure::Final(unavailable("host not found".into())),
            other => Failure::Final(unavailable(other.to_string())),
        }
    }
}

impl ChatBackend for OpenAiBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        self.complete_with_retries(request)
            .map(Completion::scrubbed)
            .map_err(LlmError::scrubbed)
    }
}

impl OpenAiBackend {
    /// Asks until an answer, a final failure, the last retry, the overall time limit
    /// (`timeout × (retries + 1) + MAX_WAIT × retries`) or a cancel of the request's token.
    fn complete_with_retries(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let key = self.key()?;
        let body = Arc::new(wire::request_body(&self.model, request, self.max_tokens));
        let retries = self.retries;
        let limit = self.timeout.saturating_mul(retries + 1) + MAX_WAIT.saturating_mul(retries);
        let deadline = Instant::now() + limit;
        let cancelled = || LlmError::Cancelled {
            backend: self.name.clone(),
        };
        let mut requests: u32 = 0;
        let answer = loop {
            requests += 1;
            let (backend, body, key) = (self.clone(), Arc::clone(&body), key.clone());
            let outcome = request
                .cancel
                .run_until(Some(deadline), move || backend.attempt(&body, key.as_ref()));
            let (error, retry_after) = match outcome {
                Ok(Ok(answer)) => break answer,
                Ok(Err(Failure::Final(error))) => return Err(error),
                Ok(Err(Failure::Transient { error, retry_after })) => (error, retry_after),
                Err(Abandoned::Cancelled) => return Err(cancelled()),
                Err(Abandoned::Deadline) => {
                    return Err(LlmError::Timeout {
                        backend: self.name.clone(),
                        seconds: limit.as_secs_f64(),
                    })
                }
            };
            let pause = wait(requests, retry_after);
            if requests > retries || Instant::now() + pause >= deadline {
                return Err(error);
            }
            if !request.cancel.wait(pause) {
                return Err(cancelled());
            }
        };
        let answer = wire::parse_answer(&answer).map_err(|message| LlmError::Unusable {
            backend: self.name.clone(),
            message,
        })?;
        Ok(Completion {
            text: answer.text,
            backend: self.name.clone(),
            usage: Usage {
                prompt_tokens: answer.prompt_tokens,
                completion_tokens: answer.completion_tokens,
                cost_usd: None,
                requests: u64::from(requests),
            },
            transcript: None,
        })
    }
}

/// Why one request gave no answer.
enum Failure {
    /// Worth another request (429, 5xx, timeout, lost connection), after `retry_after` if the
    /// server named a wait.
    Transient {
        error: LlmError,
        retry_after: Option<Duration>,
    },
    /// Another request would fare no better.
    Final(LlmError),
}

/// An API key read for one call; its `Debug` shows no secret.
#[derive(Clone)]
struct Key(String);

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("Key(<redacted>)")
    }
}

/// Whether an I/O error means the connection was refused, reset or dropped.
fn lost_connection(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::ConnectionRefused
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::NotConnected
            | ErrorKind::BrokenPipe
            | ErrorKind::UnexpectedEof
    )
}

/// The wait a `Retry-After` header names, in seconds or as an HTTP-date (capped at
/// [`MAX_WAIT`]), if it names one.
fn retry_after(header: &str) -> Option<Duration> {
    crate::retry_after::parse(header, std::time::SystemTime::now(), MAX_WAIT)
}

/// The wait before retry number `retry` (from 1): the server's, else the doubling backoff, at
/// least [`MIN_WAIT`] and at most [`MAX_WAIT`].
fn wait(retry: u32, server: Option<Duration>) -> Duration {
    server
        .unwrap_or_else(|| FIRST_BACKOFF.saturating_mul(2u32.saturating_pow(retry - 1)))
        .clamp(MIN_WAIT, MAX_WAIT)
}

/// `": "` and the start of an error answer's body (control characters dropped), or nothing
/// for an empty body.
fn excerpt(body: &[u8]) -> String {
    let text: String = String::from_utf8_lossy(body)
        .trim()
        .chars()
        .filter(|c| !c.is_control())
        .take(EXCERPT_CHARS)
        .collect();
    if text.is_empty() {
        text
    } else {
        format!(": {text}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_from_a_second_unless_the_server_names_one_and_are_bounded() {
        let ms = |retry, server| wait(retry, server).as_millis();
        assert_eq!([ms(1, None), ms(2, None), ms(3, None)], [1000, 2000, 4000]);
        assert_eq!(ms(40, None), MAX_WAIT.as_millis());
        assert_eq!(ms(3, retry_after(" 2 ")), 2000);
        assert_eq!(
            ms(1, retry_after("0")),
            MIN_WAIT.as_millis(),
            "a floor on the wait"
        );
        assert_eq!(retry_after("0.25"), Some(Duration::from_millis(250)));
        assert_eq!(retry_after("86400"), Some(MAX_WAIT));
        assert_eq!(
            ms(1, retry_after("Wed, 21 Oct 2015 07:28:00 GMT")),
            MIN_WAIT.as_millis(),
            "a date past: the floor"
        );
        assert_eq!(retry_after("Thu, 21 Oct 2100 07:28:00 GMT"), Some(MAX_WAIT));
        assert_eq!(retry_after("soon"), None);
        assert_eq!(retry_after("-1"), None);
    }

    #[test]
    fn a_key_is_never_debug_printed_and_excerpts_are_one_line() {
        let key = Key("sk-sentinel".into());
        assert_eq!(format!("{key:?}"), "Key(<redacted>)");
        assert_eq!(excerpt(b"  \n"), "");
        assert_eq!(excerpt(b"bad\nkey"), ": badkey");
    }

    #[test]
    fn a_bad_configuration_is_refused_naming_the_value() {
        let config = |api_base: &str, timeout_seconds: f64| BackendConfig::Openai {
            name: "b".into(),
            api_base: api_base.into(),
            model: "m".into(),
            api_key_env: None,
            weight: 1.0,
            timeout_seconds,
            retries: 0,
            max_tokens: None,
        };
        let e = OpenAiBackend::new(&config("127.0.0.1:8080/v1", 1.0)).unwrap_err();
        assert!(e.to_string().contains("\"127.0.0.1:8080/v1\""), "{e}");
        let e = OpenAiBackend::new(&config("http://h/v1", -1.0)).unwrap_err();
        assert!(e.to_string().contains("-1"), "{e}");
        let backend = OpenAiBackend::new(&config("http://h/v1/", 1.0)).unwrap();
        assert_eq!(backend.url, "http://h/v1/chat/completions");
        let cli = BackendConfig::Cli {
            name: "c".into(),
            argv: vec!["x".into()],
            output: Default::default(),
            weight: 1.0,
            timeout_seconds: 1.0,
        };
        assert!(OpenAiBackend::new(&cli).is_err());
    }
}
