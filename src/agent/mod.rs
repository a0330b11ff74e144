//! Agents that write optimizer programs.
//!
//! An [`OptimizerWriter`] takes a harness (its policy) and an [`Assignment`] (a problem, a start
//! construction, a parent program, a budget and a seed) and returns an [`Attempt`]: the best
//! construction it could make, verified exactly, with the programs it wrote and ran. The
//! built-in writer ([`BuiltinWriter`]) interprets the harness deterministically; an LLM-backed
//! writer implements the same trait. [`VerbatimWriter`] runs the parent program unchanged (the
//! agent of baselines that evolve programs, not harnesses).

mod builtin;
pub mod exact_text;
mod verbatim;

pub use builtin::BuiltinWriter;
pub use verbatim::VerbatimWriter;

use crate::cancel::CancelToken;
use crate::error::{MiloError, Result};
use crate::harness::{Evidence, Harness};
use crate::problems::Problem;
use crate::program::Program;
use num_rational::BigRational;
use serde::{Deserialize, Serialize};

/// A task as an agent sees it: no task id, no suite — only what it needs to work.
pub struct Assignment<'a> {
    /// The problem.
    pub problem: &'a dyn Problem,
    /// The start construction (valid).
    pub start: &'a [f64],
    /// Exact score of the start.
    pub start_exact: &'a BigRational,
    /// The parent optimizer program the agent revises.
    pub parent: &'a Program,
    /// Wall seconds allowed, if limited.
    pub seconds: Option<f64>,
    /// Objective evaluations allowed, if limited (evaluation budgets make runs reproducible).
    pub evaluations: Option<u64>,
    /// Seed of every random choice.
    pub seed: u64,
    /// Programs that produced gains earlier in the lineage (for crossover edits).
    pub library: &'a [Program],
    /// Cancelling it winds the programs' runs down (their best so far is still verified).
    pub cancel: CancelToken,
}

/// Why a program was run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The parent program as it is.
    Minimal,
    /// A revised program.
    Revision,
    /// The best program again, from the best construction.
    Reserve,
}

/// One program the agent ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProgramRun {
    /// Why it ran.
    pub role: Role,
    /// The edits that made it from its base program (empty for the parent).
    pub edits: Vec<String>,
    /// Float64 score of the construction it returned.
    pub score: f64,
    /// Whether it improved on the best construction so far.
    pub new_best: bool,
    /// Objective evaluations used.
    pub evaluations: u64,
    /// Wall seconds.
    pub seconds: f64,
}

/// What an agent returns for one assignment (serialisable: exact scores as `p/q` text, floats
/// bit for bit, so an attempt made in another process reads back unchanged).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// The best construction: valid; strictly better than the start when `improved`.
    pub best: Vec<f64>,
    /// Exact score of `best`.
    #[serde(with = "exact_text")]
    pub best_exact: BigRational,
    /// Whether the exact scores confirm an improvement over the start.
    pub improved: bool,
    /// The program that produced `best` (the parent when nothing improved).
    pub best_program: Program,
    /// Evidence read off the parent's run.
    pub evidence: Vec<Evidence>,
    /// Every program run, in order.
    pub runs: Vec<ProgramRun>,
    /// Objective evaluations used in all.
    pub evaluations: u64,
    /// Work in cell-evaluations: each stage's evaluations times its construction's size — a
    /// machine-independent measure of cost (an evaluation at n cells costs about n log n).
    pub work: f64,
    /// Wall seconds.
    pub seconds: f64,
    /// CPU seconds of the thread that did the work.
    pub cpu_seconds: f64,
}

/// Names of the built-in writers, as [`writer_by_name`] knows them.
pub const WRITER_NAMES: [&str; 2] = ["builtin", "verbatim"];

/// The built-in writer called `name`, or a usage error naming it and listing the known ones.
pub fn writer_by_name(name: &str) -> Result<Box<dyn OptimizerWriter>> {
    match name {
        "builtin" => Ok(Box::new(BuiltinWriter)),
        "verbatim" => Ok(Box::new(VerbatimWriter)),
        _ => Err(MiloError::Usage(format!(
            "unknown writer '{name}' (known: {})",
            WRITER_NAMES.join(", ")
        ))),
    }
}

/// An agent that writes and runs optimizer programs under a harness.
pub trait OptimizerWriter: Send + Sync {
    /// The agent's name, recorded in the lineage.
    fn name(&self) -> &str;

    /// Revises the assignment's parent program under `harness`, runs what it wrote, and returns
    /// the best construction it verified.
    fn solve(&self, harness: &Harness, assignment: &Assignment) -> Result<Attempt>;
}

/// A run's work: each stage's objective evaluations times its construction's size.
fn cell_evaluations(outcome: &crate::runner::RunOutcome) -> f64 {
    outcome
        .trace
        .stages
        .iter()
        .map(|s| s.evaluations as f64 * s.n as f64)
        .sum()
}
