//! The methods a benchmark compares, one small file each, all in the same engine (the same
//! tasks, the same agents, the same CPU budget):
//!
//! - [`best_of_n`]: the seed harnesses, resampled with fresh task seeds, no search;
//! - [`alphaevolve`]: an AlphaEvolve/OpenEvolve-style search that evolves optimizer programs
//!   directly with one fixed mutator, fixed islands, periodic migration, survivors only;
//! - [`stock`]: the suite's own programs run unchanged, each step from the previous step's
//!   best output, until the budget ends;
//! - [`search`]: MILO and the variants with parts switched off: greedy refinement, the
//!   ablation ladder A–E (`ladder-e` is full MILO, also called `milo`) and `milo-frozen`;
//! - [`transfer`]: `harness:PATH` and `program:PATH`, a harness or a program from any run,
//!   frozen.
//!
//! A method runs in its own directory and resumes from its records there. With `promote` on,
//! the baselines carry each task's best construction forward as its next start ([`promotion`]).

pub mod alphaevolve;
pub mod best_of_n;
#[cfg(test)]
mod fixture;
pub mod log;
pub mod promotion;
pub mod search;
pub mod stock;
pub mod transfer;

use super::budget_cut::ValidationReserve;
use super::trajectory::Trajectory;
use crate::cancel::CancelToken;
use crate::error::Result;
use crate::executor::{Executor, SlurmOptions};
use crate::harness::Harness;
use crate::program::Program;
use crate::runner::derive_seed;
use crate::search::evaluation::{
    evaluate, CostMeasure, Evaluation, EvaluationSettings, Improvement, Outcome, Quality,
};
use crate::suite::{Suite, Task};
use log::BaselineLog;
use std::path::Path;
use std::sync::Arc;

/// What one run of a method is given.
pub struct RunContext<'a> {
    /// The suite (its search tasks are searched on, its validation tasks held out).
    pub suite: &'a Suite,
    /// The run's directory (created; may hold the records of an interrupted run).
    pub dir: &'a Path,
    /// The run's seed.
    pub seed: u64,
    /// CPU seconds of search-task evaluation the run may spend (the last evaluation may overrun).
    pub cpu_seconds: f64,
    /// Threads.
    pub jobs: usize,
    /// Cancelled on Ctrl-C: the run stops (and resumes later from its records).
    pub cancel: CancelToken,
    /// Quality aggregation.
    pub quality: Quality,
    /// Cost measure.
    pub cost: CostMeasure,
    /// Whether each search task's best discovery becomes its start for later steps
    /// (`--promote-discoveries`).
    pub promote: bool,
    /// Where task evaluations run, by name (see [`crate::search::parts::executor`]).
    pub executor_name: &'a str,
    /// How the `slurm` executor submits.
    pub slurm: Option<SlurmOptions>,
    /// The run's executor (the one called `executor_name`), made once for the run.
    pub executor: Arc<dyn Executor>,
    /// How the MILO methods search.
    pub search: search::SearchKnobs,
    /// The run's CPU budget is spent (the step in flight was cut at it): make no more steps,
    /// only finish (validate what a baseline validates once) and return the run as it stands.
    pub budget_spent: bool,
    /// What a baseline keeps back from the budget for validating its best, read by the budget's
    /// cut (kept current by [`RunContext::may_step`]).
    pub reserve: ValidationReserve,
}

impl RunContext<'_> {
    /// Whether a baseline with records `log` may make another step: the budget was not cut,
    /// and its search tasks' CPU plus the validation of its best (estimated from that
    /// candidate's CPU per search task, kept in [`RunContext::reserve`]) is under the budget.
    pub fn may_step(&self, log: &BaselineLog) -> bool {
        let reserve = log.validation_estimate(self.cpu_seconds, self.validation_in_search_tasks());
        self.reserve.set(reserve);
        !self.budget_spent && log.cpu_seconds() + reserve < self.cpu_seconds
    }

    /// Evaluates `harness` under the writer called `writer` on `tasks`, on the benchmark's
    /// executor; a writer's failure is the run's error. `None` when the run was cancelled
    /// during it (whatever the executor reported: nothing of it is to be recorded).
    pub fn evaluate(
        &self,
        writer: &str,
        harness: &Harness,
        tasks: &[Task],
        library: &[Program],
    ) -> Result<Option<Evaluation>> {
        let evaluated = self.evaluate_with_improvements(writer, harness, tasks, library)?;
        Ok(evaluated.map(|(evaluation, _)| evaluation))
    }

    /// [`RunContext::evaluate`], also returning each task's best exactly verified improvement
    /// over its start.
    pub fn evaluate_with_improvements(
        &self,
        writer: &str,
        harness: &Harness,
        tasks: &[Task],
        library: &[Program],
    ) -> Result<Option<(Evaluation, Vec<Improvement>)>> {
        let refs: Vec<&Task> = tasks.iter().collect();
        let settings = EvaluationSettings {
            problem: self.suite.problem.as_ref(),
            attempts: 1,
            writer,
            quality: self.quality,
            cost: self.cost,
            library,
            agents: None,
            tally: None,
            confine_commands: false,
        };
        match evaluate(
            self.executor.as_ref(),
            harness,
            &refs,
            &settings,
            &self.cancel,
        )? {
            Outcome::Done(evaluation, discoveries) => Ok(Some((evaluation, discoveries))),
            Outcome::Failed(failure) => Err(failure.error),
            Outcome::Cancelled => Ok(None),
        }
    }

    /// What validating a candidate costs, in search tasks of the suite: the validation tasks'
    /// [`Task::relative_cost`] over the search tasks' mean (a held-out start of 400 values costs
    /// a small part of a search task on 51,200).
    pub fn validation_in_search_tasks(&self) -> f64 {
        let search: Vec<f64> = self.suite.search_tasks().map(Task::relative_cost).collect();
        let mean = search.iter().sum::<f64>() / search.len().max(1) as f64;
        let validation: f64 = self.suite.validation_tasks().map(Task::relative_cost).sum();
        match mean > 0.0 {
            true => validation / mean,
            false => self.suite.validation_tasks().count() as f64,
        }
    }

    /// The suite's search tasks.
    pub fn search_tasks(&self) -> Vec<Task> {
        self.suite.search_tasks().cloned().collect()
    }

    /// `tasks` with seeds fresh to `sample` (derived from each task's seed and the run's);
    /// sample 0 keeps the tasks' own seeds, as every method's first evaluation does.
    pub fn resampled(&self, mut tasks: Vec<Task>, sample: usize) -> Vec<Task> {
        if sample > 0 {
            for task in &mut tasks {
                task.seed = derive_seed(derive_seed(task.seed, self.seed), sample as u64);
            }
        }
        tasks
    }

    /// The suite's validation tasks.
    pub fn validation_tasks(&self) -> Vec<Task> {
        self.suite.validation_tasks().cloned().collect()
    }
}

/// A search strategy under benchmark.
pub trait Method: Send + Sync {
    /// The method's name (as given to `--methods`).
    fn name(&self) -> &str;

    /// Runs (or resumes) the method until its CPU budget is spent; `None` when its cancel token
    /// cut it short (Ctrl-C, or the benchmark's cut at the budget: what was done is recorded,
    /// and running it again resumes; with [`RunContext::budget_spent`] it makes no more steps).
    fn run(&self, ctx: &RunContext) -> Result<Option<Trajectory>>;
}

/// Names of the built-in methods (`ladder-e` is also accepted as `milo`'s name).
pub const NAMES: [&str; 11] = [
    "best-of-n",
    "stock",
    "greedy",
    "alphaevolve",
    "ladder-a",
    "ladder-b",
    "ladder-c",
    "ladder-d",
    "milo",
    "milo-frozen",
    "milo-degenerate",
];

/// The method called `name` in the benchmark in `bench_dir` (a transfer method's frozen file is
/// there); an unknown name is a usage error listing the known ones.
pub fn resolve(name: &str, bench_dir: &Path) -> Result<Box<dyn Method>> {
    if transfer::is_transfer(name) {
        return transfer::open(name, bench_dir);
    }
    by_name(name).ok_or_else(|| {
        crate::error::MiloError::Usage(format!(
            "unknown method '{name}'; known: {}, harness:PATH, program:PATH",
            NAMES.join(", ")
        ))
    })
}

/// The built-in method called `name`.
pub fn by_name(name: &str) -> Option<Box<dyn Method>> {
    match name {
        "best-of-n" => Some(Box::new(best_of_n::BestOfN::default())),
        "stock" => Some(Box::new(stock::Stock::default())),
        "alphaevolve" => Some(Box::new(alphaevolve::ProgramEvolution::default())),
        _ => search::variant(name).map(|m| Box::new(m) as Box<dyn Method>),
    }
}
