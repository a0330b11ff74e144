//! Best-of-N: no search. The seed harnesses take turns; each turn is a fresh sample (the
//! tasks' seeds re-derived from the run's seed and the sample number; sample 0 uses the tasks'
//! own seeds, as every other method's seed nodes do). The best candidate is validated. With
//! `promote` on, each turn starts from the tasks' current starts ([`super::promotion`]).
//! [`BestOfN::with_harness`] samples one given harness instead (`harness:PATH`).

use super::log::{BaselineLog, StepRecord};
use super::promotion::CurrentStarts;
use super::{Method, RunContext};
use crate::agent::{BuiltinWriter, OptimizerWriter};
use crate::bench::trajectory::Trajectory;
use crate::error::Result;
use crate::harness::{seed_harnesses, Harness};

/// The Best-of-N baseline: the seed harnesses in turn, or one given harness.
pub struct BestOfN {
    name: String,
    harnesses: Vec<Harness>,
}

impl Default for BestOfN {
    fn default() -> Self {
        BestOfN {
            name: "best-of-n".into(),
            harnesses: seed_harnesses(),
        }
    }
}

impl BestOfN {
    /// `harness` alone, sampled step after step, as the method called `name`.
    pub fn with_harness(name: String, harness: Harness) -> BestOfN {
        BestOfN {
            name,
            harnesses: vec![harness],
        }
    }
}

impl Method for BestOfN {
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&self, ctx: &RunContext) -> Result<Option<Trajectory>> {
        let mut log = BaselineLog::open(ctx.dir)?;
        let seeds = &self.harnesses;
        let mut current = CurrentStarts::rebuild(ctx, ctx.search_tasks(), log.promotions())?;
        while ctx.may_step(&log) {
            if ctx.cancel.is_cancelled() {
                return Ok(None);
            }
            let k = log.steps.len();
            let (harness, sample) = (&seeds[k % seeds.len()], k / seeds.len());
            let tasks = ctx.resampled(current.tasks().to_vec(), sample);
            let Some((evaluation, discoveries)) =
                ctx.evaluate_with_improvements(BuiltinWriter.name(), harness, &tasks, &[])?
            else {
                return Ok(None);
            };
            let promoted = if ctx.promote {
                current.promote(&discoveries)?
            } else {
                vec![]
            };
            log.step(StepRecord {
                index: k,
                island: 0,
                parent: None,
                candidate: harness.name.clone(),
                program: None,
                origin: format!("sample {sample}"),
                evaluation,
                at: 0.0,
                promoted,
            })?;
        }
        let validated = log.validate_best(ctx.cpu_seconds, |best| {
            let harness = &seeds[best.index % seeds.len()];
            ctx.evaluate(BuiltinWriter.name(), harness, &ctx.validation_tasks(), &[])
        })?;
        Ok(validated.then(|| log.trajectory()))
    }
}
