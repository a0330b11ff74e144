//! Shared helpers of the integration tests: the binary, the arena folder, the Python references.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Project root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `../shared/arena` beside the project, or `None` with a skip note on stderr.
pub fn arena_dir(test: &str) -> Option<PathBuf> {
    let dir = root().join("../shared/arena");
    if dir.join("MANIFEST.json").is_file() {
        Some(dir)
    } else {
        eprintln!("SKIP {test}: ../shared/arena is absent (no frozen leaderboard constructions)");
        None
    }
}

/// One entry of `../shared/arena/MANIFEST.json`.
pub struct ArenaEntry {
    pub problem: String,
    pub path: PathBuf,
    pub n: usize,
    pub arena_score_numpy: f64,
}

/// The manifest's entries with absolute paths.
pub fn arena_entries(arena: &Path) -> Vec<ArenaEntry> {
    let text = std::fs::read_to_string(arena.join("MANIFEST.json")).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(&text).unwrap();
    manifest
        .as_array()
        .unwrap()
        .iter()
        .map(|e| ArenaEntry {
            problem: e["problem"].as_str().unwrap().to_string(),
            path: arena.join("..").join(e["file"].as_str().unwrap()),
            n: e["n"].as_u64().unwrap() as usize,
            arena_score_numpy: e["arena_score_numpy"].as_f64().unwrap(),
        })
        .collect()
}

/// Output of one `milo` run.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Stdout parsed as one JSON object.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", self.stdout, self.stderr))
    }
}

/// Runs the `milo` binary with arguments.
pub fn milo(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_milo"))
        .args(args)
        .output()
        .expect("milo runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Whether python3 with numpy (and scipy) can run the reference scripts; a skip note otherwise.
pub fn python_ready(test: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import numpy, scipy"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("SKIP {test}: python3 with numpy and scipy is not available");
    }
    ok
}

/// Runs a script of `verifiers/` and parses its JSON line.
pub fn python_reference(script: &str, args: &[&str]) -> serde_json::Value {
    let out = Command::new("python3")
        .arg(root().join("verifiers").join(script))
        .args(args)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
