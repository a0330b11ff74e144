//! The program archive: per slot, the programs that improved its tasks, ranked by the exact
//! score they reached. A round's parent program for a slot comes from the archive of the rounds
//! before it, so revisions build on revisions; the archive changes only at round boundaries and
//! is a function of the lineage (a resumed run rebuilds it).
//!
//! Each task of a round draws its parent from the slot's K best distinct programs
//! (`--archive-population K`, by default [`PROGRAM_EVOLUTION_POPULATION`]) as program evolution
//! draws from an island's survivors: the best with probability [`EXPLOIT`], else one of the K
//! uniformly. With K = 1 a slot's parent is always its best program.

use super::round_tasks::{better_as_f64, slot_of};
use super::state::SearchState;
use crate::problems::Problem;
use crate::runner::derive_seed;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// Probability that a task's parent is its slot's best program rather than a uniformly drawn
/// member of the population (as `alphaevolve` draws its parents).
pub const EXPLOIT: f64 = 0.5;

/// Programs an `alphaevolve` island keeps, and the default population of a slot's archive.
pub const PROGRAM_EVOLUTION_POPULATION: usize = 6;

/// Stream of the population draws (kept apart from the tasks' seeds).
const DRAW_STREAM: u64 = 0xA2C_417E;

/// A program of a slot and the best exact score it reached.
#[derive(Clone, Debug, PartialEq)]
pub struct ArchiveEntry {
    /// The program (TOML).
    pub program: String,
    /// The best exact score it reached (40 significant digits).
    pub end_exact: String,
    /// The node whose evaluation first reached that score with it.
    pub node: String,
}

/// Per slot, the `capacity` distinct programs that reached the best exact scores in the rounds
/// before `round`, best first (ties: the one that reached its score earliest).
pub fn populations(
    state: &SearchState,
    problem: &dyn Problem,
    round: usize,
    capacity: usize,
) -> BTreeMap<String, Vec<ArchiveEntry>> {
    let mut all: BTreeMap<String, Vec<ArchiveEntry>> = BTreeMap::new();
    for node in state.nodes.iter().filter(|n| n.round < round) {
        for evaluation in node.search_evaluations() {
            for task in &evaluation.tasks {
                let Some(program) = &task.best_program else {
                    continue;
                };
                let entries = all.entry(slot_of(&task.task).to_string()).or_default();
                let entry = ArchiveEntry {
                    program: program.clone(),
                    end_exact: task.end_exact.clone(),
                    node: node.id.clone(),
                };
                match entries.iter().position(|e| e.program == *program) {
                    Some(i) if better_as_f64(problem, &task.end_exact, &entries[i].end_exact) => {
                        // It moves to the end: it reached its new score latest.
                        entries.remove(i);
                        entries.push(entry);
                    }
                    Some(_) => {}
                    None => entries.push(entry),
                }
            }
        }
    }
    for entries in all.values_mut() {
        // Stable: among equal scores the one reached earliest stays first.
        entries.sort_by(|a, b| {
            if better_as_f64(problem, &a.end_exact, &b.end_exact) {
                std::cmp::Ordering::Less
            } else if better_as_f64(problem, &b.end_exact, &a.end_exact) {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        });
        entries.truncate(capacity.max(1));
    }
    all
}

/// Per slot, the program that reached the best exact score in the rounds before `round` (ties:
/// the earliest).
pub fn best_programs(
    state: &SearchState,
    problem: &dyn Problem,
    round: usize,
) -> BTreeMap<String, ArchiveEntry> {
    populations(state, problem, round, 1)
        .into_iter()
        .filter_map(|(slot, entries)| entries.into_iter().next().map(|e| (slot, e)))
        .collect()
}

/// The member of `population` (best first) that task `k` of `round` runs as its parent: the
/// best with probability [`EXPLOIT`], else a uniformly drawn member; a draw fixed by the run's
/// seed, the round and the task's position, so every harness of the round gets the same one.
pub fn draw<T>(population: &[T], run_seed: u64, round: usize, k: usize) -> Option<&T> {
    if population.len() <= 1 {
        return population.first();
    }
    let stream = derive_seed(derive_seed(run_seed, DRAW_STREAM), round as u64);
    let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(stream, k as u64));
    Some(pick_parent(population, EXPLOIT, &mut rng))
}

/// Program evolution's parent choice from a non-empty `population` (best first): the best with
/// probability `exploit`, else a uniformly drawn member; shared by [`draw`] and `alphaevolve`.
pub fn pick_parent<'a, T>(population: &'a [T], exploit: f64, rng: &mut impl Rng) -> &'a T {
    match rng.gen_bool(exploit) {
        true => &population[0],
        false => &population[rng.gen_range(0..population.len())],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::admission::Verdict;
    use crate::search::evaluation::{Evaluation, TaskResult};
    use crate::search::hypervolume::Fitness;
    use crate::search::lineage::NodeRecord;
    use crate::suite::{Split, Suite};
    use std::path::Path;

    /// A node of `round` whose tasks on slot `s/p` ran `(program, end score)`.
    fn node(id: &str, round: usize, runs: &[(&str, &str)]) -> NodeRecord {
        let tasks = runs
            .iter()
            .enumerate()
            .map(|(k, (program, end))| TaskResult {
                task: format!("s/p/r{round}k{k}"),
                split: Split::Search,
                start_exact: "2".into(),
                end_exact: end.to_string(),
                gain: 1.0,
                evaluations: 1,
                work: 0.0,
                cpu_seconds: 0.0,
                wall_seconds: 0.0,
                usage: Default::default(),
                evidence: vec![],
                edits: vec![],
                best_program: Some(program.to_string()),
                construction: None,
                writer: None,
            })
            .collect();
        NodeRecord {
            id: id.into(),
            island: 0,
            round,
            parents: vec![],
            mutator: "seed".into(),
            harness: String::new(),
            name: String::new(),
            edit: String::new(),
            evidence: vec![],
            usage: Default::default(),
            evaluation: Evaluation {
                tasks,
                fitness: Fitness {
                    quality: 1.0,
                    cost: 1.0,
                    latency: 1.0,
                },
                gains: vec![],
                reused: false,
            },
            parent_evaluation: None,
            verdict: Verdict {
                admitted: true,
                hypervolume_before: 0.0,
                hypervolume_after: 0.0,
                reason: String::new(),
            },
            validation: None,
            at: None,
        }
    }

    #[test]
    fn a_population_keeps_the_best_distinct_programs_and_its_head_is_the_best_program() {
        let suite = Suite::load(Path::new("problems/suites/default.toml")).unwrap();
        let problem = suite.problem.as_ref(); // minimised: lower is better
        let mut state = SearchState::default();
        state.nodes = vec![
            node("n0", 0, &[("a", "1.5"), ("b", "1.4"), ("c", "1.6")]),
            // `b` ties its own best, `a` improves to tie `b`: `b` reached 1.4 first.
            node("n1", 1, &[("b", "1.4"), ("a", "1.4"), ("d", "1.7")]),
            node("n2", 2, &[("e", "1.0")]),
        ];
        let programs = |p: &[ArchiveEntry]| p.iter().map(|e| e.program.clone()).collect::<Vec<_>>();
        let before_2 = populations(&state, problem, 2, 3);
        assert_eq!(programs(&before_2["s/p"]), ["b", "a", "c"]);
        assert_eq!(
            before_2["s/p"][1].node, "n1",
            "a's entry is where it reached 1.4"
        );
        assert_eq!(
            programs(&populations(&state, problem, 2, 10)["s/p"]).len(),
            4
        );
        assert_eq!(best_programs(&state, problem, 2)["s/p"].program, "b");
        assert_eq!(best_programs(&state, problem, 3)["s/p"].program, "e");
        assert!(best_programs(&state, problem, 0).is_empty());
    }

    #[test]
    fn the_draw_is_fixed_by_seed_round_and_task_and_exploits_the_best_about_half_the_time() {
        let population = ["best", "second", "third", "fourth"];
        let draws: Vec<&str> = (0..2000)
            .map(|k| *draw(&population, 11, 3, k).unwrap())
            .collect();
        let again: Vec<&str> = (0..2000)
            .map(|k| *draw(&population, 11, 3, k).unwrap())
            .collect();
        assert_eq!(draws, again);
        let share = |name| draws.iter().filter(|&&d| d == name).count() as f64 / 2000.0;
        // The best: 1/2 + 1/2 · 1/4; each other member 1/8.
        assert!((share("best") - 0.625).abs() < 0.05, "{}", share("best"));
        for other in ["second", "third", "fourth"] {
            assert!(
                (share(other) - 0.125).abs() < 0.04,
                "{other}: {}",
                share(other)
            );
        }
        assert_ne!(
            (0..64)
                .map(|k| draw(&population, 11, 3, k))
                .collect::<Vec<_>>(),
            (0..64)
                .map(|k| draw(&population, 11, 4, k))
                .collect::<Vec<_>>(),
            "another round draws anew"
        );
        assert_eq!(draw(&population[..1], 11, 3, 0), Some(&"best"));
        assert_eq!(draw::<&str>(&[], 11, 3, 0), None);
    }
}
