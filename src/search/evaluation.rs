//! Evaluation of a harness: an optimizer-writing agent (chosen by name) runs under it on every
//! task, `attempts` times each, as [`AttemptTask`]s handed to an [`Executor`].
//!
//! Per task: start and end exact scores, the gain in units of the problem's `min_improvement`
//! (0 without a valid improvement), objective evaluations, CPU and wall seconds. The fitness
//! vector is quality (best or mean gain), cost and latency; the per-task gains are kept for
//! behavioural similarity and the curriculum. Each task's best improved construction is returned
//! as an [`Improvement`]; the search saves those that beat the run's best, and those beyond
//! the suite's record as discoveries.

use super::hypervolume::Fitness;
use crate::agent::{no_usage, Attempt};
use crate::cancel::CancelToken;
use crate::error::Result;
use crate::exact::rational::{decimal_string, to_f64};
use crate::executor::{AttemptTask, Executor};
use crate::harness::{Evidence, Harness};
use crate::llm::{AgentsConfig, Usage};
use crate::problems::Problem;
use crate::program::Program;
use crate::runner::derive_seed;
use crate::suite::{Split, Task};
use crate::tally::TaskTally;
use num_rational::BigRational;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::time::Instant;

/// How the quality of a harness aggregates its per-task gains.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Quality {
    /// The best gain over the tasks (a harness that makes one record counts).
    Best,
    /// The mean gain over the tasks.
    Mean,
}

/// What the cost and latency objectives measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CostMeasure {
    /// CPU seconds summed over tasks (cost) and wall seconds of the evaluation (latency).
    Measured,
    /// Work in millions of cell-evaluations (objective evaluations times the construction's
    /// size): summed over tasks (cost) and the largest single task (latency, the critical path
    /// when tasks run in parallel). Machine-independent, so reproducible bit for bit.
    Counted,
    /// Prompt plus completion tokens a writer spent asking language models: summed over tasks
    /// (cost) and the largest single task (latency: a task's requests are sequential, tasks run
    /// in parallel, and tokens stand in for the time a model takes). The default for the LLM
    /// writer.
    Tokens,
}

impl CostMeasure {
    /// The unit of a cost (a fitness's `cost`, a task's cost) in this measure.
    pub fn cost_unit(self) -> &'static str {
        match self {
            CostMeasure::Measured => "CPU s",
            CostMeasure::Counted => "M cell-evaluations",
            CostMeasure::Tokens => "tokens",
        }
    }

    /// What cost and latency mean in this measure, in plain words.
    pub fn description(self) -> &'static str {
        match self {
            CostMeasure::Measured => {
                "cost is CPU seconds summed over the tasks, latency the evaluation's wall seconds"
            }
            CostMeasure::Counted => {
                "cost is millions of cell-evaluations (evaluations × length) summed over the \
                 tasks, latency the largest task's"
            }
            CostMeasure::Tokens => {
                "cost is language-model tokens summed over the tasks, latency the largest task's"
            }
        }
    }

    /// The unit of a latency (a fitness's `latency`) in this measure.
    pub fn latency_unit(self) -> &'static str {
        match self {
            CostMeasure::Measured => "wall s",
            CostMeasure::Counted => "M cell-evaluations",
            CostMeasure::Tokens => "tokens",
        }
    }

    /// The cost and latency of `fitness` with their units, e.g. `cost 1.2345 M
    /// cell-evaluations, latency 0.4000 M cell-evaluations` or `cost 1.2345 CPU s, latency
    /// 0.8000 wall s`.
    pub fn fitness_text(self, fitness: &Fitness) -> String {
        format!(
            "cost {:.4} {}, latency {:.4} {}",
            fitness.cost,
            self.cost_unit(),
            fitness.latency,
            self.latency_unit()
        )
    }

    /// A task's cost in this measure's unit.
    pub fn task_cost(self, task: &TaskResult) -> f64 {
        match self {
            CostMeasure::Measured => task.cpu_seconds,
            CostMeasure::Counted => task.work / 1e6,
            CostMeasure::Tokens => task.usage.tokens() as f64,
        }
    }
}

/// How a harness is evaluated.
pub struct EvaluationSettings<'a> {
    /// The problem of the suite.
    pub problem: &'a dyn Problem,
    /// Attempts per task (each with its own derived seed).
    pub attempts: usize,
    /// The writer's name (the executor finds it by name).
    pub writer: &'a str,
    /// Quality aggregation.
    pub quality: Quality,
    /// Cost measure.
    pub cost: CostMeasure,
    /// Programs that produced gains earlier in the lineage (for crossover edits).
    pub library: &'a [Program],
    /// The run's agents file, for a writer that asks language models.
    pub agents: Option<&'a AgentsConfig>,
    /// Counts the task runs handed to the executor and finished, for a live display.
    pub tally: Option<&'a TaskTally>,
    /// Run every `command` step of the parents and the library confined ([`crate::sandbox`]).
    pub confine_commands: bool,
}

/// One task's result under a harness.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    /// The task's id.
    pub task: String,
    /// Search or validation.
    pub split: Split,
    /// Exact score of the start (40 significant digits).
    pub start_exact: String,
    /// Exact score of the best attempt's construction.
    pub end_exact: String,
    /// Gain in units of `min_improvement` (0 without an exactly verified improvement).
    pub gain: f64,
    /// Objective evaluations over all attempts.
    pub evaluations: u64,
    /// Cell-evaluations over all attempts (see [`CostMeasure::Counted`]).
    pub work: f64,
    /// CPU seconds over all attempts.
    pub cpu_seconds: f64,
    /// Wall seconds over all attempts.
    pub wall_seconds: f64,
    /// Tokens (and dollars, where reported) a writer spent asking models, over all attempts
    /// (absent for offline writers).
    #[serde(default, skip_serializing_if = "no_usage")]
    pub usage: Usage,
    /// Evidence the agent read off the parent's run (best attempt).
    pub evidence: Vec<Evidence>,
    /// Edits of the programs the best attempt ran, one line per program (with the error of a
    /// revision that produced nothing).
    pub edits: Vec<String>,
    /// The program that produced the best attempt's construction, as TOML, when it improved.
    pub best_program: Option<String>,
    /// Content address of the best attempt's construction when the search saved it as a
    /// candidate start (`starts/<hash>.json`; see [`super::promotion`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub construction: Option<String>,
    /// The writer that ran this task when it was not the run's own (the seed round's
    /// unedited tasks run under `verbatim`); absent for the run's writer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer: Option<String>,
}

/// A harness's evaluation on a set of tasks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    /// Per task, in the order given.
    pub tasks: Vec<TaskResult>,
    /// Quality, cost, latency.
    pub fitness: Fitness,
    /// Per-task gains (the behavioural descriptor).
    pub gains: Vec<f64>,
    /// Whether this is an earlier evaluation reused from the lineage (same harness, same
    /// tasks): its CPU seconds were spent once and are not charged again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reused: bool,
}

/// A task's best exactly verified improvement over its start under one evaluation.
#[derive(Clone, Debug)]
pub struct Improvement {
    /// The task it came from.
    pub task: String,
    /// The file of the task's start (a suite start, or a promoted one under the run directory).
    pub start: std::path::PathBuf,
    /// The attempt's seed.
    pub seed: u64,
    /// The program that made it (TOML).
    pub program: String,
    /// The construction.
    pub values: Vec<f64>,
    /// Its exact score.
    pub exact: BigRational,
}

/// A writer's failure on one attempt of an evaluation (the search records it as an event).
#[derive(Debug)]
pub struct WriterFailure {
    /// The task whose attempt failed.
    pub task: String,
    /// The writer's error.
    pub error: crate::error::MiloError,
}

/// The seed of attempt `attempt` on `task`: the same for every harness (common random numbers),
/// keyed on the task's seed, its start and its parent program, so tasks that share a seed but
/// not a start or a program draw different edits.
pub fn attempt_seed(task: &Task, attempt: usize) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(task.start.sha256.as_bytes());
    hasher.update(b"\n");
    hasher.update(task.program.to_toml().as_bytes());
    let digest = hasher.finalize();
    let key = u64::from_le_bytes(digest[..8].try_into().expect("a sha256 has 32 bytes"));
    derive_seed(derive_seed(task.seed, key), attempt as u64)
}

/// Gain of `end` over `start` in units of the problem's `min_improvement` (0 if not better).
pub fn gain(problem: &dyn Problem, start: &BigRational, end: &BigRational) -> f64 {
    let spec = problem.spec();
    if !spec.direction.better(end, start) {
        return 0.0;
    }
    let difference = to_f64(&(end - start)).abs();
    difference / spec.min_improvement
}

/// How an evaluation ended (the outer `Result` of [`evaluate`] is the executor's own error).
pub enum Outcome {
    /// Every task ran: the evaluation and each task's best exactly verified improvement.
    Done(Evaluation, Vec<Improvement>),
    /// A writer failed on an attempt: the evaluation is incomplete and has no fitness.
    Failed(WriterFailure),
    /// The run was cancelled during it. What it found is not what a resumed run will find, so
    /// nothing of it is to be saved or recorded, whatever the executor or a writer reported
    /// (the Slurm executor reports its queued batch as an error; a writer may fail cut off).
    Cancelled,
}

/// Runs the settings' writer under `harness` on every task through `executor`; also returns
/// each task's best improvement.
pub fn evaluate(
    executor: &dyn Executor,
    harness: &Harness,
    tasks: &[&Task],
    settings: &EvaluationSettings,
    cancel: &CancelToken,
) -> Result<Outcome> {
    let started = Instant::now();
    let jobs: Vec<(usize, usize)> = (0..tasks.len())
        .flat_map(|t| (0..settings.attempts.max(1)).map(move |a| (t, a)))
        .collect();
    let harness_text = harness.to_toml();
    let text = |program: &Program| match settings.confine_commands {
        true => program.clone().confined().0.to_toml(),
        false => program.to_toml(),
    };
    let library: Vec<String> = settings.library.iter().map(text).collect();
    let descriptions: Vec<AttemptTask> = jobs
        .iter()
        .map(|&(t, a)| {
            let task = tasks[t];
            AttemptTask {
                task: task.id.clone(),
                problem: settings.problem.slug().to_string(),
                start: task.start.values.to_vec(),
                start_exact: task.start.exact.clone(),
                parent: text(&task.program),
                seconds: task.budget.seconds,
                evaluations: task.budget.evaluations,
                seed: attempt_seed(task, a),
                writer: settings.writer.to_string(),
                harness: harness_text.clone(),
                library: library.clone(),
                agents: settings.agents.cloned(),
            }
        })
        .collect();
    let attempts = match settings.tally {
        Some(tally) => {
            tally.planned.add(descriptions.len() as u64);
            executor.run_counted(&descriptions, cancel, &tally.finished)
        }
        None => executor.run(&descriptions, cancel),
    };
    if cancel.is_cancelled() {
        return Ok(Outcome::Cancelled);
    }
    let attempts = attempts?;
    let mut per_task: Vec<Vec<(usize, Attempt)>> = vec![Vec::new(); tasks.len()];
    for (&(t, a), attempt) in jobs.iter().zip(attempts) {
        match attempt {
            Ok(attempt) => per_task[t].push((a, attempt)),
            Err(error) => {
                return Ok(Outcome::Failed(WriterFailure {
                    task: tasks[t].id.clone(),
                    error,
                }))
            }
        }
    }

    let problem = settings.problem;
    let direction = problem.spec().direction;
    let mut results = Vec::with_capacity(tasks.len());
    let mut discoveries = Vec::new();
    for (task, attempts) in tasks.iter().zip(per_task) {
        let (a, best) = attempts
            .iter()
            .reduce(|x, y| {
                if direction.better(&y.1.best_exact, &x.1.best_exact) {
                    y
                } else {
                    x
                }
            })
            .expect("at least one attempt per task");
        if best.improved {
            discoveries.push(Improvement {
                task: task.id.clone(),
                start: task.start.path.clone(),
                seed: attempt_seed(task, *a),
                program: best.best_program.to_toml(),
                values: best.best.clone(),
                exact: best.best_exact.clone(),
            });
        }
        results.push(TaskResult {
            task: task.id.clone(),
            split: task.split,
            start_exact: decimal_string(&task.start.exact, 40),
            end_exact: decimal_string(&best.best_exact, 40),
            gain: gain(problem, &task.start.exact, &best.best_exact),
            evaluations: attempts.iter().map(|(_, x)| x.evaluations).sum(),
            work: attempts.iter().map(|(_, x)| x.work).sum(),
            cpu_seconds: attempts.iter().map(|(_, x)| x.cpu_seconds).sum(),
            wall_seconds: attempts.iter().map(|(_, x)| x.seconds).sum(),
            usage: attempts.iter().fold(Usage::default(), |mut sum, (_, x)| {
                sum += x.usage;
                sum
            }),
            evidence: best.evidence.clone(),
            edits: best
                .runs
                .iter()
                .map(|r| match &r.error {
                    None => format!("{:?}: {}", r.role, r.edits.join("; ")),
                    Some(e) => format!("{:?}: {} (failed: {e})", r.role, r.edits.join("; ")),
                })
                .collect(),
            best_program: best.improved.then(|| best.best_program.to_toml()),
            construction: None,
            writer: None,
        });
    }
    let wall = started.elapsed().as_secs_f64();
    Ok(Outcome::Done(
        summarise(results, settings.quality, settings.cost, wall),
        discoveries,
    ))
}

impl Evaluation {
    /// The evaluation of a child that was not evaluated: no tasks, zero fitness.
    pub fn none() -> Evaluation {
        summarise(Vec::new(), Quality::Best, CostMeasure::Counted, 0.0)
    }

    /// This evaluation followed by `more` (other tasks), with the fitness recomputed; reused
    /// only when both were.
    pub fn joined(&self, more: &Evaluation, quality: Quality, cost: CostMeasure) -> Evaluation {
        let tasks: Vec<TaskResult> = self.tasks.iter().chain(&more.tasks).cloned().collect();
        let wall = tasks.iter().map(|t| t.wall_seconds).sum();
        Evaluation {
            reused: self.reused && more.reused,
            ..summarise(tasks, quality, cost, wall)
        }
    }

    /// CPU seconds its tasks took: what a benchmark's CPU budget counts.
    pub fn cpu_seconds(&self) -> f64 {
        self.tasks.iter().map(|t| t.cpu_seconds).sum()
    }

    /// Tokens (and dollars) its tasks spent asking models.
    pub fn usage(&self) -> Usage {
        self.tasks.iter().fold(Usage::default(), |mut sum, t| {
            sum += t.usage;
            sum
        })
    }

    /// CPU seconds this evaluation spent (0 when it was reused from the lineage).
    pub fn spent_cpu_seconds(&self) -> f64 {
        if self.reused {
            0.0
        } else {
            self.cpu_seconds()
        }
    }

    /// The evaluation restricted to the tasks `ids` (in that order; unknown ids are skipped),
    /// with its fitness recomputed from the stored per-task results — how members evaluated on
    /// the old task set compare with a child after a curriculum changed the tasks.
    pub fn restricted(&self, ids: &[String], quality: Quality, cost: CostMeasure) -> Evaluation {
        let tasks: Vec<TaskResult> = ids
            .iter()
            .filter_map(|id| self.tasks.iter().find(|t| &t.task == id).cloned())
            .collect();
        let wall = tasks.iter().map(|t| t.wall_seconds).sum();
        summarise(tasks, quality, cost, wall)
    }
}

/// The fitness of a list of task results.
fn summarise(tasks: Vec<TaskResult>, quality: Quality, cost: CostMeasure, wall: f64) -> Evaluation {
    let gains: Vec<f64> = tasks.iter().map(|t| t.gain).collect();
    let quality = match quality {
        Quality::Best => gains.iter().copied().fold(0.0, f64::max),
        Quality::Mean => gains.iter().sum::<f64>() / gains.len().max(1) as f64,
    };
    let (cost, latency) = match cost {
        CostMeasure::Measured => (tasks.iter().map(|t| t.cpu_seconds).sum(), wall),
        CostMeasure::Counted => (
            tasks.iter().map(|t| t.work).sum::<f64>() / 1e6,
            tasks.iter().map(|t| t.work).fold(0.0, f64::max) / 1e6,
        ),
        CostMeasure::Tokens => (
            tasks.iter().map(|t| t.usage.tokens()).sum::<u64>() as f64,
            tasks.iter().map(|t| t.usage.tokens()).max().unwrap_or(0) as f64,
        ),
    };
    Evaluation {
        tasks,
        fitness: Fitness {
            quality,
            cost,
            latency,
        },
        gains,
        reused: false,
    }
}
