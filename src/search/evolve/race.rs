//! The `race` admission policy in a step: the children of one parent run block by block on the
//! round's tasks, the parent once per block for all of them, until [`harness_race::decide`] decides
//! each or the cap is reached.

use super::step::Decided;
use super::{Search, SearchObserver};
use crate::error::Result;
use crate::harness::Harness;
use crate::search::evaluation::Evaluation;
use crate::search::harness_race::{self, Decision, RaceSettings};
use crate::suite::Task;

/// A child in the race: its node id, harness, evaluation so far and verdict once decided.
struct Racer<'a> {
    id: &'a str,
    harness: &'a Harness,
    evaluation: Option<Evaluation>,
    decided: Option<crate::search::admission::Verdict>,
}

impl Search {
    /// Races `children` (node id, harness) against `parent` on `tasks` of the step of
    /// `(island, round)` over `slots` search slots. The decisions come back in the children's
    /// order; the parent's evaluation of each is on that child's tasks, marked reused for all but
    /// the first child that ran longest (which ran on every task the parent ran on), so the
    /// parent's CPU seconds are charged once. `None` when the step ends (cancelled, or a writer
    /// failed).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn race(
        &mut self,
        parent: &Harness,
        children: &[(&str, &Harness)],
        tasks: &[&Task],
        race: RaceSettings,
        slots: usize,
        (island, round): (usize, usize),
        observer: &mut dyn SearchObserver,
    ) -> Result<Option<Vec<Decided>>> {
        let Some(&(first_id, _)) = children.first() else {
            return Ok(Some(vec![]));
        };
        let (quality, cost) = (self.config().quality, self.config().cost);
        let join = |so_far: Option<Evaluation>, block: Evaluation| match so_far {
            None => block,
            Some(so_far) => so_far.joined(&block, quality, cost),
        };
        let (block, cap) = race.schedule(tasks.len(), slots);
        let mut racers: Vec<Racer> = children
            .iter()
            .map(|&(id, harness)| Racer {
                id,
                harness,
                evaluation: None,
                decided: None,
            })
            .collect();
        let mut parent_so_far: Option<Evaluation> = None;
        let mut done = 0;
        while done < cap && racers.iter().any(|r| r.decided.is_none()) {
            let end = (done + block).min(cap);
            let block_tasks = &tasks[done..end];
            let outcome =
                self.evaluate(parent, block_tasks, (island, round), first_id, observer)?;
            let Some(evaluation) = self.finished(outcome, round, island, observer)? else {
                return Ok(None);
            };
            let parent_evaluation = join(parent_so_far.take(), evaluation);
            for racer in racers.iter_mut().filter(|r| r.decided.is_none()) {
                let outcome = self.evaluate(
                    racer.harness,
                    block_tasks,
                    (island, round),
                    racer.id,
                    observer,
                )?;
                let Some(evaluation) = self.finished(outcome, round, island, observer)? else {
                    return Ok(None);
                };
                let so_far = join(racer.evaluation.take(), evaluation);
                let last = end >= cap;
                if let Decision::Decided(verdict) =
                    harness_race::decide(&parent_evaluation, &so_far, cost, &race, last)
                {
                    racer.decided = Some(verdict);
                }
                racer.evaluation = Some(so_far);
            }
            parent_so_far = Some(parent_evaluation);
            done = end;
        }
        let parent_evaluation = parent_so_far.expect("the first block ran");
        let longest = racers
            .iter()
            .map(|r| r.evaluation.as_ref().map_or(0, |e| e.tasks.len()))
            .max()
            .unwrap_or(0);
        let mut charged = false;
        let decided = racers
            .into_iter()
            .map(|racer| {
                let child = racer.evaluation.expect("every child ran the first block");
                let ids: Vec<String> = child.tasks.iter().map(|t| t.task.clone()).collect();
                let mut parent = parent_evaluation.restricted(&ids, quality, cost);
                parent.reused = parent_evaluation.reused || charged || ids.len() < longest;
                charged |= !parent.reused;
                Decided {
                    child,
                    parent,
                    verdict: racer.decided.expect("the cap decides every child"),
                }
            })
            .collect();
        Ok(Some(decided))
    }
}
