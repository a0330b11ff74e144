//! `milo arena submit` and `status`: check a construction against the live rules, send it the
//! way its size requires, record it in the ledger, and follow it until the arena decides.
//!
//! [`check`] refuses a construction over the arena's upload limit ([`BLOB_LIMIT`]) before any
//! request, verifies the file exactly, reads the live problem (direction, `minImprovement`) and
//! leaderboard, and applies the rules ([`rules::assess`]). [`send`] uploads inline within the
//! arena's inline limits ([`INLINE_LIMIT`], [`REQUEST_BODY_LIMIT`]) and through a blob above them, honours HTTP 429 (at most
//! [`MAX_RATE_LIMITED`] times, at least [`MIN_RETRY_WAIT`] apart, within `--max-wait` of wall
//! time, and no longer than its cancel token allows), through the write-ahead ledger: an intent
//! before the first request, the outcome after the last, whatever happens; and it never sends on
//! its own what the ledger records as sent or possibly sent. [`refresh`] asks the arena for the
//! status of pending submissions and appends what changed.

use super::api_key::ApiKey;
use super::client::{ArenaClient, ArenaId, ArenaProblem, LeaderboardEntry, MAX_LIMIT};
use super::ledger::{
    self, IntentRecord, LedgerRecord, Prior, StatusRecord, SubmissionRecord, Tracked,
};
use super::rules::{self, Assessment};
use super::send::{Answer, Failed, Submitted};
use crate::bounded_read::{read_bytes_capped, CONSTRUCTION_CAP};
use crate::cancel::CancelToken;
use crate::construction::json::javascript_json_len;
use crate::construction::{read_values, to_json};
use crate::error::{MiloError, Result};
use crate::problems::{by_slug, Direction, ProblemSpec};
use crate::verify::{verify, Mode, Options};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// Largest solution sent inline, in characters of `JSON.stringify(solution)` as the arena measures
/// it (its `POST /api/solutions` answers 400 "Solution data must be under 2 MB" above it); larger
/// ones go through a blob upload.
pub const INLINE_LIMIT: usize = 2_000_000;
/// Largest request body sent inline: the arena runs on Vercel functions, which refuse a request
/// body over 4.5 MB (HTTP 413 `FUNCTION_PAYLOAD_TOO_LARGE`); larger ones go through a blob.
pub const REQUEST_BODY_LIMIT: usize = 4_500_000;
/// Largest blob upload the arena accepts: `MAX_BLOB_BYTES`, 50 MiB (its upload ticket's
/// `maximumSizeInBytes`, checked again when the submission names the blob). A construction whose
/// JSON is larger is refused before anything is sent.
pub const BLOB_LIMIT: usize = 50 * 1024 * 1024;
/// Room for the inline request's wrapper around the solution (`{"problem_id":…,"solution":…}`).
const WRAPPER_ROOM: usize = 1_000;
/// Uploads tried (each with a fresh ticket) before a blob submission gives up.
const UPLOAD_TRIES: usize = 3;
/// Most requests answered HTTP 429 in a row before a submission gives up.
pub const MAX_RATE_LIMITED: usize = 20;
/// Shortest wait after a 429, whatever the server asks (`Retry-After: 0` included).
pub const MIN_RETRY_WAIT: Duration = Duration::from_secs(1);

/// A construction checked against the live problem and leaderboard, ready to send.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The problem as the server describes it now.
    pub problem: ArenaProblem,
    /// The construction file.
    pub file: PathBuf,
    /// SHA-256 of its bytes.
    pub sha256: String,
    /// Number of values.
    pub n: usize,
    /// The `{"values":[…]}` text that would be sent, and how.
    pub payload: Payload,
    /// The rules' verdict and the numbers behind it.
    pub assessment: Assessment,
    /// The leaderboard it was checked against, best first.
    pub leaderboard: Vec<LeaderboardEntry>,
    /// Where the server's direction or threshold differ from milo's problem file, in words.
    pub notes: Vec<String>,
    /// Checked offline, against the #1 of milo's problem file ([`offline_leaderboard`]).
    pub offline: bool,
}

impl Checked {
    /// How the construction would travel: `inline` or `blob`.
    pub fn upload_kind(&self) -> &'static str {
        self.payload.upload_kind()
    }
}

/// The JSON text of a construction as it would be sent, with the size the arena measures.
#[derive(Clone, Debug)]
pub struct Payload {
    /// The compact `{"values":[…]}` text ([`to_json`]).
    pub json: String,
    /// Characters of `JSON.stringify` of the same solution, what the arena's inline limit counts.
    pub javascript_len: usize,
}

impl Payload {
    /// The payload of `values` (finite), refused with a one-line error naming the limit and the
    /// size when its JSON is over `blob_limit` bytes (the arena's is [`BLOB_LIMIT`]).
    pub fn new(values: &[f64], blob_limit: usize) -> Result<Payload> {
        let json = to_json(values)?;
        if json.len() > blob_limit {
            return Err(MiloError::Usage(format!(
                "the construction's JSON is {} bytes, over the arena's upload limit of {} bytes \
                 (50 MiB for a blob); nothing was sent",
                json.len(),
                blob_limit
            )));
        }
        Ok(Payload {
            javascript_len: javascript_json_len(values),
            json,
        })
    }

    /// `inline` when the arena's inline limits allow it ([`INLINE_LIMIT`] characters as
    /// JavaScript writes the solution, [`REQUEST_BODY_LIMIT`] bytes of request), else `blob`.
    pub fn upload_kind(&self) -> &'static str {
        let inline = self.javascript_len <= INLINE_LIMIT
            && self.json.len() + WRAPPER_ROOM <= REQUEST_BODY_LIMIT;
        if inline {
            "inline"
        } else {
            "blob"
        }
    }
}

/// Verifies `file` exactly for `slug` and applies the arena's rules against its live problem and
/// leaderboard, for the agent `agent` when named. With `offline`, an arena that cannot be asked
/// (unreachable, or not answering as an arena does) is no failure: the construction is checked
/// against the #1 that `problems/<slug>.toml` records ([`offline_leaderboard`]), and a note
/// says so.
pub fn check(
    client: &ArenaClient,
    slug: &str,
    file: &Path,
    agent: Option<&str>,
    offline: bool,
) -> Result<Checked> {
    let problem = by_slug(slug)?;
    let bytes = read_bytes_capped(file, CONSTRUCTION_CAP, "construction")?;
    let values = read_values(file)?;
    // Before any request: a construction the arena cannot take is refused here.
    let payload = Payload::new(&values, BLOB_LIMIT)?;
    let options = Options {
        mode: Mode::Exact,
        allow_oversize: false,
    };
    let exact = verify(problem.as_ref(), &values, options)?
        .exact
        .expect("mode exact computes the exact score");
    let spec = problem.spec();
    let mut notes = Vec::new();
    let live = client
        .problem_detail(slug)
        .and_then(|served| Ok((client.leaderboard(&served.id, MAX_LIMIT)?, served)));
    let checked_offline = live.is_err();
    let (leaderboard, served) = match live {
        Ok(live) => live,
        Err(e @ MiloError::Remote { .. }) if offline => {
            let (leaderboard, served) = offline_leaderboard(spec)?;
            notes.push(format!(
                "offline: the arena could not be asked ({}); checked against the #1 in \
                 problems/{slug}.toml ({} {}, {}), not the live leaderboard",
                e,
                leaderboard[0].agent_name,
                leaderboard[0].best_score,
                spec.arena_first().map_or("", |r| r.date.as_str())
            ));
            (leaderboard, served)
        }
        Err(e) => return Err(e),
    };
    let direction = match served.direction() {
        Some(d) if d != spec.direction => {
            return Err(MiloError::Remote {
                url: format!("{}/api/problems/{slug}", client.base_url()),
                message: format!(
                    "the server scores '{slug}' in the other direction ({:?}) than milo does; \
                     refusing to judge the submission",
                    served.scoring
                ),
            })
        }
        Some(d) => d,
        None => {
            notes.push("the server states no scoring direction; milo's is used".into());
            spec.direction
        }
    };
    let min_improvement = match served.min_improvement() {
        Some(m) => {
            if m != spec.min_improvement {
                notes.push(format!(
                    "the live minImprovement {m} differs from milo's problem file ({}); the live one is used",
                    spec.min_improvement
                ));
            }
            m
        }
        None => {
            notes.push(format!(
                "the server states no minImprovement; milo's {} is used",
                spec.min_improvement
            ));
            spec.min_improvement
        }
    };
    let assessment = rules::assess(&exact, &leaderboard, agent, direction, min_improvement);
    Ok(Checked {
        problem: served,
        file: file.to_path_buf(),
        sha256: Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
        n: values.len(),
        payload,
        assessment,
        leaderboard,
        notes,
        offline: checked_offline,
    })
}

/// The leaderboard of one entry, the #1 that `spec` records (`arena #1: HOLDER`), and the
/// problem as milo's data file describes it: what an offline check compares with. A problem
/// file without such a record is a usage error (there is nothing to check against).
pub fn offline_leaderboard(spec: &ProblemSpec) -> Result<(Vec<LeaderboardEntry>, ArenaProblem)> {
    let first = spec.arena_first().ok_or_else(|| {
        MiloError::Usage(format!(
            "problems/{}.toml records no arena #1 to check against offline",
            spec.slug
        ))
    })?;
    let holder = first
        .holder
        .trim_start_matches("arena #1")
        .trim_start_matches(':');
    let entry = LeaderboardEntry {
        rank: 1,
        agent_name: match holder.trim() {
            "" => "arena #1".to_string(),
            name => name.to_string(),
        },
        best_score: first.value,
        submissions: None,
    };
    let problem = ArenaProblem {
        id: ArenaId::Text(spec.slug.clone()),
        slug: spec.slug.clone(),
        title: None,
        scoring: Some(
            match spec.direction {
                Direction::Minimize => "minimize",
                Direction::Maximize => "maximize",
            }
            .into(),
        ),
        min_improvement: Some(spec.min_improvement.into()),
        evaluation_mode: None,
    };
    Ok((vec![entry], problem))
}

/// How long a submission may wait out rate limits, and what stops the waiting.
pub struct Patience<'a> {
    /// Longest wall time from the first request to the last one's start.
    pub max_wait: Duration,
    /// Cancelling it ends a wait within a fraction of a second (Ctrl-C, a campaign's `--hours`).
    pub cancel: &'a CancelToken,
}

/// What a send may go past.
#[derive(Clone, Copy, Debug, Default)]
pub struct Overrides {
    /// Send although the rules would drop it (`--force`; recorded in the ledger).
    pub force: bool,
    /// Send although the ledger records this construction as sent, or as possibly sent, to this
    /// server (`--send-again`).
    pub send_again: bool,
}

/// Sends a checked construction with `key`, waiting out 429s as `patience` allows, through the
/// write-ahead ledger at `ledger_path`: refuses ([`MiloError::HeldBack`]) when the ledger
/// records this construction as sent or possibly sent to this server (unless
/// `overrides.send_again`); otherwise appends and syncs an intent before the first request, and
/// the outcome after the last (also when it fails).
pub fn send(
    client: &ArenaClient,
    checked: &Checked,
    key: &ApiKey,
    patience: &Patience,
    overrides: Overrides,
    ledger_path: &Path,
) -> Result<Submitted> {
    let base_url = client.base_url();
    // Held from the read to the intent: a second sender then finds the intent.
    let lock = ledger::lock(ledger_path)?;
    if !overrides.send_again {
        let records = ledger::read(ledger_path)?;
        if let Some(prior) =
            ledger::prior(&records, &checked.sha256, &checked.problem.slug, base_url)
        {
            return Err(held_back(checked, &prior, base_url, ledger_path));
        }
    }
    let intent = IntentRecord {
        intent: intent_id(),
        at: now(),
        base_url: base_url.to_string(),
        slug: checked.problem.slug.clone(),
        file: checked.file.clone(),
        sha256: checked.sha256.clone(),
        forced: overrides.force,
        upload: checked.upload_kind().into(),
    };
    lock.append(&LedgerRecord::Intent(intent.clone()))?;
    drop(lock);
    let sent = if checked.upload_kind() == "blob" {
        send_blob(client, checked, key, patience)
    } else {
        patiently(patience, || {
            client.submit_inline(key, &checked.problem.id, &checked.payload.json)
        })
    };
    let record = SubmissionRecord {
        intent: Some(intent.intent),
        at: now(),
        base_url: intent.base_url,
        slug: intent.slug,
        problem_id: checked.problem.id.clone(),
        file: intent.file,
        sha256: intent.sha256,
        n: checked.n,
        assessment: checked.assessment.clone(),
        leaderboard: checked.leaderboard.clone(),
        forced: overrides.force,
        upload: intent.upload,
        solution_id: sent.as_ref().ok().map(|s| s.id.clone()),
        status: sent.as_ref().ok().and_then(|s| s.status.clone()),
        error: sent.as_ref().err().map(|f| f.error.to_string()),
        may_have_arrived: sent.as_ref().is_err_and(|f| f.may_have_arrived),
    };
    ledger::lock(ledger_path)?.append(&LedgerRecord::Submission(Box::new(record)))?;
    sent.map_err(|failed| failed.error)
}

/// The one-line refusal to send `checked` again, saying what to run.
fn held_back(checked: &Checked, prior: &Prior, base_url: &str, ledger_path: &Path) -> MiloError {
    let what = format!(
        "not sent: {} (sha256 {}…) for {}",
        checked.file.display(),
        &checked.sha256[..16],
        checked.problem.slug
    );
    let ledger = ledger_path.display();
    MiloError::HeldBack(match prior {
        Prior::Confirmed(id, at) => format!(
            "{what} was already sent to {base_url} as solution {id} ({at}); follow it with \
             `milo arena status {id} --ledger {ledger} --base-url {base_url}` (--send-again sends \
             it once more)"
        ),
        Prior::Unconfirmed(u) => format!(
            "{what} may already be on {base_url}: sent {}, {}; look for it among your agent's \
             submissions on the arena (`milo arena status --ledger {ledger} --base-url \
             {base_url}` lists it as unconfirmed), and only if it never arrived send it with \
             `milo arena submit {} {} --base-url {base_url} --ledger {ledger} --send-again`",
            u.at,
            u.why,
            checked.problem.slug,
            checked.file.display()
        ),
    })
}

/// A fresh intent id: the time in nanoseconds and the process id, in hexadecimal.
fn intent_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{nanos:x}-{:x}", std::process::id())
}

/// Uploads the JSON through a blob ticket (a fresh ticket per try) and submits the blob's URL.
fn send_blob(
    client: &ArenaClient,
    checked: &Checked,
    key: &ApiKey,
    patience: &Patience,
) -> std::result::Result<Submitted, Failed> {
    let mut failure = None;
    for _ in 0..UPLOAD_TRIES {
        let ticket = patiently(patience, || client.upload_ticket(key))?;
        match client.upload(&ticket, checked.payload.json.as_bytes()) {
            Ok(()) => {
                return patiently(patience, || {
                    client.submit_blob(key, &checked.problem.id, &ticket.blob_key)
                })
            }
            Err(e) => failure = Some(e),
        }
    }
    let e = failure.expect("at least one try");
    Err(Failed::from(MiloError::Remote {
        url: client.base_url().to_string(),
        message: format!("the blob upload failed {UPLOAD_TRIES} times; last: {e}"),
    }))
}

/// Calls `request` until it is not rate-limited, waiting as the server asks (at least
/// [`MIN_RETRY_WAIT`]); gives up after [`MAX_RATE_LIMITED`] rate-limited answers, when the next
/// request would start past `patience.max_wait` of wall time, or when the token is cancelled.
fn patiently<T, E: From<MiloError>>(
    patience: &Patience,
    mut request: impl FnMut() -> std::result::Result<Answer<T>, E>,
) -> std::result::Result<T, E> {
    let started = Instant::now();
    let give_up = |message: String| MiloError::Remote {
        url: "the arena".into(),
        message,
    };
    let mut answered = 0;
    loop {
        answered += 1;
        let asked = match request()? {
            Answer::Done(value) => return Ok(value),
            Answer::RateLimited(asked) => asked,
        };
        let wait = asked.max(MIN_RETRY_WAIT);
        let spent = started.elapsed();
        if answered >= MAX_RATE_LIMITED || spent + wait > patience.max_wait {
            return Err(E::from(give_up(format!(
                "rate-limited {answered} times in {} s: the server asks to wait {} s more \
                 (--max-wait is {} s, at most {MAX_RATE_LIMITED} tries); try again later",
                spent.as_secs(),
                wait.as_secs_f64().ceil(),
                patience.max_wait.as_secs()
            ))));
        }
        say!(
            "milo: rate-limited; waiting {} s as the server asks",
            wait.as_secs_f64().ceil()
        );
        if !patience.cancel.wait(wait) {
            return Err(E::from(give_up(format!(
                "rate-limited {answered} times; stopped waiting: the run was cancelled"
            ))));
        }
    }
}

/// Asks the arena for the status of every submission in the ledger still pending (or only of
/// `only`), appends the statuses that changed, and returns every tracked submission.
pub fn refresh(
    client: &ArenaClient,
    ledger_path: &Path,
    only: Option<&ArenaId>,
) -> Result<Vec<Tracked>> {
    let mut tracked = ledger::tracked(&ledger::read(ledger_path)?);
    if let Some(id) = only {
        tracked.retain(|t| t.submission.solution_id.as_ref() == Some(id));
        if tracked.is_empty() {
            return Err(MiloError::Usage(format!(
                "no submission {id} in the ledger {}",
                ledger_path.display()
            )));
        }
    }
    for t in &mut tracked {
        let pending = t.status().is_none_or(|s| s == "pending");
        let here = t.submission.base_url == client.base_url();
        if !(here && (pending || only.is_some())) {
            continue;
        }
        let id = t
            .submission
            .solution_id
            .clone()
            .expect("tracked ones have ids");
        let status = client.solution_status(&id)?;
        if Some(status.status.as_str()) != t.status() || t.latest.is_none() {
            let record = StatusRecord {
                at: now(),
                base_url: client.base_url().to_string(),
                solution_id: id,
                status: status.status,
                score: status.score,
                error: status.error,
            };
            ledger::lock(ledger_path)?.append(&LedgerRecord::Status(record.clone()))?;
            t.latest = Some(record);
        }
    }
    Ok(tracked)
}

/// The current time, RFC 3339 UTC.
fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_over_the_upload_limit_is_refused_naming_the_limit_and_the_size() {
        let values = [0.0, 0.5, 1.0];
        let json = r#"{"values":[0,0.5,1]}"#;
        let fits = Payload::new(&values, json.len()).unwrap();
        assert_eq!(fits.json, json);
        assert_eq!(fits.upload_kind(), "inline");
        let refused = Payload::new(&values, json.len() - 1)
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains(&format!("{} bytes", json.len()))
                && refused.contains(&format!("limit of {} bytes", json.len() - 1))
                && !refused.contains('\n'),
            "{refused}"
        );
    }

    #[test]
    fn the_inline_limit_counts_characters_as_javascript_writes_them() {
        // 1e-6 is `1e-6` in milo's JSON, `0.000001` in the arena's JSON.stringify: 250,000 of
        // them are 1,250,012 bytes here and 2,250,012 characters there, over the inline limit.
        let small = vec![1e-6; 250_000];
        let payload = Payload::new(&small, BLOB_LIMIT).unwrap();
        assert!(payload.json.len() < INLINE_LIMIT);
        assert_eq!(payload.javascript_len, 2_250_012);
        assert_eq!(payload.upload_kind(), "blob");
        let zeros = Payload::new(&vec![0.0; 999_990], BLOB_LIMIT).unwrap();
        assert_eq!(zeros.javascript_len, 1_999_992);
        assert_eq!(zeros.upload_kind(), "inline");
    }
}
