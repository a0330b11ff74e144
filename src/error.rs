//! Errors and the exit codes they map to.
//!
//! Two kinds of failure matter to a user: the input could not be read at all (usage errors, missing
//! or malformed files: exit 2), or it was read but is not a valid construction for the problem
//! (NaN, a forbidden negative value, too many values…: exit 3). Every message names the rule and,
//! where there is one, the first offending index and value. Talking to the arena adds exit 4 (server
//! unreachable or unusable answer) and exit 5 (a pulled entry's arena score disagrees with ours).

use std::path::PathBuf;

/// Exit code for a valid construction (and successful commands).
pub const EXIT_OK: i32 = 0;
/// Exit code for usage errors and unreadable files.
pub const EXIT_USAGE: i32 = 2;
/// Exit code for a construction that was read but breaks a rule of the problem.
pub const EXIT_INVALID: i32 = 3;
/// Exit code when the arena server could not be reached in time or gave an unusable answer.
pub const EXIT_REMOTE: i32 = 4;
/// Exit code of `milo arena pull` when every pulled entry is valid but some arena score disagrees
/// with the exact re-verification (an invalid entry gives [`EXIT_INVALID`] instead).
pub const EXIT_MISMATCH: i32 = 5;
/// Exit code of `milo arena submit` (and of a campaign's submission) when the arena's rules would
/// drop the construction (rejected by the threshold, or discarded behind our own entry): nothing
/// was sent. `--force` sends it anyway.
pub const EXIT_WOULD_BE_DROPPED: i32 = 9;

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
    /// A file was read but is not well-formed (bad JSON, bad gzip, bad TOML…).
    #[error("{path}: {message}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong, with line and column where known.
        message: String,
    },
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
            MiloError::Usage(_) | MiloError::Io { .. } | MiloError::Malformed { .. } => EXIT_USAGE,
        }
    }
}

/// Result type of the crate's fallible operations.
pub type Result<T> = std::result::Result<T, MiloError>;
