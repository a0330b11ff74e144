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

/// Writes a small third-problem suite with three starts (one held out) into `dir`.
pub fn tiny_suite(dir: &Path) -> PathBuf {
    let mut starts = String::new();
    for (label, phase, split) in [
        ("wave-a", 0.3, "search"),
        ("wave-b", 1.1, "search"),
        ("wave-c", 2.0, "validation"),
    ] {
        let values: Vec<f64> = (0..80)
            .map(|i| {
                let x = (i as f64 + 0.5) / 80.0;
                1.0 + 0.4 * (6.0 * x + phase).sin() - 0.3 * x
            })
            .collect();
        let path = dir.join(format!("{label}.json"));
        std::fs::write(&path, serde_json::json!({ "values": values }).to_string()).unwrap();
        let sha = milo::suite::sha256_hex(&std::fs::read(&path).unwrap());
        starts.push_str(&format!(
            "\n[[starts]]\nlabel = \"{label}\"\npath = \"{label}.json\"\nsha256 = \"{sha}\"\nsplit = \"{split}\"\n"
        ));
    }
    std::fs::write(
        dir.join("polish.toml"),
        "name = \"polish\"\n\n[[steps]]\nkind = \"lbfgs\"\nparameterisation = \"raw\"\n\
         betas = [1e3, 1e5, 1e7]\nhistory = 20\niterations = 100\n\n[[steps]]\nkind = \"finalize\"\n",
    )
    .unwrap();
    let suite = dir.join("tiny.toml");
    std::fs::write(
        &suite,
        format!(
            "name = \"tiny\"\nproblem = \"third-autocorrelation-inequality\"\n\
             programs = [\"polish.toml\"]\nseeds = [1, 2]\nvalidation_seeds = [3]\n\n\
             [budget]\nevaluations = 150\n{starts}"
        ),
    )
    .unwrap();
    suite
}

/// The records of a JSON-lines file with the measured (machine-dependent) fields removed:
/// `cpu_seconds`, `wall_seconds` and `at`, at every depth.
pub fn comparable_lines(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .map(|line| {
            let mut record: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}: not a JSON line ({e}): {line}", path.display()));
            scrub(&mut record);
            record
        })
        .collect()
}

/// A run's lineage records, measured fields removed (see [`comparable_lines`]).
pub fn comparable_records(run_dir: &Path) -> Vec<serde_json::Value> {
    comparable_lines(&run_dir.join("lineage.jsonl"))
}

fn scrub(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.remove("cpu_seconds");
            map.remove("wall_seconds");
            map.remove("at");
            map.values_mut().for_each(scrub);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(scrub),
        _ => {}
    }
}

/// Node records in a run's lineage so far (0 when it does not exist yet).
pub fn node_lines(run_dir: &Path) -> usize {
    std::fs::read_to_string(run_dir.join("lineage.jsonl"))
        .map(|t| {
            t.lines()
                .filter(|l| l.contains("\"record\":\"node\""))
                .count()
        })
        .unwrap_or(0)
}
