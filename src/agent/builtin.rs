//! The built-in optimizer-writing agent: interprets a harness deterministically.
//!
//! 1. Runs the parent program as it is on the harness's `minimal` share: a valid baseline, and
//!    the evidence ([`crate::runner::evidence::diagnose`]) that drives the rules.
//! 2. Explores on the `explore` share plus what the parent's run left of its own (a parent
//!    that stops by itself hands its rest on), in one of two ways:
//!    - in turn (no `[racing]`): writes up to `programs` revisions, each by `edits_per_program`
//!      edits drawn from the menu weighted by the rules that fired, and runs each on an even
//!      split of what is left (leftovers roll forward); stops after `stop_after_failures`
//!      revisions in a row without a new best, or triages when the budget left is too small;
//!    - racing (`[racing]`, [`super::racing`]): successive halving over the parent unchanged
//!      and revisions, the survivors continuing from their own results.
//! 3. Runs the best program again from the best construction on the `reserve` (plus whatever
//!    exploration left).
//! 4. Verifies the `verify_top` best candidates exactly against the start and returns the best
//!    one the exact scores confirm (or the start).

use super::ledger::{run_on, run_parent, Allowance, Candidate, Ledger};
use super::{Assignment, Attempt, OptimizerWriter, Role};
use crate::error::Result;
use crate::harness::{Evidence, Harness, RevisionBase, RunFrom};
use crate::program::edits::{self, EditContext, EditMenu};
use crate::program::Program;
use crate::runner::evidence;
use crate::runner::trace::cpu_seconds;
use crate::runner::RunOutcome;
use num_rational::BigRational;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::time::Instant;

/// Draws of a revision before its slot is given up, when no drawn edit applies (a `delete` of
/// a program's only optimizer stage, a resolution change past the problem's limits, …).
const REVISION_DRAWS: usize = 20;

/// The deterministic, offline optimizer-writing agent.
#[derive(Clone, Copy, Debug, Default)]
pub struct BuiltinWriter;

impl OptimizerWriter for BuiltinWriter {
    fn name(&self) -> &str {
        "builtin"
    }

    fn solve(&self, harness: &Harness, task: &Assignment) -> Result<Attempt> {
        let started = Instant::now();
        let cpu_started = cpu_seconds();
        let problem = task.problem;
        let total = Allowance::of(task);
        let mut ledger = Ledger::default();
        let (minimal, minimal_left) = run_parent(task, total.scaled(harness.budget.minimal))?;
        let found = evidence::diagnose(&minimal);
        ledger.record(
            problem,
            Role::Minimal,
            vec![],
            task.parent.clone(),
            minimal,
            None,
        );
        let mut exploration = Exploration::new(task, harness, &found, ledger);
        let explore_total = total.scaled(harness.budget.explore).plus(minimal_left);
        let explore_left = match &harness.racing {
            Some(racing) => exploration.race(racing, explore_total)?,
            None => exploration.in_turn(explore_total)?,
        };
        let Exploration {
            mut ledger, best, ..
        } = exploration;

        if harness.budget.reserve > 0.0 {
            let reserve = total.scaled(harness.budget.reserve).plus(explore_left);
            ledger.run_reserve(task, best, reserve)?;
        }

        Ok(ledger.finish(
            task,
            harness.verify_top,
            found,
            started.elapsed().as_secs_f64(),
            cpu_seconds() - cpu_started,
        ))
    }

    /// The revisions exploration would draw, as if none beat the parent: exact for
    /// `revise = "parent"`, and up to the first new best for `revise = "best"`. In turn it
    /// draws all `programs` (a run may stop earlier); racing draws its entrants.
    fn plan(
        &self,
        harness: &Harness,
        task: &Assignment,
        evidence: &[Evidence],
    ) -> Option<Vec<String>> {
        let mut ledger = Ledger::default();
        ledger.candidates.push(Candidate {
            values: task.start.to_vec(),
            exact: task.start_exact.clone(),
            score: f64::NAN,
            program: task.parent.clone(),
        });
        let mut exploration = Exploration::new(task, harness, evidence, ledger);
        let drawn: Vec<(Program, Vec<String>)> = match &harness.racing {
            Some(racing) => (1..racing.candidates)
                .filter_map(|_| exploration.edited_revision())
                .collect(),
            None => (0..harness.programs)
                .filter_map(|_| exploration.edited_revision())
                .collect(),
        };
        Some(drawn.iter().map(|(program, _)| program.to_toml()).collect())
    }
}

/// The exploration phase of one task: what it draws revisions from and what it ran so far.
pub(super) struct Exploration<'a> {
    /// The task.
    pub task: &'a Assignment<'a>,
    /// The harness it follows.
    pub harness: &'a Harness,
    /// The menu weighted by the rules the parent's evidence fired (`None`: no edit weighs).
    pub menu: Option<EditMenu>,
    /// What edits see: the problem, the construction's length, the library, the tuning range.
    pub edit_context: EditContext<'a>,
    /// The task's random stream (edits).
    pub rng: ChaCha8Rng,
    /// Every run so far and its candidate.
    pub ledger: Ledger,
    /// The ledger's best candidate by float score.
    pub best: usize,
}

impl<'a> Exploration<'a> {
    /// Exploration of `task` under `harness` after the parent's run (which showed `evidence`
    /// and is `ledger`'s first candidate), its random stream keyed on the task's seed.
    fn new(
        task: &'a Assignment<'a>,
        harness: &'a Harness,
        evidence: &[Evidence],
        ledger: Ledger,
    ) -> Self {
        Exploration {
            task,
            harness,
            menu: EditMenu::new(&harness.edit_weights(evidence)),
            edit_context: EditContext {
                problem: task.problem,
                n: task.start.len(),
                library: task.library,
                tune_range: harness.tune_range,
            },
            rng: ChaCha8Rng::seed_from_u64(task.seed),
            ledger,
            best: 0,
        }
    }

    /// A revision of the harness's revision base by `edits_per_program` edits from the menu,
    /// with the edits it applied (empty when none applied); `None` without a menu.
    pub fn revision(&mut self) -> Option<(Program, Vec<String>)> {
        let base = match self.harness.revise {
            RevisionBase::Parent => self.task.parent,
            RevisionBase::Best => &self.ledger.candidates[self.best].program,
        };
        let menu = self.menu.as_ref()?;
        let mut program = base.clone();
        let mut applied = Vec::new();
        for _ in 0..self.harness.edits_per_program {
            let kind = menu.draw(&mut self.rng);
            if let Some((edited, what)) =
                edits::apply(kind, &program, &self.edit_context, &mut self.rng)
            {
                program = edited;
                applied.push(what);
            }
        }
        Some((program, applied))
    }

    /// A revision that applied an edit: the first of `REVISION_DRAWS` draws where one did
    /// (`None`: none did, or there is no menu). In turn and racing both draw this way, and so
    /// does a dry run's plan.
    pub fn edited_revision(&mut self) -> Option<(Program, Vec<String>)> {
        (0..REVISION_DRAWS)
            .map_while(|_| self.revision())
            .find(|(_, applied)| !applied.is_empty())
    }

    /// The construction a revision runs from (per `run_from`) and its exact score.
    pub fn incumbent(&self) -> (Vec<f64>, BigRational) {
        match self.harness.run_from {
            RunFrom::Start => (self.task.start.to_vec(), self.task.start_exact.clone()),
            RunFrom::Best => {
                let candidate = &self.ledger.candidates[self.best];
                (candidate.values.clone(), candidate.exact.clone())
            }
        }
    }

    /// Records a revision's run; whether it is the new best.
    pub fn record(&mut self, edits: Vec<String>, program: Program, outcome: RunOutcome) -> bool {
        let new_best = self.ledger.record(
            self.task.problem,
            Role::Revision,
            edits,
            program,
            outcome,
            Some(self.best),
        );
        if new_best {
            self.best = self.ledger.candidates.len() - 1;
        }
        new_best
    }

    /// Revisions in turn on even splits of `explore_total`; what is left of it.
    fn in_turn(&mut self, explore_total: Allowance) -> Result<Allowance> {
        let harness = self.harness;
        let mut explore_left = explore_total;
        let mut failures = 0;
        for i in 0..harness.programs {
            let allotment = explore_left.scaled(1.0 / (harness.programs - i) as f64);
            let per_program = explore_total.scaled(1.0 / harness.programs as f64);
            if allotment.is_empty() || allotment.below(harness.triage, per_program) {
                break;
            }
            if self.menu.is_none() {
                break;
            }
            let Some((program, applied)) = self.edited_revision() else {
                failures += 1;
                continue;
            };
            let (from, from_exact) = self.incumbent();
            let outcome = run_on(
                self.task,
                &program,
                &from,
                &from_exact,
                allotment,
                1 + i as u64,
            )?;
            explore_left = explore_left.minus(outcome.seconds, outcome.evaluations);
            if self.record(applied, program, outcome) {
                failures = 0;
            } else {
                failures += 1;
            }
            if harness.stop_after_failures > 0 && failures >= harness.stop_after_failures {
                break;
            }
        }
        Ok(explore_left)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::TaskFixture;
    use super::*;
    use crate::harness::seed_harnesses;

    #[test]
    fn a_parent_that_stops_early_hands_the_rest_of_its_share_to_exploration() {
        // A parent that stops by itself after a few dozen evaluations.
        let fixture = TaskFixture::with_parent(
            "name = \"short\"\n[[steps]]\nkind = \"lbfgs\"\nparameterisation = \"raw\"\n\
             betas = [1e3]\niterations = 20\n",
        );
        let mut harness = seed_harnesses()[1].clone();
        harness.budget.minimal = 0.9;
        harness.budget.explore = 0.01;
        harness.budget.reserve = 0.0;
        harness.stop_after_failures = 0;
        let attempt = BuiltinWriter
            .solve(&harness, &fixture.assignment(2_000, 5))
            .unwrap();
        let parent_run = &attempt.runs[0];
        assert!(parent_run.evaluations < 200, "{}", parent_run.evaluations);
        let explored: u64 = attempt.runs[1..].iter().map(|r| r.evaluations).sum();
        // The explore share alone is 20 evaluations.
        assert!(explored > 20, "revisions ran {explored} evaluations");
        assert!(attempt.evaluations <= 2_000 + 50, "{}", attempt.evaluations);
    }

    #[test]
    fn each_seed_harness_returns_a_verified_valid_result_reproducibly() {
        let fixture = TaskFixture::cascade();
        let problem = fixture.problem.as_ref();
        for harness in seed_harnesses() {
            let assignment = fixture.assignment(1_500, 11);
            let a = BuiltinWriter.solve(&harness, &assignment).unwrap();
            let b = BuiltinWriter.solve(&harness, &assignment).unwrap();
            assert_eq!(a.best, b.best, "{}: not reproducible", harness.name);
            assert!(problem.check(&a.best).is_ok());
            assert_eq!(problem.score_exact(&a.best), a.best_exact);
            assert!(
                a.improved,
                "{}: no gain on an unoptimized start",
                harness.name
            );
            assert!(problem
                .spec()
                .direction
                .better(&a.best_exact, &fixture.start_exact));
            assert!(
                a.evaluations <= 1_500 + 50,
                "{}: {}",
                harness.name,
                a.evaluations
            );
            assert_eq!(a.runs[0].role, Role::Minimal);
            assert!(a.runs.len() >= 2, "{}: wrote no revision", harness.name);
        }
    }
}
