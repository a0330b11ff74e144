//! Graft: an exhausted island gets a stronger island's best as co-parent.
//!
//! **Graft** into an exhausted island whose best quality is below another island's best: the
//! strongest such island's best node becomes its co-parent (unless that very graft is pending
//! or was already made).

use super::{quality, same_quality, show, Plan};
use crate::search::lineage::{Move, NodeRecord};

impl Plan<'_> {
    /// Grafts a stronger island's best into `island` if there is one; whether it did.
    pub(super) fn graft(&mut self, into: usize) -> bool {
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
}

#[cfg(test)]
mod tests {
    use super::super::fixture::*;
    use super::super::*;
    use crate::search::lineage::LineageRecord;

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
        l2.records
            .extend(events.into_iter().map(LineageRecord::Event));
        l2.node(0, &[&s0, "n0005"], &[0.7, 0.7], true, 1.0, None);
        l2.end_round();
        l2.child(0, &s0, &[0.7, 0.6], true);
        l2.end_round();
        let later = l2.state();
        assert_eq!(later.islands[0].co_parent, None);
        assert!(should_consult(&later, 2));
        assert!(consult(&later, 2, &["t0", "t1"]).is_empty());
    }
}
