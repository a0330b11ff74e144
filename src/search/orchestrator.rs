//! The orchestrator: when an island's validation best stops improving, it looks at every island
//! and rewrites the search strategy with at most two moves, each written down with its diagnosis.
//!
//! [`BuiltinOrchestrator`] follows deterministic rules (`P` is the patience, counted as at least
//! 1; an island is *stalled* when its `stalled_rounds ≥ P`; qualities are equal when they differ
//! by at most [`QUALITY_TOLERANCE`] relative; gain vectors are compared on the tasks both nodes
//! were evaluated on, with [`similarity`]):
//!
//! - **Curriculum**: every island is stalled and their best qualities are equal (the same
//!   ceiling, possibly zero). Over all nodes' evaluations, each task's fraction of harnesses that
//!   improved it (gain > 0) is counted; the new search tasks are those with a fraction in
//!   (0, ½] (improved by few, failed by most), or else those with the lowest positive fraction,
//!   topped up to at least two tasks by increasing positive fraction, then unimproved tasks.
//!   No move when no task was ever improved or the set equals the current one.
//! - **Reassign** a dry island: of its last `P` children, a strict majority were rejected or are
//!   near-copies of a rejected node (gain similarity ≥ [`NEAR_COPY_SIMILARITY`] and equal
//!   quality). Its new mutator is the next one in the pool's order after its current one,
//!   preferring one that no other island uses.
//! - **Graft** into an exhausted island whose best quality is below another island's best: the
//!   strongest such island's best node becomes its co-parent (unless that very graft is pending
//!   or was already made).
//! - **Speciate** a crowded-out subtree: an admitted node of the island, not its best, whose
//!   gains have similarity ≤ [`SPECIATE_SIMILARITY`] to the best's and beat the best's on at
//!   least one task, and whose subtree (it and its admitted descendants in the island through
//!   first parents, not containing the best) was the parent of fewer than half of the island's
//!   children. The earliest such node's subtree moves to a new island, whose mutator differs
//!   from the source island's (next in order, preferring one no island uses).
//!
//! Curriculum goes first when it fires. Then stalled islands are visited from the most stalled
//! (ties: lowest index), each getting the first of reassign, graft, speciate that fires, until
//! two moves are made. An island changed by one move (the reassigned island, the graft's
//! receiver, the speciated source) gets no second one; a curriculum changes the tasks, not an
//! island, so one island move may follow it.

use super::lineage::{EventRecord, Move, NodeRecord};
use super::similarity::similarity;
use super::state::SearchState;
use std::cmp::Reverse;
use std::collections::{HashMap, HashSet};

/// The most moves one consultation makes.
pub const MAX_MOVES: usize = 2;
/// Gain similarity at or above which a child with the same quality is a near-copy of a rejected
/// node.
pub const NEAR_COPY_SIMILARITY: f64 = 0.99;
/// Gain similarity to the island best at or below which a subtree solves different tasks.
pub const SPECIATE_SIMILARITY: f64 = 0.5;
/// Relative tolerance under which two qualities count as equal.
pub const QUALITY_TOLERANCE: f64 = 1e-9;

/// Decides the search's strategy moves when islands stall.
pub trait Orchestrator: Send + Sync {
    /// The orchestrator's name, for the display and the records.
    fn name(&self) -> &str;

    /// Called after `round` when some island's validation best has not improved for `patience`
    /// rounds (see [`should_consult`]). Returns at most two moves, each an [`EventRecord`] with
    /// its diagnosis and the given `round`. `mutators` is the pool's names in order;
    /// `all_search_tasks` the suite's search task ids.
    fn consult(
        &self,
        state: &SearchState,
        round: usize,
        patience: usize,
        mutators: &[&str],
        all_search_tasks: &[String],
    ) -> Vec<EventRecord>;
}

/// The deterministic, rule-based orchestrator described in the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct BuiltinOrchestrator;

/// Whether the orchestrator is due: some island's `stalled_rounds` has reached `patience`
/// (a patience of 0 counts as 1).
pub fn should_consult(state: &SearchState, patience: usize) -> bool {
    let patience = patience.max(1);
    state.islands.iter().any(|i| i.stalled_rounds >= patience)
}

impl Orchestrator for BuiltinOrchestrator {
    fn name(&self) -> &str {
        "builtin"
    }

    fn consult(
        &self,
        state: &SearchState,
        round: usize,
        patience: usize,
        mutators: &[&str],
        all_search_tasks: &[String],
    ) -> Vec<EventRecord> {
        let patience = patience.max(1);
        let mut plan = Plan {
            state,
            round,
            patience,
            mutators,
            mutator_of: state.islands.iter().map(|i| i.mutator.clone()).collect(),
            changed: HashSet::new(),
            events: Vec::new(),
        };
        if let Some(event) = curriculum(state, round, patience, all_search_tasks) {
            plan.events.push(event);
        }
        let mut stalled: Vec<usize> = (0..state.islands.len())
            .filter(|&i| state.islands[i].stalled_rounds >= patience)
            .collect();
        stalled.sort_by_key(|&i| (Reverse(state.islands[i].stalled_rounds), i));
        for island in stalled {
            if plan.events.len() >= MAX_MOVES {
                break;
            }
            if plan.changed.contains(&island) {
                continue;
            }
            if !plan.reassign(island) && !plan.graft(island) {
                plan.speciate(island);
            }
        }
        plan.events
    }
}

/// One consultation in progress: the moves so far and the mutators they give each island.
struct Plan<'a> {
    state: &'a SearchState,
    round: usize,
    patience: usize,
    mutators: &'a [&'a str],
    /// Each island's mutator after the moves so far (new islands appended).
    mutator_of: Vec<String>,
    /// Islands a move has changed.
    changed: HashSet<usize>,
    events: Vec<EventRecord>,
}

impl Plan<'_> {
    fn push(&mut self, islands: Vec<usize>, diagnosis: String, action: Move) {
        self.events.push(EventRecord {
            round: self.round,
            islands,
            diagnosis,
            action,
        });
    }

    fn stalled_words(&self, island: usize) -> String {
        format!(
            "island {island}'s validation best has not improved for {} rounds (patience {})",
            self.state.islands[island].stalled_rounds, self.patience
        )
    }

    /// Reassigns `island` to another mutator if it is dry; whether it did.
    fn reassign(&mut self, island: usize) -> bool {
        let Some(dry) = dryness(self.state, island, self.patience) else {
            return false;
        };
        let current = self.mutator_of[island].clone();
        let others: Vec<&str> = (0..self.mutator_of.len())
            .filter(|&j| j != island)
            .map(|j| self.mutator_of[j].as_str())
            .collect();
        let Some(mutator) = next_mutator(self.mutators, &current, &others) else {
            return false;
        };
        let diagnosis = format!(
            "{}; island {island} is dry: {dry}; reassigned from mutator {current} to {mutator}",
            self.stalled_words(island)
        );
        self.mutator_of[island] = mutator.clone();
        self.changed.insert(island);
        self.push(vec![island], diagnosis, Move::Reassign { island, mutator });
        true
    }

    /// Grafts a stronger island's best into `island` if there is one; whether it did.
    fn graft(&mut self, into: usize) -> bool {
        let state = self.state;
        let Some(own) = state.island_best(into) else {
            return false;
        };
        let own_quality = quality(own);
        let mut donors: Vec<(usize, &NodeRecord)> = (0..state.islands.len())
            .filter(|&j| j != into)
            .filter_map(|j| Some((j, state.island_best(j)?)))
            .filter(|(_, best)| {
                quality(best) > own_quality && !same_quality(quality(best), own_quality)
            })
            .collect();
        donors.sort_by(|a, b| quality(b.1).total_cmp(&quality(a.1)).then(a.0.cmp(&b.0)));
        let pending = state.islands[into].co_parent.as_deref();
        let Some((from, best)) = donors.into_iter().find(|(from, best)| {
            let action = Move::Graft {
                from: *from,
                into,
                node: best.id.clone(),
            };
            pending != Some(best.id.as_str()) && !state.events.iter().any(|e| e.action == action)
        }) else {
            return false;
        };
        let diagnosis = format!(
            "{}; island {into} is exhausted at best quality {} (node {}) while island {from}'s \
             best node {} reaches {}; grafted {} into island {into} as co-parent",
            self.stalled_words(into),
            show(own_quality),
            own.id,
            best.id,
            show(quality(best)),
            best.id,
        );
        self.changed.insert(into);
        self.push(
            vec![from, into],
            diagnosis,
            Move::Graft {
                from,
                into,
                node: best.id.clone(),
            },
        );
        true
    }

    /// Moves a crowded-out subtree of `island` into a new island if there is one; whether it did.
    fn speciate(&mut self, from: usize) -> bool {
        let state = self.state;
        let Some(subtree) = crowded_out_subtree(state, from) else {
            return false;
        };
        let current = self.mutator_of[from].clone();
        let in_use: Vec<&str> = self.mutator_of.iter().map(String::as_str).collect();
        let Some(mutator) = next_mutator(self.mutators, &current, &in_use) else {
            return false;
        };
        let new_island = self.mutator_of.len();
        let diagnosis = format!(
            "{}; {}; moved into new island {new_island} with mutator {mutator} \
             (island {from} keeps {current})",
            self.stalled_words(from),
            subtree.words
        );
        self.mutator_of.push(mutator.clone());
        self.changed.insert(from);
        self.changed.insert(new_island);
        self.push(
            vec![from, new_island],
            diagnosis,
            Move::Speciate {
                from,
                nodes: subtree.nodes,
                mutator,
            },
        );
        true
    }
}

/// A node's quality.
fn quality(node: &NodeRecord) -> f64 {
    node.evaluation.fitness.quality
}

/// Whether two qualities are equal within [`QUALITY_TOLERANCE`] relative (0 equals only 0).
fn same_quality(a: f64, b: f64) -> bool {
    (a - b).abs() <= QUALITY_TOLERANCE * a.abs().max(b.abs())
}

/// A number for a diagnosis: up to six decimals without trailing zeros, or scientific when tiny.
fn show(x: f64) -> String {
    if x != 0.0 && x.abs() < 1e-3 {
        return format!("{x:.3e}");
    }
    let text = format!("{x:.6}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".into()
    } else {
        text.into()
    }
}

/// A node's gain per task id, in its evaluation's order.
fn gains(node: &NodeRecord) -> impl Iterator<Item = (&str, f64)> {
    node.evaluation
        .tasks
        .iter()
        .map(|t| t.task.as_str())
        .zip(node.evaluation.gains.iter().copied())
}

/// The gains of `a` and `b` on the tasks both were evaluated on, with those tasks' ids.
fn common_gains<'n>(a: &'n NodeRecord, b: &'n NodeRecord) -> Vec<(&'n str, f64, f64)> {
    let of_b: HashMap<&str, f64> = gains(b).collect();
    gains(a)
        .filter_map(|(task, x)| Some((task, x, *of_b.get(task)?)))
        .collect()
}

/// The similarity of two nodes' gains on their common tasks (None without common tasks or with
/// a gain [`similarity`] refuses).
fn behaviour_similarity(a: &NodeRecord, b: &NodeRecord) -> Option<f64> {
    let common = common_gains(a, b);
    if common.is_empty() {
        return None;
    }
    let (x, y): (Vec<f64>, Vec<f64>) = common.iter().map(|&(_, x, y)| (x, y)).unzip();
    similarity(&x, &y).ok()
}

/// Why an island is dry, in words, if a strict majority of its last `patience` children were
/// rejected or are near-copies of a rejected node.
fn dryness(state: &SearchState, island: usize, patience: usize) -> Option<String> {
    let children = state.children(island);
    if children.len() < patience {
        return None;
    }
    let recent = &children[children.len() - patience..];
    let rejected: Vec<&NodeRecord> = state.nodes.iter().filter(|n| !n.admitted()).collect();
    let mut rejected_count = 0;
    let mut copies = Vec::new();
    for child in recent {
        if !child.admitted() {
            rejected_count += 1;
            continue;
        }
        let copy = rejected.iter().find_map(|r| {
            let s = behaviour_similarity(child, r)?;
            (r.id != child.id
                && s >= NEAR_COPY_SIMILARITY
                && same_quality(quality(child), quality(r)))
            .then(|| format!("{} ~ {} (similarity {:.4})", child.id, r.id, s))
        });
        copies.extend(copy);
    }
    let dry = rejected_count + copies.len();
    if 2 * dry <= recent.len() {
        return None;
    }
    let mut words = format!(
        "{dry} of its last {} children were rejected or near-copies of rejected ones \
         ({rejected_count} rejected",
        recent.len()
    );
    if !copies.is_empty() {
        words.push_str(&format!(
            "; admitted near-copies of rejected nodes: {}",
            copies.join(", ")
        ));
    }
    words.push(')');
    Some(words)
}

/// The next mutator after `current` in `pool` order (wrapping), other than `current`, preferring
/// one not in `in_use`; None when the pool has no other mutator.
fn next_mutator(pool: &[&str], current: &str, in_use: &[&str]) -> Option<String> {
    let start = pool.iter().position(|m| *m == current).map_or(0, |i| i + 1);
    let order: Vec<&str> = (0..pool.len())
        .map(|k| pool[(start + k) % pool.len()])
        .filter(|m| *m != current)
        .collect();
    order
        .iter()
        .find(|m| !in_use.contains(m))
        .or(order.first())
        .map(|m| m.to_string())
}

/// A crowded-out subtree: its admitted nodes, root first, and the diagnosis in words.
struct Subtree {
    nodes: Vec<String>,
    words: String,
}

/// The earliest crowded-out subtree of `island` (see the module documentation).
fn crowded_out_subtree(state: &SearchState, island: usize) -> Option<Subtree> {
    let best = state.island_best(island)?;
    let admitted = state.admitted(island);
    let members: HashSet<&str> = state.islands[island]
        .members
        .iter()
        .map(String::as_str)
        .collect();
    let children = state.children(island);
    // Similarity to the best and the tasks on which it beats the best, for a node that differs.
    let differs = |node: &NodeRecord| {
        let s = behaviour_similarity(node, best)?;
        let better: Vec<String> = common_gains(node, best)
            .into_iter()
            .filter(|&(_, x, y)| x > y)
            .map(|(task, x, y)| format!("{task}: {} vs {}", show(x), show(y)))
            .collect();
        (s <= SPECIATE_SIMILARITY && !better.is_empty()).then_some((s, better))
    };
    for root in admitted.iter().filter(|n| n.id != best.id) {
        let Some((s, better)) = differs(root) else {
            continue;
        };
        // Only the top of a differing branch roots a subtree.
        let parent = root
            .parents
            .first()
            .filter(|p| members.contains(p.as_str()))
            .and_then(|p| state.node(p));
        if parent.is_some_and(|p| p.admitted() && differs(p).is_some()) {
            continue;
        }
        let nodes: Vec<String> = admitted
            .iter()
            .filter(|n| descends_from(state, &members, n, &root.id))
            .map(|n| n.id.clone())
            .collect();
        if nodes.contains(&best.id) {
            continue;
        }
        let draws = children
            .iter()
            .filter(|c| c.parents.first().is_some_and(|p| nodes.contains(p)))
            .count();
        if 2 * draws >= children.len().max(1) {
            continue;
        }
        let words = format!(
            "island {island} crowds out the subtree of {} ({} admitted: {}): its gains have \
             similarity {s:.4} ≤ {SPECIATE_SIMILARITY} to the island best {}'s and beat them on \
             {}, yet it was the parent of only {draws} of the island's {} children",
            root.id,
            nodes.len(),
            nodes.join(", "),
            best.id,
            better.join(", "),
            children.len(),
        );
        return Some(Subtree { nodes, words });
    }
    None
}

/// Whether `node` is `root` or reaches it through first parents that are members of the island.
fn descends_from(
    state: &SearchState,
    members: &HashSet<&str>,
    node: &NodeRecord,
    root: &str,
) -> bool {
    let mut current = node;
    for _ in 0..=state.nodes.len() {
        if current.id == root {
            return true;
        }
        let Some(parent) = current.parents.first() else {
            return false;
        };
        if !members.contains(parent.as_str()) {
            return false;
        }
        let Some(next) = state.node(parent) else {
            return false;
        };
        current = next;
    }
    false
}

/// The curriculum move, if every island sits stalled at the same ceiling and the high-regret
/// tasks differ from the current search tasks.
fn curriculum(
    state: &SearchState,
    round: usize,
    patience: usize,
    all_search_tasks: &[String],
) -> Option<EventRecord> {
    if state.islands.is_empty() || state.islands.iter().any(|i| i.stalled_rounds < patience) {
        return None;
    }
    let bests: Vec<f64> = (0..state.islands.len())
        .map(|i| state.island_best(i).map_or(0.0, quality))
        .collect();
    let ceiling = bests[0];
    if !bests.iter().all(|&q| same_quality(q, ceiling)) {
        return None;
    }
    let current: Vec<String> = state
        .search_tasks
        .clone()
        .unwrap_or_else(|| all_search_tasks.to_vec());
    let mut pool: Vec<&str> = all_search_tasks.iter().map(String::as_str).collect();
    for task in &current {
        if !pool.contains(&task.as_str()) {
            pool.push(task);
        }
    }
    // Per task: (harnesses evaluated on it, harnesses that improved it).
    let mut counts: HashMap<&str, (usize, usize)> = HashMap::new();
    for node in &state.nodes {
        for (task, gain) in gains(node) {
            let entry = counts.entry(task).or_default();
            entry.0 += 1;
            entry.1 += usize::from(gain > 0.0);
        }
    }
    let fraction = |task: &str| {
        counts
            .get(task)
            .filter(|c| c.0 > 0)
            .map(|&(n, k)| k as f64 / n as f64)
    };
    let positive: Vec<(&str, f64)> = pool
        .iter()
        .filter_map(|&t| Some((t, fraction(t)?)))
        .filter(|&(_, f)| f > 0.0)
        .collect();
    if positive.is_empty() {
        return None;
    }
    let mut chosen: Vec<&str> = positive
        .iter()
        .filter(|&&(_, f)| f <= 0.5)
        .map(|&(t, _)| t)
        .collect();
    if chosen.is_empty() {
        let lowest = positive
            .iter()
            .map(|&(_, f)| f)
            .fold(f64::INFINITY, f64::min);
        chosen = positive
            .iter()
            .filter(|&&(_, f)| f == lowest)
            .map(|&(t, _)| t)
            .collect();
    }
    // Top up to two tasks: by increasing positive fraction, then tasks nobody improved.
    let mut ranked = positive.clone();
    ranked.sort_by(|a, b| a.1.total_cmp(&b.1));
    let unimproved = pool
        .iter()
        .filter(|&&t| fraction(t).is_some_and(|f| f == 0.0))
        .copied();
    for task in ranked.iter().map(|&(t, _)| t).chain(unimproved) {
        if chosen.len() >= 2 {
            break;
        }
        if !chosen.contains(&task) {
            chosen.push(task);
        }
    }
    let tasks: Vec<String> = pool
        .iter()
        .filter(|t| chosen.contains(t))
        .map(|t| t.to_string())
        .collect();
    let as_set = |v: &[String]| v.iter().cloned().collect::<HashSet<String>>();
    if as_set(&tasks) == as_set(&current) {
        return None;
    }
    let described: Vec<String> = tasks
        .iter()
        .map(|t| {
            let (n, k) = counts.get(t.as_str()).copied().unwrap_or_default();
            format!("{t} (improved by {k} of {n} harnesses)")
        })
        .collect();
    let diagnosis = format!(
        "all {} islands sit at the same ceiling (best quality {}) and none has improved its \
         validation best for {} rounds or more; high-regret tasks: {}; search tasks {} → {}",
        state.islands.len(),
        show(ceiling),
        patience,
        described.join(", "),
        current.join(", "),
        tasks.join(", "),
    );
    Some(EventRecord {
        round,
        islands: (0..state.islands.len()).collect(),
        diagnosis,
        action: Move::Curriculum { tasks },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::admission::Verdict;
    use crate::search::evaluation::{CostMeasure, Evaluation, Quality, TaskResult};
    use crate::search::hypervolume::Fitness;
    use crate::search::lineage::{LineageRecord, RunConfig};
    use crate::suite::Split;

    const POOL: [&str; 4] = ["tuner", "structural", "evidence", "breeder"];

    /// Builds a lineage record by record: nodes get ids `n0000`, `n0001`, … in order.
    struct Lineage {
        records: Vec<LineageRecord>,
        next: usize,
        round: usize,
    }

    impl Lineage {
        /// A run with `islands` islands (island i starts with mutator `POOL[i]`) and `patience`.
        fn new(islands: usize, patience: usize) -> Lineage {
            let config = RunConfig {
                suite: "suite.toml".into(),
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
                cpu_seconds: None,
                components: Default::default(),
            };
            Lineage {
                records: vec![LineageRecord::Started(config)],
                next: 0,
                round: 0,
            }
        }

        /// Appends a node on `island` in the current round with per-task gains on tasks
        /// `t0, t1, …` (quality: the best gain, cost `cost`); returns its id.
        fn node(
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
                        work: 0.0,
                        evidence: Vec::new(),
                        edits: Vec::new(),
                        best_program: None,
                    })
                    .collect(),
                fitness: Fitness {
                    quality: gains.iter().copied().fold(0.0, f64::max),
                    cost,
                    latency: cost,
                },
                gains: gains.to_vec(),
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
                evaluation: evaluation(gains),
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
        fn seed(&mut self, island: usize, gains: &[f64]) -> String {
            let q = gains.iter().copied().fold(0.0, f64::max);
            self.node(island, &[], gains, true, 1.0, Some(q))
        }

        /// A child in the current round, without a validation improvement.
        fn child(&mut self, island: usize, parent: &str, gains: &[f64], admitted: bool) -> String {
            self.node(island, &[parent], gains, admitted, 1.0, None)
        }

        /// Ends the current round and starts the next.
        fn end_round(&mut self) {
            self.records.push(LineageRecord::RoundEnd { round: self.round });
            self.round += 1;
        }

        fn state(&self) -> SearchState {
            SearchState::replay(&self.records)
        }
    }

    fn consult(state: &SearchState, patience: usize, tasks: &[&str]) -> Vec<EventRecord> {
        let tasks: Vec<String> = tasks.iter().map(|t| t.to_string()).collect();
        BuiltinOrchestrator.consult(state, state.rounds_done + 1, patience, &POOL, &tasks)
    }

    /// Applies the events to a copy of the state.
    fn after(state: &SearchState, events: &[EventRecord]) -> SearchState {
        let mut state = state.clone();
        for event in events {
            state.apply(&LineageRecord::Event(event.clone()));
        }
        state
    }

    /// Island 0 runs dry (rejected children), island 1 keeps improving its validation best.
    fn dry_lineage(near_copy_gains: [f64; 2]) -> Lineage {
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

    #[test]
    fn no_consultation_before_patience() {
        let mut l = Lineage::new(2, 3);
        let s0 = l.seed(0, &[1.0]);
        l.seed(1, &[1.0]);
        l.end_round();
        l.child(0, &s0, &[0.5], false);
        l.end_round();
        l.child(0, &s0, &[0.5], false);
        l.end_round();
        // The seeds improved round 0, so after rounds 0..=2 each island stalled twice.
        let state = l.state();
        assert_eq!(state.islands[0].stalled_rounds, 2);
        assert!(!should_consult(&state, 3));
        assert!(consult(&state, 3, &["t0"]).is_empty());
        l.child(0, &s0, &[0.5], false);
        l.end_round();
        assert!(should_consult(&l.state(), 3));
        assert!(!consult(&l.state(), 3, &["t0"]).is_empty());
    }

    #[test]
    fn a_dry_island_is_reassigned_to_an_unused_mutator() {
        // n0002 was rejected; the last child n0006 (admitted) behaves like it: same quality,
        // gains almost parallel. So 2 of the last 3 children are dry (n0004 is not: its quality
        // differs from every rejected node's).
        let l = dry_lineage([0.8, 0.005]);
        let state = l.state();
        assert_eq!(state.islands[0].stalled_rounds, 3);
        assert_eq!(state.islands[1].stalled_rounds, 0);
        let events = consult(&state, 3, &["t0", "t1"]);
        assert_eq!(events.len(), 1, "{events:?}");
        // After `tuner` comes `structural`, but island 1 uses it: the next free one is `evidence`.
        assert_eq!(
            events[0].action,
            Move::Reassign {
                island: 0,
                mutator: "evidence".into()
            }
        );
        assert_eq!(events[0].islands, vec![0]);
        assert_eq!(events[0].round, 4);
        let d = &events[0].diagnosis;
        assert!(
            d.contains("island 0") && d.contains("2 of its last 3"),
            "{d}"
        );
        assert!(d.contains("n0006 ~ n0002"), "{d}");

        let moved = after(&state, &events);
        assert_eq!(moved.islands[0].mutator, "evidence");
        assert_eq!(moved.islands[0].stalled_rounds, 0);
        assert_eq!(moved.events.len(), 1);
    }

    #[test]
    fn an_admitted_child_with_its_own_behaviour_is_not_dry() {
        // The same lineage, but the last child improves t1 markedly: 1 of 3 is dry.
        let state = dry_lineage([0.8, 0.4]).state();
        assert!(should_consult(&state, 3));
        assert!(consult(&state, 3, &["t0", "t1"])
            .iter()
            .all(|e| e.action.kind() != "reassign"));
    }

    #[test]
    fn an_exhausted_weaker_island_gets_the_stronger_best_as_co_parent() {
        let mut l = Lineage::new(2, 2);
        let s0 = l.seed(0, &[1.0, 0.0]);
        let s1 = l.seed(1, &[0.5, 0.5]);
        l.end_round();
        // Island 0's children are admitted, behave like its best, and never beat it.
        l.child(0, &s0, &[0.5, 0.5], true);
        let strong = l.node(1, &[&s1], &[3.0, 2.0], true, 1.0, Some(3.0));
        l.end_round();
        l.child(0, &s0, &[0.6, 0.6], true);
        l.node(1, &[&strong], &[3.5, 2.0], true, 1.0, Some(3.5));
        l.end_round();
        let state = l.state();
        assert_eq!(state.island_best(1).unwrap().id, "n0005");
        let events = consult(&state, 2, &["t0", "t1"]);
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(
            events[0].action,
            Move::Graft {
                from: 1,
                into: 0,
                node: "n0005".into()
            }
        );
        assert_eq!(events[0].islands, vec![1, 0]);
        let d = &events[0].diagnosis;
        assert!(d.contains("island 0") && d.contains("island 1") && d.contains("3.5"));

        let moved = after(&state, &events);
        assert_eq!(moved.islands[0].co_parent.as_deref(), Some("n0005"));
        // The same graft is not proposed again while pending, nor after it was made.
        assert!(consult(&moved, 2, &["t0", "t1"]).is_empty());
        let mut l2 = l;
        l2.records.extend(events.into_iter().map(LineageRecord::Event));
        l2.node(0, &[&s0, "n0005"], &[0.7, 0.7], true, 1.0, None);
        l2.end_round();
        l2.child(0, &s0, &[0.7, 0.6], true);
        l2.end_round();
        let later = l2.state();
        assert_eq!(later.islands[0].co_parent, None);
        assert!(should_consult(&later, 2));
        assert!(consult(&later, 2, &["t0", "t1"]).is_empty());
    }

    #[test]
    fn a_crowded_out_subtree_becomes_a_new_island() {
        let mut l = Lineage::new(2, 3);
        let s0 = l.seed(0, &[2.0, 0.0]);
        let s1 = l.seed(1, &[0.1, 0.1]);
        l.end_round();
        // n0002 solves t1, which the best n0000 does not; its child n0004 too.
        let root = l.child(0, &s0, &[0.0, 1.0], true);
        l.node(1, &[&s1], &[0.2, 0.2], true, 1.0, Some(0.2));
        l.end_round();
        l.child(0, &root, &[0.0, 1.5], true);
        l.node(1, &[&s1], &[0.3, 0.3], true, 1.0, Some(0.3));
        l.end_round();
        // Parent selection keeps drawing the best.
        l.node(0, &[&s0], &[1.8, 0.1], true, 2.0, None);
        l.node(1, &[&s1], &[0.4, 0.4], true, 1.0, Some(0.4));
        l.end_round();
        let state = l.state();
        assert_eq!(state.island_best(0).unwrap().id, "n0000");
        assert_eq!(state.islands[1].stalled_rounds, 0);
        let events = consult(&state, 3, &["t0", "t1"]);
        assert_eq!(events.len(), 1, "{events:?}");
        // Island 0 uses `tuner`, island 1 `structural`: the new island gets `evidence`.
        assert_eq!(
            events[0].action,
            Move::Speciate {
                from: 0,
                nodes: vec!["n0002".into(), "n0004".into()],
                mutator: "evidence".into()
            }
        );
        assert_eq!(events[0].islands, vec![0, 2]);
        let d = &events[0].diagnosis;
        assert!(
            d.contains("island 0") && d.contains("new island 2") && d.contains("t1: 1 vs 0"),
            "{d}"
        );

        let moved = after(&state, &events);
        assert_eq!(moved.islands.len(), 3);
        assert_eq!(moved.islands[2].mutator, "evidence");
        assert_eq!(moved.islands[2].admitted, vec!["n0002", "n0004"]);
        assert_eq!(moved.islands[0].admitted, vec!["n0000", "n0006"]);
        assert_eq!(moved.island_best(2).unwrap().id, "n0004");
    }

    #[test]
    fn a_subtree_drawn_as_often_as_the_rest_is_not_crowded_out() {
        let mut l = Lineage::new(1, 2);
        let s0 = l.seed(0, &[2.0, 0.0]);
        l.end_round();
        let root = l.child(0, &s0, &[0.0, 1.0], true);
        l.end_round();
        l.child(0, &root, &[0.0, 1.5], true);
        l.end_round();
        // The subtree parented 1 of 2 children: not rarely selected.
        let state = l.state();
        assert!(should_consult(&state, 2));
        assert!(consult(&state, 2, &["t0", "t1"]).is_empty());
    }

    /// Two islands stalled at best quality 1 over tasks t0..t3 with improvement fractions
    /// t0: 6/6, t1: 1/6, t2: 0/6, t3: 3/6.
    fn ceiling_lineage() -> Lineage {
        let mut l = Lineage::new(2, 2);
        let s0 = l.seed(0, &[1.0, 0.0, 0.0, 0.5]);
        let s1 = l.seed(1, &[1.0, 0.5, 0.0, 0.0]);
        l.end_round();
        l.child(0, &s0, &[0.5, 0.0, 0.0, 0.5], true);
        l.child(1, &s1, &[0.6, 0.0, 0.0, 0.6], true);
        l.end_round();
        l.child(0, &s0, &[0.4, 0.0, 0.0, 0.0], false);
        l.child(1, &s1, &[0.3, 0.0, 0.0, 0.0], false);
        l.end_round();
        l
    }

    #[test]
    fn islands_at_one_ceiling_get_high_regret_tasks() {
        let l = ceiling_lineage();
        let state = l.state();
        let all = ["t0", "t1", "t2", "t3"];
        let events = consult(&state, 2, &all);
        assert!(!events.is_empty() && events.len() <= MAX_MOVES);
        assert_eq!(
            events[0].action,
            Move::Curriculum {
                tasks: vec!["t1".into(), "t3".into()]
            }
        );
        assert_eq!(events[0].islands, vec![0, 1]);
        let d = &events[0].diagnosis;
        assert!(d.contains("all 2 islands") && d.contains("t1 (improved by 1 of 6"));
        assert!(d.contains("t0, t1, t2, t3 → t1, t3"), "{d}");

        let moved = after(&state, &events);
        assert_eq!(
            moved.search_tasks,
            Some(vec!["t1".to_string(), "t3".to_string()])
        );
        assert!(!should_consult(&moved, 2));

        // Stalled again with nothing new learned: the same task set is not proposed twice.
        let mut l2 = l;
        l2.records.extend(events.into_iter().map(LineageRecord::Event));
        l2.end_round();
        l2.end_round();
        let again = consult(&l2.state(), 2, &all);
        assert!(
            again.iter().all(|e| e.action.kind() != "curriculum"),
            "{again:?}"
        );
    }

    #[test]
    fn without_rare_tasks_the_curriculum_keeps_the_least_improved_and_tops_up_to_two() {
        // Fractions: t0 4/4, t1 3/4, t2 0/4: no task in (0, ½]; the lowest positive is t1,
        // topped up with t0.
        let mut l = Lineage::new(2, 1);
        let s0 = l.seed(0, &[1.0, 1.0, 0.0]);
        let s1 = l.seed(1, &[1.0, 0.5, 0.0]);
        l.end_round();
        l.child(0, &s0, &[0.2, 0.3, 0.0], false);
        l.child(1, &s1, &[0.2, 0.0, 0.0], false);
        l.end_round();
        let events = consult(&l.state(), 1, &["t0", "t1", "t2"]);
        assert_eq!(
            events[0].action,
            Move::Curriculum {
                tasks: vec!["t0".into(), "t1".into()]
            }
        );
    }

    #[test]
    fn different_ceilings_give_no_curriculum() {
        let mut l = Lineage::new(2, 1);
        let s0 = l.seed(0, &[1.0, 0.0]);
        let s1 = l.seed(1, &[1.0 + 1e-6, 0.0]);
        l.end_round();
        l.child(0, &s0, &[0.5, 0.5], true);
        l.child(1, &s1, &[0.5, 0.5], true);
        l.end_round();
        let events = consult(&l.state(), 1, &["t0", "t1"]);
        assert!(events.iter().all(|e| e.action.kind() != "curriculum"));
        // Island 0 is the weaker one: it gets island 1's best.
        assert_eq!(
            events[0].action,
            Move::Graft {
                from: 1,
                into: 0,
                node: "n0001".into()
            }
        );
    }

    #[test]
    fn at_most_two_moves_on_distinct_islands_most_stalled_first() {
        // Three dry islands; island 2 stalled longest, then island 1, then island 0.
        let mut l = Lineage::new(3, 1);
        let seeds: Vec<String> = (0..3).map(|i| l.seed(i, &[1.0, i as f64])).collect();
        l.end_round();
        for round in 1..=4 {
            for (i, seed) in seeds.iter().enumerate() {
                // Island i keeps improving its validation best until round i' = 3 - i.
                let improving = round <= 3 - i;
                let gains = [0.5, 0.1 * round as f64];
                if improving {
                    l.node(i, &[seed], &gains, false, 1.0, Some(10.0 * round as f64));
                } else {
                    l.child(i, seed, &gains, false);
                }
            }
            l.end_round();
        }
        let state = l.state();
        let stalled: Vec<usize> = state.islands.iter().map(|i| i.stalled_rounds).collect();
        assert_eq!(stalled, vec![1, 2, 3]);
        let events = consult(&state, 1, &["t0", "t1"]);
        assert_eq!(events.len(), MAX_MOVES, "{events:?}");
        // Island 2 (`evidence`) → `breeder`; island 1 (`structural`) → `evidence`, now free.
        assert_eq!(
            events[0].action,
            Move::Reassign {
                island: 2,
                mutator: "breeder".into()
            }
        );
        assert_eq!(
            events[1].action,
            Move::Reassign {
                island: 1,
                mutator: "evidence".into()
            }
        );
        let moved = after(&state, &events);
        let mutators: Vec<&str> = moved.islands.iter().map(|i| i.mutator.as_str()).collect();
        assert_eq!(mutators, vec!["tuner", "evidence", "breeder"]);
    }

    #[test]
    fn mutator_choice_wraps_and_falls_back_to_a_used_one() {
        assert_eq!(
            next_mutator(&POOL, "breeder", &["tuner"]).as_deref(),
            Some("structural")
        );
        assert_eq!(
            next_mutator(&POOL, "tuner", &POOL).as_deref(),
            Some("structural")
        );
        assert_eq!(next_mutator(&["tuner"], "tuner", &[]), None);
        assert_eq!(
            next_mutator(&POOL, "unknown", &[]).as_deref(),
            Some("tuner")
        );
    }

    #[test]
    fn numbers_in_diagnoses_are_short() {
        assert_eq!(show(3.5), "3.5");
        assert_eq!(show(0.1 + 0.2), "0.3");
        assert_eq!(show(0.0), "0");
        assert_eq!(show(2e-5), "2.000e-5");
    }
}
