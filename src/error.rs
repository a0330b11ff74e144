//! Errors and the exit codes they map to.
//!
//! Every message is one line naming the rule and, where there is one, the first offending index
//! and value (or the file, the flag and its value). Input text a message quotes is cut to a few
//! hundred bytes ([`quoted`]), and the printed line to [`LINE_BYTES`]. The exit codes tell the kinds apart:
//!
//! | code | meaning |
//! |------|---------|
//! | 0 | success (a valid construction, a finished command) |
//! | 2 | usage: the command line asks for something impossible (unknown problem, bad flag value) |
//! | 3 | invalid construction: read, but it breaks a rule of the problem (NaN, a negative value…) |
//! | 4 | remote: the arena server was unreachable or gave an unusable answer |
//! | 5 | mismatch: a pulled entry's arena score disagrees with the exact re-verification |
//! | 6 | unreadable or malformed input: a file is missing, unreadable, not the expected format, or past its size cap |
//! | 7 | write failure: a file or directory could not be written (full disk, no permission…) |
//! | 8 | busy: another milo process holds the run or benchmark directory's lock |
//! | 9 | would be dropped: the arena's rules would reject or discard a submission (not sent) |
//! | 10 | not better: `milo verify FILE --against RIVAL` found that FILE does not beat RIVAL by the problem's `min_improvement` |
//! | 11 | held back: the ledger records the construction as sent, or possibly sent, to this server; nothing was sent (`--send-again` sends it) |
//! | 12 | submission failed: `milo campaign` finished its search, but offering or sending its best to the arena failed or was held back |
//!
//! Clap's own command-line errors exit 2 as well; a closed standard output ends the command
//! quietly with exit 0 (see [`crate::cli`]).

use std::path::{Path, PathBuf};

/// Exit code for a valid construction (and successful commands).
pub const EXIT_OK: i32 = 0;
/// Exit code for usage errors (a flag or argument that cannot be honoured).
pub const EXIT_USAGE: i32 = 2;
/// Exit code for a construction that was read but breaks a rule of the problem.
pub const EXIT_INVALID: i32 = 3;
/// Exit code when the arena server could not be reached in time or gave an unusable answer.
pub const EXIT_REMOTE: i32 = 4;
/// Exit code of `milo arena pull` when every pulled entry is valid but some arena score disagrees
/// with the exact re-verification (an invalid entry gives [`EXIT_INVALID`] instead).
pub const EXIT_MISMATCH: i32 = 5;
/// Exit code for an input file that is missing, unreadable, malformed (bad JSON, TOML, gzip…) or
/// past its size cap (see [`crate::bounded_read`]).
pub const EXIT_INPUT: i32 = 6;
/// Exit code when a file or directory could not be written (full disk, permissions, a closed
/// directory…).
pub const EXIT_WRITE: i32 = 7;
/// Exit code when another process holds the lock of a run or benchmark directory.
pub const EXIT_BUSY: i32 = 8;
/// Exit code of `milo arena submit` when the arena's rules would
/// drop the construction (rejected by the threshold, or discarded behind our own entry): nothing
/// was sent. `--force` sends it anyway.
pub const EXIT_WOULD_BE_DROPPED: i32 = 9;
/// Exit code of `milo verify FILE --against RIVAL` when FILE is valid but does not beat RIVAL by
/// the problem's `min_improvement` (decided on exact values), so scripts can branch on it.
pub const EXIT_NOT_BETTER: i32 = 10;
/// Exit code of `milo arena submit` when the ledger records the construction as sent to this
/// server, or as possibly sent (an intent with no outcome, or a failure after the request went
/// out): nothing was sent. `--send-again` sends it.
pub const EXIT_HELD_BACK: i32 = 11;
/// Exit code of `milo campaign` when its search finished but offering or sending its best to
/// the arena failed (a refused key, a timeout, a rate limit past `--max-wait`, a submission
/// held back as possibly sent already), so that a script tells it from a finished campaign.
pub const EXIT_SUBMISSION_FAILED: i32 = 12;

/// A rule of a problem broken by a construction, with the first offending index and value.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{problem}: {rule}{}", location(*.index, .value.as_deref()))]
pub struct Violation {
    /// Slug of the problem whose rule is broken.
    pub problem: String,
    /// The rule, in words (e.g. "every value must be ≥ 0").
    pub rule: String,
    /// First offending index, if the rule is about one value.
    pub index: Option<usize>,
    /// The offending value as text (the JSON token or the float64), if any.
    pub value: Option<String>,
}

fn location(index: Option<usize>, value: Option<&str>) -> String {
    match (index, value) {
        (Some(i), Some(v)) => format!(" (first offending index {i}, value {v})"),
        (Some(i), None) => format!(" (first offending index {i})"),
        (None, Some(v)) => format!(" (value {v})"),
        (None, None) => String::new(),
    }
}

impl Violation {
    /// A violation of `rule` at `index` with the float64 `value`.
    pub fn at(problem: &str, rule: impl Into<String>, index: usize, value: f64) -> Violation {
        Violation {
            problem: problem.to_string(),
            rule: rule.into(),
            index: Some(index),
            value: Some(format_value(value)),
        }
    }

    /// A violation of a rule about the whole array (e.g. its sum).
    pub fn whole(problem: &str, rule: impl Into<String>, value: Option<String>) -> Violation {
        Violation {
            problem: problem.to_string(),
            rule: rule.into(),
            index: None,
            value,
        }
    }
}

/// Shortest round-trip text of a float64 (`NaN`, `Infinity`, `-Infinity` as Python writes them).
pub fn format_value(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        format!("{x:?}")
    }
}

/// Every failure the commands report.
#[derive(Debug, thiserror::Error)]
pub enum MiloError {
    /// The command line asks for something impossible (unknown problem, bad option value…).
    #[error("{0}")]
    Usage(String),
    /// A file could not be opened or read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A file or directory could not be created, written, synced or renamed into place.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// Another process holds a lock: a directory's (a second `evolve` or `bench` on one
    /// directory) or a run's (a second `optimize --resume` of one trace).
    #[error("{path} is held by another milo process{}; wait for it to end or stop it", holder(*.pid))]
    Busy {
        /// The lock file.
        path: PathBuf,
        /// The holder's process id, as it wrote it into the lock file (if readable).
        pid: Option<u32>,
    },
    /// A file was read but is not well-formed (bad JSON, bad gzip, bad TOML…) or is past its size
    /// cap.
    #[error("{path}: {message}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong, with line and column where known.
        message: String,
    },
    /// A submission held back: the ledger records the construction as sent, or possibly sent,
    /// to this server (the message says what to run).
    #[error("{0}")]
    HeldBack(String),
    /// The construction is not valid for the problem.
    #[error("invalid construction: {0}")]
    Invalid(#[from] Violation),
    /// The arena server could not be reached in time or gave an unusable answer (refused
    /// connection, timeout, HTTP error status, a response that is not the expected JSON).
    #[error("{url}: {message}")]
    Remote {
        /// The request's URL.
        url: String,
        /// What went wrong, naming the field or entry where the response is at fault.
        message: String,
    },
}

impl MiloError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            MiloError::Invalid(_) => EXIT_INVALID,
            MiloError::Remote { .. } => EXIT_REMOTE,
            MiloError::Usage(_) => EXIT_USAGE,
            MiloError::Io { .. } | MiloError::Malformed { .. } => EXIT_INPUT,
            MiloError::Write { .. } => EXIT_WRITE,
            MiloError::Busy { .. } => EXIT_BUSY,
            MiloError::HeldBack(_) => EXIT_HELD_BACK,
        }
    }

    /// A TOML file that does not parse, as one line: `PATH: line L, column C: what` (the
    /// `toml` crate's own message spans several lines around a source excerpt).
    pub fn malformed_toml(path: &Path, text: &str, error: &toml::de::Error) -> MiloError {
        let what = error
            .message()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        let what = quoted(&what);
        let message = match error.span() {
            Some(span) => {
                // An error at the end of the text is placed on its last line, as `toml` does.
                let end = text.len() - usize::from(text.ends_with('\n'));
                let before = &text[..span.start.min(end)];
                let line = before.matches('\n').count() + 1;
                let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
                let source: String = text
                    .lines()
                    .nth(line - 1)
                    .unwrap_or("")
                    .trim()
                    .chars()
                    .take(80)
                    .collect();
                format!("line {line}, column {column} (`{source}`): {what}")
            }
            None => what,
        };
        MiloError::Malformed {
            path: path.to_path_buf(),
            message,
        }
    }

    /// Whether this is a read of a file that does not exist (for callers to which a missing file
    /// means "nothing yet").
    pub fn is_missing_file(&self) -> bool {
        matches!(self, MiloError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

fn holder(pid: Option<u32>) -> String {
    pid.map(|p| format!(" (PID {p})")).unwrap_or_default()
}

/// Maps an I/O error while reading `path` to [`MiloError::Io`] ("cannot read PATH").
pub fn read_error(path: &Path) -> impl FnOnce(std::io::Error) -> MiloError + '_ {
    move |source| MiloError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Maps an I/O error while writing `path` to [`MiloError::Write`] ("cannot write PATH").
pub fn write_error(path: &Path) -> impl FnOnce(std::io::Error) -> MiloError + '_ {
    move |source| MiloError::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// Bytes of input text an error message quotes (see [`quoted`]).
pub const QUOTE_BYTES: usize = 400;

/// Bytes of an error line as printed: the safety net under [`quoted`] for text no quote site
/// cut (see [`clipped`]).
pub const LINE_BYTES: usize = 1000;

/// Input text (a value, a name, a parser's message quoting the input) as an error message quotes
/// it: [`clipped`] to [`QUOTE_BYTES`].
pub fn quoted(text: &str) -> String {
    clipped(text, QUOTE_BYTES)
}

/// `text` on one line (control characters escaped: a newline reads `\n`) and within `cap` bytes:
/// a longer text keeps its head and its tail, about `cap / 2` bytes each, cut at character
/// boundaries and joined by `…` (the tail of a parser's message says what was expected, and
/// where).
pub fn clipped(text: &str, cap: usize) -> String {
    if past(text.char_indices(), cap).is_none() {
        return shown(text);
    }
    let half = cap / 2;
    let head = past(text.char_indices(), half).map_or(0, |(at, _)| at);
    let tail =
        past(text.char_indices().rev(), half).map_or(text.len(), |(at, c)| at + c.len_utf8());
    format!("{}…{}", shown(&text[..head]), shown(&text[tail..]))
}

/// The first of `chars` (with its byte index) at which their [`shown`] text passes `cap` bytes.
fn past(mut chars: impl Iterator<Item = (usize, char)>, cap: usize) -> Option<(usize, char)> {
    let mut width = 0;
    chars.find(|&(_, c)| {
        width += shown_width(c);
        width > cap
    })
}

/// `text` with its control characters escaped.
fn shown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// The bytes `c` takes in [`shown`] text.
fn shown_width(c: char) -> usize {
    if c.is_control() {
        c.escape_default().len()
    } else {
        c.len_utf8()
    }
}

/// Result type of the crate's fallible operations.
pub type Result<T> = std::result::Result<T, MiloError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quote_keeps_head_and_tail_within_its_bytes_on_one_line() {
        assert_eq!(quoted("two\nlines"), "two\\nlines");
        let fits = "a".repeat(QUOTE_BYTES);
        assert_eq!(quoted(&fits), fits);
        // Two, three and four bytes a character, cut at boundaries within half the bytes a side.
        let half = QUOTE_BYTES / 2;
        let long = format!("{}\n{}", "é".repeat(1000), "ß".repeat(1000));
        let kept = |c: &str, n: usize| format!("{}…{}", c.repeat(n), c.repeat(n));
        assert_eq!(
            quoted(&long),
            format!("{}…{}", "é".repeat(half / 2), "ß".repeat(half / 2))
        );
        assert_eq!(quoted(&"あ".repeat(1000)), kept("あ", half / 3));
        assert_eq!(quoted(&"😀".repeat(1000)), kept("😀", half / 4));
        // A control character counts as its escape (`\u{1}`, 5 bytes).
        assert_eq!(quoted(&"\u{1}".repeat(1000)), kept("\\u{1}", half / 5));
        assert!(clipped(&"x".repeat(30 << 20), LINE_BYTES).len() <= LINE_BYTES + '…'.len_utf8());
    }
}
