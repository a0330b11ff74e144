//! The verbatim writer: runs the assignment's program as it is, on the whole budget, and returns
//! its result (the runner returns an improvement only once the exact verifier confirms it). It writes nothing — the agent of baselines
//! that evolve optimizer programs directly (the program under test is the assignment's parent),
//! so the harness it is handed is ignored.

use super::{cell_evaluations, Assignment, Attempt, OptimizerWriter, ProgramRun, Role};
use crate::error::Result;
use crate::harness::Harness;
use crate::runner::evidence;
use crate::runner::{run_program_scored, trace::cpu_seconds, RunSettings, Silent};
use crate::tally::Tally;
use std::time::Instant;

/// The agent that runs the given program unchanged.
#[derive(Clone, Copy, Debug, Default)]
pub struct GivenProgram;

impl OptimizerWriter for GivenProgram {
    fn name(&self) -> &str {
        "verbatim"
    }

    fn solve(&self, _harness: &Harness, task: &Assignment) -> Result<Attempt> {
        let started = Instant::now();
        let cpu_started = cpu_seconds();
        let problem = task.problem;
        let settings = RunSettings {
            seed: task.seed,
            seconds: task.seconds,
            evaluations: task.evaluations,
            jobs: 1,
            cancel: task.cancel.clone(),
            spent: Tally::default(),
        };
        let outcome = run_program_scored(
            problem,
            task.start,
            task.start_exact,
            task.parent,
            &settings,
            &mut Silent,
        )?;
        let run = ProgramRun {
            role: Role::Minimal,
            edits: vec![],
            score: problem.score_fast(&outcome.best).value,
            new_best: outcome.improved,
            evaluations: outcome.evaluations,
            seconds: outcome.seconds,
            error: None,
            reply: None,
            usage: Default::default(),
        };
        Ok(Attempt {
            best: outcome.best.clone(),
            best_exact: outcome.best_exact.clone(),
            improved: outcome.improved,
            best_program: task.parent.clone(),
            evidence: evidence::diagnose(&outcome),
            runs: vec![run],
            evaluations: outcome.evaluations,
            work: cell_evaluations(&outcome),
            seconds: started.elapsed().as_secs_f64(),
            cpu_seconds: cpu_seconds() - cpu_started,
            usage: Default::default(),
        })
    }
}
