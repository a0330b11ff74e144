//! Test fixtures of the orchestrator's tests: a lineage built record by record.

use super::*;
use crate::cancel::CancelToken;
use crate::search::admission::Verdict;
use crate::search::evaluation::{CostMeasure, Evaluation, Quality, TaskResult};
use crate::search::hypervolume::Fitness;
use crate::search::lineage::{LineageRecord, RunConfig, DEFAULT_TASKS_PER_ROUND};
use crate::suite::Split;

pub(super) const POOL: [&str; 4] = ["tuner", "structural", "evidence", "breeder"];

/// Builds a lineage record by record: nodes get ids `n0000`, `n0001`, … in order.
pub(super) struct Lineage {
    pub(super) records: Vec<LineageRecord>,
    pub(super) next: usize,
    pub(super) round: usize,
}

impl Lineage {
    /// A run with `islands` islands (island i starts with mutator `POOL[i]`) and `patience`.
    pub(super) fn new(islands: usize, patience: usize) -> Lineage {
        let config = RunConfig {
            suite: "suite.toml".into(),
            suite_pin: None,
            islands,
            rounds: None,
            hours: None,
            seed: 7,
            patience,
            quality: Quality::Best,
            cost: CostMeasure::Counted,
            attempts: 1,
            writer: "builtin".into(),
            mutators: POOL.iter().map(|m| m.to_string()).collect(),
            orchestrator: "builtin".into(),
            lineage_store: "jsonl".into(),
            executor: "local-threads".into(),
            slurm: None,
            cpu_seconds: None,
            components: Default::default(),
            tasks_per_round: DEFAULT_TASKS_PER_ROUND,
            task_evaluations: None,
            promote_discoveries: false,
            agents: None,
            admission: Default::default(),
            archive_population: 1,
            seed_harnesses: vec![],
        };
        Lineage {
            records: vec![LineageRecord::Started(Box::new(config))],
            next: 0,
            round: 0,
        }
    }

    /// Appends a node on `island` in the current round with per-task gains on tasks
    /// `t0, t1, …` (quality: the best gain, cost `cost`); returns its id.
    pub(super) fn node(
        &mut self,
        island: usize,
        parents: &[&str],
        gains: &[f64],
        admitted: bool,
        cost: f64,
        validation: Option<f64>,
    ) -> String {
        let id = format!("n{:04}", self.next);
        self.next += 1;
        let evaluation = |gains: &[f64]| Evaluation {
            tasks: gains
                .iter()
                .enumerate()
                .map(|(i, &gain)| TaskResult {
                    task: format!("t{i}"),
                    split: Split::Search,
                    start_exact: "0".into(),
                    end_exact: "0".into(),
                    gain,
                    evaluations: 0,
                    cpu_seconds: 0.0,
                    wall_seconds: 0.0,
                    usage: Default::default(),
                    work: 0.0,
                    evidence: Vec::new(),
                    edits: Vec::new(),
                    best_program: None,
                    construction: None,
                    writer: None,
                })
                .collect(),
            fitness: Fitness {
                quality: gains.iter().copied().fold(0.0, f64::max),
                cost,
                latency: cost,
            },
            gains: gains.to_vec(),
            reused: false,
        };
        self.records.push(LineageRecord::Node(Box::new(NodeRecord {
            id: id.clone(),
            island,
            round: self.round,
            parents: parents.iter().map(|p| p.to_string()).collect(),
            mutator: if self.round == 0 { "seed" } else { "tuner" }.into(),
            harness: format!("hash-{id}"),
            name: id.clone(),
            edit: String::new(),
            evidence: Vec::new(),
            usage: Default::default(),
            evaluation: evaluation(gains),
            parent_evaluation: None,
            verdict: Verdict {
                admitted,
                hypervolume_before: 0.0,
                hypervolume_after: 0.0,
                reason: if admitted { "admitted" } else { "rejected" }.into(),
            },
            validation: validation.map(|q| evaluation(&[q])),
            at: None,
        })));
        id
    }

    /// An admitted seed (round 0) whose validation quality equals its best gain.
    pub(super) fn seed(&mut self, island: usize, gains: &[f64]) -> String {
        let q = gains.iter().copied().fold(0.0, f64::max);
        self.node(island, &[], gains, true, 1.0, Some(q))
    }

    /// A child in the current round, without a validation improvement.
    pub(super) fn child(
        &mut self,
        island: usize,
        parent: &str,
        gains: &[f64],
        admitted: bool,
    ) -> String {
        self.node(island, &[parent], gains, admitted, 1.0, None)
    }

    /// Ends the current round and starts the next.
    pub(super) fn end_round(&mut self) {
        self.records
            .push(LineageRecord::RoundEnd { round: self.round });
        self.round += 1;
    }

    pub(super) fn state(&self) -> SearchState {
        SearchState::replay(&self.records)
    }
}

pub(super) fn consult(state: &SearchState, patience: usize, tasks: &[&str]) -> Vec<EventRecord> {
    let tasks: Vec<String> = tasks.iter().map(|t| t.to_string()).collect();
    BuiltinOrchestrator
        .consult(
            state,
            state.rounds_done + 1,
            patience,
            &POOL,
            &tasks,
            &CancelToken::new(),
        )
        .events
}

/// Applies the events to a copy of the state.
pub(super) fn after(state: &SearchState, events: &[EventRecord]) -> SearchState {
    let mut state = state.clone();
    for event in events {
        state.apply(&LineageRecord::Event(event.clone()));
    }
    state
}

/// Island 0 runs dry (no child above its seed's quality), island 1 keeps improving its best
/// search quality.
pub(super) fn dry_lineage(near_copy_gains: [f64; 2]) -> Lineage {
    let mut l = Lineage::new(2, 3);
    let s0 = l.seed(0, &[1.0, 0.0]);
    let s1 = l.seed(1, &[0.5, 0.5]);
    l.end_round();
    l.child(0, &s0, &[0.8, 0.0], false);
    l.node(1, &[&s1], &[0.6, 0.6], true, 1.0, Some(0.6));
    l.end_round();
    l.child(0, &s0, &[0.9, 0.0], true);
    l.node(1, &[&s1], &[0.7, 0.7], true, 1.0, Some(0.7));
    l.end_round();
    l.child(0, &s0, &near_copy_gains, true);
    l.node(1, &[&s1], &[0.8, 0.8], true, 1.0, Some(0.8));
    l.end_round();
    l
}
