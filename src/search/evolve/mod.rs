//! The MILO loop: seed every island, then round after round step each island (select a parent,
//! mutate, evaluate parent and child on the round's tasks, admit or reject, record, validate the
//! island's best), promote the round's best constructions (`--promote-discoveries`), consult the
//! orchestrator when an island stalls, and keep the best construction (`best.json`) and every new
//! best beyond the suite's record (`discoveries/`).
//!
//! The work compounds at round boundaries: a round's tasks ([`crate::search::round_tasks`]) run
//! each slot's best program so far ([`crate::search::archive`]) from its current start
//! ([`crate::search::promotion`]), with seeds fresh to the round.
//!
//! The search is assembled from [`Parts`] chosen by name in the run's settings (see
//! [`super::parts`]). All randomness derives from the run's seed, the round and the island, and
//! every step's result is a record in the lineage, so a killed run resumes (`--resume`) from its
//! records: finished steps are replayed, an interrupted evaluation is redone, nothing is lost or
//! duplicated; with evaluation budgets the resumed run equals an uninterrupted one.
//!
//! When a mutator proposes nothing or a writer fails on an attempt, the step records a
//! [`FailureRecord`] and the island skips the round (its stall counter runs on); the run goes on.
//!
//! - this file: the run (start, resume, rounds, stopping, the orchestrator's consultation);
//! - `step.rs`: one island's step and an island's seed node; `race.rs`: its children raced
//!   block by block (the `race` admission policy);
//! - `compounding.rs`: a round's tasks, candidate starts, promotions;
//! - `dry_run.rs`: whether a child harness would behave as its parent, before it is evaluated;
//! - `outputs.rs`: `best.json` and `discoveries/`.

mod compounding;
mod dry_run;
mod outputs;
mod race;
mod step;
#[cfg(test)]
mod tests;

pub use outputs::{bars_passed, read_best, BEST_FILE};

use super::evaluation::{CostMeasure, Improvement};
use super::lineage::{
    ConsultationRecord, EventRecord, FailureRecord, LineageRecord, LineageStore, Move, NodeRecord,
    RunConfig,
};
use super::orchestrator::{should_consult, MAX_MOVES};
use super::parts::{create_store, open_store, Parts};
use super::promotion;
use super::round_tasks::{self, Slot};
use super::state::SearchState;
use crate::cancel::CancelToken;
use crate::error::{MiloError, Result};
use crate::harness::Harness;
use crate::program::Program;
use crate::suite::{Start, Suite, Task};
use crate::tally::TaskTally;
use num_rational::BigRational;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Hooks for a live display; every method has an empty default.
pub trait SearchObserver {
    /// A node was recorded.
    fn node(&mut self, _state: &SearchState, _node: &NodeRecord) {}
    /// An orchestrator move was recorded.
    fn event(&mut self, _event: &EventRecord) {}
    /// A mutator's or a writer's failure was recorded.
    fn failure(&mut self, _failure: &FailureRecord) {}
    /// An orchestrator consultation's cost and refused proposals were recorded.
    fn consultation(&mut self, _consultation: &ConsultationRecord) {}
    /// A discovery was saved.
    fn discovery(&mut self, _path: &Path, _discovery: &Improvement) {}
    /// A round ended.
    fn round_end(&mut self, _state: &SearchState, _round: usize) {}
}

/// Why the loop stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The configured number of rounds is done.
    Rounds,
    /// The wall-clock limit was reached (the step in flight, if any, was cancelled).
    Hours,
    /// The cancel token was cancelled (Ctrl-C).
    Interrupted,
    /// The CPU budget is spent.
    Budget,
}

/// A running search: the suite, the lineage store, the replayed state and the parts.
pub struct Search {
    suite: Suite,
    dir: PathBuf,
    store: Box<dyn LineageStore>,
    state: SearchState,
    harnesses: HashMap<String, Harness>,
    parts: Parts,
    cancel: CancelToken,
    started: Instant,
    /// Exact score of `best.json`, the best construction the run has produced.
    best: Option<BigRational>,
    /// The suite's search slots.
    slots: Vec<Slot>,
    /// The run's validation tasks (fixed for the run).
    validation: Vec<Task>,
    /// Promoted starts read so far, by content address.
    starts: HashMap<String, Arc<Start>>,
    /// The tasks of the round last asked for.
    round_tasks: Option<(usize, Vec<Task>)>,
    /// The task runs handed to the executor and finished by this process.
    tally: TaskTally,
    /// Run every `command` step of the tasks' programs confined: the programs of a resumed
    /// run come from its records, which anyone may have written ([`Search::resume`]).
    confine_commands: bool,
}

impl Search {
    /// Starts a new run in `dir` (which must not hold one) with the parts named in `config`, the
    /// executor on `jobs` threads; cancelling `cancel` stops it after the last finished step.
    pub fn start(
        dir: &Path,
        config: RunConfig,
        jobs: usize,
        cancel: CancelToken,
    ) -> Result<Search> {
        config.check().map_err(MiloError::Usage)?;
        let parts = Parts::named(&config, jobs, dir)?;
        Search::start_with(dir, config, parts, cancel)
    }

    /// Starts a new run in `dir` with the given parts (the names in `config` are recorded as
    /// they are: a resumed run rebuilds the parts from them).
    pub fn start_with(
        dir: &Path,
        config: RunConfig,
        parts: Parts,
        cancel: CancelToken,
    ) -> Result<Search> {
        config.check().map_err(MiloError::Usage)?;
        let suite = load_suite(&config)?;
        let config = RunConfig {
            suite_pin: Some(suite.pin.clone()),
            ..config
        };
        let mut store = create_store(&config.lineage_store, dir)?;
        let record = LineageRecord::Started(Box::new(config));
        store.append(&record)?;
        Search::assemble(suite, dir, store, &[record], parts, cancel)
    }

    /// Resumes the run in `dir` from its records, rebuilding the parts its settings name, the
    /// executor on `jobs` threads. A run directory is data, not code: when its programs (the
    /// suite's, the lineage's) hold a `command` step, it is refused naming the first unless
    /// `allow_commands`, and then every such step runs confined ([`crate::sandbox`]).
    pub fn resume(
        dir: &Path,
        jobs: usize,
        cancel: CancelToken,
        allow_commands: bool,
    ) -> Result<Search> {
        let (store, config, records) = open_store(dir)?;
        config.check().map_err(|message| MiloError::Malformed {
            path: dir.join(super::lineage::LINEAGE_FILE),
            message,
        })?;
        let parts = Parts::named(&config, jobs, dir)?;
        let suite = load_suite(&config)?;
        suite.check_pin(config.suite_pin.as_deref())?;
        check_unique_nodes(dir, &records)?;
        let mut search = Search::assemble(suite, dir, store, &records, parts, cancel)?;
        if let Some((origin, step)) = search.first_command_step() {
            if !allow_commands {
                return Err(MiloError::Usage(format!(
                    "resuming {}: {step} of {origin} is a `command` step, which runs code; a \
                     resumed run runs its stored commands only when allowed (`milo evolve \
                     --resume DIR --allow-commands`), confined to their work directories",
                    dir.display()
                )));
            }
            search.confine_commands = true;
        }
        Ok(search)
    }

    /// The first `command` step of the programs the run may run (the suite's, then those the
    /// lineage records as tasks' best), with where it is.
    fn first_command_step(&self) -> Option<(String, String)> {
        let suite = self.suite.tasks.iter().map(|t| {
            (
                format!("program {}", t.program_path.display()),
                (*t.program).clone(),
            )
        });
        let lineage = self.state.nodes.iter().flat_map(|node| {
            node.evaluation.tasks.iter().filter_map(move |t| {
                let text = t.best_program.as_ref()?;
                let program = Program::parse(text, Path::new("lineage")).ok()?;
                Some((
                    format!("node {}'s best program of task {}", node.id, t.task),
                    program,
                ))
            })
        });
        suite
            .chain(lineage)
            .find_map(|(origin, program)| Some((origin, program.confined().1?)))
    }

    fn assemble(
        suite: Suite,
        dir: &Path,
        store: Box<dyn LineageStore>,
        records: &[LineageRecord],
        parts: Parts,
        cancel: CancelToken,
    ) -> Result<Search> {
        let state = SearchState::replay(records);
        let best_path = dir.join(BEST_FILE);
        let best = match best_path.exists() {
            true => Some(
                suite
                    .problem
                    .score_exact(&read_best(&best_path, suite.problem.as_ref())?),
            ),
            false => None,
        };
        let mut harnesses = HashMap::new();
        for node in &state.nodes {
            if !harnesses.contains_key(&node.harness) {
                harnesses.insert(node.harness.clone(), store.harness(&node.harness)?);
            }
        }
        let config = state
            .config
            .as_ref()
            .expect("a run starts with its settings");
        let slots = round_tasks::slots(suite.search_tasks());
        let held_out = round_tasks::slots(suite.validation_tasks());
        let validation =
            round_tasks::validation_tasks(&held_out, config.seed, config.tasks_per_round);
        let mut starts = HashMap::new();
        for (label, hash) in &state.promoted {
            let start = promotion::load(dir, hash, label, suite.problem.as_ref())?;
            starts.insert(hash.clone(), Arc::new(start));
        }
        Ok(Search {
            suite,
            dir: dir.to_path_buf(),
            store,
            state,
            harnesses,
            parts,
            cancel,
            tally: TaskTally::default(),
            started: Instant::now(),
            best,
            slots,
            validation,
            starts,
            round_tasks: None,
            confine_commands: false,
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
        &self.dir
    }

    /// The live count of the task runs this process handed to the executor and finished.
    pub fn task_tally(&self) -> TaskTally {
        self.tally.clone()
    }

    /// The run's settings.
    pub fn config(&self) -> &RunConfig {
        self.state
            .config
            .as_ref()
            .expect("a run starts with its settings")
    }

    /// The run's validation tasks (held-out starts, seeds of their own, fixed for the run).
    pub fn validation_tasks(&self) -> &[Task] {
        &self.validation
    }

    /// Extends the run from here on: `rounds` in all, or `hours` of wall clock for this and every
    /// later segment; recorded in the lineage, so a later resume keeps it. Refused when `rounds`
    /// is not more than the rounds the run has done.
    pub fn extend(&mut self, rounds: Option<usize>, hours: Option<f64>) -> Result<()> {
        let done = self.state.rounds_done;
        if let Some(rounds) = rounds.filter(|&r| r <= done) {
            return Err(MiloError::Usage(format!(
                "--rounds counts all the run's rounds and must be more than the {done} it has \
                 done, got {rounds}"
            )));
        }
        self.record(LineageRecord::Extended { rounds, hours })
    }

    /// Runs rounds until the configured rounds or hours are used up, or the run is cancelled.
    /// The hours are a hard limit: at the deadline the run's token is cancelled, so the step in
    /// flight winds down and records nothing (a resumed run redoes it); what earlier steps saved
    /// stays.
    pub fn run(&mut self, observer: &mut dyn SearchObserver) -> Result<Stop> {
        let _deadline = self.deadline().map(|at| self.cancel.cancel_at(at));
        self.run_rounds(observer)
    }

    fn run_rounds(&mut self, observer: &mut dyn SearchObserver) -> Result<Stop> {
        for island in 0..self.state.islands.len() {
            if !self.state.has_step(0, island) {
                if let Some(stop) = self.should_stop() {
                    return Ok(stop);
                }
                self.seed_island(island, observer)?;
            }
        }
        loop {
            // An island whose seeding was cancelled recorded nothing: round 0 is not over, so
            // nothing may be promoted from it yet.
            if self.cancel.is_cancelled() {
                return Ok(self.cancelled());
            }
            self.promote(self.state.rounds_done, observer)?;
            self.consult_if_due(observer)?;
            let round = self.state.rounds_done + 1;
            if let Some(stop) = self.should_stop() {
                return Ok(stop);
            }
            for island in 0..self.state.islands.len() {
                if !self.state.has_step(round, island) {
                    if let Some(stop) = self.should_stop_within_round() {
                        return Ok(stop);
                    }
                    self.step(island, round, observer)?;
                }
            }
            // A step cancelled midway recorded nothing: the round is not over, and a resumed
            // run redoes that step before it ends the round.
            if self.cancel.is_cancelled() {
                return Ok(self.cancelled());
            }
            self.record(LineageRecord::RoundEnd { round })?;
            observer.round_end(&self.state, round);
        }
    }

    /// After a finished round: when an island's best search quality has stalled for `patience`
    /// rounds, the orchestrator makes at most two moves. Deterministic given the state, so a
    /// resumed run that finds no move recorded for the round consults again and gets the same.
    fn consult_if_due(&mut self, observer: &mut dyn SearchObserver) -> Result<()> {
        let round = self.state.rounds_done;
        let patience = self.config().patience;
        let consulted = self
            .state
            .events
            .iter()
            .any(|e| e.round == round && !matches!(e.action, Move::Promote { .. }))
            || self.state.consultations.iter().any(|c| c.round == round);
        let off = !self.config().components.orchestrator;
        if off || round == 0 || consulted || !should_consult(&self.state, patience) {
            return Ok(());
        }
        let names: Vec<&str> = self.parts.mutators.iter().map(|m| m.name()).collect();
        let all: Vec<String> = self.slots.iter().map(|s| s.id.clone()).collect();
        let orchestrator = self.parts.orchestrator.as_ref();
        let seen = self.state.without_validation();
        let consultation = orchestrator.consult(&seen, round, patience, &names, &all, &self.cancel);
        if !consultation.usage.is_zero() || !consultation.rejected.is_empty() {
            let record = ConsultationRecord {
                round,
                orchestrator: orchestrator.name().to_string(),
                backend: consultation.backend,
                usage: consultation.usage,
                rejected: consultation.rejected,
            };
            self.record(LineageRecord::Consultation(record.clone()))?;
            observer.consultation(&record);
        }
        for event in consultation.events.into_iter().take(MAX_MOVES) {
            self.record(LineageRecord::Event(event.clone()))?;
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
        if self.cancel.is_cancelled() || self.past_deadline() {
            return Some(self.cancelled());
        }
        let budget = self.config().cpu_seconds?;
        (self.state.spent_cpu_seconds() >= budget).then_some(Stop::Budget)
    }

    /// When the run's hours (counted from this process's start) are up.
    fn deadline(&self) -> Option<Instant> {
        let hours = self.config().hours?;
        Some(self.started + Duration::from_secs_f64(hours * 3600.0))
    }

    fn past_deadline(&self) -> bool {
        self.deadline().is_some_and(|at| Instant::now() >= at)
    }

    /// Why a cancelled run stopped: its deadline, else Ctrl-C (or whoever holds the token).
    fn cancelled(&self) -> Stop {
        match self.past_deadline() {
            true => Stop::Hours,
            false => Stop::Interrupted,
        }
    }

    fn record(&mut self, record: LineageRecord) -> Result<()> {
        self.store.append(&record)?;
        self.state.apply(&record);
        Ok(())
    }

    /// Records `records` in one write (a kill leaves all of them or none, torn writes aside).
    fn record_all(&mut self, records: &[LineageRecord]) -> Result<()> {
        self.store.append_all(records)?;
        for record in records {
            self.state.apply(record);
        }
        Ok(())
    }
}

/// Refuses a lineage in which a node id is recorded twice (a copied line, two writers): replaying
/// it would give two nodes one id.
fn check_unique_nodes(dir: &Path, records: &[LineageRecord]) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for (line, record) in records.iter().enumerate() {
        if let LineageRecord::Node(node) = record {
            if !seen.insert(node.id.as_str()) {
                return Err(MiloError::Malformed {
                    path: dir.join(super::lineage::LINEAGE_FILE),
                    message: format!(
                        "record {}: node {} is recorded twice; the lineage was edited or written by two processes",
                        line + 1,
                        node.id
                    ),
                });
            }
        }
    }
    Ok(())
}

/// A unified diff of two harness texts.
pub fn diff(before: &str, after: &str) -> String {
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(1)
        .header("parent", "child")
        .to_string()
}

/// The suite a run's settings name, with every task's evaluation budget replaced when the run
/// overrides it (`--task-evaluations`).
fn load_suite(config: &RunConfig) -> Result<Suite> {
    let suite = Suite::load(&config.suite)?;
    Ok(match config.task_evaluations {
        None => suite,
        Some(evaluations) => suite.with_task_evaluations(evaluations),
    })
}

/// The cost measure of a run of `writer` on `suite`: tokens for the LLM writer (what its work
/// costs), else counted (reproducible) work when the suite's budgets are evaluations and
/// measured CPU seconds when they are seconds.
pub fn default_cost_measure(suite: &Suite, writer: &str) -> CostMeasure {
    if writer == "llm" {
        CostMeasure::Tokens
    } else if suite.budget.seconds.is_none() {
        CostMeasure::Counted
    } else {
        CostMeasure::Measured
    }
}
