//! The tasks a round evaluates.
//!
//! The suite's tasks without their seeds are *slots* (`<start label>/<program name>`). Round r
//! runs `tasks_per_round` tasks over the current search slots in turn, each with a seed fresh
//! to the round (derived from the run's seed, the round and the task's position), starting from
//! the current start of the slot's start label (the suite's, or one promoted by
//! [`super::promotion`]) with the
//! slot's current parent program (the suite's, or the best of [`super::archive`]). Every
//! harness of a round sees the same tasks: common random numbers between a parent and its child.
//!
//! Validation tasks are the held-out slots with seeds of their own stream, fixed for the run
//! (so validations of different nodes compare), from the suite's frozen starts and programs.

use crate::problems::Problem;
use crate::program::Program;
use crate::runner::derive_seed;
use crate::search::evaluation::Evaluation;
use crate::suite::{Split, Start, Task};
use std::sync::Arc;

/// Stream of the search tasks' seeds (kept apart from validation's).
const SEARCH_STREAM: u64 = 0x5EA_4C4;
/// Stream of the validation tasks' seeds.
const VALIDATION_STREAM: u64 = 0x7A1_1DA7E;

/// The slot of a task id: the id without its last component (the seed or round part).
pub fn slot_of(task_id: &str) -> &str {
    task_id.rsplit_once('/').map_or(task_id, |(slot, _)| slot)
}

/// The start label of a slot or task id (its first component).
pub fn start_of(id: &str) -> &str {
    id.split_once('/').map_or(id, |(start, _)| start)
}

/// A slot: a start × a parent program of the suite, with the suite task it was read from.
#[derive(Clone, Debug)]
pub struct Slot {
    /// `<start label>/<program name>`.
    pub id: String,
    /// The first suite task of the slot (its split, start, program and budget).
    pub template: Task,
}

/// The slots of `tasks`, in their order, each once.
pub fn slots<'a>(tasks: impl Iterator<Item = &'a Task>) -> Vec<Slot> {
    let mut slots: Vec<Slot> = Vec::new();
    for task in tasks {
        let id = slot_of(&task.id);
        if !slots.iter().any(|s| s.id == id) {
            slots.push(Slot {
                id: id.to_string(),
                template: task.clone(),
            });
        }
    }
    slots
}

/// What a slot's tasks start from in a round: its current start and parent program.
pub struct SlotStart {
    /// The start construction.
    pub start: Arc<Start>,
    /// The parent program.
    pub program: Arc<Program>,
}

/// The `count` search tasks of `round` over `slots` in turn, task `k` from `current(slot, k)`.
pub fn search_tasks(
    slots: &[&Slot],
    run_seed: u64,
    round: usize,
    count: usize,
    current: impl Fn(&Slot, usize) -> SlotStart,
) -> Vec<Task> {
    if slots.is_empty() {
        return Vec::new();
    }
    let stream = derive_seed(derive_seed(run_seed, SEARCH_STREAM), round as u64);
    (0..count.max(1))
        .map(|k| {
            let slot = slots[k % slots.len()];
            let SlotStart { start, program } = current(slot, k);
            Task {
                id: format!("{}/r{round}k{k}", slot.id),
                split: Split::Search,
                start,
                program,
                seed: derive_seed(stream, k as u64),
                ..slot.template.clone()
            }
        })
        .collect()
}

/// The run's `count` validation tasks over the held-out `slots` in turn (fixed for the run).
pub fn validation_tasks(slots: &[Slot], run_seed: u64, count: usize) -> Vec<Task> {
    if slots.is_empty() {
        return Vec::new();
    }
    let stream = derive_seed(run_seed, VALIDATION_STREAM);
    (0..count.max(1))
        .map(|k| {
            let slot = &slots[k % slots.len()];
            Task {
                id: format!("{}/v{k}", slot.id),
                split: Split::Validation,
                seed: derive_seed(stream, k as u64),
                ..slot.template.clone()
            }
        })
        .collect()
}

/// An evaluation's mean gain per slot, the slots in the order its tasks first name them: tasks
/// of different rounds differ in their seeds, their slots compare. The one per-slot gain (the
/// behavioural descriptor, the orchestrator's similarity, the LLM mutator's slot summary).
pub fn mean_gain_per_slot(evaluation: &Evaluation) -> Vec<(&str, f64)> {
    let mut slots: Vec<(&str, f64, usize)> = Vec::new();
    for task in &evaluation.tasks {
        let slot = slot_of(&task.task);
        match slots.iter_mut().find(|(s, _, _)| *s == slot) {
            Some(entry) => {
                entry.1 += task.gain;
                entry.2 += 1;
            }
            None => slots.push((slot, task.gain, 1)),
        }
    }
    slots
        .into_iter()
        .map(|(slot, sum, count)| (slot, sum / count as f64))
        .collect()
}

/// An evaluation's mean gain per slot (see [`mean_gain_per_slot`]) in the order of `slots` (0
/// where it ran no task): the behavioural descriptor that stays comparable between rounds.
pub fn slot_gains(evaluation: &Evaluation, slots: &[String]) -> Vec<f64> {
    let means = mean_gain_per_slot(evaluation);
    slots
        .iter()
        .map(|slot| {
            means
                .iter()
                .find(|(s, _)| s == slot)
                .map_or(0.0, |&(_, mean)| mean)
        })
        .collect()
}

/// Whether `a` is a better score than `b` in the problem's direction, both decimal text (the
/// lineage's 40 significant digits) compared as the nearest `f64`s: scores closer than an
/// `f64` resolves count as equal (not better). False when either is not a number.
pub fn better_as_f64(problem: &dyn Problem, a: &str, b: &str) -> bool {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(a), Ok(b)) => problem.spec().direction.better(&a, &b),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::Suite;
    use std::path::Path;

    fn suite() -> Suite {
        Suite::load(Path::new("problems/suites/default.toml")).unwrap()
    }

    #[test]
    fn slots_drop_the_seed_and_rounds_draw_fresh_seeds_over_them() {
        let suite = suite();
        let all = slots(suite.search_tasks());
        assert_eq!(all.len(), 2, "two search starts × one program");
        assert_eq!(slot_of(&suite.search_tasks().next().unwrap().id), all[0].id);
        let refs: Vec<&Slot> = all.iter().collect();
        let current = |s: &Slot, _k: usize| SlotStart {
            start: s.template.start.clone(),
            program: s.template.program.clone(),
        };
        let one = search_tasks(&refs, 7, 1, 8, current);
        let two = search_tasks(&refs, 7, 2, 8, current);
        assert_eq!(one.len(), 8);
        assert_eq!(slot_of(&one[0].id), all[0].id);
        assert_eq!(slot_of(&one[1].id), all[1].id);
        let seeds = |tasks: &[Task]| tasks.iter().map(|t| t.seed).collect::<Vec<_>>();
        let mut distinct = seeds(&one);
        distinct.extend(seeds(&two));
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 16, "fresh seeds within and between rounds");
        assert_eq!(seeds(&one), seeds(&search_tasks(&refs, 7, 1, 8, current)));
        let held_out = slots(suite.validation_tasks());
        let validation = validation_tasks(&held_out, 7, 4);
        assert!(validation.iter().all(|t| t.split == Split::Validation));
        assert!(validation.iter().all(|t| !distinct.contains(&t.seed)));
    }
}
