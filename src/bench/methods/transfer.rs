//! Transfer: a harness or a program from any run, frozen and benchmarked on a suite of its own.
//!
//! - `harness:PATH`: the built-in writer under one frozen harness, a fresh sample of the tasks'
//!   seeds each step (best-of-n with a single harness);
//! - `program:PATH`: one program run unchanged on every search task (`stock` with the file's
//!   program in place of each task's own).
//!
//! When a benchmark starts, the file is frozen into its directory as
//! `methods/<kind>-<label>.toml` (label: the file's stem and 8 hex digits of its content hash)
//! with its [`Provenance`] beside it, and the method is named `<kind>:<label>`; a resumed
//! benchmark reads the frozen copy, whatever became of the file. With promotion on, each step
//! starts from the tasks' best constructions so far.

use super::log::{BaselineLog, StepRecord};
use super::promotion::CurrentStarts;
use super::{Method, RunContext};
use crate::agent::{BuiltinWriter, OptimizerWriter, VerbatimWriter};
use crate::bench::trajectory::Trajectory;
use crate::error::{write_error, MiloError, Result};
use crate::harness::{seed_harnesses, Harness};
use crate::program::Program;
use crate::search::lineage::{LineageRecord, LINEAGE_FILE};
use crate::suite::{Suite, Task};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a benchmark keeps its frozen transfer files.
pub const METHODS_DIR: &str = "methods";

/// What a transfer method runs.
#[derive(Clone, Debug)]
enum Frozen {
    Harness(Box<Harness>),
    Program(Program),
}

impl Frozen {
    fn kind(&self) -> &'static str {
        match self {
            Frozen::Harness(_) => "harness",
            Frozen::Program(_) => "program",
        }
    }

    fn text(&self) -> String {
        match self {
            Frozen::Harness(h) => h.to_toml(),
            Frozen::Program(p) => p.to_toml(),
        }
    }

    fn parse(kind: &str, text: &str, origin: &Path) -> Result<Frozen> {
        match kind {
            "harness" => Ok(Frozen::Harness(Box::new(Harness::parse(text, origin)?))),
            _ => Ok(Frozen::Program(Program::parse(text, origin)?)),
        }
    }
}

/// Where a frozen harness or program came from (`methods/<kind>-<label>.provenance.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The method's name (`harness:<label>` or `program:<label>`).
    pub method: String,
    /// The file as given.
    pub source: PathBuf,
    /// Sha256 of the frozen text.
    pub sha256: String,
    /// The run the file lies in (`RUN/harnesses/<hash>.toml`), when it does.
    pub source_run: Option<PathBuf>,
    /// That run's suite file.
    pub source_suite: Option<PathBuf>,
    /// That run's suite pin.
    pub source_suite_pin: Option<String>,
    /// Whether that suite shares a start (by content) with the benchmark's: in-distribution.
    /// Absent when the source suite is unknown or unreadable.
    pub in_distribution: Option<bool>,
}

/// Whether `name` asks for a transfer method (`harness:PATH` or `program:PATH`).
pub fn is_transfer(name: &str) -> bool {
    name.starts_with("harness:") || name.starts_with("program:")
}

/// Freezes the file a `harness:PATH` or `program:PATH` method names into `bench_dir` and returns
/// the method's frozen name; `target` is the benchmark's suite (for the in-distribution label).
pub fn freeze(spec: &str, bench_dir: &Path, target: &Suite) -> Result<String> {
    let (kind, path) = spec.split_once(':').expect("a transfer spec has a colon");
    let path = Path::new(path);
    let text = crate::bounded_read::read_text_capped(path, crate::bounded_read::CONFIG_CAP, kind)?;
    let frozen = Frozen::parse(kind, &text, path)?;
    let text = frozen.text();
    let sha256 = format!("{:x}", Sha256::digest(text.as_bytes()));
    let stem = path
        .file_stem()
        .map_or("file".into(), |s| s.to_string_lossy().into_owned());
    let stem: String = stem
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                true => c,
                false => '_',
            },
        )
        .take(40)
        .collect();
    let label = format!("{stem}-{}", &sha256[..8]);
    let name = format!("{kind}:{label}");
    let dir = bench_dir.join(METHODS_DIR);
    std::fs::create_dir_all(&dir).map_err(write_error(&dir))?;
    crate::atomic_file::write(&dir.join(format!("{kind}-{label}.toml")), text.as_bytes())?;
    let provenance = provenance(&name, path, sha256, target);
    let json = serde_json::to_string_pretty(&provenance).expect("provenance serialises");
    crate::atomic_file::write(
        &dir.join(format!("{kind}-{label}.provenance.json")),
        json.as_bytes(),
    )?;
    Ok(name)
}

/// The provenance of `path`: the run it lies in, that run's suite and pin, and whether that suite
/// shares a start with `target`.
fn provenance(name: &str, path: &Path, sha256: String, target: &Suite) -> Provenance {
    let run = path
        .parent()
        .filter(|p| p.file_name().is_some_and(|n| n == "harnesses"))
        .and_then(Path::parent)
        .filter(|run| run.join(LINEAGE_FILE).is_file());
    let started = run.and_then(|run| {
        let (records, _) =
            crate::records::read_records::<LineageRecord>(&run.join(LINEAGE_FILE)).ok()?;
        match records.into_iter().next()? {
            LineageRecord::Started(config) => Some(*config),
            _ => None,
        }
    });
    let source_suite = started.as_ref().map(|c| c.suite.clone());
    let in_distribution = source_suite
        .as_ref()
        .and_then(|s| Suite::load(s).ok())
        .map(|source| {
            source
                .starts
                .iter()
                .any(|s| target.starts.iter().any(|t| t.sha256 == s.sha256))
        });
    Provenance {
        method: name.to_string(),
        source: path.to_path_buf(),
        sha256,
        source_run: run.map(Path::to_path_buf),
        source_suite,
        source_suite_pin: started.and_then(|c| c.suite_pin),
        in_distribution,
    }
}

/// The provenance of every transfer method among `methods`, read from `bench_dir`.
pub fn provenances(methods: &[String], bench_dir: &Path) -> Vec<Provenance> {
    methods
        .iter()
        .filter(|m| is_transfer(m))
        .filter_map(|m| {
            let (kind, label) = m.split_once(':')?;
            let path = bench_dir
                .join(METHODS_DIR)
                .join(format!("{kind}-{label}.provenance.json"));
            serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
        })
        .collect()
}

/// A frozen transfer method.
pub struct Transfer {
    name: String,
    frozen: Frozen,
}

/// The frozen method called `name` (`harness:<label>` or `program:<label>`) of the benchmark
/// in `bench_dir`.
pub fn open(name: &str, bench_dir: &Path) -> Result<Transfer> {
    let (kind, label) = name.split_once(':').expect("a transfer name has a colon");
    let path = bench_dir
        .join(METHODS_DIR)
        .join(format!("{kind}-{label}.toml"));
    let text = crate::bounded_read::read_text_capped(&path, crate::bounded_read::CONFIG_CAP, kind)?;
    let frozen = Frozen::parse(kind, &text, &path)?;
    let sha256 = format!("{:x}", Sha256::digest(frozen.text().as_bytes()));
    if !label.ends_with(&sha256[..8]) {
        return Err(MiloError::Malformed {
            path,
            message: format!(
                "a frozen {kind} was edited: its name pins {label}, its content hashes to {}",
                &sha256[..8]
            ),
        });
    }
    Ok(Transfer {
        name: name.to_string(),
        frozen,
    })
}

impl Transfer {
    /// `tasks` with the frozen program in place of each task's own (a harness leaves them).
    fn with_program(&self, mut tasks: Vec<Task>) -> Vec<Task> {
        if let Frozen::Program(program) = &self.frozen {
            let program = Arc::new(program.clone());
            for task in &mut tasks {
                task.program = program.clone();
            }
        }
        tasks
    }

    /// The writer and the harness an evaluation runs with: the built-in writer under the frozen
    /// harness, or the verbatim writer (which ignores the harness) for a program.
    fn agent(&self) -> (&'static str, Harness) {
        match &self.frozen {
            Frozen::Harness(h) => (BuiltinWriter.name(), (**h).clone()),
            Frozen::Program(_) => (VerbatimWriter.name(), seed_harnesses().remove(0)),
        }
    }
}

impl Method for Transfer {
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&self, ctx: &RunContext) -> Result<Option<Trajectory>> {
        let mut log = BaselineLog::open(ctx.dir)?;
        let (writer, harness) = self.agent();
        let search = self.with_program(ctx.search_tasks());
        let mut current = CurrentStarts::rebuild(ctx, search, &log.steps)?;
        while log.cpu_seconds() < ctx.cpu_seconds {
            if ctx.cancel.is_cancelled() {
                return Ok(None);
            }
            let step = log.steps.len();
            let tasks = ctx.resampled(current.tasks().to_vec(), step);
            let Some((evaluation, discoveries)) =
                ctx.evaluate_with_discoveries(writer, &harness, &tasks, &[])?
            else {
                return Ok(None);
            };
            let promoted = match ctx.promote {
                true => current.promote(&discoveries)?,
                false => vec![],
            };
            log.step(StepRecord {
                index: step,
                island: 0,
                parent: None,
                candidate: self.frozen.kind().to_string(),
                program: None,
                origin: format!("sample {step}"),
                evaluation,
                at: 0.0,
                promoted,
            })?;
        }
        let validation = self.with_program(ctx.validation_tasks());
        let validated = log.validate_best(ctx.cpu_seconds, |_| {
            ctx.evaluate(writer, &harness, &validation, &[])
        })?;
        Ok(validated.then(|| log.trajectory()))
    }
}
