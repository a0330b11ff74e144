//! MILO and its ablations, run by the search engine itself with parts switched off:
//!
//! | method | islands | mutators | parents | lineage memory | orchestrator |
//! |---|---|---|---|---|---|
//! | `greedy` | 1 | evidence | always the best | yes | no |
//! | `ladder-a` | 1 | blind (one-shot) | uniform (flat archive) | no | no |
//! | `ladder-b` | 1 | evidence | uniform (flat archive) | no | no |
//! | `ladder-c` | 1 | evidence | Pareto/crowding | yes | no |
//! | `ladder-d` | 3 | the pool | Pareto/crowding | yes | no |
//! | `ladder-e` = `milo` | 3 | the pool | Pareto/crowding | yes | yes |
//! | `milo-frozen` | 3 | none: the best seed harness every round | — | — | no |
//! | `milo-degenerate` | 1 | none: the degenerate harness every round | — | — | no |
//!
//! Every variant has the program archive and, with `--promote-discoveries`, promoted starts;
//! `milo-frozen` isolates what evolving harnesses adds to them. `milo-degenerate` seeds every
//! island with [`Harness::program_evolution`] (one uniformly drawn edit to the task's parent
//! program, the whole budget, no re-run of the parent) and keeps a population of programs per
//! slot like an `alphaevolve` island's (each task's parent drawn from the slot's 6 best):
//! MILO's machinery doing program evolution, to be measured against `alphaevolve`.

use super::super::trajectory::{Trajectory, TrajectoryStep};
use super::{Method, RunContext};
use crate::error::Result;
use crate::harness::Harness;
use crate::search::evolve::{Search, SearchObserver, Stop};
use crate::search::lineage::{
    AdmissionPolicy, Components, ParentChoice, RunConfig, DEFAULT_TASKS_PER_ROUND, LINEAGE_FILE,
};
use crate::search::parts::{LINEAGE_STORES, ORCHESTRATORS};
use crate::search::{archive, mutators};
use serde::{Deserialize, Serialize};

/// Islands of the island rungs (as `milo evolve`'s default).
const ISLANDS: usize = 3;

/// Rounds without a gain in an island's search quality before the orchestrator is consulted
/// (as `milo evolve`).
const PATIENCE: usize = 3;

/// How a benchmark's MILO methods search (`milo bench --admission … --islands …
/// --tasks-per-round …`; absent in older benchmarks: the defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SearchKnobs {
    /// How children are admitted.
    pub admission: AdmissionPolicy,
    /// Islands of the island variants (absent: [`ISLANDS`]); one-island variants keep one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub islands: Option<usize>,
    /// Search tasks per harness per round.
    pub tasks_per_round: usize,
    /// Programs each slot's archive keeps as parents (absent:
    /// [`archive::PROGRAM_EVOLUTION_POPULATION`], as `alphaevolve` keeps per island).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archive_population: Option<usize>,
    /// The islands' seed harnesses, recorded whole (`--seed-harness`; empty: each variant's own).
    /// `milo-degenerate` keeps its one harness whatever this says.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub seed_harnesses: Vec<Harness>,
}

impl Default for SearchKnobs {
    fn default() -> Self {
        SearchKnobs {
            admission: AdmissionPolicy::Paired,
            islands: None,
            tasks_per_round: DEFAULT_TASKS_PER_ROUND,
            archive_population: None,
            seed_harnesses: Vec::new(),
        }
    }
}

/// A configuration of the MILO search.
pub struct SearchVariant {
    name: &'static str,
    islands: usize,
    mutators: Vec<&'static str>,
    components: Components,
    /// The islands' seed harnesses (empty: the built-in seeds).
    seeds: Vec<Harness>,
}

/// The variant called `name` (`milo` and `ladder-e` are the full method).
pub fn variant(name: &str) -> Option<SearchVariant> {
    let off = |parent_choice, memory| Components {
        parent_choice,
        memory,
        orchestrator: false,
        harness_evolution: true,
    };
    let (name, islands, mutators, components) = match name {
        "greedy" => ("greedy", 1, vec!["evidence"], off(ParentChoice::Best, true)),
        "ladder-a" => (
            "ladder-a",
            1,
            vec!["blind"],
            off(ParentChoice::Uniform, false),
        ),
        "ladder-b" => (
            "ladder-b",
            1,
            vec!["evidence"],
            off(ParentChoice::Uniform, false),
        ),
        "ladder-c" => (
            "ladder-c",
            1,
            vec!["evidence"],
            off(ParentChoice::Pareto, true),
        ),
        "ladder-d" => (
            "ladder-d",
            ISLANDS,
            mutators::NAMES.to_vec(),
            off(ParentChoice::Pareto, true),
        ),
        "ladder-e" | "milo" => (
            "milo",
            ISLANDS,
            mutators::NAMES.to_vec(),
            Components::default(),
        ),
        "milo-frozen" => (
            "milo-frozen",
            ISLANDS,
            mutators::NAMES.to_vec(),
            Components {
                harness_evolution: false,
                orchestrator: false,
                ..Components::default()
            },
        ),
        // Islands of one frozen harness would run the same tasks: one island.
        "milo-degenerate" => (
            "milo-degenerate",
            1,
            mutators::NAMES.to_vec(),
            Components {
                harness_evolution: false,
                orchestrator: false,
                ..Components::default()
            },
        ),
        _ => return None,
    };
    let seeds = match name {
        "milo-degenerate" => vec![Harness::program_evolution()],
        _ => vec![],
    };
    Some(SearchVariant {
        name,
        islands,
        mutators,
        components,
        seeds,
    })
}

/// The search reports nothing live during a benchmark.
struct Quiet;

impl SearchObserver for Quiet {}

impl Method for SearchVariant {
    fn name(&self) -> &str {
        self.name
    }

    fn run(&self, ctx: &RunContext) -> Result<Option<Trajectory>> {
        let mut search = if ctx.dir.join(LINEAGE_FILE).exists() {
            Search::resume(ctx.dir, ctx.jobs, ctx.cancel.clone(), false)?
        } else {
            let config = RunConfig {
                suite: ctx.suite.path.clone(),
                suite_pin: None,
                islands: match self.islands {
                    1 => 1,
                    _ => ctx.search.islands.unwrap_or(self.islands),
                },
                rounds: None,
                hours: None,
                seed: ctx.seed,
                patience: PATIENCE,
                quality: ctx.quality,
                cost: ctx.cost,
                attempts: 1,
                writer: "builtin".into(),
                mutators: self.mutators.iter().map(|m| m.to_string()).collect(),
                orchestrator: ORCHESTRATORS[0].into(),
                lineage_store: LINEAGE_STORES[0].into(),
                executor: ctx.executor_name.into(),
                slurm: ctx.slurm.clone(),
                cpu_seconds: Some(ctx.cpu_seconds),
                components: self.components,
                tasks_per_round: ctx.search.tasks_per_round,
                task_evaluations: None,
                promote_discoveries: ctx.promote,
                agents: None,
                admission: ctx.search.admission,
                archive_population: ctx
                    .search
                    .archive_population
                    .unwrap_or(archive::PROGRAM_EVOLUTION_POPULATION),
                seed_harnesses: match (self.name, ctx.search.seed_harnesses.is_empty()) {
                    ("milo-degenerate", _) | (_, true) => self.seeds.clone(),
                    _ => ctx.search.seed_harnesses.clone(),
                },
            };
            Search::start(ctx.dir, config, ctx.jobs, ctx.cancel.clone())?
        };
        if !ctx.budget_spent && search.run(&mut Quiet)? == Stop::Interrupted {
            return Ok(None);
        }
        // A node's parent re-evaluation is work of the run too: a step before the node's.
        let steps = search
            .state()
            .nodes
            .iter()
            .flat_map(|node| {
                let parent = node
                    .parent_evaluation
                    .clone()
                    .map(|evaluation| TrajectoryStep {
                        evaluation,
                        validation: None,
                        at: node.at,
                    });
                let own = TrajectoryStep {
                    evaluation: node.evaluation.clone(),
                    validation: node.validation.clone(),
                    at: node.at,
                };
                parent.into_iter().chain(std::iter::once(own))
            })
            .collect();
        Ok(Some(Trajectory {
            started_at: 0.0,
            steps,
        }))
    }
}
