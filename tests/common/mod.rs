//! Shared helpers of the integration tests: the binary, the arena folder, the Python references.
#![allow(dead_code)]

pub mod local_model;

use milo::bench::results::{
    Batch, BenchResults, CurvePoint, Interval, LadderRung, MethodSummary, PairVerdict, RunSummary,
};
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

/// Runs the `milo` binary with arguments and extra environment variables, killed if it has not
/// ended within `limit` (then `None`).
pub fn milo_within(args: &[&str], env: &[(&str, &str)], limit: std::time::Duration) -> Option<Run> {
    let child = Command::new(env!("CARGO_BIN_EXE_milo"))
        .args(args)
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("milo runs");
    finish_within(child, limit)
}

/// Waits for `child` (its output piped) to end, killed if it has not ended within `limit`
/// (then `None`).
pub fn finish_within(mut child: std::process::Child, limit: std::time::Duration) -> Option<Run> {
    let started = std::time::Instant::now();
    while child.try_wait().expect("milo can be waited for").is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("milo's output");
    Some(Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
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
    suite_of_starts(dir, 80)
}

/// [`tiny_suite`] with starts of `len` values each (the tiny suite's are 80).
pub fn suite_of_starts(dir: &Path, len: usize) -> PathBuf {
    let mut starts = String::new();
    for (label, phase, split) in [
        ("wave-a", 0.3, "search"),
        ("wave-b", 1.1, "search"),
        ("wave-c", 2.0, "validation"),
    ] {
        let values: Vec<f64> = (0..len)
            .map(|i| {
                let x = (i as f64 + 0.5) / len as f64;
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

/// The first harness file a run stored under `run_dir/harnesses/`.
pub fn first_harness(run_dir: &Path) -> PathBuf {
    std::fs::read_dir(run_dir.join("harnesses"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
}

/// Runs `milo evolve` on the tiny suite (written into `dir`) in `run_dir` with `settings`
/// (islands, rounds, …) and asserts it succeeded.
pub fn evolve_tiny(dir: &Path, run_dir: &Path, settings: &[&str]) -> Run {
    let suite = tiny_suite(dir);
    let mut args = vec![
        "evolve",
        "--suite",
        suite.to_str().unwrap(),
        "--run-dir",
        run_dir.to_str().unwrap(),
    ];
    args.extend_from_slice(settings);
    let run = milo(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run
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

/// An interval of `mean` ± `spread` over `n` runs.
fn interval(mean: f64, spread: f64, n: usize) -> Interval {
    Interval {
        n,
        mean,
        low: mean - spread,
        high: mean + spread,
    }
}

/// A run whose best-so-far curve falls towards `best` over six steps.
fn run_summary(method: &str, seed: u64, batch: Batch, best: f64) -> RunSummary {
    let curve: Vec<CurvePoint> = (0..6)
        .map(|i| CurvePoint {
            cpu_seconds: i as f64 * 1.5,
            wall_seconds: i as f64,
            best: best + 0.01 / (1.0 + i as f64),
        })
        .collect();
    RunSummary {
        method: method.into(),
        seed,
        batch,
        dir: format!("{method}-s{seed}"),
        cpu_seconds: 7.5,
        process_cpu_seconds: Some(9.0),
        wall_seconds: 5.0,
        steps: curve.len(),
        counted_steps: curve.len(),
        best_exact: format!("{best}"),
        best,
        quality: 3.25,
        validation_best_exact: None,
        validation_best: None,
        validation_quality: Some(1.5),
        curve,
    }
}

/// A benchmark's results made up for the report tests: two methods, two seeds each, a re-run.
pub fn synthetic_bench_results() -> BenchResults {
    let methods = ["milo", "random-restarts"];
    let summaries: Vec<MethodSummary> = methods
        .iter()
        .enumerate()
        .map(|(k, m)| MethodSummary {
            method: m.to_string(),
            best: interval(1.4551234567891 + k as f64 * 1e-3, 2.5e-4, 2),
            quality: interval(7.123456789 - k as f64, 0.75, 2),
            rerun_best: Some(interval(1.4552 + k as f64 * 1e-3, 1e-4, 2)),
            validation_best: None,
            validation_quality: Some(interval(2.0, 0.5, 4)),
            null_band: 3.1e-4,
            rerun_null_band: Some(2.2e-4),
        })
        .collect();
    let mut runs = Vec::new();
    for (k, m) in methods.iter().enumerate() {
        for seed in 1..=2 {
            let base = 1.455 + k as f64 * 1e-3 + seed as f64 * 1e-4;
            runs.push(run_summary(m, seed, Batch::First, base));
            runs.push(run_summary(m, seed + 10, Batch::Rerun, base + 5e-5));
        }
    }
    BenchResults {
        problem: "third-autocorrelation-inequality".into(),
        direction: "minimize".into(),
        suite: "problems/suites/default.toml".into(),
        cpu_seconds: 7.5,
        arena_first: Some(1.4508066),
        methods: summaries,
        runs,
        verdicts: vec![PairVerdict {
            a: "milo".into(),
            b: "random-restarts".into(),
            advantage: 1e-3,
            null_band: 3.1e-4,
            rerun_advantage: Some(9e-4),
            rerun_null_band: Some(2.2e-4),
            verdict: "a better".into(),
        }],
        ladder: vec![
            LadderRung {
                label: "arena #1".into(),
                method: false,
                value: 1.4508066,
            },
            LadderRung {
                label: "milo".into(),
                method: true,
                value: 1.4551234567891,
            },
            LadderRung {
                label: "random-restarts".into(),
                method: true,
                value: 1.4561234567891,
            },
        ],
        transfers: vec![],
    }
}

/// Processes whose command line holds `marker` (zombies have none).
pub fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(marker) {
                found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

/// Proptest strategies for constructions, shared by the property tests and the GMP tests.
pub mod strategies {
    use proptest::prelude::*;

    /// A float64 of magnitude anywhere in [1e-300, 1e300] (or a subnormal, or zero), sign as asked.
    pub fn wide_value(signed: bool) -> impl Strategy<Value = f64> {
        let magnitude = prop_oneof![
            8 => (-300i32..300, 1.0f64..10.0).prop_map(|(e, m)| m * 10f64.powi(e)),
            1 => (1u64..1 << 52).prop_map(f64::from_bits),
            1 => Just(0.0),
        ];
        (magnitude, any::<bool>())
            .prop_map(move |(m, negative)| if signed && negative { -m } else { m })
    }

    /// Values of ordinary size, [0, 1), with some exact zeros.
    pub fn unit_values(len: std::ops::Range<usize>) -> impl Strategy<Value = Vec<f64>> {
        prop::collection::vec(prop_oneof![9 => 0.0f64..1.0, 1 => Just(0.0)], len)
            .prop_filter("some positive value", |v| v.iter().any(|&x| x > 0.0))
    }
}
