//! Reassign: a dry island gets another mutator.
//!
//! **Reassign** a dry island: of its last `P` children, a strict majority were rejected or are
//! near-copies of a rejected node (gain similarity ≥ [`NEAR_COPY_SIMILARITY`] and equal
//! quality). Its new mutator is the next one in the pool's order after its current one,
//! preferring one that no other island uses.

use super::{
    behaviour_similarity, next_mutator, quality, same_quality, Plan, NEAR_COPY_SIMILARITY,
};
use crate::search::lineage::{Move, NodeRecord};
use crate::search::state::SearchState;

impl Plan<'_> {
    /// Reassigns `island` to another mutator if it is dry; whether it did.
    pub(super) fn reassign(&mut self, island: usize) -> bool {
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

#[cfg(test)]
mod tests {
    use super::super::fixture::*;
    use super::super::*;

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
}
