//! Hostile inputs and faults (issue 17): one-line errors naming the rule and the value, distinct
//! exit codes, never a panic, never a half-written or silently replaced file.

mod common;
use common::{milo, Run};
use milo::error::EXIT_USAGE;

const FIRST: &str = "first-autocorrelation-inequality";

/// Asserts `run` failed with `code` on one stderr line holding every needle, without a panic.
fn expect_failure(run: &Run, code: i32, needles: &[&str]) {
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert_eq!(
        run.code, code,
        "stdout {} stderr {}",
        run.stdout, run.stderr
    );
    let line = run.stderr.trim();
    assert_eq!(line.lines().count(), 1, "one line: {line}");
    for needle in needles {
        assert!(line.contains(needle), "'{line}' lacks '{needle}'");
    }
}

#[test]
fn a_duplicate_key_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("twice.json");
    // milo used to take the first (score 2.0), Python the last (1.5431).
    std::fs::write(&path, r#"{"values": [1, 1], "values": [1, 2, 0.5]}"#).unwrap();
    let run = milo(&["verify", FIRST, path.to_str().unwrap()]);
    expect_failure(
        &run,
        EXIT_USAGE,
        &["duplicate key \"values\"", "twice.json"],
    );
}
