//! An AlphaEvolve/OpenEvolve-style baseline: evolves optimizer programs directly (no harness,
//! no agent policy). One fixed mutator — a single edit of a kind drawn uniformly from the edit
//! menu — a fixed number of islands, each keeping only its best `capacity` programs
//! (survivors only), and ring migration of each island's best every `migrate_every` rounds.
//! Each candidate program runs verbatim, on each task's whole budget, from each task's start
//! (one task per start and seed; with `promote` on, from the task's current start).
//!
//! The population is a function of the records: a resumed run replays them to the same state.

use super::log::{BaselineLog, StepRecord};
use super::promotion::CurrentStarts;
use super::{Method, RunContext};
use crate::agent::{GivenProgram, OptimizerWriter};
use crate::bench::trajectory::Trajectory;
use crate::error::Result;
use crate::harness::Harness;
use crate::program::edits::{self, EditContext, EditMenu};
use crate::program::Program;
use crate::runner::derive_seed;
use crate::search::archive;
use crate::suite::{sha256_hex, Task};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

/// The program-evolution baseline and its fixed settings.
pub struct ProgramEvolution {
    /// Number of islands.
    pub islands: usize,
    /// Programs an island keeps.
    pub capacity: usize,
    /// Rounds (one child per island each) between migrations.
    pub migrate_every: usize,
    /// Probability of mutating the island's best rather than a uniformly drawn survivor.
    pub exploit: f64,
    /// Largest factor a tuning edit scales a parameter by.
    pub tune_range: f64,
}

impl Default for ProgramEvolution {
    fn default() -> Self {
        ProgramEvolution {
            islands: 3,
            capacity: archive::PROGRAM_EVOLUTION_POPULATION,
            migrate_every: 4,
            exploit: archive::EXPLOIT,
            tune_range: 4.0,
        }
    }
}

/// Tries to find an edit that yields a program not evaluated before.
const MAX_TRIES: usize = 20;

/// The islands' survivors (step indices, best first), replayed from the steps.
struct Population {
    islands: Vec<Vec<usize>>,
}

impl ProgramEvolution {
    /// Inserts step `index` into `island` if it survives; the island stays sorted best first.
    fn admit(&self, island: &mut Vec<usize>, index: usize, steps: &[StepRecord]) {
        if island.contains(&index) {
            return;
        }
        island.push(index);
        island.sort_by(|&a, &b| {
            let (x, y) = (steps[a].evaluation.fitness, steps[b].evaluation.fitness);
            x.rank_order(&y).then(a.cmp(&b))
        });
        island.truncate(self.capacity);
    }

    /// The population after `steps`: seed steps join every island; child `c` (counted after
    /// the seeds) competes on island `c % islands`; after every `migrate_every`-th round each
    /// island's best is offered to the next island.
    fn replay(&self, steps: &[StepRecord], seeds: usize) -> Population {
        let mut islands = vec![Vec::new(); self.islands];
        for (index, _) in steps.iter().enumerate() {
            if index < seeds {
                for island in &mut islands {
                    self.admit(island, index, steps);
                }
                continue;
            }
            let child = index - seeds;
            self.admit(&mut islands[child % self.islands], index, steps);
            let round = child / self.islands + 1;
            if child % self.islands == self.islands - 1 && round.is_multiple_of(self.migrate_every)
            {
                let bests: Vec<usize> = islands.iter().map(|i| i[0]).collect();
                for (from, best) in bests.into_iter().enumerate() {
                    let into = (from + 1) % self.islands;
                    self.admit(&mut islands[into], best, steps);
                }
            }
        }
        Population { islands }
    }
}

/// The tasks with their parent program replaced by `program`, one per (start, seed): tasks
/// that differed only in their program would be the same run.
fn with_program(tasks: &[Task], program: &Program) -> Vec<Task> {
    let program = Arc::new(program.clone());
    distinct_runs(tasks)
        .into_iter()
        .map(|t| Task {
            program: program.clone(),
            ..t
        })
        .collect()
}

/// The first task of each (start label, seed), in order.
fn distinct_runs(tasks: &[Task]) -> Vec<Task> {
    let mut seen = HashSet::new();
    tasks
        .iter()
        .filter(|t| seen.insert((t.start.label.clone(), t.seed)))
        .cloned()
        .collect()
}

fn parse(step: &StepRecord) -> Result<Program> {
    Program::parse(
        step.program.as_deref().unwrap_or_default(),
        Path::new("steps.jsonl"),
    )
}

impl Method for ProgramEvolution {
    fn name(&self) -> &str {
        "alphaevolve"
    }

    fn run(&self, ctx: &RunContext) -> Result<Option<Trajectory>> {
        let mut log = BaselineLog::open(ctx.dir)?;
        let tasks = ctx.search_tasks();
        let mut current = CurrentStarts::rebuild(ctx, distinct_runs(&tasks), log.promotions())?;
        let mut initial: Vec<Program> = Vec::new();
        for task in &tasks {
            if !initial.contains(&task.program) {
                initial.push((*task.program).clone());
            }
        }
        // The verbatim writer runs each program as it is; the harness it is handed is the
        // degenerate one whose revision step this method performs itself.
        let harness = &Harness::program_evolution();
        let problem = ctx.suite.problem.as_ref();
        let n = tasks.first().map_or(1, |t| t.start.values.len());
        let mut seen: HashSet<String> =
            log.steps.iter().filter_map(|s| s.program.clone()).collect();
        while ctx.may_step(&log) {
            if ctx.cancel.is_cancelled() {
                return Ok(None);
            }
            let index = log.steps.len();
            let (island, parent, program, origin) = if index < initial.len() {
                (0, None, initial[index].clone(), "seed program".to_string())
            } else {
                let child = index - initial.len();
                let island = child % self.islands;
                let population = self.replay(&log.steps, initial.len());
                let members = &population.islands[island];
                let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(ctx.seed, index as u64));
                let parent = *archive::pick_parent(members, self.exploit, &mut rng);
                let base = parse(&log.steps[parent])?;
                let library = members
                    .iter()
                    .map(|&m| parse(&log.steps[m]))
                    .collect::<Result<Vec<_>>>()?;
                let context = EditContext {
                    problem,
                    n,
                    library: &library,
                    tune_range: self.tune_range,
                };
                let mut made = (base.clone(), "no new edit found: parent again".to_string());
                let menu = EditMenu::uniform();
                for _ in 0..MAX_TRIES {
                    let kind = menu.draw(&mut rng);
                    if let Some((edited, what)) = edits::apply(kind, &base, &context, &mut rng) {
                        if !seen.contains(&edited.to_toml()) {
                            made = (edited, what);
                            break;
                        }
                    }
                }
                (island, Some(parent), made.0, made.1)
            };
            let text = program.to_toml();
            let Some((evaluation, discoveries)) = ctx.evaluate_with_improvements(
                GivenProgram.name(),
                harness,
                &with_program(current.tasks(), &program),
                &[],
            )?
            else {
                return Ok(None);
            };
            let promoted = if ctx.promote {
                current.promote(&discoveries)?
            } else {
                vec![]
            };
            seen.insert(text.clone());
            log.step(StepRecord {
                index,
                island,
                parent,
                candidate: sha256_hex(text.as_bytes())[..12].to_string(),
                program: Some(text),
                origin,
                evaluation,
                at: 0.0,
                promoted,
            })?;
        }
        let validated = log.validate_best(ctx.cpu_seconds, |best| {
            let program = parse(best)?;
            let tasks = with_program(&ctx.validation_tasks(), &program);
            ctx.evaluate(GivenProgram.name(), harness, &tasks, &[])
        })?;
        Ok(validated.then(|| log.trajectory()))
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture;
    use super::*;
    use crate::search::evaluation::Evaluation;
    use crate::search::hypervolume::Fitness;

    fn step(quality: f64) -> StepRecord {
        StepRecord {
            index: 0,
            island: 0,
            parent: None,
            candidate: String::new(),
            program: None,
            origin: String::new(),
            evaluation: Evaluation {
                tasks: vec![],
                fitness: Fitness {
                    quality,
                    cost: 1.0,
                    latency: 1.0,
                },
                gains: vec![],
                reused: false,
            },
            at: 0.0,
            promoted: vec![],
        }
    }

    #[test]
    fn islands_keep_only_their_best_and_migrate_on_schedule() {
        let method = ProgramEvolution {
            islands: 2,
            capacity: 2,
            migrate_every: 1,
            ..Default::default()
        };
        // One seed (quality 0), then children alternating islands 0 and 1.
        let steps: Vec<StepRecord> = [0.0, 5.0, 1.0, 3.0, 0.5].map(step).to_vec();
        let p = method.replay(&steps[..3], 1);
        // Round 1 done (step 1 → island 0, step 2 → island 1), then migration: each island's
        // best reaches the other, and each keeps its two best, so the seed is gone from both.
        assert_eq!(p.islands[0], vec![1, 2]);
        assert_eq!(p.islands[1], vec![1, 2]);
        let p = method.replay(&steps, 1);
        // Step 3 (quality 3) beats island 0's seed; step 4 (0.5) loses on island 1.
        assert_eq!(p.islands[0][0], 1);
        assert!(p.islands[0].contains(&3));
        assert!(!p.islands[1].contains(&4));
        assert!(p.islands.iter().all(|i| i.len() <= 2));
    }

    #[test]
    fn with_program_keeps_one_task_per_start_and_seed() {
        let dir = tempfile::tempdir().unwrap();
        let suite = fixture::tiny_suite(dir.path());
        let tasks: Vec<Task> = suite.search_tasks().cloned().collect();
        assert_eq!(tasks.len(), 8, "2 starts × 2 programs × 2 seeds");
        let program = (*tasks[7].program).clone();
        let replaced = with_program(&tasks, &program);
        let runs: Vec<(String, u64)> = replaced
            .iter()
            .map(|t| (t.start.label.clone(), t.seed))
            .collect();
        let expected = [("wave-a", 1), ("wave-a", 2), ("wave-b", 1), ("wave-b", 2)]
            .map(|(label, seed)| (label.to_string(), seed));
        assert_eq!(runs, expected);
        assert!(replaced.iter().all(|t| *t.program == program));
    }
}
