//! The HTTP side of submitting: the requests that carry a key.
//!
//! - `POST {base}/api/solutions` with `{"problem_id": ID, "solution": {"values": […]}}` (inline), or
//!   with `"solution_blob_key"` (the ticket's `blobKey`) instead of `"solution"` (a large
//!   construction uploaded first; the arena fetches the blob itself and deletes it after);
//! - `POST {base}/api/solutions/upload-url` gives a one-write upload ticket; `PUT` the JSON to its
//!   `uploadUrl` with the ticket's own token (never the API key) and `x-api-version: 7`.
//!
//! Redirects are not followed (a key stays with the host it was meant for). HTTP 429 is an
//! [`Answer::RateLimited`] carrying the server's `Retry-After` (header, or the body's
//! `retry_after_seconds`); 401 and 403 say the key was refused; every other failure is a
//! [`MiloError::Remote`]. Every message is scrubbed of the secrets in use ([`secrets::scrub`]),
//! and the submission id the server gives is checked ([`ArenaId::check`]) before any use. A
//! submission that fails is a [`Failed`], which says whether the server may hold it anyway (the
//! request went out and no answer refused it: a timeout, a cut connection, a server error, a
//! success answer milo cannot use, a request abandoned in flight on cancel), so that the ledger
//! never lets such a submission be sent again on its own.

use super::api_key::{ApiKey, KEY_VARIABLE};
use super::client::{
    describe, parse_json, status_message, ArenaClient, ArenaId, Exchange, ABANDONED,
};
use crate::error::{MiloError, Result};
use crate::secrets;
use serde::Deserialize;
use std::time::{Duration, SystemTime};

/// Largest answer read from a submission endpoint.
const ANSWER_LIMIT: u64 = 1 << 20;
/// The wait assumed when a 429 names none.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(60);
/// The longest wait a 429 is taken to ask for (a longer one is past any `--max-wait` anyway).
const LONGEST_RETRY_AFTER: Duration = Duration::from_secs(1_000_000);
/// The blob store's API version the arena's guide names for uploads.
const BLOB_API_VERSION: &str = "7";

/// A server's answer to a request that may be rate-limited.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer<T> {
    /// The request went through.
    Done(T),
    /// HTTP 429: try again after this long.
    RateLimited(Duration),
}

/// A submission (`POST /api/solutions`) that failed, and whether the server may hold it anyway.
#[derive(Debug)]
pub struct Failed {
    /// What went wrong (scrubbed of the secrets in use).
    pub error: MiloError,
    /// The request went out and no answer refused it (a timeout or a cut connection after
    /// connecting, HTTP 5xx or 303, a success answer milo cannot use): the arena may hold it.
    pub may_have_arrived: bool,
}

impl From<MiloError> for Failed {
    /// A failure known not to have delivered the submission: nothing was posted, or the server
    /// refused it (a refused key, a rate limit, a client error).
    fn from(error: MiloError) -> Failed {
        Failed {
            error,
            may_have_arrived: false,
        }
    }
}

/// The answer to `POST /api/solutions`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Submitted {
    /// The submission's identifier, for `GET /api/solutions/{id}`.
    pub id: ArenaId,
    /// Its status on arrival (normally `pending`).
    #[serde(default)]
    pub status: Option<String>,
}

/// The answer to `POST /api/solutions/upload-url`: where to put one large construction.
#[derive(Clone, Deserialize)]
pub struct UploadTicket {
    /// The one-write token for the upload (a secret: never recorded).
    #[serde(rename = "clientToken")]
    client_token: String,
    /// The blob's key in the store.
    #[serde(rename = "blobKey")]
    pub blob_key: String,
    /// Where to `PUT` the JSON.
    #[serde(rename = "uploadUrl")]
    pub upload_url: String,
}

/// How a request that carries a secret is sent.
struct Secured<'a> {
    method: &'static str,
    url: &'a str,
    secret: &'a ApiKey,
    body: &'a [u8],
    /// `(name, value)` headers beyond `Authorization` and `Content-Type`.
    headers: &'a [(&'a str, &'a str)],
}

impl ArenaClient {
    /// Submits a construction inline: `solution_json` is its `{"values": […]}` text.
    pub fn submit_inline(
        &self,
        key: &ApiKey,
        problem_id: &ArenaId,
        solution_json: &str,
    ) -> std::result::Result<Answer<Submitted>, Failed> {
        let body = format!(
            "{{\"problem_id\":{},\"solution\":{solution_json}}}",
            id_json(problem_id)
        );
        self.submit(key, &body)
    }

    /// Submits a construction already uploaded under the ticket's `blob_key`.
    pub fn submit_blob(
        &self,
        key: &ApiKey,
        problem_id: &ArenaId,
        blob_key: &str,
    ) -> std::result::Result<Answer<Submitted>, Failed> {
        let body = serde_json::json!({
            "problem_id": problem_id,
            "solution_blob_key": blob_key,
        })
        .to_string();
        self.submit(key, &body)
    }

    fn submit(&self, key: &ApiKey, body: &str) -> std::result::Result<Answer<Submitted>, Failed> {
        let url = format!("{}/api/solutions", self.base_url());
        let request = Secured {
            method: "POST",
            url: &url,
            secret: key,
            body: body.as_bytes(),
            headers: &[],
        };
        let answer: Answer<Submitted> =
            self.send_secured(&request, "a JSON object {id, status}")?;
        if let Answer::Done(submitted) = &answer {
            // Accepted, under an id milo cannot use: the arena holds it.
            submitted
                .id
                .check_sent_by("the server's solution id", &url)
                .map_err(|error| Failed {
                    error,
                    may_have_arrived: true,
                })?;
        }
        Ok(answer)
    }

    /// Asks for a one-write upload ticket (`POST /api/solutions/upload-url`).
    pub fn upload_ticket(&self, key: &ApiKey) -> Result<Answer<UploadTicket>> {
        let url = format!("{}/api/solutions/upload-url", self.base_url());
        let request = Secured {
            method: "POST",
            url: &url,
            secret: key,
            body: b"{}",
            headers: &[],
        };
        self.send_secured(&request, "a JSON object {clientToken, blobKey, uploadUrl}")
            .map_err(|failed| failed.error)
    }

    /// Uploads `json` with `ticket`, for [`ArenaClient::submit_blob`] with its `blob_key`.
    pub fn upload(&self, ticket: &UploadTicket, json: &[u8]) -> Result<()> {
        let token = ApiKey::token(&ticket.client_token).map_err(|rule| MiloError::Remote {
            url: format!("{}/api/solutions/upload-url", self.base_url()),
            message: format!("the upload ticket's clientToken {rule}"),
        })?;
        let request = Secured {
            method: "PUT",
            url: &ticket.upload_url,
            secret: &token,
            body: json,
            headers: &[("x-api-version", BLOB_API_VERSION)],
        };
        match self
            .send_secured::<serde::de::IgnoredAny>(&request, "a JSON answer")
            .map_err(|failed| failed.error)?
        {
            Answer::Done(_) => Ok(()),
            Answer::RateLimited(wait) => Err(MiloError::Remote {
                url: ticket.upload_url.clone(),
                message: format!(
                    "the blob store is rate-limiting uploads (retry after {} s)",
                    wait.as_secs()
                ),
            }),
        }
    }

    /// Sends `request`; parses a 2xx answer as `T` (described as `expected`), a 429 as
    /// [`Answer::RateLimited`], anything else as an error scrubbed of the secrets in use, saying
    /// whether the server may have acted on the request.
    fn send_secured<T: serde::de::DeserializeOwned>(
        &self,
        request: &Secured,
        expected: &str,
    ) -> std::result::Result<Answer<T>, Failed> {
        let secret = request.secret;
        let error = |message: String| MiloError::Remote {
            url: secrets::scrub(request.url).into_owned(),
            message: secrets::scrub(&message).into_owned(),
        };
        let failed = |message: String, may_have_arrived: bool| Failed {
            error: error(message),
            may_have_arrived,
        };
        let (method, url) = (request.method, request.url.to_string());
        let (body, bearer) = (request.body.to_vec(), secret.bearer());
        let headers: Vec<(String, String)> = request
            .headers
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        let exchange = self.exchange(ANSWER_LIMIT, move |agent| {
            let builder = match method {
                "PUT" => agent.put(&url),
                _ => agent.post(&url),
            };
            let mut builder = builder
                .header("Authorization", bearer)
                .content_type("application/json");
            for (name, value) in &headers {
                builder = builder.header(name, value);
            }
            builder.send(&body[..])
        });
        let answered = match exchange {
            Exchange::Answered(answered) => answered,
            Exchange::Failed(e) => return Err(failed(describe(&e), !never_left(&e))),
            // The request may have gone out.
            Exchange::Abandoned => return Err(failed(ABANDONED.into(), true)),
        };
        let status = answered.status;
        // Once the status is known, it decides: a success or a server error may hold the request
        // (a 303 points at what it made); any other answer refused it.
        let arrived = matches!(status, 200..=299 | 303 | 500..=599);
        let remote = |message: String| failed(message, arrived);
        let (retry_header, location) = (answered.retry_after, answered.location);
        let body = answered
            .body
            .map_err(|e| remote(format!("reading the answer failed: {}", describe(&e))))?;
        match status {
            200..=299 => parse_json(&body, expected)
                .map(Answer::Done)
                .map_err(remote),
            429 => Ok(Answer::RateLimited(retry_after(
                retry_header.as_deref(),
                &body,
            ))),
            401 | 403 => Err(remote(format!(
                "the server refused the key ({}); check {KEY_VARIABLE} or the credentials file",
                status_message(status, &body)
            ))),
            300..=399 => Err(remote(format!(
                "the server redirects (HTTP {status}) to {}; milo does not follow redirects \
                 with a key (check the --base-url)",
                location
                    .as_deref()
                    .map_or("an unnamed place".into(), secrets::scrub)
            ))),
            _ => Err(remote(status_message(status, &body))),
        }
    }
}

/// Whether a failed request never left this machine (no connection was made), so the server
/// cannot have acted on it; any other failure may have come after the request was sent.
fn never_left(error: &ureq::Error) -> bool {
    match error {
        ureq::Error::HostNotFound
        | ureq::Error::BadUri(_)
        | ureq::Error::Http(_)
        | ureq::Error::InvalidProxyUrl
        | ureq::Error::ConnectionFailed
        | ureq::Error::Timeout(ureq::Timeout::Resolve | ureq::Timeout::Connect) => true,
        ureq::Error::Io(io) => io.kind() == std::io::ErrorKind::ConnectionRefused,
        _ => false,
    }
}

/// The wait a 429 asks for: the `Retry-After` header (seconds or an HTTP-date, see
/// [`crate::retry_after`]), else the body's `retry_after_seconds`, else [`DEFAULT_RETRY_AFTER`];
/// at most [`LONGEST_RETRY_AFTER`] (the caller puts its floor under it).
fn retry_after(header: Option<&str>, body: &[u8]) -> Duration {
    let seconds = |x: f64| {
        (x.is_finite() && x >= 0.0)
            .then(|| Duration::from_secs_f64(x.min(LONGEST_RETRY_AFTER.as_secs_f64())))
    };
    header
        .and_then(|h| crate::retry_after::parse(h, SystemTime::now(), LONGEST_RETRY_AFTER))
        .or_else(|| {
            serde_json::from_slice::<serde_json::Value>(body)
                .ok()?
                .get("retry_after_seconds")?
                .as_f64()
                .and_then(seconds)
        })
        .unwrap_or(DEFAULT_RETRY_AFTER)
}

/// The problem id as JSON (a number stays a number).
fn id_json(id: &ArenaId) -> String {
    serde_json::to_string(id).expect("an id serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_429_waits_as_the_header_then_the_body_says() {
        assert_eq!(retry_after(Some("7"), b"{}"), Duration::from_secs(7));
        assert_eq!(
            retry_after(None, br#"{"retry_after_seconds": 12}"#),
            Duration::from_secs(12)
        );
        assert_eq!(
            retry_after(Some("soon"), br#"{"retry_after_seconds": 3}"#),
            Duration::from_secs(3)
        );
        assert_eq!(retry_after(None, b"not json"), DEFAULT_RETRY_AFTER);
        assert_eq!(retry_after(Some("-5"), b""), DEFAULT_RETRY_AFTER);
        // An HTTP-date is read as the time left until it, not as the 60 s default.
        let in_five_minutes = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(300));
        let asked = retry_after(Some(&in_five_minutes), b"");
        assert!(
            (Duration::from_secs(298)..=Duration::from_secs(300)).contains(&asked),
            "{in_five_minutes}: {asked:?}"
        );
        assert_eq!(
            retry_after(Some("Wed, 21 Oct 2015 07:28:00 GMT"), b""),
            Duration::ZERO,
            "a date past: no wait asked (the floor applies)"
        );
    }

    #[test]
    fn ids_keep_their_json_type() {
        assert_eq!(id_json(&ArenaId::Number(4)), "4");
        assert_eq!(id_json(&ArenaId::Text("a\"b".into())), "\"a\\\"b\"");
    }
}
