//! The submission ledger: an append-only, write-ahead JSON-lines file of every submission milo sent
//! (or tried to send) and of every status the arena later gave it.
//!
//! A line is a [`LedgerRecord`]: an `intent` (written and synced before the first request of a
//! send: the file's sha256, the slug, the server, the file, the time), a `submission` (the outcome
//! of that intent, naming it: the exact score, the leaderboard it was checked against, the
//! verdict, how it was sent, the server's answer or the failure) or a `status` (a later answer of
//! `GET /api/solutions/{id}`). An intent with no outcome (milo was killed mid-send), and a failure
//! that came after the request went out, are *unconfirmed*: the arena may hold the submission, so
//! it is never sent again on its own ([`prior`], [`unconfirmed`]). Lines are only ever appended,
//! each written whole and synced, on a line of its own; a torn last line (a crash mid-write) is
//! skipped on reading. Only a regular file is read or appended to ([`open_regular`]); a
//! sender holds the ledger's [`lock`] from reading it to appending its intent, and every append
//! holds it ([`LedgerLock::append`]). Nothing
//! secret is written: the key never enters a record, and each line is scrubbed of the secrets in
//! use ([`secrets::scrub_json`]) before it is written, whatever the server sent.

use super::client::{ArenaId, LeaderboardEntry};
use super::rules::Assessment;
use crate::atomic_file::open_regular;
use crate::error::{MiloError, Result};
use crate::records;
use crate::secrets;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The ledger `milo arena submit` and `status` use without `--ledger`.
pub const DEFAULT_LEDGER: &str = "arena/ledger.jsonl";

/// One line of the ledger.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum LedgerRecord {
    /// A submission about to be sent (written before any request).
    Intent(IntentRecord),
    /// A submission sent, or tried: the outcome of an intent.
    Submission(Box<SubmissionRecord>),
    /// A later status of a submission.
    Status(StatusRecord),
}

/// A submission about to be sent: what the outcome record will name.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IntentRecord {
    /// This intent's id, unique in the ledger (its outcome names it).
    pub intent: String,
    /// When (RFC 3339, UTC).
    pub at: String,
    /// The server.
    pub base_url: String,
    /// The problem's slug.
    pub slug: String,
    /// The construction file as given.
    pub file: PathBuf,
    /// SHA-256 of the file's bytes.
    pub sha256: String,
    /// Sent although the rules would drop it (`--force`).
    pub forced: bool,
    /// `inline` or `blob`.
    pub upload: String,
}

/// A submission as sent (or tried).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SubmissionRecord {
    /// The intent this is the outcome of (absent in ledgers written before intents were).
    #[serde(default)]
    pub intent: Option<String>,
    /// When (RFC 3339, UTC).
    pub at: String,
    /// The server.
    pub base_url: String,
    /// The problem's slug and the server's id of it.
    pub slug: String,
    /// The server's id of the problem.
    pub problem_id: ArenaId,
    /// The construction file as given.
    pub file: PathBuf,
    /// SHA-256 of the file's bytes.
    pub sha256: String,
    /// Number of values.
    pub n: usize,
    /// The exact score, the leaderboard's #1 and the verdict, as checked before sending.
    pub assessment: Assessment,
    /// The leaderboard it was checked against (best first).
    pub leaderboard: Vec<LeaderboardEntry>,
    /// Sent although the rules would drop it (`--force`).
    pub forced: bool,
    /// `inline` or `blob`.
    pub upload: String,
    /// The server's id of the submission, when it was accepted for evaluation.
    pub solution_id: Option<ArenaId>,
    /// The status the server gave on arrival.
    pub status: Option<String>,
    /// Why it failed, when it did.
    pub error: Option<String>,
    /// It failed after the request went out, with no answer refusing it (a timeout, a cut
    /// connection, a server error): the arena may hold it.
    #[serde(default)]
    pub may_have_arrived: bool,
}

/// A status the arena gave a submission later.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StatusRecord {
    /// When it was asked (RFC 3339, UTC).
    pub at: String,
    /// The server.
    pub base_url: String,
    /// The submission.
    pub solution_id: ArenaId,
    /// `pending`, `evaluated`, `rejected`, `discarded`… as served.
    pub status: String,
    /// The arena's score, once evaluated.
    pub score: Option<f64>,
    /// Why evaluation failed, if it did.
    pub error: Option<String>,
}

/// Cuts a torn last line (a crash mid-write: no newline at the end) off `file`, so the next
/// record starts a line of its own and the torn one is not left inside the ledger.
fn cut_torn_line(file: &std::fs::File) -> std::io::Result<()> {
    let length = file.metadata()?.len();
    let mut end = length;
    let mut chunk = vec![0u8; 64 << 10];
    while end > 0 {
        let start = end.saturating_sub(chunk.len() as u64);
        let part = &mut chunk[..(end - start) as usize];
        file.read_exact_at(part, start)?;
        if end == length && part.last() == Some(&b'\n') {
            return Ok(());
        }
        if let Some(i) = part.iter().rposition(|&b| b == b'\n') {
            return file.set_len(start + i as u64 + 1);
        }
        end = start;
    }
    file.set_len(0)
}

/// A held lock on a ledger (its sibling `NAME.lock`), taken around reading it, deciding and
/// appending an intent, so that two processes never both decide to send one construction, and
/// around every append, so that cutting a torn last line never cuts another process's line
/// half-written; records are appended only through it ([`LedgerLock::append`]). Dropping it
/// releases the lock.
pub struct LedgerLock {
    ledger: PathBuf,
    _file: std::fs::File,
}

/// Waits for and takes the lock of the ledger at `path` (its folder created if missing).
pub fn lock(path: &Path) -> Result<LedgerLock> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    let lock_path = path.with_file_name(name);
    let io = |source| MiloError::Write {
        path: lock_path.clone(),
        source,
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    let file = open_regular(
        &lock_path,
        "ledger lock",
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true),
        io,
    )?;
    file.lock().map_err(io)?;
    Ok(LedgerLock {
        ledger: path.to_path_buf(),
        _file: file,
    })
}

impl LedgerLock {
    /// Appends `record` as one synced line to the locked ledger (created with its folder), a
    /// torn last line cut off first.
    pub fn append(&self, record: &LedgerRecord) -> Result<()> {
        let path = &self.ledger;
        let io = |source| MiloError::Write {
            path: path.to_path_buf(),
            source,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        let line = serde_json::to_string(record).expect("a ledger record serializes");
        let mut line = secrets::scrub_json(&line).into_owned();
        line.push('\n');
        let mut file = open_regular(
            path,
            "ledger",
            std::fs::OpenOptions::new()
                .create(true)
                .read(true)
                .append(true),
            io,
        )?;
        cut_torn_line(&file).map_err(io)?;
        file.write_all(line.as_bytes()).map_err(io)?;
        file.sync_all().map_err(io)
    }
}

/// Every record of the ledger at `path`, in order (a missing ledger is empty). It is read as
/// every record file is ([`records::read_records`]): line by line, a torn last line and blank
/// lines skipped, any other unreadable line an error naming its number, a line past
/// [`crate::bounded_read::RECORD_LINE_CAP`] refused, and a refused ledger costing at most one
/// line of memory.
pub fn read(path: &Path) -> Result<Vec<LedgerRecord>> {
    match records::read_records(path) {
        Ok((records, _)) => Ok(records),
        Err(e) if e.is_missing_file() => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// A submission with its latest known status.
#[derive(Clone, Debug)]
pub struct Tracked {
    /// The submission as sent.
    pub submission: SubmissionRecord,
    /// Its latest status record, if any came after it.
    pub latest: Option<StatusRecord>,
}

impl Tracked {
    /// The latest status: the last status record's, else the one given on arrival.
    pub fn status(&self) -> Option<&str> {
        self.latest
            .as_ref()
            .map(|s| s.status.as_str())
            .or(self.submission.status.as_deref())
    }
}

/// The submissions that reached the server, each with its latest status, in ledger order.
pub fn tracked(records: &[LedgerRecord]) -> Vec<Tracked> {
    let mut out: Vec<Tracked> = Vec::new();
    for record in records {
        match record {
            LedgerRecord::Submission(s) if s.solution_id.is_some() => out.push(Tracked {
                submission: (**s).clone(),
                latest: None,
            }),
            LedgerRecord::Submission(_) | LedgerRecord::Intent(_) => {}
            LedgerRecord::Status(status) => {
                if let Some(t) = out.iter_mut().rev().find(|t| {
                    t.submission.solution_id.as_ref() == Some(&status.solution_id)
                        && t.submission.base_url == status.base_url
                }) {
                    t.latest = Some(status.clone());
                }
            }
        }
    }
    out
}

/// A submission the arena may hold although no answer recorded in the ledger says so.
#[derive(Clone, Debug)]
pub struct Unconfirmed {
    /// When it was sent (RFC 3339, UTC).
    pub at: String,
    /// The server.
    pub base_url: String,
    /// The problem's slug.
    pub slug: String,
    /// The construction file as given.
    pub file: PathBuf,
    /// SHA-256 of the file's bytes.
    pub sha256: String,
    /// Why it is unconfirmed, in words.
    pub why: String,
}

/// What the ledger says of an earlier send of one construction to one server.
#[derive(Clone, Debug)]
pub enum Prior {
    /// The server accepted it under this id, at this time.
    Confirmed(ArenaId, String),
    /// It may have arrived: see [`Unconfirmed`].
    Unconfirmed(Unconfirmed),
}

/// The unconfirmed submissions of the ledger, in order: each intent with no outcome (milo stopped
/// mid-send) and each outcome that failed after its request went out — but none of a
/// construction the same server later confirmed.
pub fn unconfirmed(records: &[LedgerRecord]) -> Vec<Unconfirmed> {
    let answered: std::collections::HashSet<&str> = records
        .iter()
        .filter_map(|r| match r {
            LedgerRecord::Submission(s) => s.intent.as_deref(),
            _ => None,
        })
        .collect();
    let confirmed = |sha256: &str, slug: &str, base_url: &str| {
        records.iter().any(|r| {
            matches!(r, LedgerRecord::Submission(s) if s.solution_id.is_some()
                && s.sha256 == sha256 && s.slug == slug && s.base_url == base_url)
        })
    };
    records
        .iter()
        .filter_map(|r| match r {
            LedgerRecord::Intent(i) if !answered.contains(i.intent.as_str()) => Some(Unconfirmed {
                at: i.at.clone(),
                base_url: i.base_url.clone(),
                slug: i.slug.clone(),
                file: i.file.clone(),
                sha256: i.sha256.clone(),
                why: "no answer recorded (milo stopped while sending)".into(),
            }),
            LedgerRecord::Submission(s) if s.may_have_arrived => Some(Unconfirmed {
                at: s.at.clone(),
                base_url: s.base_url.clone(),
                slug: s.slug.clone(),
                file: s.file.clone(),
                sha256: s.sha256.clone(),
                why: format!(
                    "it failed after the request went out: {}",
                    s.error.as_deref().unwrap_or("no answer")
                ),
            }),
            _ => None,
        })
        .filter(|u| !confirmed(&u.sha256, &u.slug, &u.base_url))
        .collect()
}

/// What the ledger says of an earlier send of the construction `sha256` for `slug` to
/// `base_url`: the last confirmed one, else the last unconfirmed one, else nothing (never sent,
/// or only refused).
pub fn prior(records: &[LedgerRecord], sha256: &str, slug: &str, base_url: &str) -> Option<Prior> {
    let confirmed = records.iter().rev().find_map(|r| match r {
        LedgerRecord::Submission(s)
            if s.sha256 == sha256 && s.slug == slug && s.base_url == base_url =>
        {
            s.solution_id
                .clone()
                .map(|id| Prior::Confirmed(id, s.at.clone()))
        }
        _ => None,
    });
    confirmed.or_else(|| {
        unconfirmed(records)
            .into_iter()
            .rev()
            .find(|u| u.sha256 == sha256 && u.slug == slug && u.base_url == base_url)
            .map(Prior::Unconfirmed)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn submission(id: Option<i64>) -> LedgerRecord {
        LedgerRecord::Submission(Box::new(SubmissionRecord {
            intent: None,
            at: "2026-12-03T00:00:00Z".into(),
            base_url: "http://127.0.0.1:1".into(),
            slug: "s".into(),
            problem_id: ArenaId::Number(1),
            file: "f.json".into(),
            sha256: "00".into(),
            n: 3,
            assessment: crate::arena::rules::assess(
                &crate::exact::rational::from_f64(1.0),
                &[],
                None,
                crate::problems::Direction::Minimize,
                1e-4,
            ),
            leaderboard: Vec::new(),
            forced: false,
            upload: "inline".into(),
            solution_id: id.map(ArenaId::Number),
            status: id.map(|_| "pending".into()),
            error: id.is_none().then(|| "rate limited".into()),
            may_have_arrived: false,
        }))
    }

    #[test]
    fn statuses_attach_to_their_submission_and_a_torn_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/ledger.jsonl");
        let append = |path: &Path, record: &LedgerRecord| lock(path)?.append(record);
        append(&path, &submission(Some(7))).unwrap();
        append(&path, &submission(None)).unwrap();
        append(
            &path,
            &LedgerRecord::Status(StatusRecord {
                at: "later".into(),
                base_url: "http://127.0.0.1:1".into(),
                solution_id: ArenaId::Number(7),
                status: "evaluated".into(),
                score: Some(1.5),
                error: None,
            }),
        )
        .unwrap();
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(b"{\"kind\":\"stat").unwrap();
        let records = read(&path).unwrap();
        assert_eq!(records.len(), 3);
        // The next record cuts the torn line off and starts a line of its own.
        append(&path, &submission(None)).unwrap();
        let records = read(&path).unwrap();
        assert_eq!(
            records.len(),
            4,
            "the ledger stays readable after a torn line"
        );
        let tracked = tracked(&records);
        assert_eq!(tracked.len(), 1, "the failed try is not tracked");
        assert_eq!(tracked[0].status(), Some("evaluated"));
        // Only a regular file is read or appended to.
        let fifo = dir.path().join("fifo.jsonl");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        for err in [
            read(&fifo).unwrap_err(),
            append(&fifo, &submission(None)).unwrap_err(),
        ] {
            assert!(err.to_string().contains("a FIFO"), "{err}");
        }
        std::fs::write(&path, "garbage\n{}\n").unwrap();
        assert!(read(&path).unwrap_err().to_string().contains("line 1"));
        assert!(read(&dir.path().join("none.jsonl")).unwrap().is_empty());
    }

    fn intent(id: &str) -> LedgerRecord {
        LedgerRecord::Intent(IntentRecord {
            intent: id.into(),
            at: "2026-12-06T00:00:00Z".into(),
            base_url: "http://127.0.0.1:1".into(),
            slug: "s".into(),
            file: "f.json".into(),
            sha256: "00".into(),
            forced: false,
            upload: "inline".into(),
        })
    }

    fn outcome(of: &str, id: Option<i64>, may_have_arrived: bool) -> LedgerRecord {
        let LedgerRecord::Submission(mut s) = submission(id) else {
            unreachable!()
        };
        s.intent = Some(of.into());
        s.may_have_arrived = may_have_arrived;
        LedgerRecord::Submission(s)
    }

    #[test]
    fn an_intent_without_an_outcome_or_a_failure_after_sending_is_unconfirmed_until_confirmed() {
        let prior_of = |records: &[LedgerRecord]| prior(records, "00", "s", "http://127.0.0.1:1");
        // Refused outright (a 429, a refused key): nothing stands in the way of a new send.
        let refused = [intent("a"), outcome("a", None, false)];
        assert!(prior_of(&refused).is_none());
        assert!(unconfirmed(&refused).is_empty());
        // Killed mid-send: the intent has no outcome.
        let killed = [intent("a"), outcome("a", None, false), intent("b")];
        match prior_of(&killed) {
            Some(Prior::Unconfirmed(u)) => assert!(u.why.contains("no answer"), "{}", u.why),
            other => panic!("{other:?}"),
        }
        assert!(prior(&killed, "00", "s", "http://127.0.0.1:2").is_none());
        assert!(prior(&killed, "11", "s", "http://127.0.0.1:1").is_none());
        // Timed out after the request went out.
        let timed_out = [intent("a"), outcome("a", None, true)];
        assert!(matches!(prior_of(&timed_out), Some(Prior::Unconfirmed(_))));
        // Sent again and confirmed: the earlier doubt is settled.
        let confirmed = [intent("a"), intent("b"), outcome("b", Some(7), false)];
        assert!(matches!(
            prior_of(&confirmed),
            Some(Prior::Confirmed(ArenaId::Number(7), _))
        ));
        assert!(unconfirmed(&confirmed).is_empty());
    }
}
