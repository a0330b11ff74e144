//! Racing: the built-in agent's exploration as successive halving ([`Racing`]).
//!
//! The first rung runs the parent program unchanged and `candidates - 1` revisions from the same
//! incumbent on `first_rung` of the exploration budget, split evenly. Each later rung keeps the
//! best `1/eta` entrants by float score (ties: the earlier entrant, the parent first) and runs
//! each again from its own result, on an even split of an equal share of what is left; the last
//! entrant standing takes the rest. Every run is a ledger candidate, so the exact verification
//! at the end sees them all.

use super::builtin::Exploration;
use super::ledger::{run_on, Allowance};
use crate::error::Result;
use crate::harness::Racing;
use crate::program::Program;
use num_rational::BigRational;

/// Seed index of the first race run (the minimal run is 0, the reserve 1,000).
const FIRST_RUN_INDEX: u64 = 1;

/// One program in the race and where it stands.
struct Entrant {
    program: Program,
    /// What it is: the parent unchanged or the edits that made it.
    label: Vec<String>,
    values: Vec<f64>,
    exact: BigRational,
    score: f64,
}

impl Exploration<'_> {
    /// Races the parent and revisions on `explore_total`; what is left of it.
    pub(super) fn race(&mut self, racing: &Racing, explore_total: Allowance) -> Result<Allowance> {
        let (from, from_exact) = self.incumbent();
        let mut entrants = vec![Entrant {
            program: self.task.parent.clone(),
            label: vec!["race: the parent unchanged".to_string()],
            values: from.clone(),
            exact: from_exact.clone(),
            score: f64::NAN,
        }];
        for _ in 1..racing.candidates {
            if let Some((program, applied)) = self.edited_revision() {
                entrants.push(Entrant {
                    program,
                    label: applied,
                    values: from.clone(),
                    exact: from_exact.clone(),
                    score: f64::NAN,
                });
            }
        }
        let direction = self.task.problem.spec().direction;
        let rungs = racing.rungs();
        let mut left = explore_total;
        let mut index = FIRST_RUN_INDEX;
        for (rung, &size) in rungs.iter().enumerate() {
            if rung > 0 {
                // The best `size` go on (a stable sort keeps the earlier entrant on ties).
                entrants.sort_by(|a, b| direction.best_first(&a.score, &b.score));
                entrants.truncate(size);
            }
            let rung_budget = match rung {
                0 => explore_total.scaled(racing.first_rung),
                _ => left.scaled(1.0 / (rungs.len() - rung) as f64),
            };
            let each = rung_budget.scaled(1.0 / entrants.len() as f64);
            if each.is_empty() {
                break;
            }
            for entrant in &mut entrants {
                let outcome = run_on(
                    self.task,
                    &entrant.program,
                    &entrant.values,
                    &entrant.exact,
                    each,
                    index,
                )?;
                index += 1;
                left = left.minus(outcome.seconds, outcome.evaluations);
                let mut label = entrant.label.clone();
                if rung > 0 {
                    label.insert(0, format!("race rung {rung}: continues"));
                }
                self.record(label, entrant.program.clone(), outcome);
                let ran = self.ledger.candidates.last().expect("just recorded");
                entrant.values.clone_from(&ran.values);
                entrant.exact.clone_from(&ran.exact);
                entrant.score = ran.score;
            }
        }
        Ok(left)
    }
}

#[cfg(test)]
mod tests {
    use crate::agent::fixture::TaskFixture;
    use crate::agent::{BuiltinWriter, OptimizerWriter, Role};
    use crate::harness::{seed_harnesses, Racing};

    #[test]
    fn a_race_runs_the_parent_and_revisions_then_halves_and_is_reproducible() {
        let fixture = TaskFixture::cascade();
        let problem = fixture.problem.as_ref();
        let mut harness = seed_harnesses().remove(2);
        harness.racing = Some(Racing {
            candidates: 4,
            first_rung: 0.3,
            eta: 2,
        });
        let assignment = fixture.assignment(3_000, 5);
        let a = BuiltinWriter.solve(&harness, &assignment).unwrap();
        let b = BuiltinWriter.solve(&harness, &assignment).unwrap();
        assert_eq!(a.best, b.best, "not reproducible");
        assert!(a.improved && problem.check(&a.best).is_ok());
        assert_eq!(problem.score_exact(&a.best), a.best_exact);
        assert!(a.evaluations <= 3_000 + 100, "{}", a.evaluations);
        let revisions: Vec<_> = a.runs.iter().filter(|r| r.role == Role::Revision).collect();
        // Rungs of 4, 2 and 1: seven runs, the parent unchanged first.
        assert_eq!(revisions.len(), 7, "{:?}", a.runs);
        assert_eq!(revisions[0].edits, ["race: the parent unchanged"]);
        for run in &revisions[1..4] {
            assert!(!run.edits.is_empty() && !run.edits[0].starts_with("race"));
        }
        for run in &revisions[4..6] {
            assert_eq!(run.edits[0], "race rung 1: continues");
        }
        assert_eq!(revisions[6].edits[0], "race rung 2: continues");
        // The winner's run continues from its own result: it is at least as good as every run
        // of the first rung.
        let direction = problem.spec().direction;
        for run in &revisions[..4] {
            assert!(!direction.better(&run.score, &revisions[6].score));
        }
    }
}
