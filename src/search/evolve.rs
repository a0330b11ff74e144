//! The MILO loop: seed every island, then round after round step each island (select a parent,
//! mutate, evaluate, admit or reject, record, validate the island's best), consult the
//! orchestrator when an island stalls, and keep the best construction (`best.json`) and every new
//! best beyond the suite's record (`discoveries/`).
//!
//! All randomness derives from the run's seed, the round and the island, and every step's result
//! is a record in the lineage, so a killed run resumes (`--resume`) from its records: finished
//! steps are replayed, an interrupted evaluation is redone, nothing is lost or duplicated; with
//! evaluation budgets the resumed run equals an uninterrupted one.

use super::admission::{admit, Verdict};
use super::evaluation::{evaluate, CostMeasure, Discovery, Evaluation, EvaluationSettings};
use super::lineage::{
    EventRecord, JsonlLineage, LineageStore, NodeRecord, ParentChoice, Record, RunConfig,
};
use super::mutators::{self, MutationContext};
use super::orchestrator::{should_consult, BuiltinOrchestrator, Orchestrator};
use super::selection::{select_parent, Candidate, SelectionParams};
use super::state::SearchState;
use crate::agent::{BuiltinWriter, OptimizerWriter};
use crate::construction::read_values;
use crate::error::{MiloError, Result};
use crate::exact::rational::decimal_string;
use crate::harness::{seed_harnesses, Harness};
use crate::optimize::interrupted;
use crate::program::Program;
use crate::records::unix_seconds;
use crate::runner::derive_seed;
use crate::suite::{Suite, Task};
use num_rational::BigRational;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Hooks for a live display; every method has an empty default.
pub trait SearchObserver {
    /// A node was recorded.
    fn node(&mut self, _state: &SearchState, _node: &NodeRecord) {}
    /// An orchestrator move was recorded.
    fn event(&mut self, _event: &EventRecord) {}
    /// A discovery was saved.
    fn discovery(&mut self, _path: &Path, _discovery: &Discovery) {}
    /// A round ended.
    fn round_end(&mut self, _state: &SearchState, _round: usize) {}
}

/// Why the loop stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The configured number of rounds is done.
    Rounds,
    /// The wall-clock limit was reached.
    Hours,
    /// Ctrl-C.
    Interrupted,
    /// The CPU budget is spent.
    Budget,
}

/// The run's best construction so far (any task), beside `best.provenance.json`.
pub const BEST_FILE: &str = "best.json";

/// Largest number of programs offered to crossover edits.
const LIBRARY_SIZE: usize = 8;

/// A running search: the suite, the lineage store, the replayed state and the agents.
pub struct Search {
    suite: Suite,
    store: JsonlLineage,
    state: SearchState,
    harnesses: HashMap<String, Harness>,
    writer: Box<dyn OptimizerWriter>,
    orchestrator: Box<dyn Orchestrator>,
    jobs: usize,
    started: Instant,
    /// Exact score of `best.json`, the best construction the run has produced.
    best: Option<BigRational>,
}

impl Search {
    /// Starts a new run in `dir` (which must not hold one).
    pub fn start(dir: &Path, config: RunConfig, jobs: usize) -> Result<Search> {
        let suite = Suite::load(&config.suite)?;
        let mut store = JsonlLineage::create(dir)?;
        let record = Record::Started(config);
        store.append(&record)?;
        Search::assemble(suite, store, &[record], jobs)
    }

    /// Resumes the run in `dir` from its records.
    pub fn resume(dir: &Path, jobs: usize) -> Result<Search> {
        let (store, records) = JsonlLineage::open(dir)?;
        let Some(Record::Started(config)) = records.first() else {
            return Err(MiloError::Malformed {
                path: dir.join(super::lineage::LINEAGE_FILE),
                message: "the first record is not the run's settings".into(),
            });
        };
        let suite = Suite::load(&config.suite)?;
        Search::assemble(suite, store, &records, jobs)
    }

    fn assemble(
        suite: Suite,
        store: JsonlLineage,
        records: &[Record],
        jobs: usize,
    ) -> Result<Search> {
        let state = SearchState::replay(records);
        let best_path = store.dir().join(BEST_FILE);
        let best = match best_path.exists() {
            true => Some(suite.problem.score_exact(&read_values(&best_path)?)),
            false => None,
        };
        let mut harnesses = HashMap::new();
        for node in &state.nodes {
            if !harnesses.contains_key(&node.harness) {
                harnesses.insert(node.harness.clone(), store.harness(&node.harness)?);
            }
        }
        Ok(Search {
            suite,
            store,
            state,
            harnesses,
            writer: Box::new(BuiltinWriter),
            orchestrator: Box::new(BuiltinOrchestrator),
            jobs: jobs.max(1),
            started: Instant::now(),
            best,
        })
    }

    /// The state so far.
    pub fn state(&self) -> &SearchState {
        &self.state
    }

    /// The suite.
    pub fn suite(&self) -> &Suite {
        &self.suite
    }

    /// The run directory.
    pub fn dir(&self) -> &Path {
        self.store.dir()
    }

    fn config(&self) -> &RunConfig {
        self.state
            .config
            .as_ref()
            .expect("a run starts with its settings")
    }

    /// Runs rounds until the configured rounds or hours are used up, or Ctrl-C.
    pub fn run(&mut self, observer: &mut dyn SearchObserver) -> Result<Stop> {
        for island in 0..self.state.islands.len() {
            if !self.state.has_node(0, island) {
                if let Some(stop) = self.should_stop() {
                    return Ok(stop);
                }
                self.seed_island(island, observer)?;
            }
        }
        loop {
            self.consult_if_due(observer)?;
            let round = self.state.rounds_done + 1;
            if let Some(stop) = self.should_stop() {
                return Ok(stop);
            }
            for island in 0..self.state.islands.len() {
                if !self.state.has_node(round, island) {
                    if let Some(stop) = self.should_stop_within_round() {
                        return Ok(stop);
                    }
                    self.step(island, round, observer)?;
                }
            }
            self.record(Record::RoundEnd { round })?;
            observer.round_end(&self.state, round);
        }
    }

    /// After a finished round: when an island's validation best has stalled for `patience`
    /// rounds, the orchestrator makes at most two moves. Deterministic given the state, so a
    /// resumed run that finds no move recorded for the round consults again and gets the same.
    fn consult_if_due(&mut self, observer: &mut dyn SearchObserver) -> Result<()> {
        let round = self.state.rounds_done;
        let patience = self.config().patience;
        let consulted = self.state.events.iter().any(|e| e.round == round);
        let off = !self.config().components.orchestrator;
        if off || round == 0 || consulted || !should_consult(&self.state, patience) {
            return Ok(());
        }
        let names = mutators::NAMES;
        let all: Vec<String> = self.suite.search_tasks().map(|t| t.id.clone()).collect();
        let events = self
            .orchestrator
            .consult(&self.state, round, patience, &names, &all);
        for event in events.into_iter().take(2) {
            self.record(Record::Event(event.clone()))?;
            observer.event(&event);
        }
        Ok(())
    }

    fn should_stop(&self) -> Option<Stop> {
        let config = self.config();
        if config
            .rounds
            .is_some_and(|rounds| self.state.rounds_done >= rounds)
        {
            return Some(Stop::Rounds);
        }
        self.should_stop_within_round()
    }

    fn should_stop_within_round(&self) -> Option<Stop> {
        if interrupted() {
            return Some(Stop::Interrupted);
        }
        if let Some(budget) = self.config().cpu_seconds {
            if self.state.search_cpu_seconds() >= budget {
                return Some(Stop::Budget);
            }
        }
        let hours = self.config().hours?;
        (self.started.elapsed().as_secs_f64() >= hours * 3600.0).then_some(Stop::Hours)
    }

    fn record(&mut self, record: Record) -> Result<()> {
        self.store.append(&record)?;
        self.state.apply(&record);
        Ok(())
    }

    /// The current search tasks (the suite's, or a curriculum's).
    fn search_tasks(&self) -> Vec<&Task> {
        match &self.state.search_tasks {
            Some(ids) => ids.iter().filter_map(|id| self.suite.task(id)).collect(),
            None => self.suite.search_tasks().collect(),
        }
    }

    fn task_ids(tasks: &[&Task]) -> Vec<String> {
        tasks.iter().map(|t| t.id.clone()).collect()
    }

    /// Programs that improved tasks on this island, newest first, without repeats.
    fn library(&self, island: usize) -> Vec<Program> {
        let mut programs: Vec<Program> = Vec::new();
        for node in self.state.admitted(island).into_iter().rev() {
            for text in node
                .evaluation
                .tasks
                .iter()
                .filter_map(|t| t.best_program.as_ref())
            {
                if let Ok(program) = Program::parse(text, Path::new("lineage")) {
                    if !programs.contains(&program) {
                        programs.push(program);
                    }
                }
                if programs.len() >= LIBRARY_SIZE {
                    return programs;
                }
            }
        }
        programs
    }

    /// Evaluates `harness` on `tasks`, saving discoveries; reuses an identical earlier
    /// evaluation (same harness, same tasks) from the lineage. `None` when Ctrl-C cut the
    /// evaluation short: it is not recorded, and a resumed run redoes it.
    fn evaluate(
        &mut self,
        harness: &Harness,
        tasks: &[&Task],
        island: usize,
        node: &str,
        observer: &mut dyn SearchObserver,
    ) -> Result<Option<Evaluation>> {
        let ids = Self::task_ids(tasks);
        let hash = harness.content_hash();
        let known = self
            .state
            .nodes
            .iter()
            .filter(|n| n.harness == hash)
            .find_map(|n| {
                [Some(&n.evaluation), n.validation.as_ref()]
                    .into_iter()
                    .flatten()
                    .find(|e| e.tasks.iter().map(|t| &t.task).eq(ids.iter()))
                    .cloned()
            });
        if known.is_some() {
            return Ok(known);
        }
        let library = self.library(island);
        let config = self.config();
        let settings = EvaluationSettings {
            problem: self.suite.problem.as_ref(),
            attempts: config.attempts,
            jobs: self.jobs,
            quality: config.quality,
            cost: config.cost,
            library: &library,
        };
        let (evaluation, improvements) = evaluate(self.writer.as_ref(), harness, tasks, &settings)?;
        let direction = self.suite.problem.spec().direction;
        for improvement in &improvements {
            let new_best = self
                .best
                .as_ref()
                .is_none_or(|best| direction.better(&improvement.exact, best));
            if !new_best {
                continue;
            }
            if direction.better(&improvement.exact, &self.suite.record) {
                let path = self.save_discovery(improvement, &hash, node)?;
                observer.discovery(&path, improvement);
            }
            self.save_best(improvement, &hash, node)?;
        }
        Ok((!interrupted()).then_some(evaluation))
    }

    fn save_discovery(&self, d: &Discovery, harness: &str, node: &str) -> Result<PathBuf> {
        let dir = self.dir().join("discoveries");
        std::fs::create_dir_all(&dir).map_err(|source| MiloError::Io {
            path: dir.clone(),
            source,
        })?;
        let score = decimal_string(&d.exact, 20);
        let task: String = d
            .task
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = dir.join(format!("{score}-{task}-{harness}.json"));
        self.write_construction(&path, d, harness, node)?;
        Ok(path)
    }

    /// Replaces `best.json` (and its provenance) with `d`, the run's new best construction.
    fn save_best(&mut self, d: &Discovery, harness: &str, node: &str) -> Result<()> {
        self.write_construction(&self.dir().join(BEST_FILE), d, harness, node)?;
        self.best = Some(d.exact.clone());
        Ok(())
    }

    /// Writes `d`'s values to `path` and its provenance beside it (`<stem>.provenance.json`).
    fn write_construction(
        &self,
        path: &Path,
        d: &Discovery,
        harness: &str,
        node: &str,
    ) -> Result<()> {
        crate::construction::write_values(path, &d.values)?;
        let start = self.suite.task(&d.task).map(|t| t.start.path.clone());
        let provenance = serde_json::json!({
            "problem": self.suite.problem.slug(),
            "score_exact": decimal_string(&d.exact, 40),
            "record": decimal_string(&self.suite.record, 40),
            "beats_record": self.suite.problem.spec().direction.better(&d.exact, &self.suite.record),
            "task": d.task,
            "start": start,
            "seed": d.seed,
            "node": node,
            "harness": harness,
            "program": d.program,
            "suite": self.suite.path,
            "found_at": humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        });
        let provenance_path = path.with_extension("provenance.json");
        std::fs::write(
            &provenance_path,
            serde_json::to_string_pretty(&provenance).expect("JSON"),
        )
        .map_err(|source| MiloError::Io {
            path: provenance_path,
            source,
        })
    }

    /// Island `island`'s seed node (round 0): a seed harness, admitted by definition.
    fn seed_island(&mut self, island: usize, observer: &mut dyn SearchObserver) -> Result<()> {
        let seeds = seed_harnesses();
        let harness = seeds[island % seeds.len()].clone();
        let id = self.state.next_node_id();
        let tasks = self.search_tasks();
        let tasks: Vec<Task> = tasks.into_iter().cloned().collect();
        let refs: Vec<&Task> = tasks.iter().collect();
        let Some(evaluation) = self.evaluate(&harness, &refs, island, &id, observer)? else {
            return Ok(());
        };
        let Some(validation) = self.validate(&harness, island, &id, observer)? else {
            return Ok(());
        };
        let node = NodeRecord {
            id,
            island,
            round: 0,
            parents: vec![],
            mutator: "seed".into(),
            harness: self.store.put_harness(&harness)?,
            name: harness.name.clone(),
            edit: String::new(),
            evidence: vec!["seed harness".into()],
            evaluation,
            verdict: Verdict {
                admitted: true,
                hypervolume_before: 0.0,
                hypervolume_after: 0.0,
                reason: "seed harness".into(),
            },
            validation: Some(validation),
            at: Some(unix_seconds()),
        };
        self.harnesses.insert(node.harness.clone(), harness);
        self.record(Record::Node(Box::new(node.clone())))?;
        observer.node(&self.state, &node);
        Ok(())
    }

    fn validate(
        &mut self,
        harness: &Harness,
        island: usize,
        node: &str,
        observer: &mut dyn SearchObserver,
    ) -> Result<Option<Evaluation>> {
        let tasks: Vec<Task> = self.suite.validation_tasks().cloned().collect();
        let refs: Vec<&Task> = tasks.iter().collect();
        self.evaluate(harness, &refs, island, node, observer)
    }

    /// One round of one island: select, mutate, evaluate, admit, record, validate.
    fn step(
        &mut self,
        island: usize,
        round: usize,
        observer: &mut dyn SearchObserver,
    ) -> Result<()> {
        let config = self.config().clone();
        let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(
            derive_seed(config.seed, round as u64),
            island as u64,
        ));
        let tasks: Vec<Task> = self.search_tasks().into_iter().cloned().collect();
        let refs: Vec<&Task> = tasks.iter().collect();
        let ids = Self::task_ids(&refs);
        let view = |n: &NodeRecord| {
            // What mutators and selection see: search-task results only, never validation.
            let mut n = n.clone();
            n.evaluation = n.evaluation.restricted(&ids, config.quality, config.cost);
            n.validation = None;
            n
        };
        let admitted: Vec<NodeRecord> = self.state.admitted(island).into_iter().map(view).collect();
        if admitted.is_empty() {
            return Ok(());
        }
        let candidates: Vec<Candidate> = admitted
            .iter()
            .map(|n| Candidate {
                fitness: n.evaluation.fitness,
                gains: n.evaluation.gains.clone(),
            })
            .collect();
        let parent = &admitted[match config.components.parent_choice {
            ParentChoice::Pareto => {
                select_parent(&candidates, &SelectionParams::default(), &mut rng)?
            }
            ParentChoice::Best => best_index(&candidates),
            ParentChoice::Uniform => rng.gen_range(0..candidates.len()),
        }];
        let co_parent = self.state.islands[island]
            .co_parent
            .as_ref()
            .and_then(|id| self.state.node(id))
            .map(view);
        let memory = config.components.memory;
        let history: Vec<NodeRecord> = match memory {
            true => self.state.children(island).into_iter().map(view).collect(),
            false => Vec::new(),
        };
        let forgotten = HashSet::new();
        let mutator_name = self.state.islands[island].mutator.clone();
        let mutator = mutators::by_name(&mutator_name)
            .ok_or_else(|| MiloError::Usage(format!("unknown mutator '{mutator_name}'")))?;
        let harness_of = |n: &NodeRecord| &self.harnesses[&n.harness];
        let ctx = MutationContext {
            parent: (parent, harness_of(parent)),
            co_parent: co_parent.as_ref().map(|n| (n, harness_of(n))),
            history: history.iter().map(|n| (n, harness_of(n))).collect(),
            rejected: if memory {
                &self.state.rejected
            } else {
                &forgotten
            },
            seed: rng.gen(),
        };
        let Some(proposal) = mutator.propose(&ctx) else {
            return Ok(());
        };
        let mut parents = vec![parent.id.clone()];
        if let Some(co) = &co_parent {
            parents.push(co.id.clone());
        }
        let parent_text = harness_of(parent).to_toml();
        let child = proposal.harness;
        let id = self.state.next_node_id();
        let forbidden = self.forbidden_words();
        let (evaluation, verdict) = match child.check_general(&forbidden) {
            Err(reason) => (
                Evaluation {
                    tasks: vec![],
                    fitness: super::hypervolume::Fitness {
                        quality: 0.0,
                        cost: 0.0,
                        latency: 0.0,
                    },
                    gains: vec![],
                },
                Verdict {
                    admitted: false,
                    hypervolume_before: 0.0,
                    hypervolume_after: 0.0,
                    reason: format!("not general: {reason}"),
                },
            ),
            Ok(()) => {
                let Some(evaluation) = self.evaluate(&child, &refs, island, &id, observer)? else {
                    return Ok(());
                };
                let front: Vec<_> = admitted
                    .iter()
                    .map(|n| (n.id.clone(), n.evaluation.fitness))
                    .collect();
                let reference = self.state.islands[island]
                    .reference
                    .unwrap_or(evaluation.fitness);
                let verdict = admit(&front, evaluation.fitness, reference);
                (evaluation, verdict)
            }
        };
        let becomes_best = verdict.admitted
            && admitted.iter().all(|n| {
                let (a, b) = (evaluation.fitness, n.evaluation.fitness);
                a.quality > b.quality || (a.quality == b.quality && a.cost < b.cost)
            });
        let validation = if becomes_best {
            let Some(validation) = self.validate(&child, island, &id, observer)? else {
                return Ok(());
            };
            Some(validation)
        } else {
            None
        };
        let node = NodeRecord {
            id,
            island,
            round,
            parents,
            mutator: mutator_name,
            harness: self.store.put_harness(&child)?,
            name: child.name.clone(),
            edit: diff(&parent_text, &child.to_toml()),
            evidence: proposal.evidence,
            evaluation,
            verdict,
            validation,
            at: Some(unix_seconds()),
        };
        self.harnesses.insert(node.harness.clone(), child);
        self.record(Record::Node(Box::new(node.clone())))?;
        observer.node(&self.state, &node);
        Ok(())
    }

    /// Words a general harness may not contain: task ids and start file names.
    fn forbidden_words(&self) -> Vec<String> {
        let mut words: Vec<String> = self.suite.tasks.iter().map(|t| t.id.clone()).collect();
        for start in &self.suite.starts {
            if let Some(name) = start.path.file_name() {
                words.push(name.to_string_lossy().into_owned());
            }
        }
        words
    }
}

/// The candidate with the best quality (ties: the lower cost, then the first).
fn best_index(candidates: &[Candidate]) -> usize {
    let mut best = 0;
    for (i, c) in candidates.iter().enumerate() {
        let b = &candidates[best].fitness;
        let f = &c.fitness;
        if f.quality > b.quality || (f.quality == b.quality && f.cost < b.cost) {
            best = i;
        }
    }
    best
}

/// A unified diff of two harness texts.
pub fn diff(before: &str, after: &str) -> String {
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(1)
        .header("parent", "child")
        .to_string()
}

/// Whether a stored evaluation used counted (reproducible) cost.
pub fn default_cost_measure(suite: &Suite) -> CostMeasure {
    if suite.budget.seconds.is_none() {
        CostMeasure::Counted
    } else {
        CostMeasure::Measured
    }
}
