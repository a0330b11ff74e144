//! What writers share: budgets in both units ([`Allowance`]), the record of the programs a
//! writer ran and the candidates they produced ([`Ledger`]), and the final choice of the best
//! candidate the exact scores confirm ([`Ledger::finish`]).

use super::{cell_evaluations, Assignment, Attempt, ProgramRun, Role};
use crate::error::Result;
use crate::harness::Evidence;
use crate::llm::Usage;
use crate::problems::Problem;
use crate::program::Program;
use crate::runner::{derive_seed, run_program_scored, RunOutcome, RunSettings, Silent};
use crate::tally::Tally;
use num_rational::BigRational;

/// A budget in both units; `None` means unlimited in that unit.
#[derive(Clone, Copy, Debug)]
pub(super) struct Allowance {
    pub seconds: Option<f64>,
    pub evaluations: Option<u64>,
}

impl Allowance {
    /// The assignment's whole budget.
    pub fn of(task: &Assignment) -> Allowance {
        Allowance {
            seconds: task.seconds,
            evaluations: task.evaluations,
        }
    }

    /// `share` of this allowance (evaluations rounded down).
    pub fn scaled(self, share: f64) -> Allowance {
        Allowance {
            seconds: self.seconds.map(|s| s * share),
            evaluations: self.evaluations.map(|e| (e as f64 * share).floor() as u64),
        }
    }

    /// What is left after spending `seconds` and `evaluations`.
    pub fn minus(self, seconds: f64, evaluations: u64) -> Allowance {
        Allowance {
            seconds: self.seconds.map(|s| (s - seconds).max(0.0)),
            evaluations: self.evaluations.map(|e| e.saturating_sub(evaluations)),
        }
    }

    /// The sum of two allowances.
    pub fn plus(self, other: Allowance) -> Allowance {
        Allowance {
            seconds: self.seconds.zip(other.seconds).map(|(a, b)| a + b),
            evaluations: self.evaluations.zip(other.evaluations).map(|(a, b)| a + b),
        }
    }

    /// Whether nothing is left in some limited unit.
    pub fn is_empty(self) -> bool {
        self.seconds.is_some_and(|s| s <= 0.0) || self.evaluations == Some(0)
    }

    /// Whether `self` is below `fraction` of `of` in some limited unit.
    pub fn below(self, fraction: f64, of: Allowance) -> bool {
        let seconds = self
            .seconds
            .zip(of.seconds)
            .is_some_and(|(a, b)| a < fraction * b);
        let evaluations = self
            .evaluations
            .zip(of.evaluations)
            .is_some_and(|(a, b)| (a as f64) < fraction * b as f64);
        seconds || evaluations
    }
}

/// Runs `program` for `task` from `from` (exact score `from_exact`) on `allowance`, seeded by
/// the task's seed and `index`.
pub(super) fn run_on(
    task: &Assignment,
    program: &Program,
    from: &[f64],
    from_exact: &BigRational,
    allowance: Allowance,
    index: u64,
) -> Result<RunOutcome> {
    let settings = RunSettings {
        seed: derive_seed(task.seed, index),
        seconds: allowance.seconds,
        evaluations: allowance.evaluations,
        jobs: 1,
        cancel: task.cancel.clone(),
        spent: Tally::default(),
    };
    run_program_scored(
        task.problem,
        from,
        from_exact,
        program,
        &settings,
        &mut Silent,
    )
}

/// The seed index of the reserve's run (the minimal run is 0, revisions count up from 1).
const RESERVE_SEED: u64 = 1_000;

/// Runs the task's parent program unchanged from the start on `allowance`: the minimal run
/// every writer makes first. Returns its outcome and what it left of `allowance` (a parent
/// that stops by itself hands the rest on to exploration).
pub(super) fn run_parent(
    task: &Assignment,
    allowance: Allowance,
) -> Result<(RunOutcome, Allowance)> {
    let outcome = run_on(
        task,
        task.parent,
        task.start,
        task.start_exact,
        allowance,
        0,
    )?;
    let left = allowance.minus(outcome.seconds, outcome.evaluations);
    Ok((outcome, left))
}

/// A construction the agent may return, with the program that made it.
pub(super) struct Candidate {
    pub values: Vec<f64>,
    /// Exact score of `values` (the runner's verification of its result).
    pub exact: BigRational,
    pub score: f64,
    pub program: Program,
}

/// Everything the agent ran: the runs, the candidates they produced, and the totals.
#[derive(Default)]
pub(super) struct Ledger {
    pub runs: Vec<ProgramRun>,
    pub candidates: Vec<Candidate>,
    pub evaluations: u64,
    pub work: f64,
    pub usage: Usage,
}

impl Ledger {
    /// Records a program's outcome as a run and a candidate; whether it beats candidate `best`
    /// by float score (without one, whether the exact scores confirm an improvement).
    pub fn record(
        &mut self,
        problem: &dyn Problem,
        role: Role,
        edits: Vec<String>,
        program: Program,
        outcome: RunOutcome,
        best: Option<usize>,
    ) -> bool {
        self.evaluations += outcome.evaluations;
        self.work += cell_evaluations(&outcome);
        let score = problem.score_fast(&outcome.best).value;
        let new_best = match best {
            Some(i) => problem
                .spec()
                .direction
                .better(&score, &self.candidates[i].score),
            None => outcome.improved,
        };
        self.runs.push(ProgramRun {
            role,
            edits,
            score,
            new_best,
            evaluations: outcome.evaluations,
            seconds: outcome.seconds,
            error: None,
            reply: None,
            usage: Usage::default(),
        });
        self.candidates.push(Candidate {
            values: outcome.best,
            exact: outcome.best_exact,
            score,
            program,
        });
        new_best
    }

    /// Runs candidate `best`'s program again from its construction on `reserve` and records
    /// it: the reserve's polish. Nothing runs when `reserve` is empty or the task is cancelled.
    pub fn run_reserve(
        &mut self,
        task: &Assignment,
        best: usize,
        reserve: Allowance,
    ) -> Result<()> {
        if reserve.is_empty() || task.cancel.is_cancelled() {
            return Ok(());
        }
        let candidate = &self.candidates[best];
        let program = candidate.program.clone();
        let outcome = run_on(
            task,
            &program,
            &candidate.values,
            &candidate.exact,
            reserve,
            RESERVE_SEED,
        )?;
        self.record(
            task.problem,
            Role::Reserve,
            vec![],
            program,
            outcome,
            Some(best),
        );
        Ok(())
    }

    /// Records a revision that produced no candidate (the model's answer was unusable or its
    /// program failed): `error` says why; `score` is that of the construction it was to run
    /// from.
    pub fn record_failure(&mut self, edits: Vec<String>, score: f64, error: String) {
        self.runs.push(ProgramRun {
            role: Role::Revision,
            edits,
            score,
            new_best: false,
            evaluations: 0,
            seconds: 0.0,
            error: Some(error),
            reply: None,
            usage: Usage::default(),
        });
    }

    /// The attempt: the first of the `verify_top` best candidates by float score (ties: the
    /// earlier) whose exact score — the runner's verification — beats the start, or the start
    /// and the parent when none does.
    pub fn finish(
        self,
        task: &Assignment,
        verify_top: usize,
        evidence: Vec<Evidence>,
        seconds: f64,
        cpu_seconds: f64,
    ) -> Attempt {
        let direction = task.problem.spec().direction;
        let Ledger {
            runs,
            mut candidates,
            evaluations,
            work,
            usage,
        } = self;
        let mut order: Vec<usize> = (0..candidates.len()).collect();
        order.sort_by(|&a, &b| direction.best_first(&candidates[a].score, &candidates[b].score));
        let chosen = order
            .iter()
            .take(verify_top)
            .copied()
            .find(|&i| direction.better(&candidates[i].exact, task.start_exact));
        let (best, best_exact, improved, best_program) = match chosen {
            Some(i) => {
                let c = candidates.swap_remove(i);
                (c.values, c.exact, true, c.program)
            }
            None => (
                task.start.to_vec(),
                task.start_exact.clone(),
                false,
                task.parent.clone(),
            ),
        };
        Attempt {
            best,
            best_exact,
            improved,
            best_program,
            evidence,
            runs,
            evaluations,
            work,
            seconds,
            cpu_seconds,
            usage,
        }
    }
}
