//! Stock: no search, no edits. Each search task's own program runs unchanged (the `verbatim`
//! writer) on the task's whole budget; every later step runs it again from the task's best
//! construction so far (promotion is always on), with fresh task seeds, until the CPU budget is
//! spent. The same programs are then validated from the validation tasks' frozen starts.
//! [`Stock::with_program`] runs one given program on every task instead (`program:PATH`).

use super::log::{BaselineLog, StepRecord};
use super::promotion::CurrentStarts;
use super::{Method, RunContext};
use crate::agent::{GivenProgram, OptimizerWriter};
use crate::bench::trajectory::Trajectory;
use crate::error::Result;
use crate::harness::Harness;
use crate::program::Program;
use crate::suite::Task;
use std::sync::Arc;

/// The stock-program baseline: each task's own program, or one program on every task.
pub struct Stock {
    name: String,
    program: Option<Arc<Program>>,
}

impl Default for Stock {
    fn default() -> Self {
        Stock {
            name: "stock".into(),
            program: None,
        }
    }
}

impl Stock {
    /// `program` run unchanged on every task, as the method called `name`.
    pub fn with_program(name: String, program: Program) -> Stock {
        Stock {
            name,
            program: Some(Arc::new(program)),
        }
    }

    /// `tasks` with the method's program in place of each task's own, when it has one.
    fn with_own_program(&self, mut tasks: Vec<Task>) -> Vec<Task> {
        if let Some(program) = &self.program {
            for task in &mut tasks {
                task.program = program.clone();
            }
        }
        tasks
    }
}

impl Method for Stock {
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&self, ctx: &RunContext) -> Result<Option<Trajectory>> {
        let mut log = BaselineLog::open(ctx.dir)?;
        // The verbatim writer ignores the harness; one is needed to evaluate.
        let harness = &Harness::program_evolution();
        let search = self.with_own_program(ctx.search_tasks());
        let mut current = CurrentStarts::rebuild(ctx, search, log.promotions())?;
        while ctx.may_step(&log) {
            if ctx.cancel.is_cancelled() {
                return Ok(None);
            }
            let step = log.steps.len();
            let tasks = ctx.resampled(current.tasks().to_vec(), step);
            let Some((evaluation, discoveries)) =
                ctx.evaluate_with_improvements(GivenProgram.name(), harness, &tasks, &[])?
            else {
                return Ok(None);
            };
            let promoted = current.promote(&discoveries)?;
            log.step(StepRecord {
                index: step,
                island: 0,
                parent: step.checked_sub(1),
                candidate: self.name.clone(),
                program: None,
                origin: format!("step {step}"),
                evaluation,
                at: 0.0,
                promoted,
            })?;
        }
        let validation = self.with_own_program(ctx.validation_tasks());
        let validated = log.validate_best(ctx.cpu_seconds, |_| {
            ctx.evaluate(GivenProgram.name(), harness, &validation, &[])
        })?;
        Ok(validated.then(|| log.trajectory()))
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture;
    use super::*;
    use crate::suite::Split;

    #[test]
    fn each_step_starts_from_the_previous_steps_best_when_it_improved() {
        let dir = tempfile::tempdir().unwrap();
        let suite = fixture::tiny_suite(dir.path());
        let run = dir.path().join("run");
        std::fs::create_dir_all(&run).unwrap();
        // Three runs, each resumed from the records with a budget just above what was spent
        // and what validating its best will take: each makes at least one more step.
        let validation_cost = fixture::context(&suite, &run, 0.0).validation_in_search_tasks();
        for _ in 0..3 {
            let log = BaselineLog::open(&run).unwrap();
            let reserve = log.validation_estimate(f64::INFINITY, validation_cost);
            let ctx = fixture::context(&suite, &run, log.cpu_seconds() + reserve + 1e-9);
            Stock::default().run(&ctx).unwrap().unwrap();
        }
        let log = BaselineLog::open(&run).unwrap();
        assert!(log.steps.len() >= 3, "{} steps", log.steps.len());
        assert!(log.validation.is_some());
        let mut promotions = 0;
        for pair in log.steps.windows(2) {
            let (before, after) = (&pair[0], &pair[1]);
            let improved = before.evaluation.tasks.iter().filter(|t| t.gain > 0.0);
            assert_eq!(before.promoted.len(), improved.count());
            promotions += before.promoted.len();
            for (b, a) in before.evaluation.tasks.iter().zip(&after.evaluation.tasks) {
                assert_eq!(a.task, b.task);
                let expected = if b.gain > 0.0 {
                    &b.end_exact
                } else {
                    &b.start_exact
                };
                assert_eq!(&a.start_exact, expected, "{}", a.task);
            }
        }
        assert!(promotions > 0, "no step improved: the test shows nothing");
    }

    #[test]
    fn validating_on_shorter_held_out_starts_is_reserved_at_their_smaller_cost() {
        let dir = tempfile::tempdir().unwrap();
        let mut suite = fixture::tiny_suite(dir.path());
        let full = fixture::context(&suite, dir.path(), 1.0).validation_in_search_tasks();
        // The held-out start cut from 80 values to 8: n·log₂n falls from 505.8 to 24.
        for task in suite
            .tasks
            .iter_mut()
            .filter(|t| t.split == Split::Validation)
        {
            let mut start = (*task.start).clone();
            start.values = Arc::new(start.values[..8].to_vec());
            task.start = Arc::new(start);
        }
        let short = fixture::context(&suite, dir.path(), 1.0).validation_in_search_tasks();
        let ratio = (8.0 * 3.0) / (80.0 * 80f64.log2());
        assert!(
            (short - full * ratio).abs() < 1e-12,
            "{short} vs {full} × {ratio}"
        );
    }

    #[test]
    fn a_step_is_made_only_while_the_budget_holds_the_search_and_the_validation_of_the_best() {
        let dir = tempfile::tempdir().unwrap();
        let suite = fixture::tiny_suite(dir.path());
        let run = dir.path().join("run");
        std::fs::create_dir_all(&run).unwrap();
        Stock::default()
            .run(&fixture::context(&suite, &run, 1e-9))
            .unwrap()
            .unwrap();
        // The tiny tasks take about one clock tick; a second per task makes the sums plain.
        let mut log = BaselineLog::open(&run).unwrap();
        for step in &mut log.steps {
            step.evaluation
                .tasks
                .iter_mut()
                .for_each(|t| t.cpu_seconds = 1.0);
        }
        let spent = log.cpu_seconds();
        let validation_tasks = suite.validation_tasks().count();
        let in_search_tasks = fixture::context(&suite, &run, 0.0).validation_in_search_tasks();
        assert!(
            (in_search_tasks - validation_tasks as f64).abs() < 1e-9,
            "every start is as long as every other: {in_search_tasks}"
        );
        let reserve = log.validation_estimate(f64::INFINITY, in_search_tasks);
        assert!(
            (reserve - validation_tasks as f64).abs() < 1e-9,
            "a second per validation task: {reserve}"
        );
        let short = fixture::context(&suite, &run, spent + 0.5 * reserve);
        assert!(!short.may_step(&log));
        assert_eq!(
            short.reserve.seconds(),
            reserve,
            "the cut reads the reserve"
        );
        assert!(fixture::context(&suite, &run, spent + 1.5 * reserve).may_step(&log));
    }
}
