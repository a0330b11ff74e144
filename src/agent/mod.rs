//! Agents that write optimizer programs. "Agent" and "writer" name one concept: an
//! [`OptimizerWriter`] (a run's `writer` setting names one).
//!
//! An [`OptimizerWriter`] takes a harness (its policy) and an [`Assignment`] (a problem, a start
//! construction, a parent program, a budget and a seed) and returns an [`Attempt`]: the best
//! construction it could make, verified exactly, with the programs it wrote and ran. The
//! built-in writer ([`BuiltinWriter`]) interprets the harness deterministically; the LLM writer
//! ([`LlmWriter`]) asks a language model for revised programs under the harness's `[llm]`
//! policy. [`GivenProgram`] writes nothing: it runs the parent program unchanged (the agent of
//! baselines that evolve programs, not harnesses).

mod builtin;
pub mod exact_text;
#[cfg(test)]
mod fixture;
mod ledger;
mod llm_answer;
mod llm_writer;
mod racing;
mod verbatim;

pub use builtin::BuiltinWriter;
pub use llm_answer::extract_block;
pub use llm_writer::LlmWriter;
pub use verbatim::GivenProgram;

use crate::cancel::CancelToken;
use crate::error::{MiloError, Result};
use crate::harness::{Evidence, Harness};
use crate::llm::{AgentsConfig, Usage};
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
    /// Why the revision was unusable: the model's answer held no program, the program was
    /// invalid, its run failed, or a stage of it failed (e.g. a script crashed) and nothing
    /// improved; absent for a program that ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The model's answer behind a revision: its backend and the first 16 hex digits of the
    /// sha256 of its text (absent for programs no model wrote).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    /// Tokens (and dollars) the model spent on this revision.
    #[serde(default, skip_serializing_if = "no_usage")]
    pub usage: Usage,
}

/// Whether `usage` is empty (nothing asked of a model).
pub fn no_usage(usage: &Usage) -> bool {
    *usage == Usage::default()
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
    /// Tokens (and dollars) spent asking models, over every request (none for offline writers).
    #[serde(default, skip_serializing_if = "no_usage")]
    pub usage: Usage,
}

/// Names of the writers [`writer_by_name`] knows.
pub const WRITER_NAMES: [&str; 3] = ["builtin", "verbatim", "llm"];

/// The writer called `name`, or a usage error naming it and listing the known ones. The LLM
/// writer (`llm`) draws on the `[writer]` pool of `agents` (the run's agents file); without one
/// it is a usage error naming `--agents`.
pub fn writer_by_name(
    name: &str,
    agents: Option<&AgentsConfig>,
) -> Result<Box<dyn OptimizerWriter>> {
    match name {
        "builtin" => Ok(Box::new(BuiltinWriter)),
        "verbatim" => Ok(Box::new(GivenProgram)),
        "llm" => match agents {
            Some(agents) => Ok(Box::new(LlmWriter::new(
                agents.pool("writer")?,
                agents.writer_allows_commands(),
            ))),
            None => Err(MiloError::Usage(
                "writer 'llm' needs an agents file with a [writer] pool (--agents FILE)".into(),
            )),
        },
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

    /// The programs the writer would revise the parent into on `assignment` under `harness`
    /// when the parent's run shows `evidence`, as program text, known without running any
    /// program; `None` when the writer cannot tell beforehand. The search's dry run compares a
    /// child harness's plans with its parent's before it pays for an evaluation.
    fn plan(
        &self,
        _harness: &Harness,
        _assignment: &Assignment,
        _evidence: &[Evidence],
    ) -> Option<Vec<String>> {
        None
    }
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
