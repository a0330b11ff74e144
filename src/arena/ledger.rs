//! The submission ledger: an append-only JSON-lines file of every submission milo sent (or tried
//! to send) and of every status the arena later gave it.
//!
//! A line is a [`LedgerRecord`]: a `submission` (the file's sha256 and exact score, the leaderboard
//! it was checked against, the verdict, how it was sent, the server's answer or the failure) or a
//! `status` (a later answer of `GET /api/solutions/{id}`). Lines are only ever appended, each
//! written whole and synced; a torn last line (a crash mid-write) is skipped on reading. Nothing
//! secret is written: the key never enters a record, and each line is scrubbed of the secrets in
//! use ([`secrets::scrub_json`]) before it is written, whatever the server sent.

use super::client::{ArenaId, LeaderboardEntry};
use super::rules::Assessment;
use crate::bounded_read::{read_text_capped, RECORDS_CAP};
use crate::error::{MiloError, Result};
use crate::secrets;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The ledger `milo arena submit` and `status` use without `--ledger`.
pub const DEFAULT_LEDGER: &str = "arena/ledger.jsonl";

/// One line of the ledger.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum LedgerRecord {
    /// A submission sent, or tried.
    Submission(Box<SubmissionRecord>),
    /// A later status of a submission.
    Status(StatusRecord),
}

/// A submission as sent (or tried).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SubmissionRecord {
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
    /// Why it did not reach the server, when it did not.
    pub error: Option<String>,
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

/// Appends `record` as one synced line to the ledger at `path` (created with its folder).
pub fn append(path: &Path, record: &LedgerRecord) -> Result<()> {
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
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io)?;
    file.write_all(line.as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)
}

/// Every record of the ledger at `path`, in order (a missing ledger is empty; a torn last line
/// is skipped; any other unreadable line is an error naming its number; a ledger past
/// [`RECORDS_CAP`] is an error).
pub fn read(path: &Path) -> Result<Vec<LedgerRecord>> {
    let text = match read_text_capped(path, RECORDS_CAP, "ledger") {
        Ok(text) => text,
        Err(e) if e.is_missing_file() => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut records = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(record) => records.push(record),
            Err(_) if i + 1 == lines.len() && !complete => break,
            Err(e) => {
                return Err(MiloError::Malformed {
                    path: path.to_path_buf(),
                    message: format!("line {}: {e}", i + 1),
                })
            }
        }
    }
    Ok(records)
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
            LedgerRecord::Submission(_) => {}
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

#[cfg(test)]
mod tests {
    use super::*;

    fn submission(id: Option<i64>) -> LedgerRecord {
        LedgerRecord::Submission(Box::new(SubmissionRecord {
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
        }))
    }

    #[test]
    fn statuses_attach_to_their_submission_and_a_torn_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/ledger.jsonl");
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
        let tracked = tracked(&records);
        assert_eq!(tracked.len(), 1, "the failed try is not tracked");
        assert_eq!(tracked[0].status(), Some("evaluated"));
        std::fs::write(&path, "garbage\n{}\n").unwrap();
        assert!(read(&path).unwrap_err().to_string().contains("line 1"));
        assert!(read(&dir.path().join("none.jsonl")).unwrap().is_empty());
    }
}
