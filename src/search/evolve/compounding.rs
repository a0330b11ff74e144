//! How the search's work compounds between rounds: the tasks of a round (each slot's best
//! program so far, from its current start, with fresh seeds), saving a round's candidate starts
//! as evaluations find them, and promoting each slot's best at the round's end.

use super::{Search, SearchObserver};
use crate::error::Result;
use crate::exact::rational::decimal_string;
use crate::program::Program;
use crate::search::archive;
use crate::search::evaluation::{Evaluation, Improvement};
use crate::search::lineage::{EventRecord, LineageRecord, Move};
use crate::search::promotion;
use crate::search::round_tasks::{self, start_of, Slot, SlotStart};
use crate::suite::{Start, Task};
use std::path::Path;
use std::sync::Arc;

impl Search {
    /// The current search slots (the suite's, or a curriculum's).
    pub(super) fn current_slots(&self) -> Vec<&Slot> {
        match &self.state.search_slots {
            Some(ids) => self.slots.iter().filter(|s| ids.contains(&s.id)).collect(),
            None => self.slots.iter().collect(),
        }
    }

    /// A slot's current start: its start's promoted construction, or the suite's start.
    fn slot_start(&self, slot: &Slot) -> Arc<Start> {
        self.state
            .promoted
            .get(&slot.template.start.label)
            .and_then(|hash| self.starts.get(hash))
            .cloned()
            .unwrap_or_else(|| slot.template.start.clone())
    }

    /// The search tasks of `round` (computed once per round; the archive and the promoted
    /// starts change only between rounds).
    pub(super) fn tasks_of_round(&mut self, round: usize) -> Vec<Task> {
        if let Some((cached, tasks)) = &self.round_tasks {
            if *cached == round {
                return tasks.clone();
            }
        }
        let problem = self.suite.problem.as_ref();
        let config = self.config();
        let (seed, count) = (config.seed, config.tasks_per_round);
        let populations =
            archive::populations(&self.state, problem, round, config.archive_population);
        let current = |slot: &Slot, k: usize| SlotStart {
            start: self.slot_start(slot),
            program: populations
                .get(&slot.id)
                .and_then(|population| archive::draw(population, seed, round, k))
                .and_then(|entry| Program::parse(&entry.program, Path::new("archive")).ok())
                .map(Arc::new)
                .unwrap_or_else(|| slot.template.program.clone()),
        };
        let tasks = round_tasks::search_tasks(&self.current_slots(), seed, round, count, current);
        self.round_tasks = Some((round, tasks.clone()));
        tasks
    }

    /// Saves the improvements of `evaluation` (made in `round`) that could replace their start:
    /// per start, the best one, when it beats every construction saved for that start in the
    /// round so far; the task result names the saved file.
    pub(super) fn save_candidate_starts(
        &mut self,
        round: usize,
        evaluation: &mut Evaluation,
        discoveries: &[Improvement],
    ) -> Result<()> {
        if !self.config().promote_discoveries {
            return Ok(());
        }
        let problem = self.suite.problem.as_ref();
        let direction = problem.spec().direction;
        let mut best_per_start: Vec<&Improvement> = Vec::new();
        for d in discoveries {
            let start = start_of(&d.task);
            match best_per_start
                .iter_mut()
                .find(|b| start_of(&b.task) == start)
            {
                Some(b) if direction.better(&d.exact, &b.exact) => *b = d,
                Some(_) => {}
                None => best_per_start.push(d),
            }
        }
        for d in best_per_start {
            let exact = decimal_string(&d.exact, 40);
            let saved = promotion::saved_best(&self.state, problem, round, start_of(&d.task));
            if saved.is_some_and(|s| !round_tasks::better_as_f64(problem, &exact, &s)) {
                continue;
            }
            let sha256 = promotion::save(&self.dir, &d.values)?;
            if let Some(task) = evaluation.tasks.iter_mut().find(|t| t.task == d.task) {
                task.construction = Some(promotion::address(&sha256).to_string());
            }
        }
        Ok(())
    }

    /// Promotes, for each start, the best construction saved in `round` when it beats the
    /// start's current construction exactly (`--promote-discoveries`); a promotion already
    /// recorded is not made again, so a resumed run makes the same ones.
    pub(super) fn promote(
        &mut self,
        round: usize,
        observer: &mut dyn SearchObserver,
    ) -> Result<()> {
        if !self.config().promote_discoveries {
            return Ok(());
        }
        let bests = promotion::round_bests(&self.state, self.suite.problem.as_ref(), round);
        for best in bests {
            let recorded = self.state.events.iter().any(|e| {
                e.round == round
                    && matches!(&e.action, Move::Promote { start, .. } if *start == best.start)
            });
            let Some(slot) = self
                .slots
                .iter()
                .find(|s| s.template.start.label == best.start)
            else {
                continue;
            };
            if recorded {
                continue;
            }
            let current = self.slot_start(slot);
            let problem = self.suite.problem.as_ref();
            let Some(start) =
                promotion::supersede(&self.dir, &best.hash, &best.start, &current, problem)?
            else {
                continue;
            };
            let event = EventRecord {
                round,
                islands: vec![],
                diagnosis: format!(
                    "start {}: the round's best construction ({}, node {}) beats its current one {} \
                     ({}); every program on it starts from it",
                    best.start,
                    best.exact,
                    best.node,
                    current.label,
                    decimal_string(&current.exact, 40)
                ),
                action: Move::Promote {
                    start: best.start.clone(),
                    construction: best.hash.clone(),
                    exact: best.exact.clone(),
                    node: best.node.clone(),
                },
            };
            self.starts.insert(best.hash.clone(), Arc::new(start));
            self.record(LineageRecord::Event(event.clone()))?;
            observer.event(&event);
        }
        Ok(())
    }
}
