//! Speciate: a crowded-out subtree moves into a new island.
//!
//! **Speciate** a crowded-out subtree: an admitted node of the island, not its best, whose
//! gains have similarity ≤ [`SPECIATE_SIMILARITY`] to the best's and beat the best's on at
//! least one task, and whose subtree (it and its admitted descendants in the island through
//! first parents, not containing the best) was the parent of fewer than half of the island's
//! children. The earliest such node's subtree moves to a new island, whose mutator differs
//! from the source island's (next in order, preferring one no island uses).

use super::{behaviour_similarity, common_gains, next_mutator, show, Plan, SPECIATE_SIMILARITY};
use crate::search::lineage::{Move, NodeRecord};
use crate::search::state::SearchState;
use std::collections::HashSet;

impl Plan<'_> {
    /// Moves a crowded-out subtree of `island` into a new island if there is one; whether it did.
    pub(super) fn speciate(&mut self, from: usize) -> bool {
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

#[cfg(test)]
mod tests {
    use super::super::fixture::*;
    use super::super::*;

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
}
