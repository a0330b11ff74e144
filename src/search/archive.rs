//! The program archive: per slot, the programs that improved its tasks, ranked by the exact
//! score they reached. A round's parent program for a slot is the archive's best from the
//! rounds before it, so revisions build on revisions; the archive changes only at round
//! boundaries and is a function of the lineage (a resumed run rebuilds it).

use super::round_tasks::{better_as_f64, slot_of};
use super::state::SearchState;
use crate::problems::Problem;
use std::collections::BTreeMap;

/// The best program of a slot so far.
#[derive(Clone, Debug, PartialEq)]
pub struct ArchiveEntry {
    /// The program (TOML).
    pub program: String,
    /// The exact score it reached (40 significant digits).
    pub end_exact: String,
    /// The node whose evaluation ran it.
    pub node: String,
}

/// Per slot, the program that reached the best exact score in the rounds before `round` (ties:
/// the earliest).
pub fn best_programs(
    state: &SearchState,
    problem: &dyn Problem,
    round: usize,
) -> BTreeMap<String, ArchiveEntry> {
    let mut best: BTreeMap<String, ArchiveEntry> = BTreeMap::new();
    for node in state.nodes.iter().filter(|n| n.round < round) {
        for evaluation in node.search_evaluations() {
            for task in &evaluation.tasks {
                let Some(program) = &task.best_program else {
                    continue;
                };
                let slot = slot_of(&task.task);
                let replace = best
                    .get(slot)
                    .is_none_or(|b| better_as_f64(problem, &task.end_exact, &b.end_exact));
                if replace {
                    best.insert(
                        slot.to_string(),
                        ArchiveEntry {
                            program: program.clone(),
                            end_exact: task.end_exact.clone(),
                            node: node.id.clone(),
                        },
                    );
                }
            }
        }
    }
    best
}
