//! The orchestrator: when an island's best search quality stops improving, it looks at every
//! island
//! and rewrites the search strategy with at most two moves, each written down with its diagnosis.
//!
//! [`BuiltinOrchestrator`] follows deterministic rules (`P` is the patience, counted as at least
//! 1; an island is *stalled* when its `stalled_rounds ≥ P`; qualities are equal when they differ
//! by at most [`QUALITY_TOLERANCE`] relative; gain vectors — mean gains per slot — are compared
//! on the slots both nodes were evaluated on, with [`similarity`]):
//!
//! One file per move, each with its rule: [`reassign`], [`graft`], [`speciate`], [`curriculum`].
//! [`llm::LlmOrchestrator`] asks a language model for the moves instead, and falls back on this
//! rule when the answer is refused.
//!
//! Curriculum goes first when it fires. Then stalled islands are visited from the most stalled
//! (ties: lowest index), each getting the first of reassign, graft, speciate that fires, until
//! two moves are made. An island changed by one move (the reassigned island, the graft's
//! receiver, the speciated source) gets no second one; a curriculum changes the tasks, not an
//! island, so one island move may follow it.

pub mod curriculum;
#[cfg(test)]
mod fixture;
pub mod graft;
pub mod llm;
pub mod reassign;
pub mod speciate;

use super::lineage::{EventRecord, Move, NodeRecord};
use super::round_tasks::mean_gain_per_slot;
use super::similarity::similarity;
use super::state::SearchState;
use crate::cancel::CancelToken;
use crate::llm::Usage;
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

/// What one consultation decided, what it cost and which proposals it refused.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Consultation {
    /// At most [`MAX_MOVES`] moves, each with its diagnosis.
    pub events: Vec<EventRecord>,
    /// The backend asked, when a model was.
    pub backend: Option<String>,
    /// Tokens (and dollars) spent: zero for the built-in orchestrator.
    pub usage: Usage,
    /// Refused proposals, each with the reason (the built-in rule decided instead).
    pub rejected: Vec<String>,
}

impl Consultation {
    /// Moves decided by rule, at no cost.
    pub fn moves(events: Vec<EventRecord>) -> Consultation {
        Consultation {
            events,
            ..Consultation::default()
        }
    }
}

/// Decides the search's strategy moves when islands stall.
pub trait Orchestrator: Send + Sync {
    /// The orchestrator's name, for the display and the records.
    fn name(&self) -> &str;

    /// Called after `round` when some island's best search quality has not improved for `patience`
    /// rounds (see [`should_consult`]). Returns at most two moves, each an [`EventRecord`] with
    /// its diagnosis and the given `round`, with what deciding them cost. `mutators` is the
    /// pool's names in order; `all_search_slots` the suite's search slot ids (see
    /// [`crate::search::round_tasks`]); cancelling `cancel` abandons a model's request in flight.
    fn consult(
        &self,
        state: &SearchState,
        round: usize,
        patience: usize,
        mutators: &[&str],
        all_search_slots: &[String],
        cancel: &CancelToken,
    ) -> Consultation;
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
        all_search_slots: &[String],
        _cancel: &CancelToken,
    ) -> Consultation {
        Consultation::moves(builtin_moves(
            state,
            round,
            patience,
            mutators,
            all_search_slots,
        ))
    }
}

/// The built-in rule's moves (see the module documentation).
fn builtin_moves(
    state: &SearchState,
    round: usize,
    patience: usize,
    mutators: &[&str],
    all_search_slots: &[String],
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
    if let Some(event) = curriculum::curriculum(state, round, patience, all_search_slots) {
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
            "island {island}'s best search quality has not improved for {} rounds (patience {})",
            self.state.islands[island].stalled_rounds, self.patience
        )
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

/// A node's mean gain per slot, in its evaluation's order.
fn gains(node: &NodeRecord) -> impl Iterator<Item = (&str, f64)> {
    mean_gain_per_slot(&node.evaluation).into_iter()
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
#[cfg(test)]
mod tests {
    use super::fixture::*;
    use super::*;

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
    fn at_most_two_moves_on_distinct_islands_most_stalled_first() {
        // Three dry islands; island 2 stalled longest, then island 1, then island 0.
        let mut l = Lineage::new(3, 1);
        let seeds: Vec<String> = (0..3).map(|i| l.seed(i, &[1.0, i as f64])).collect();
        l.end_round();
        for round in 1..=4 {
            for (i, seed) in seeds.iter().enumerate() {
                // Island i keeps improving its best search quality until round i' = 3 - i.
                let improving = round <= 3 - i;
                let gains = [0.5, 0.1 * round as f64];
                if improving {
                    l.node(i, &[seed], &[0.5, 10.0 * round as f64], true, 1.0, None);
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
