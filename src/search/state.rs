//! The search's state, rebuilt from lineage records: islands, their admitted sets, search
//! progress and stall counters, the rejected harnesses, the current search slots and promoted
//! starts. [`SearchState::apply`] is the only way it changes, so a live run and a resumed run
//! (replaying `lineage.jsonl`) reach the same state.

use super::evaluation::Evaluation;
use super::lineage::{
    ConsultationRecord, EventRecord, FailureRecord, LineageRecord, Move, NodeRecord, RunConfig,
};
use std::collections::{BTreeMap, HashMap, HashSet};

/// One island: a tree of harnesses with its own mutator and admitted set.
#[derive(Clone, Debug, PartialEq)]
pub struct Island {
    /// Index of the island.
    pub id: usize,
    /// Name of its mutator.
    pub mutator: String,
    /// Every node proposed for it, in order (admitted or not).
    pub members: Vec<String>,
    /// The admitted node ids (a speciated island starts with the moved subtree).
    pub admitted: Vec<String>,
    /// Best search quality of the island's admitted nodes so far (−∞ before the first): what
    /// the island's progress is measured on. Validation never steers the search.
    pub best_quality: f64,
    /// Rounds since `best_quality` last improved.
    pub stalled_rounds: usize,
    /// A node grafted from another island, to be the co-parent of the next proposal.
    pub co_parent: Option<String>,
    improved_this_round: bool,
}

impl Island {
    fn new(id: usize, mutator: String) -> Island {
        Island {
            id,
            mutator,
            members: Vec::new(),
            admitted: Vec::new(),
            best_quality: f64::NEG_INFINITY,
            stalled_rounds: 0,
            co_parent: None,
            improved_this_round: false,
        }
    }
}

/// Everything the search knows, as replayed from its records.
#[derive(Clone, Debug, Default)]
pub struct SearchState {
    /// The run's settings (from the first record).
    pub config: Option<RunConfig>,
    /// Every node, in creation order.
    pub nodes: Vec<NodeRecord>,
    /// Every orchestrator move.
    pub events: Vec<EventRecord>,
    /// Every recorded failure of a mutator or a writer.
    pub failures: Vec<FailureRecord>,
    /// Every recorded consultation cost and refusal (an LLM orchestrator's).
    pub consultations: Vec<ConsultationRecord>,
    /// The islands.
    pub islands: Vec<Island>,
    /// The search slot ids after a curriculum move (None: the suite's search slots).
    pub search_slots: Option<Vec<String>>,
    /// The last finished round.
    pub rounds_done: usize,
    /// Content hashes of every rejected harness.
    pub rejected: HashSet<String>,
    /// Each promoted start's current construction: start label → content address
    /// (`--promote-discoveries`).
    pub promoted: BTreeMap<String, String>,
    index: HashMap<String, usize>,
    /// Node id → index of the latest node that re-evaluated it as a parent.
    reevaluated: HashMap<String, usize>,
}

impl SearchState {
    /// The state after `records`, in order.
    pub fn replay(records: &[LineageRecord]) -> SearchState {
        let mut state = SearchState::default();
        for record in records {
            state.apply(record);
        }
        state
    }

    /// Applies one record.
    pub fn apply(&mut self, record: &LineageRecord) {
        match record {
            LineageRecord::Started(config) => {
                self.islands = (0..config.islands)
                    .map(|i| Island::new(i, config.mutators[i % config.mutators.len()].clone()))
                    .collect();
                self.config = Some(config.as_ref().clone());
            }
            LineageRecord::Node(node) => self.add_node(node),
            LineageRecord::Event(event) => self.apply_move(event),
            LineageRecord::Failure(failure) => self.failures.push(failure.clone()),
            LineageRecord::Consultation(consultation) => {
                self.consultations.push(consultation.clone())
            }
            LineageRecord::RoundEnd { round } => {
                for island in &mut self.islands {
                    if island.improved_this_round {
                        island.stalled_rounds = 0;
                    } else {
                        island.stalled_rounds += 1;
                    }
                    island.improved_this_round = false;
                }
                self.rounds_done = *round;
            }
            LineageRecord::Extended { rounds, hours } => {
                if let Some(config) = &mut self.config {
                    (config.rounds, config.hours) = (*rounds, *hours);
                }
            }
        }
    }

    fn add_node(&mut self, node: &NodeRecord) {
        // The latest re-evaluation of a parent; of a raced step's children (one parent, one
        // round), the first that ran on the most tasks.
        if let (Some(parent), Some(evaluation)) = (node.parents.first(), &node.parent_evaluation) {
            let fuller_sibling = self.reevaluated.get(parent).is_some_and(|&i| {
                let earlier = &self.nodes[i];
                earlier.round == node.round
                    && earlier
                        .parent_evaluation
                        .as_ref()
                        .is_some_and(|e| e.tasks.len() >= evaluation.tasks.len())
            });
            if !fuller_sibling {
                self.reevaluated.insert(parent.clone(), self.nodes.len());
            }
        }
        self.index.insert(node.id.clone(), self.nodes.len());
        self.nodes.push(node.clone());
        if !node.admitted() {
            self.rejected.insert(node.harness.clone());
        }
        let Some(island) = self.islands.get_mut(node.island) else {
            return;
        };
        island.members.push(node.id.clone());
        if node.admitted() {
            island.admitted.push(node.id.clone());
            if node.evaluation.fitness.quality > island.best_quality {
                island.best_quality = node.evaluation.fitness.quality;
                island.improved_this_round = true;
            }
        }
        if node.parents.get(1).is_some() && island.co_parent.as_ref() == node.parents.get(1) {
            island.co_parent = None;
        }
    }

    fn apply_move(&mut self, event: &EventRecord) {
        match &event.action {
            Move::Reassign { island, mutator } => {
                if let Some(island) = self.islands.get_mut(*island) {
                    island.mutator = mutator.clone();
                    island.stalled_rounds = 0;
                }
            }
            Move::Graft { into, node, .. } => {
                if let Some(island) = self.islands.get_mut(*into) {
                    island.co_parent = Some(node.clone());
                    island.stalled_rounds = 0;
                }
            }
            Move::Speciate {
                from,
                nodes,
                mutator,
            } => {
                if let Some(source) = self.islands.get_mut(*from) {
                    source.admitted.retain(|id| !nodes.contains(id));
                    source.stalled_rounds = 0;
                }
                let mut island = Island::new(self.islands.len(), mutator.clone());
                island.admitted = nodes.clone();
                island.members = nodes.clone();
                island.best_quality = nodes
                    .iter()
                    .filter_map(|id| self.node(id))
                    .map(|n| n.evaluation.fitness.quality)
                    .fold(f64::NEG_INFINITY, f64::max);
                self.islands.push(island);
            }
            Move::Curriculum { slots } => {
                self.search_slots = Some(slots.clone());
                for island in &mut self.islands {
                    island.stalled_rounds = 0;
                }
            }
            Move::Promote {
                start,
                construction,
                ..
            } => {
                self.promoted.insert(start.clone(), construction.clone());
            }
        }
        self.events.push(event.clone());
    }

    /// The node with this id.
    pub fn node(&self, id: &str) -> Option<&NodeRecord> {
        self.index.get(id).map(|&i| &self.nodes[i])
    }

    /// Whether island `island`'s step of `round` is recorded — its node, or a failure (a resumed
    /// run skips it).
    pub fn has_step(&self, round: usize, island: usize) -> bool {
        self.nodes
            .iter()
            .any(|n| n.round == round && n.island == island)
            || self
                .failures
                .iter()
                .any(|f| f.round == round && f.island == island)
    }

    /// The admitted nodes of an island, in admission order.
    pub fn admitted(&self, island: usize) -> Vec<&NodeRecord> {
        self.islands
            .get(island)
            .map(|i| i.admitted.iter().filter_map(|id| self.node(id)).collect())
            .unwrap_or_default()
    }

    /// An island's best admitted node: highest quality, then lowest cost, then earliest.
    pub fn island_best(&self, island: usize) -> Option<&NodeRecord> {
        self.admitted(island).into_iter().reduce(|best, n| {
            if n.evaluation.fitness.outranks(&best.evaluation.fitness) {
                n
            } else {
                best
            }
        })
    }

    /// CPU seconds the search's evaluations took: every node's search tasks, its parent's
    /// re-run and its validation (reused evaluations counted once): what a run's CPU budget
    /// counts (validation steers nothing, but it is work the run does).
    pub fn spent_cpu_seconds(&self) -> f64 {
        self.nodes
            .iter()
            .flat_map(|n| n.search_evaluations().chain(n.validation.as_ref()))
            .map(Evaluation::spent_cpu_seconds)
            .sum()
    }

    /// What deciding children cost: the children evaluated against a parent, and the task runs
    /// their evaluations and their parents' re-runs took (a run shared by raced siblings, or
    /// reused from the lineage, counted once). Their ratio is the task runs per decision.
    pub fn decision_cost(&self) -> (usize, usize) {
        let decided = self.nodes.iter().filter(|n| n.parent_evaluation.is_some());
        decided.fold((0, 0), |(children, runs), node| {
            let fresh = node
                .search_evaluations()
                .filter(|e| !e.reused)
                .map(|e| e.tasks.len())
                .sum::<usize>();
            (children + 1, runs + fresh)
        })
    }

    /// A node's latest search evaluation: its re-evaluation as a parent in the latest round it
    /// was one, else its own.
    pub fn latest_evaluation(&self, id: &str) -> Option<&Evaluation> {
        match self.reevaluated.get(id) {
            Some(&i) => self.nodes[i].parent_evaluation.as_ref(),
            None => self.node(id).map(|n| &n.evaluation),
        }
    }

    /// The state as the search's parts see it: every node's validation removed (held out for
    /// reporting and the champion's choice, it never steers a mutator or the orchestrator).
    pub fn without_validation(&self) -> SearchState {
        let mut state = self.clone();
        for node in &mut state.nodes {
            node.validation = None;
        }
        state
    }

    /// The best validation quality among an island's admitted nodes (for reports).
    pub fn island_best_validation(&self, island: usize) -> Option<f64> {
        self.admitted(island)
            .into_iter()
            .filter_map(|n| n.validation.as_ref())
            .map(|v| v.fitness.quality)
            .reduce(f64::max)
    }

    /// The id the next node gets.
    pub fn next_node_id(&self) -> String {
        format!("n{:04}", self.nodes.len())
    }

    /// The ids the next `count` nodes get, in order.
    pub fn next_node_ids(&self, count: usize) -> Vec<String> {
        (0..count)
            .map(|k| format!("n{:04}", self.nodes.len() + k))
            .collect()
    }

    /// The children proposed for an island after its seed (admitted or not), oldest first.
    pub fn children(&self, island: usize) -> Vec<&NodeRecord> {
        self.islands
            .get(island)
            .map(|i| {
                i.members
                    .iter()
                    .filter_map(|id| self.node(id))
                    .filter(|n| n.round > 0)
                    .collect()
            })
            .unwrap_or_default()
    }
}
