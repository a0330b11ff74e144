//! Executors of attempts: where a writer's work on a task runs.
//!
//! An [`AttemptTask`] is self-contained and serialisable: the problem by slug, the start
//! construction with its exact score, the parent program, the harness and the library programs
//! as text, the budget, the seed and the writer by name. Its result is a serialisable
//! [`Attempt`]. So an [`Executor`] may run tasks in threads here ([`LocalThreads`], `--jobs`), or
//! hand them to other processes or machines ([`Slurm`]: each task a file in a [`spool`], a worker
//! process per task or a few [`pilot`]s claiming them) — the results are the same bits either
//! way.

mod local_threads;
pub mod pilot;
pub mod slurm;
pub mod spool;

pub use local_threads::LocalThreads;
pub use slurm::{Slurm, SlurmOptions};

use crate::agent::{exact_text, Assignment, Attempt, OptimizerWriter};
use crate::cancel::CancelToken;
use crate::error::Result;
use crate::harness::Harness;
use crate::llm::AgentsConfig;
use crate::problems;
use crate::program::Program;
use crate::tally::Tally;
use num_rational::BigRational;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One attempt of a writer on a task, described by value (no references, no live objects).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AttemptTask {
    /// The suite task's id (for reports and errors).
    pub task: String,
    /// The problem's slug.
    pub problem: String,
    /// The start construction (valid).
    pub start: Vec<f64>,
    /// Exact score of the start.
    #[serde(with = "exact_text")]
    pub start_exact: BigRational,
    /// The parent optimizer program, as TOML.
    pub parent: String,
    /// Wall seconds allowed, if limited.
    pub seconds: Option<f64>,
    /// Objective evaluations allowed, if limited.
    pub evaluations: Option<u64>,
    /// Seed of every random choice.
    pub seed: u64,
    /// The writer's name (see [`crate::agent::writer_by_name`]).
    pub writer: String,
    /// The harness the writer works under, as TOML.
    pub harness: String,
    /// Programs that produced gains earlier in the lineage, as TOML (for crossover edits).
    pub library: Vec<String>,
    /// The run's agents file, for a writer that asks language models (it holds no key, only
    /// the names of key variables), so a worker process builds the same backends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<AgentsConfig>,
}

/// Runs batches of attempt tasks.
pub trait Executor: Send + Sync {
    /// The executor's name, recorded in the run's settings.
    fn name(&self) -> &str;

    /// Runs every task and returns their results in the order given, each its own `Result` (a
    /// writer's failure on one task does not lose the others). The outer error is the
    /// executor's own failure (it could not run the batch). Once `cancel` is cancelled, running
    /// attempts wind down and return their best so far.
    fn run(&self, tasks: &[AttemptTask], cancel: &CancelToken) -> Result<Vec<Result<Attempt>>>;

    /// [`Executor::run`], adding each task to `finished` as it finishes (by default the whole
    /// batch at its end; [`LocalThreads`] counts task by task).
    fn run_counted(
        &self,
        tasks: &[AttemptTask],
        cancel: &CancelToken,
        finished: &Tally,
    ) -> Result<Vec<Result<Attempt>>> {
        let results = self.run(tasks, cancel);
        finished.add(tasks.len() as u64);
        results
    }
}

/// Runs one task with `writer` (found by the caller from `task.writer`): parses the problem,
/// the programs and the harness from the description, then solves.
pub fn solve(
    writer: &dyn OptimizerWriter,
    task: &AttemptTask,
    cancel: &CancelToken,
) -> Result<Attempt> {
    let origin = |what: &str| format!("task {} {what}", task.task);
    let problem = problems::by_slug(&task.problem)?;
    let parent = Program::parse(&task.parent, Path::new(&origin("parent program")))?;
    let harness = Harness::parse(&task.harness, Path::new(&origin("harness")))?;
    let library = task
        .library
        .iter()
        .map(|text| Program::parse(text, Path::new(&origin("library program"))))
        .collect::<Result<Vec<Program>>>()?;
    let assignment = Assignment {
        problem: problem.as_ref(),
        start: &task.start,
        start_exact: &task.start_exact,
        parent: &parent,
        seconds: task.seconds,
        evaluations: task.evaluations,
        seed: task.seed,
        library: &library,
        cancel: cancel.clone(),
    };
    writer.solve(&harness, &assignment)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{ProgramRun, Role};
    use crate::harness::Evidence;

    #[test]
    fn a_task_and_its_attempt_round_trip_through_json_unchanged() {
        let program = Program::parse(
            include_str!("../../problems/optimizers/lbfgs-cascade.toml"),
            Path::new("p.toml"),
        )
        .unwrap();
        let exact: BigRational = "-123456789012345678901234567890/98765432109876543210"
            .parse()
            .unwrap();
        let task = AttemptTask {
            task: "start-a/seed1".into(),
            problem: "third-autocorrelation-inequality".into(),
            start: vec![0.1, 1.0 / 3.0, f64::MIN_POSITIVE, 5e-324, -0.0, 1e300],
            start_exact: exact.clone(),
            parent: program.to_toml(),
            seconds: Some(0.1 + 0.2),
            evaluations: Some(1_500),
            seed: u64::MAX,
            writer: "builtin".into(),
            harness: crate::harness::seed_harnesses()[1].to_toml(),
            library: vec![program.to_toml()],
            agents: None,
        };
        let text = serde_json::to_string(&task).unwrap();
        let back: AttemptTask = serde_json::from_str(&text).unwrap();
        assert_eq!(back, task);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back.start), bits(&task.start));

        let attempt = Attempt {
            best: vec![2.0 / 3.0, 1e-310, 7.0],
            best_exact: exact / BigRational::from_integer(7.into()),
            improved: true,
            best_program: program,
            evidence: vec![Evidence::Stalled, Evidence::NoGain],
            runs: vec![ProgramRun {
                role: Role::Revision,
                edits: vec!["restarts 2 -> 3".into()],
                score: 1.0 / 7.0,
                new_best: true,
                evaluations: 42,
                seconds: 0.125,
                error: Some("no ```toml block".into()),
                reply: Some("local 0123456789abcdef".into()),
                usage: crate::llm::Usage {
                    prompt_tokens: 120,
                    completion_tokens: 30,
                    cost_usd: Some(0.25),
                    requests: 2,
                },
            }],
            evaluations: 42,
            work: 1e6 / 3.0,
            seconds: 0.3,
            cpu_seconds: 0.29,
            usage: crate::llm::Usage {
                prompt_tokens: 120,
                completion_tokens: 30,
                cost_usd: None,
                requests: 2,
            },
        };
        let text = serde_json::to_string(&attempt).unwrap();
        let back: Attempt = serde_json::from_str(&text).unwrap();
        assert_eq!(back, attempt);
        assert_eq!(bits(&back.best), bits(&attempt.best));
        assert_eq!(back.work.to_bits(), attempt.work.to_bits());
    }

    #[test]
    fn an_exact_score_that_is_not_p_over_q_is_an_error_naming_it() {
        let err = serde_json::from_str::<AttemptTask>(
            r#"{"task":"t","problem":"p","start":[],"start_exact":"1/0","parent":"","seconds":null,"evaluations":null,"seed":0,"writer":"w","harness":"","library":[]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("'1/0'"), "{err}");
    }
}
