//! Task suites: a TOML file (`problems/suites/*.toml`) that freezes what the search is scored on
//! for one problem — start constructions pinned by sha256, parent optimizer programs, seeds, a
//! per-task budget, a search/validation split and the record a discovery must beat.
//!
//! Tasks are the product starts × programs × seeds, with ids `<start-label>/<program-name>/s<seed>`.
//! A task is a validation task when its start is held out (`split = "validation"`) or its seed is
//! one of `validation_seeds`; every other task is a search task. Loading checks everything: unknown
//! keys, the split (both sides non-empty, disjoint seeds), every start's sha256 (a changed file is
//! an error, not a silent re-scoring) and its exact score.
//!
//! ```toml
//! name = "default"
//! problem = "third-autocorrelation-inequality"
//! programs = ["../optimizers/third-autocorrelation-inequality.default.toml"]
//! seeds = [1, 2]
//! validation_seeds = [3]          # optional
//! record = "1.5"                  # optional; default: the best start
//!
//! [budget]                        # seconds and/or evaluations
//! evaluations = 50000
//!
//! [[starts]]
//! label = "arcsine"
//! path = "../../constructions/third-autocorrelation-inequality/capped-arcsine-400.json"
//! sha256 = "…64 hex digits…"
//! split = "search"                # or "validation" (default "search")
//! ```

pub mod embedded;
pub mod freeze;

use crate::bounded_read::{
    read_bytes_capped, read_text_capped, require_file, CONFIG_CAP, CONSTRUCTION_CAP,
};
use crate::cancel::CancelToken;
use crate::construction::read_values;
use crate::error::{MiloError, Result};
use crate::exact::rational::parse_decimal;
use crate::optimize::budget::check_seconds;
use crate::problems::{by_slug, Problem};
use crate::program::Program;
use crate::runner::RunSettings;
use crate::tally::Tally;
use crate::verify::{verify, Mode, Options};
use num_rational::BigRational;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The budget of one task run: wall-clock seconds and/or objective evaluations (at least one;
/// an evaluation budget alone makes a task run reproducible bit for bit).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskBudget {
    /// Wall-clock limit in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// Limit on objective evaluations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluations: Option<u64>,
}

impl TaskBudget {
    /// The budget in words: "30 s", "20000 evaluations" or "30 s and 20000 evaluations".
    pub fn text(&self) -> String {
        let seconds = self.seconds.map(|s| format!("{s} s"));
        let evaluations = self.evaluations.map(|e| format!("{e} evaluations"));
        let parts: Vec<String> = seconds.into_iter().chain(evaluations).collect();
        parts.join(" and ")
    }

    /// Checks that at least one limit is given and each is positive; the message names the key.
    pub fn check(&self) -> std::result::Result<(), String> {
        if self.seconds.is_none() && self.evaluations.is_none() {
            return Err("budget: give `seconds` and/or `evaluations`".into());
        }
        if let Some(s) = self.seconds {
            check_seconds("budget.seconds", s)?;
        }
        if self.evaluations == Some(0) {
            return Err("budget.evaluations: must be at least 1".into());
        }
        Ok(())
    }
}

/// Which side of the split a start or a task is on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    /// Seen by the search (its mutators and its scoring).
    #[default]
    Search,
    /// Held out: used only to validate what the search found, never shown to mutators.
    Validation,
}

impl Split {
    /// The name used in suite files and reports (`search`, `validation`).
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Search => "search",
            Split::Validation => "validation",
        }
    }
}

/// One start construction as written in a suite file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartEntry {
    /// Short name, unique in the suite, used in task ids (no `/` or whitespace).
    pub label: String,
    /// The construction file, relative to the suite file.
    pub path: String,
    /// The sha256 of the file's bytes, 64 lowercase hex digits.
    pub sha256: String,
    /// Whether the start's tasks are search or validation tasks.
    #[serde(default)]
    pub split: Split,
}

/// A suite file as written (before its files are read and checked); see the module docs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteFile {
    /// Short name of the suite.
    pub name: String,
    /// What the suite is for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The problem's slug.
    pub problem: String,
    /// The score a discovery must beat, as a decimal; default: the best start's exact score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
    /// Parent optimizer program files, relative to the suite file.
    pub programs: Vec<String>,
    /// Seeds of the search tasks (of validation starts' tasks too).
    pub seeds: Vec<u64>,
    /// Extra seeds whose tasks are validation tasks, on every start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub validation_seeds: Vec<u64>,
    /// Budget of each task run.
    pub budget: TaskBudget,
    /// The start constructions.
    pub starts: Vec<StartEntry>,
}

impl SuiteFile {
    /// Checks what needs no file reading: budget, seeds, labels, hashes, the split. The message
    /// names the offending key.
    pub fn check(&self) -> std::result::Result<(), String> {
        self.budget.check()?;
        if self.programs.is_empty() {
            return Err("programs: a suite needs at least one program".into());
        }
        if self.seeds.is_empty() {
            return Err("seeds: a suite needs at least one seed".into());
        }
        let mut seen = HashSet::new();
        for (key, seeds) in [
            ("seeds", &self.seeds),
            ("validation_seeds", &self.validation_seeds),
        ] {
            for seed in seeds {
                if !seen.insert(*seed) {
                    return Err(format!(
                        "{key}: seed {seed} appears twice (seeds and validation_seeds must be distinct)"
                    ));
                }
            }
        }
        if self.starts.is_empty() {
            return Err("starts: a suite needs at least one start".into());
        }
        let mut labels = HashSet::new();
        for (i, start) in self.starts.iter().enumerate() {
            let label = &start.label;
            if label.is_empty() || label.contains('/') || label.contains(char::is_whitespace) {
                return Err(format!(
                    "starts[{i}].label: '{label}' must be non-empty, without '/' or whitespace"
                ));
            }
            if !labels.insert(label.as_str()) {
                return Err(format!("starts[{i}].label: '{label}' is used twice"));
            }
            let hex = &start.sha256;
            if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
                return Err(format!(
                    "starts[{i}].sha256: '{hex}' is not 64 lowercase hex digits"
                ));
            }
        }
        let searched = self.starts.iter().any(|s| s.split == Split::Search);
        if !searched {
            return Err("starts.split: every start is held out for validation; the search needs at least one start with split = \"search\"".into());
        }
        let validated = !self.validation_seeds.is_empty()
            || self.starts.iter().any(|s| s.split == Split::Validation);
        if !validated {
            return Err("validation_seeds / starts.split: the suite has no validation tasks; give validation_seeds or hold out a start with split = \"validation\"".into());
        }
        Ok(())
    }
}

/// A verified start construction.
#[derive(Clone, Debug)]
pub struct Start {
    /// Short name, unique in the suite.
    pub label: String,
    /// The file (the suite file's folder joined with the relative path written in it).
    pub path: PathBuf,
    /// The sha256 of the file's bytes (checked against the pinned value).
    pub sha256: String,
    /// Whether the start is held out for validation.
    pub split: Split,
    /// The construction's values.
    pub values: Arc<Vec<f64>>,
    /// Its exact score.
    pub exact: BigRational,
}

/// One task: improve a start with a parent program under a seed and a budget.
#[derive(Clone, Debug)]
pub struct Task {
    /// `<start-label>/<program-name>/s<seed>`, unique in the suite.
    pub id: String,
    /// Search or validation.
    pub split: Split,
    /// The start construction.
    pub start: Arc<Start>,
    /// The program file (the suite file's folder joined with the relative path written in it).
    pub program_path: PathBuf,
    /// The parent optimizer program.
    pub program: Arc<Program>,
    /// Seed of the run.
    pub seed: u64,
    /// Budget of the run.
    pub budget: TaskBudget,
}

impl Task {
    /// The CPU this task's run takes relative to other tasks of its suite, for estimates: with an
    /// evaluation limit, evaluations cost about `n·log₂n` each (`n` the start's length); with
    /// only a clock limit, its seconds.
    pub fn relative_cost(&self) -> f64 {
        match (self.budget.evaluations, self.budget.seconds) {
            (Some(evaluations), _) => {
                let n = self.start.values.len().max(2) as f64;
                evaluations as f64 * n * n.log2()
            }
            (None, seconds) => seconds.unwrap_or(0.0),
        }
    }

    /// The runner settings of this task's run with one thread, cancelled by `cancel`.
    pub fn run_settings(&self, cancel: CancelToken) -> RunSettings {
        RunSettings {
            seed: self.seed,
            seconds: self.budget.seconds,
            evaluations: self.budget.evaluations,
            jobs: 1,
            cancel,
            spent: Tally::default(),
        }
    }
}

/// A loaded and verified suite. `tasks` is plain data: a caller may replace it by a subset (e.g.
/// a curriculum of search tasks).
pub struct Suite {
    /// Short name.
    pub name: String,
    /// What the suite is for.
    pub description: String,
    /// The suite file.
    pub path: PathBuf,
    /// The problem.
    pub problem: Box<dyn Problem>,
    /// Budget of each task.
    pub budget: TaskBudget,
    /// The exact score a discovery must beat.
    pub record: BigRational,
    /// Whether `record` was given in the file (otherwise it is the best start's score).
    pub record_given: bool,
    /// The starts, in file order (search and validation).
    pub starts: Vec<Arc<Start>>,
    /// Every task: starts × programs × seeds (then validation seeds), in that nesting order.
    pub tasks: Vec<Task>,
    /// sha256 of the suite's text and its programs (the starts are pinned in the text): a run
    /// records it and refuses to resume on a suite that changed.
    pub pin: String,
}

impl Suite {
    /// Checks that the suite is the one a run or benchmark started with (`recorded`: the pin it
    /// recorded; `None` for records older than pins, taken as they are).
    pub fn check_pin(&self, recorded: Option<&str>) -> Result<()> {
        match recorded {
            Some(pin) if pin != self.pin => Err(MiloError::Malformed {
                path: self.path.clone(),
                message: format!(
                    "the suite or one of its programs changed since the run started (pinned sha256 {pin}, now {}); restore it, or start a new run",
                    self.pin
                ),
            }),
            _ => Ok(()),
        }
    }

    /// Reads (at most [`CONFIG_CAP`] bytes), checks and verifies a suite file.
    pub fn load(path: &Path) -> Result<Suite> {
        require_file(path, "a suite")?;
        let text = read_text_capped(path, CONFIG_CAP, "suite")?;
        Suite::parse(&text, path)
    }

    /// Checks and verifies a suite's TOML text as if it were the file at `path` (relative paths
    /// are resolved from its folder; errors name it).
    pub fn parse(text: &str, path: &Path) -> Result<Suite> {
        let malformed = |message: String| MiloError::Malformed {
            path: path.to_path_buf(),
            message,
        };
        let file: SuiteFile =
            toml::from_str(text).map_err(|e| MiloError::malformed_toml(path, text, &e))?;
        file.check().map_err(malformed)?;
        let problem = by_slug(&file.problem).map_err(|e| malformed(format!("problem: {e}")))?;
        let dir = path.parent().unwrap_or(Path::new(""));
        let programs = load_programs(&file.programs, dir, path)?;
        let starts = load_starts(&file.starts, dir, path, problem.as_ref())?;
        let best = best_of(problem.as_ref(), &starts);
        let record = match &file.record {
            Some(text) => parse_decimal(text)
                .ok_or_else(|| malformed(format!("record: '{text}' is not a decimal number")))?,
            None => best.exact.clone(),
        };
        let budget = file.budget;
        let mut pinned = text.to_string();
        for (_, program) in &programs {
            pinned.push('\n');
            pinned.push_str(&program.to_toml());
        }
        let pin = sha256_hex(pinned.as_bytes());
        let mut tasks = Vec::new();
        for start in &starts {
            for (program_path, program) in &programs {
                let seeds = file.seeds.iter().map(|s| (*s, start.split));
                let held_out = file
                    .validation_seeds
                    .iter()
                    .map(|s| (*s, Split::Validation));
                for (seed, split) in seeds.chain(held_out) {
                    tasks.push(Task {
                        id: format!("{}/{}/s{seed}", start.label, program.name),
                        split,
                        start: Arc::clone(start),
                        program_path: program_path.clone(),
                        program: Arc::clone(program),
                        seed,
                        budget,
                    });
                }
            }
        }
        Ok(Suite {
            name: file.name,
            description: file.description,
            path: path.to_path_buf(),
            problem,
            budget,
            record,
            record_given: file.record.is_some(),
            starts,
            tasks,
            pin,
        })
    }

    /// This suite with every task's evaluation budget set to `evaluations` (a run's override
    /// of the frozen budget, e.g. `milo evolve --task-evaluations`); a seconds limit stays.
    pub fn with_task_evaluations(mut self, evaluations: u64) -> Suite {
        self.budget.evaluations = Some(evaluations);
        for task in &mut self.tasks {
            task.budget.evaluations = Some(evaluations);
        }
        self
    }

    /// The tasks the search sees.
    pub fn search_tasks(&self) -> impl Iterator<Item = &Task> {
        self.tasks.iter().filter(|t| t.split == Split::Search)
    }

    /// The held-out tasks (never shown to mutators).
    pub fn validation_tasks(&self) -> impl Iterator<Item = &Task> {
        self.tasks.iter().filter(|t| t.split == Split::Validation)
    }

    /// The task with this id.
    pub fn task(&self, id: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id == id)
    }

    /// The start with the best exact score in the problem's direction, over all starts (search
    /// and validation; the first in file order on ties).
    pub fn best_start(&self) -> &Start {
        best_of(self.problem.as_ref(), &self.starts)
    }
}

/// The sha256 of bytes as 64 lowercase hex digits.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn best_of<'a>(problem: &dyn Problem, starts: &'a [Arc<Start>]) -> &'a Start {
    let direction = problem.spec().direction;
    starts
        .iter()
        .reduce(|best, s| {
            if direction.better(&s.exact, &best.exact) {
                s
            } else {
                best
            }
        })
        .expect("a checked suite has at least one start")
}

/// Loads the programs; two programs with one name would give clashing task ids.
fn load_programs(
    paths: &[String],
    dir: &Path,
    suite: &Path,
) -> Result<Vec<(PathBuf, Arc<Program>)>> {
    let mut programs: Vec<(PathBuf, Arc<Program>)> = Vec::new();
    for (i, relative) in paths.iter().enumerate() {
        let path = dir.join(relative);
        require_file(&path, "a suite's program")?;
        let program = Program::load(&path)?;
        if let Some((other, _)) = programs.iter().find(|(_, p)| p.name == program.name) {
            return Err(MiloError::Malformed {
                path: suite.to_path_buf(),
                message: format!(
                    "programs[{i}]: {} is named '{}' like {}; task ids need distinct program names",
                    path.display(),
                    program.name,
                    other.display()
                ),
            });
        }
        programs.push((path, Arc::new(program)));
    }
    Ok(programs)
}

/// Reads, hash-checks and exactly verifies every start (in parallel; the first error in file
/// order is reported).
fn load_starts(
    entries: &[StartEntry],
    dir: &Path,
    suite: &Path,
    problem: &dyn Problem,
) -> Result<Vec<Arc<Start>>> {
    let loaded: Vec<Result<Start>> = entries
        .par_iter()
        .map(|entry| load_start(entry, dir, suite, problem))
        .collect();
    loaded
        .into_iter()
        .map(|start| start.map(Arc::new))
        .collect()
}

fn load_start(
    entry: &StartEntry,
    dir: &Path,
    suite: &Path,
    problem: &dyn Problem,
) -> Result<Start> {
    let path = dir.join(&entry.path);
    require_file(&path, "a suite's start")?;
    let sha256 = sha256_hex(&read_bytes_capped(
        &path,
        CONSTRUCTION_CAP,
        "start construction",
    )?);
    if sha256 != entry.sha256 {
        return Err(MiloError::Malformed {
            path: path.clone(),
            message: format!(
                "sha256 mismatch for start '{}': {} pins {} but the file's sha256 is {}; the start changed (freeze the suite again if that is intended)",
                entry.label,
                suite.display(),
                entry.sha256,
                sha256
            ),
        });
    }
    let not_valid = |why: String| MiloError::Malformed {
        path: path.clone(),
        message: format!(
            "start '{}' of {} is not a valid {} construction: {why}",
            entry.label,
            suite.display(),
            problem.slug()
        ),
    };
    let values = read_values(&path).map_err(|e| match e {
        MiloError::Invalid(violation) => not_valid(violation.to_string()),
        other => other,
    })?;
    let options = Options {
        mode: Mode::Exact,
        allow_oversize: false,
    };
    let verification = verify(problem, &values, options).map_err(|v| not_valid(v.to_string()))?;
    Ok(Start {
        label: entry.label.clone(),
        path,
        sha256,
        split: entry.split,
        values: Arc::new(values),
        exact: verification
            .exact
            .expect("exact mode computes the exact score"),
    })
}

#[cfg(test)]
mod tests;
