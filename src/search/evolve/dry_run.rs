//! The dry run: before a child harness is evaluated, whether the writer would behave under it
//! as under its parent on the round's tasks. It compares the writer's plans (the programs it
//! would write, known without an objective evaluation) on every task under every evidence set
//! the parent's last run showed; a writer that cannot plan is judged by the harnesses' settings.

use crate::agent::{Assignment, OptimizerWriter};
use crate::cancel::CancelToken;
use crate::harness::{Evidence, Harness};
use crate::problems::Problem;
use crate::program::Program;
use crate::search::evaluation::attempt_seed;
use crate::suite::Task;

/// What the writer sees of the round: the problem, the tasks and the crossover library.
pub(super) struct DryRun<'a> {
    /// The run's writer (`None` when it has no name here, as a test's scripted writer: then
    /// the harnesses' settings decide).
    pub writer: Option<&'a dyn OptimizerWriter>,
    /// The suite's problem.
    pub problem: &'a dyn Problem,
    /// The programs crossover edits draw from.
    pub library: &'a [Program],
    /// The round's tasks for the island.
    pub tasks: &'a [&'a Task],
    /// The evidence sets of the parent's last run, one per task (repeats allowed).
    pub evidence: &'a [Vec<Evidence>],
}

impl DryRun<'_> {
    /// Whether `child` makes the writer behave as `parent` does: on each task (its first
    /// attempt's seed) under each distinct evidence set the same plan, and the same run
    /// settings (only those outside the revisions when no plan draws a revision).
    pub fn behaves_alike(&self, child: &Harness, parent: &Harness) -> bool {
        if !child.same_settings_without_revisions(parent) {
            return false;
        }
        let mut revises = false;
        let mut sets: Vec<&[Evidence]> = self.evidence.iter().map(Vec::as_slice).collect();
        sets.sort();
        sets.dedup();
        if sets.is_empty() {
            sets.push(&[]);
        }
        for task in self.tasks {
            let assignment = Assignment {
                problem: self.problem,
                start: &task.start.values,
                start_exact: &task.start.exact,
                parent: &task.program,
                seconds: task.budget.seconds,
                evaluations: task.budget.evaluations,
                seed: attempt_seed(task, 0),
                library: self.library,
                cancel: CancelToken::new(),
            };
            for evidence in &sets {
                let plan = |h: &Harness| self.writer?.plan(h, &assignment, evidence);
                match (plan(child), plan(parent)) {
                    (Some(a), Some(b)) if a == b => {
                        // A draw that applied no edit is the parent again: the writer skips it.
                        let parent_program = task.program.to_toml();
                        revises |= a.iter().any(|program| *program != parent_program);
                    }
                    (Some(_), Some(_)) => return false,
                    _ => return child.same_behaviour(parent, self.evidence),
                }
            }
        }
        !revises || child.same_run_settings(parent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::BuiltinWriter;
    use crate::harness::{seed_harnesses, EditKind, RevisionBase};
    use crate::suite::{Split, Start, TaskBudget};
    use std::path::PathBuf;
    use std::sync::Arc;

    fn task(seed: u64) -> Task {
        let problem = crate::problems::by_slug("third-autocorrelation-inequality").unwrap();
        let values: Vec<f64> = (0..60)
            .map(|i| 1.0 + ((i * 37 % 11) as f64) / 10.0)
            .collect();
        let program = Program::parse(
            "name = \"p\"\n[[steps]]\nkind = \"lbfgs\"\nparameterisation = \"raw\"\n\
             betas = [1e3, 1e5]\nhistory = 20\niterations = 100\n",
            std::path::Path::new("p"),
        )
        .unwrap();
        Task {
            id: format!("s/p/r1k{seed}"),
            split: Split::Search,
            start: Arc::new(Start {
                label: "s".into(),
                path: PathBuf::from("s.json"),
                sha256: "00".into(),
                split: Split::Search,
                exact: problem.score_exact(&values),
                values: Arc::new(values),
            }),
            program_path: PathBuf::from("p.toml"),
            program: Arc::new(program),
            seed,
            budget: TaskBudget {
                seconds: None,
                evaluations: Some(1_000),
            },
        }
    }

    /// Runs `check` on the built-in writer's dry run over eight tasks (seeds 1–8), no evidence.
    fn with_dry_run(check: impl FnOnce(&DryRun)) {
        let problem = crate::problems::by_slug("third-autocorrelation-inequality").unwrap();
        let tasks: Vec<Task> = (1..=8).map(task).collect();
        let refs: Vec<&Task> = tasks.iter().collect();
        check(&DryRun {
            writer: Some(&BuiltinWriter),
            problem: problem.as_ref(),
            library: &[],
            tasks: &refs,
            evidence: &[],
        });
    }

    #[test]
    fn the_dry_run_tells_a_change_the_edits_feel_from_one_they_do_not() {
        with_dry_run(|dry_run| {
            let parent = seed_harnesses()[1].clone();
            let mut verify = parent.clone();
            verify.verify_top += 1;
            verify.triage = 0.9;
            verify.name = "other".into();
            assert!(dry_run.behaves_alike(&verify, &parent));
            // A weight nudge that moves no draw on these tasks is no change …
            let mut nudged = parent.clone();
            for weight in nudged.menu.values_mut() {
                *weight *= 1.0 + 1e-12;
            }
            assert!(dry_run.behaves_alike(&nudged, &parent));
            // … a menu left with its rarest kind is, and so is another budget split.
            let mut narrowed = parent.clone();
            let rarest = narrowed
                .menu
                .iter()
                .filter(|(_, w)| **w > 0.0)
                .min_by(|a, b| a.1.total_cmp(b.1))
                .map(|(k, _)| *k)
                .unwrap();
            narrowed.menu.retain(|k, _| *k == rarest);
            assert!(!dry_run.behaves_alike(&narrowed, &parent));
            let mut split = parent.clone();
            split.budget.reserve /= 2.0;
            assert!(!dry_run.behaves_alike(&split, &parent));
            // The settings alone would call the nudge a change.
            assert!(!nudged.same_behaviour(&parent, &[]));
        });
    }

    #[test]
    fn what_shapes_revisions_decides_only_when_a_plan_draws_one() {
        with_dry_run(|dry_run| {
            let with_menu = |kind: EditKind, revise: RevisionBase| {
                let mut harness = seed_harnesses()[1].clone();
                harness.menu = [(kind, 1.0)].into_iter().collect();
                harness.revise = revise;
                harness
            };
            // The tasks' program is one stage: no neighbours to swap, so no revision is drawn.
            let (parent, child) = (RevisionBase::Best, RevisionBase::Parent);
            let swaps = with_menu(EditKind::Reorder, parent);
            assert!(dry_run.behaves_alike(&with_menu(EditKind::Reorder, child), &swaps));
            let tunes = with_menu(EditKind::Tune, parent);
            assert!(!dry_run.behaves_alike(&with_menu(EditKind::Tune, child), &tunes));
            let mut split = swaps.clone();
            split.budget.reserve /= 2.0;
            assert!(!dry_run.behaves_alike(&split, &swaps));
        });
    }
}
