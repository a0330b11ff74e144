//! The HTTP side of reading: the arena's public endpoints and the JSON shapes they return.
//!
//! `GET {base}/api/problems` lists the problems and `GET {base}/api/problems/{slug}` describes one;
//! `GET {base}/api/solutions/best?problem_id=ID&limit=N` lists a problem's best solutions, best
//! first; `GET {base}/api/leaderboard?problem_id=ID&limit=N` gives each agent's best score;
//! `GET {base}/api/solutions/{id}` a submission's status. Every failure (no connection, a timeout,
//! an HTTP error status, a body that is not the expected JSON) is a [`MiloError::Remote`] naming
//! the URL and, for a malformed body, the JSON path of the offending field and what was expected
//! there. The requests that carry the API key are in [`send`](super::send). A client given a
//! cancel token ([`ArenaClient::cancelled_by`]) abandons a request in flight, its answer unread,
//! as soon as the token is cancelled (Ctrl-C, a campaign's `--hours`).
//!
//! What a server sends is never trusted with a secret: every answer's JSON strings, and every
//! message quoting it, pass through [`secrets`] (the keys in use removed in any encoding) before
//! milo reads them, and every id the server gives is checked ([`ArenaId::check`]) before any use.

use crate::cancel::CancelToken;
use crate::construction::{parse_values, ParseError};
use crate::error::{quoted, MiloError, Result};
use crate::problems::Direction;
use crate::secrets;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::fmt;
use std::time::Duration;

/// The platform the client talks to unless told otherwise.
pub const DEFAULT_BASE_URL: &str = "https://einsteinarena.com";
/// Default time allowed to connect, and for each read or write on the connection.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The most solutions the arena returns for one request.
pub const MAX_LIMIT: usize = 100;
/// Largest body of the small answers (problems, leaderboard, status), after decompression.
const SMALL_BODY: u64 = 16 << 20;
/// Bytes allowed per value of a served construction (17 digits, an exponent, a separator…).
const BYTES_PER_VALUE: u64 = 32;
/// Bytes allowed per served entry beside its values (id, agent, dates, JSON punctuation).
const BYTES_PER_ENTRY: u64 = 64 << 10;
/// Default overall deadline of one request (connection, answer and whole body).
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(600);
/// Characters of an error response's body quoted in the message.
const BODY_EXCERPT: usize = 200;
/// The shape of `GET /api/problems`, in words for error messages.
const PROBLEMS_SHAPE: &str =
    "a JSON list of {id, slug, title, scoring, minImprovement, evaluationMode}";
/// The shape of `GET /api/solutions/best`, in words for error messages.
const SOLUTIONS_SHAPE: &str = "a JSON list of {id, agentName, score, createdAt, data}";
/// The shape of `GET /api/problems/{slug}`, in words for error messages.
const PROBLEM_SHAPE: &str = "a JSON object {id, slug, scoring, minImprovement, …}";
/// The shape of `GET /api/leaderboard`, in words for error messages.
const LEADERBOARD_SHAPE: &str = "a JSON list of {rank, agentName, bestScore, submissions}";
/// The shape of `GET /api/solutions/{id}`, in words for error messages.
const STATUS_SHAPE: &str = "a JSON object {id, status, score, error}";

/// Longest textual id accepted from a server.
pub const MAX_ID_CHARS: usize = 64;

/// An identifier as the server sends it: a number or a string (kept verbatim).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ArenaId {
    /// A numeric identifier.
    Number(i64),
    /// A textual identifier.
    Text(String),
}

impl ArenaId {
    /// Checks an id before it goes into a path, a query, a record or a message: a number, or
    /// 1 to [`MAX_ID_CHARS`] ASCII letters, digits, `-` or `_`; the error names the rule and the
    /// value (scrubbed of the secrets in use), `what` naming the id.
    pub fn check(&self, what: &str) -> std::result::Result<(), String> {
        let ArenaId::Text(text) = self else {
            return Ok(());
        };
        let allowed = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
        if (1..=MAX_ID_CHARS).contains(&text.chars().count()) && text.chars().all(allowed) {
            return Ok(());
        }
        let shown: String = secrets::scrub(text)
            .chars()
            .take(2 * MAX_ID_CHARS)
            .collect();
        Err(format!(
            "{what} {shown:?}: an id must be a number or 1 to {MAX_ID_CHARS} ASCII letters, digits, '-' or '_'"
        ))
    }

    /// [`ArenaId::check`] for an id the server at `url` sent: a bad one is the server's fault.
    pub fn check_sent_by(&self, what: &str, url: &str) -> Result<()> {
        self.check(what).map_err(|message| MiloError::Remote {
            url: url.to_string(),
            message,
        })
    }
}

impl fmt::Display for ArenaId {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            ArenaId::Number(n) => write!(f, "{n}"),
            ArenaId::Text(s) => f.write_str(s),
        }
    }
}

/// One entry of `GET /api/problems`; the fields milo does not use are kept as served.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ArenaProblem {
    /// The server's identifier, passed back as `problem_id`.
    pub id: ArenaId,
    /// The problem's slug (the same slugs as `milo problems`).
    pub slug: String,
    /// Display title.
    #[serde(default)]
    pub title: Option<String>,
    /// Scoring direction or rule, as served.
    #[serde(default)]
    pub scoring: Option<serde_json::Value>,
    /// The server's improvement threshold, as served.
    #[serde(default, rename = "minImprovement")]
    pub min_improvement: Option<serde_json::Value>,
    /// How the server evaluates submissions, as served.
    #[serde(default, rename = "evaluationMode")]
    pub evaluation_mode: Option<serde_json::Value>,
}

impl ArenaProblem {
    /// The scoring direction the server states (`"minimize"` or `"maximize"`), if it states one.
    pub fn direction(&self) -> Option<Direction> {
        match self.scoring.as_ref()?.as_str()? {
            "minimize" => Some(Direction::Minimize),
            "maximize" => Some(Direction::Maximize),
            _ => None,
        }
    }

    /// The server's `minImprovement` as a number (served as a number or as decimal text).
    pub fn min_improvement(&self) -> Option<f64> {
        match self.min_improvement.as_ref()? {
            serde_json::Value::Number(n) => n.as_f64(),
            serde_json::Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
        .filter(|x: &f64| x.is_finite() && *x >= 0.0)
    }
}

/// One line of `GET /api/leaderboard`: an agent's best evaluated score.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LeaderboardEntry {
    /// Position, 1 = best.
    pub rank: usize,
    /// The agent.
    #[serde(rename = "agentName")]
    pub agent_name: String,
    /// The agent's best score as the arena computed it.
    #[serde(rename = "bestScore")]
    pub best_score: f64,
    /// How many of the agent's solutions were evaluated.
    #[serde(default)]
    pub submissions: Option<u64>,
}

/// `GET /api/solutions/{id}`: where a submission stands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SolutionStatus {
    /// The submission's identifier.
    pub id: ArenaId,
    /// `pending`, then `evaluated` (accepted), `rejected` or `discarded`, as served.
    pub status: String,
    /// The arena's score, once evaluated.
    #[serde(default)]
    pub score: Option<f64>,
    /// Why evaluation failed, if it did.
    #[serde(default)]
    pub error: Option<String>,
}

impl SolutionStatus {
    /// Whether the arena has not decided yet.
    pub fn is_pending(&self) -> bool {
        self.status == "pending"
    }
}

/// One entry of `GET /api/solutions/best`, with its `data` parsed into values.
#[derive(Clone, Debug)]
pub struct ArenaSolution {
    /// The server's identifier of the submission.
    pub id: ArenaId,
    /// Who submitted it.
    pub agent_name: String,
    /// The score the arena computed.
    pub score: f64,
    /// When it was submitted, as served.
    pub created_at: String,
    /// The submitted values (`data.values`), each the nearest float64 of its decimal text.
    pub values: Vec<f64>,
}

/// One entry of `GET /api/solutions/best` as it arrives, `data` still raw JSON text.
#[derive(Deserialize)]
struct WireSolution {
    id: ArenaId,
    #[serde(rename = "agentName")]
    agent_name: String,
    score: f64,
    #[serde(rename = "createdAt")]
    created_at: String,
    data: Box<RawValue>,
}

impl WireSolution {
    /// This entry with its strings scrubbed of the secrets in use.
    fn scrubbed(self) -> WireSolution {
        let scrub = |text: String| secrets::scrub(&text).into_owned();
        WireSolution {
            id: match self.id {
                ArenaId::Text(text) => ArenaId::Text(scrub(text)),
                number => number,
            },
            agent_name: scrub(self.agent_name),
            created_at: scrub(self.created_at),
            ..self
        }
    }

    /// Checks the id ([`ArenaId::check`]), then parses `data` ([`WireSolution::parse`]).
    fn check(self, rank: usize) -> std::result::Result<ArenaSolution, String> {
        self.id.check(&format!("rank {rank}: the solution id"))?;
        self.parse(rank)
    }

    /// Parses `data` exactly as a construction file is read; the error names what is wrong (no
    /// `values`, an empty array, a non-numeric entry with its index and token).
    fn parse(self, rank: usize) -> std::result::Result<ArenaSolution, String> {
        let values = parse_values(self.data.get()).map_err(|e| match e {
            ParseError::Invalid(mut v) => {
                v.problem = "`data.values`".into();
                v.to_string()
            }
            ParseError::Malformed(m) => format!("`data`: {m}"),
        });
        let values = values.map_err(|m| {
            format!(
                "rank {rank} (arena solution {}, agent {:?}) is not a construction: {m}",
                self.id, self.agent_name
            )
        })?;
        Ok(ArenaSolution {
            id: self.id,
            agent_name: self.agent_name,
            score: self.score,
            created_at: self.created_at,
            values,
        })
    }
}

/// A blocking client of one arena server, with connect and per-read/write timeouts.
#[derive(Clone)]
pub struct ArenaClient {
    base: String,
    /// Redirects are not followed (a key stays with this host, and what is saved is what this
    /// host served); every request has an overall deadline besides the per-read timeout.
    agent: ureq::Agent,
    /// Cancelling it abandons the request in flight.
    cancel: CancelToken,
}

/// What one request came to (see [`ArenaClient::exchange`]); `B` is what was made of its body.
pub(super) enum Exchange<B = std::result::Result<Vec<u8>, ureq::Error>> {
    /// No answer: the request failed before a status came back.
    Failed(ureq::Error),
    /// Abandoned in flight: the client's cancel token was cancelled.
    Abandoned,
    /// A status came back.
    Answered(Answered<B>),
}

/// An answer as read: its status, the headers milo looks at, and what was made of its body (by
/// default the body, at most the limit asked for, or why reading it failed).
pub(super) struct Answered<B = std::result::Result<Vec<u8>, ureq::Error>> {
    /// The HTTP status.
    pub status: u16,
    /// The `Location` header, control characters dropped.
    pub location: Option<String>,
    /// The `Retry-After` header.
    pub retry_after: Option<String>,
    /// The body as read.
    pub body: B,
}

/// What `GET /api/solutions/best` came to: for a success, the entries as handed over one by
/// one (or why that stopped); for any other status, the start of the body.
enum SolutionsBody<T> {
    Entries(Result<Vec<T>>),
    Other(std::result::Result<Vec<u8>, ureq::Error>),
}

/// What a request abandoned on cancel says.
pub(super) const ABANDONED: &str =
    "abandoned in flight: the run was cancelled (Ctrl-C, or its --hours ran out)";

impl ArenaClient {
    /// A client of the server at `base_url` (`http://` or `https://`; a trailing `/` is dropped),
    /// `timeout` for connecting and each read or write, `deadline` for a whole request.
    pub fn new(base_url: &str, timeout: Duration, deadline: Duration) -> Result<ArenaClient> {
        let base = base_url.trim_end_matches('/').to_string();
        let has_host = ["http://", "https://"]
            .iter()
            .any(|scheme| base.strip_prefix(scheme).is_some_and(|h| !h.is_empty()));
        if !has_host {
            return Err(MiloError::Usage(format!(
                "--base-url {base_url}: expected an http:// or https:// URL with a host"
            )));
        }
        if timeout.is_zero() || deadline.is_zero() {
            return Err(MiloError::Usage(
                "--timeout and --deadline must be positive".into(),
            ));
        }
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(deadline))
            .timeout_resolve(Some(timeout))
            .timeout_connect(Some(timeout))
            .timeout_per_read(Some(timeout))
            .timeout_per_write(Some(timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .max_redirects_will_error(false)
            .user_agent(concat!("milo/", env!("CARGO_PKG_VERSION")))
            .build();
        Ok(ArenaClient {
            base,
            agent: config.new_agent(),
            cancel: CancelToken::new(),
        })
    }

    /// This client, its requests abandoned in flight once `cancel` is cancelled.
    pub fn cancelled_by(&self, cancel: &CancelToken) -> ArenaClient {
        ArenaClient {
            cancel: cancel.clone(),
            ..self.clone()
        }
    }

    /// Sends the request `build` makes on the client's agent and reads the answer's body, at most
    /// `body_limit` bytes, on a thread of its own that is abandoned, its answer unread, as soon
    /// as the client's cancel token is cancelled.
    pub(super) fn exchange(
        &self,
        body_limit: u64,
        build: impl FnOnce(
                &ureq::Agent,
            )
                -> std::result::Result<ureq::http::Response<ureq::Body>, ureq::Error>
            + Send
            + 'static,
    ) -> Exchange {
        self.exchange_with(build, move |_, body| {
            body.with_config().limit(body_limit).read_to_vec()
        })
    }

    /// As [`ArenaClient::exchange`], the body handed to `read` with the answer's status (which
    /// reads it as it arrives, within whatever limit it sets).
    fn exchange_with<B: Send + 'static>(
        &self,
        build: impl FnOnce(
                &ureq::Agent,
            )
                -> std::result::Result<ureq::http::Response<ureq::Body>, ureq::Error>
            + Send
            + 'static,
        read: impl FnOnce(u16, &mut ureq::Body) -> B + Send + 'static,
    ) -> Exchange<B> {
        let agent = self.agent.clone();
        let work = move || {
            let mut response = match build(&agent) {
                Ok(response) => response,
                Err(e) => return Exchange::Failed(e),
            };
            let header = |name: &str| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(|v| v.chars().filter(|c| !c.is_control()).collect::<String>())
            };
            let (location, retry_after) = (header("location"), header("retry-after"));
            let status = response.status().as_u16();
            let body = read(status, response.body_mut());
            Exchange::Answered(Answered {
                status,
                location,
                retry_after,
                body,
            })
        };
        self.cancel
            .run_until(None, work)
            .unwrap_or(Exchange::Abandoned)
    }

    /// The server's base URL, without a trailing `/`.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// Every problem the server knows.
    pub fn problems(&self) -> Result<Vec<ArenaProblem>> {
        self.get_json("/api/problems", &[], PROBLEMS_SHAPE, SMALL_BODY)
    }

    /// The server's problem with this slug, or a usage error listing the slugs it knows.
    pub fn problem(&self, slug: &str) -> Result<ArenaProblem> {
        let problems = self.problems()?;
        let known: Vec<&str> = problems.iter().map(|p| p.slug.as_str()).collect();
        if let Some(p) = problems.iter().find(|p| p.slug == slug) {
            p.id.check_sent_by("the problem id", &format!("{}/api/problems", self.base))?;
            return Ok(p.clone());
        }
        Err(MiloError::Usage(format!(
            "the arena at {} has no problem '{slug}'; it knows: {}",
            self.base,
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        )))
    }

    /// The server's description of one problem (`GET /api/problems/{slug}`): its id, scoring
    /// direction and `minImprovement` as they stand now.
    pub fn problem_detail(&self, slug: &str) -> Result<ArenaProblem> {
        if slug.is_empty() || !slug.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(MiloError::Usage(format!(
                "problem slug {slug:?}: expected letters, digits and '-' (see `milo problems`)"
            )));
        }
        let path = format!("/api/problems/{slug}");
        let problem: ArenaProblem = self.get_json(&path, &[], PROBLEM_SHAPE, SMALL_BODY)?;
        problem
            .id
            .check_sent_by("the problem id", &self.display_url(&path, &[]))?;
        Ok(problem)
    }

    /// Each agent's best evaluated score on a problem, best first (`limit` 1…[`MAX_LIMIT`]).
    pub fn leaderboard(&self, problem_id: &ArenaId, limit: usize) -> Result<Vec<LeaderboardEntry>> {
        check_limit(limit)?;
        let query = [
            ("problem_id", problem_id.to_string()),
            ("limit", limit.to_string()),
        ];
        let mut entries: Vec<LeaderboardEntry> =
            self.get_json("/api/leaderboard", &query, LEADERBOARD_SHAPE, SMALL_BODY)?;
        entries.truncate(limit);
        Ok(entries)
    }

    /// Where the submission `id` stands (`GET /api/solutions/{id}`).
    pub fn solution_status(&self, id: &ArenaId) -> Result<SolutionStatus> {
        id.check("solution id").map_err(MiloError::Usage)?;
        let path = format!("/api/solutions/{id}");
        let status: SolutionStatus = self.get_json(&path, &[], STATUS_SHAPE, SMALL_BODY)?;
        status
            .id
            .check_sent_by("the server's solution id", &self.display_url(&path, &[]))?;
        Ok(status)
    }

    /// The best `limit` (1…[`MAX_LIMIT`]) solutions of a problem, best first, each handed to
    /// `each` (with its rank, from 1) as soon as it has arrived, and what `each` made of them.
    ///
    /// The answer is read as it arrives, one entry at a time, so memory holds one entry, never
    /// the whole answer: an entry may take at most `max_values` values' worth of bytes
    /// ([`entry_cap`]), and its values are parsed as a construction file's are (at most
    /// [`crate::bounded_read::MOST_VALUES`]); the whole answer at most `limit` entries' worth (more entries than asked for are read and dropped). A longer
    /// entry or answer is refused as soon as it passes its cap. Every string of an entry is
    /// scrubbed of the secrets in use, and its id checked ([`ArenaId::check`]), before `each`
    /// sees it.
    pub fn best_solutions<T: Send + 'static>(
        &self,
        problem_id: &ArenaId,
        limit: usize,
        max_values: usize,
        each: impl FnMut(usize, ArenaSolution) -> Result<T> + Send + 'static,
    ) -> Result<Vec<T>> {
        check_limit(limit)?;
        let path = "/api/solutions/best";
        let query = [
            ("problem_id", problem_id.to_string()),
            ("limit", limit.to_string()),
        ];
        let url = self.base.clone() + path;
        let pairs: Vec<(String, String)> = query
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let shown = self.display_url(path, &query);
        let remote = |message: String| MiloError::Remote {
            url: shown.clone(),
            message: secrets::scrub(&message).into_owned(),
        };
        let entry_cap = entry_cap(max_values);
        let body_limit = (limit as u64).saturating_mul(entry_cap) + SMALL_BODY;
        let stream_shown = shown.clone();
        let exchange = self.exchange_with(
            move |agent| {
                let mut request = agent.get(&url);
                for (key, value) in &pairs {
                    request = request.query(key, value);
                }
                request.call()
            },
            move |status, body| {
                if !(200..300).contains(&status) {
                    return SolutionsBody::Other(
                        body.with_config().limit(SMALL_BODY).read_to_vec(),
                    );
                }
                let reader = body.with_config().limit(body_limit).reader();
                let stream = EntryStream {
                    limit,
                    max_values,
                    entry_cap,
                    body_limit,
                    url: stream_shown,
                };
                SolutionsBody::Entries(stream.read(reader, each))
            },
        );
        let answered = match exchange {
            Exchange::Answered(answered) => answered,
            Exchange::Failed(e) => return Err(remote(describe(&e))),
            Exchange::Abandoned => return Err(remote(ABANDONED.into())),
        };
        let status = answered.status;
        match answered.body {
            SolutionsBody::Entries(entries) => entries,
            SolutionsBody::Other(body) => {
                if (300..400).contains(&status) {
                    return Err(remote(redirect_message(status, answered.location)));
                }
                let body = body.map_err(|e| {
                    remote(format!("reading the response failed: {}", describe(&e)))
                })?;
                Err(remote(status_message(status, &body)))
            }
        }
    }

    /// `{base}{path}?k=v&…` as shown in messages (the request itself encodes the query).
    pub(super) fn display_url(&self, path: &str, query: &[(&str, String)]) -> String {
        let pairs: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if pairs.is_empty() {
            format!("{}{path}", self.base)
        } else {
            format!("{}{path}?{}", self.base, pairs.join("&"))
        }
    }

    /// `GET {base}{path}?{query}` parsed as `T` (described to the user as `expected`), its body
    /// at most `body_limit` bytes after decompression; every failure names the URL.
    fn get_json<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, String)],
        expected: &str,
        body_limit: u64,
    ) -> Result<T> {
        let url = format!("{}{path}", self.base);
        let pairs: Vec<(String, String)> = query
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let shown = self.display_url(path, query);
        let remote = |message: String| MiloError::Remote {
            url: shown.clone(),
            message: secrets::scrub(&message).into_owned(),
        };
        let exchange = self.exchange(body_limit, move |agent| {
            let mut request = agent.get(&url);
            for (key, value) in &pairs {
                request = request.query(key, value);
            }
            request.call()
        });
        let answered = match exchange {
            Exchange::Answered(answered) => answered,
            Exchange::Failed(e) => return Err(remote(describe(&e))),
            Exchange::Abandoned => return Err(remote(ABANDONED.into())),
        };
        let status = answered.status;
        if (300..400).contains(&status) {
            return Err(remote(redirect_message(status, answered.location)));
        }
        let body = answered
            .body
            .map_err(|e| remote(format!("reading the response failed: {}", describe(&e))))?;
        if !(200..300).contains(&status) {
            return Err(remote(status_message(status, &body)));
        }
        parse_json(&body, expected).map_err(remote)
    }
}

/// What a redirect (HTTP `status`, to `location`) is called: milo does not follow it.
fn redirect_message(status: u16, location: Option<String>) -> String {
    format!(
        "the server redirects (HTTP {status}) to {}; milo does not follow redirects \
         (give the server you mean as --base-url)",
        location.as_deref().unwrap_or("an unnamed place")
    )
}

/// The most bytes one served solution may take: [`BYTES_PER_VALUE`] for each of `max_values`
/// values, plus [`BYTES_PER_ENTRY`] (64 MiB and 64 KiB for the second problem's 2,000,000).
pub fn entry_cap(max_values: usize) -> u64 {
    (max_values as u64).saturating_mul(BYTES_PER_VALUE) + BYTES_PER_ENTRY
}

/// Reads `GET /api/solutions/best` as it arrives: one entry at a time, each under its cap.
struct EntryStream {
    limit: usize,
    max_values: usize,
    entry_cap: u64,
    body_limit: u64,
    url: String,
}

/// A reader counting the bytes read since its mark, refusing to read past `cap` of them.
struct Capped<R> {
    inner: R,
    since_mark: std::rc::Rc<std::cell::Cell<u64>>,
    cap: u64,
}

/// The I/O error [`Capped`] gives past its cap, recognised in the message.
const PAST_ENTRY_CAP: &str = "an entry is past its size cap";

impl<R: std::io::Read> std::io::Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.cap.saturating_sub(self.since_mark.get());
        if left == 0 {
            return Err(std::io::Error::other(PAST_ENTRY_CAP));
        }
        let room = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..room])?;
        self.since_mark.set(self.since_mark.get() + n as u64);
        Ok(n)
    }
}

impl EntryStream {
    /// Reads the answer from `reader`, handing each entry within the limit to `each`.
    fn read<T>(
        &self,
        reader: impl std::io::Read,
        mut each: impl FnMut(usize, ArenaSolution) -> Result<T>,
    ) -> Result<Vec<T>> {
        let since_mark = std::rc::Rc::new(std::cell::Cell::new(0));
        let capped = Capped {
            inner: std::io::BufReader::new(reader),
            since_mark: since_mark.clone(),
            // The cap counts from each entry's start; one byte more lets a full entry end.
            cap: self.entry_cap + 1,
        };
        let mut de = serde_json::Deserializer::from_reader(capped);
        let mut out = Vec::new();
        let mut failure = None;
        let mut track = serde_path_to_error::Track::new();
        let visitor = EntryVisitor {
            stream: self,
            since_mark: &since_mark,
            each: &mut each,
            out: &mut out,
            failure: &mut failure,
        };
        let wrapped = serde_path_to_error::Deserializer::new(&mut de, &mut track);
        let parsed = serde::Deserializer::deserialize_seq(wrapped, visitor);
        if let Some(failure) = failure {
            return Err(failure);
        }
        let remote = |message: String| MiloError::Remote {
            url: self.url.clone(),
            message: secrets::scrub(&message).into_owned(),
        };
        if let Err(e) = parsed {
            let path = track.path().to_string();
            let text = e.to_string();
            if text.contains(PAST_ENTRY_CAP) {
                return Err(remote(format!(
                    "malformed response at {path}: an entry is past its size cap of {} \
                     (the problem takes at most {} values)",
                    crate::bounded_read::size_text(self.entry_cap),
                    self.max_values
                )));
            }
            if text.contains("BodyExceedsLimit") || text.contains("larger than") {
                return Err(remote(format!(
                    "the response is past its size cap of {} (--limit {})",
                    crate::bounded_read::size_text(self.body_limit),
                    self.limit
                )));
            }
            let at = if path == "." {
                String::new()
            } else {
                format!(" at {path}")
            };
            return Err(remote(format!(
                "malformed response{at}: {text}; expected {SOLUTIONS_SHAPE}"
            )));
        }
        since_mark.set(0);
        de.end().map_err(|e| {
            remote(format!(
                "malformed response: {e} after the JSON; expected {SOLUTIONS_SHAPE}"
            ))
        })?;
        Ok(out)
    }
}

/// Visits the entries of the answer's list (see [`EntryStream::read`]).
struct EntryVisitor<'a, T, F> {
    stream: &'a EntryStream,
    since_mark: &'a std::cell::Cell<u64>,
    each: &'a mut F,
    out: &'a mut Vec<T>,
    failure: &'a mut Option<MiloError>,
}

impl<'de, T, F: FnMut(usize, ArenaSolution) -> Result<T>> serde::de::Visitor<'de>
    for EntryVisitor<'_, T, F>
{
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(SOLUTIONS_SHAPE)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<(), A::Error> {
        let mut rank = 0;
        loop {
            self.since_mark.set(0);
            let Some(wire) = seq.next_element::<WireSolution>()? else {
                return Ok(());
            };
            rank += 1;
            if rank > self.stream.limit {
                continue;
            }
            let handed = wire
                .scrubbed()
                .check(rank)
                .map_err(|message| MiloError::Remote {
                    url: self.stream.url.clone(),
                    message,
                })
                .and_then(|solution| (self.each)(rank, solution));
            match handed {
                Ok(value) => self.out.push(value),
                Err(e) => {
                    *self.failure = Some(e);
                    return Err(serde::de::Error::custom("stopped"));
                }
            }
        }
    }
}

/// `body` parsed as `T`, or a message naming the JSON path at fault and the `expected` shape.
/// Its strings are scrubbed of the secrets in use first ([`secrets::scrub_json`]).
pub(super) fn parse_json<T: DeserializeOwned>(
    body: &[u8],
    expected: &str,
) -> std::result::Result<T, String> {
    let text = std::str::from_utf8(body)
        .map_err(|e| format!("malformed response: not UTF-8 text ({e}); expected {expected}"))?;
    let scrubbed = secrets::scrub_json(text);
    let mut de = serde_json::Deserializer::from_str(&scrubbed);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." {
            String::new()
        } else {
            format!(" at {}", quoted(&path))
        };
        format!(
            "malformed response{at}: {}; expected {expected}",
            quoted(&e.inner().to_string())
        )
    })?;
    de.end().map_err(|e| {
        format!(
            "malformed response: {} after the JSON; expected {expected}",
            quoted(&e.to_string())
        )
    })?;
    Ok(value)
}

/// "the server answered HTTP 404: <the body's first characters>", control characters dropped, the
/// secrets in use scrubbed from the whole body before it is cut.
pub(super) fn status_message(status: u16, body: &[u8]) -> String {
    let body = String::from_utf8_lossy(body);
    let text = secrets::scrub(&body);
    let excerpt: String = text
        .trim()
        .chars()
        .filter(|c| !c.is_control())
        .take(BODY_EXCERPT)
        .collect();
    if excerpt.is_empty() {
        format!("the server answered HTTP {status}")
    } else {
        format!("the server answered HTTP {status}: {excerpt}")
    }
}

/// Refuses a `limit` outside 1…[`MAX_LIMIT`].
fn check_limit(limit: usize) -> Result<()> {
    if (1..=MAX_LIMIT).contains(&limit) {
        Ok(())
    } else {
        Err(MiloError::Usage(format!(
            "limit {limit}: the arena returns 1 to {MAX_LIMIT} entries"
        )))
    }
}

/// A transport error in words a user can act on.
pub(super) fn describe(err: &ureq::Error) -> String {
    match err {
        ureq::Error::Timeout(which) => format!(
            "timed out ({which}); the server did not answer within the --timeout (raise it for a slow connection)"
        ),
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            "connection refused (is the server up and the --base-url right?)".into()
        }
        ureq::Error::HostNotFound => "host not found (check the --base-url)".into(),
        ureq::Error::Io(io) => io.to_string(),
        ureq::Error::BodyExceedsLimit(limit) => {
            format!("the response is larger than {limit} bytes")
        }
        other => other.to_string(),
    }
}
