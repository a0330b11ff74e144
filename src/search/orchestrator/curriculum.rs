//! Curriculum: the search slots become the high-regret ones.
//!
//! **Curriculum**: every island is stalled and their best qualities are equal (the same
//! ceiling, possibly zero). Over all nodes' evaluations, each slot's fraction of harnesses that
//! improved it (mean gain > 0) is counted; the new search slots are those with a fraction in
//! (0, ½] (improved by few, failed by most), or else those with the lowest positive fraction,
//! topped up to at least two slots by increasing positive fraction, then unimproved slots.
//! No move when no slot was ever improved or the set equals the current one. (A slot is a
//! start × a program, see [`crate::search::round_tasks`]; the move is recorded as `tasks`.)

use super::{gains, quality, same_quality, show};
use crate::search::lineage::{EventRecord, Move};
use crate::search::state::SearchState;
use std::collections::{HashMap, HashSet};

/// The curriculum move, if every island sits stalled at the same ceiling and the high-regret
/// tasks differ from the current search tasks.
pub(super) fn curriculum(
    state: &SearchState,
    round: usize,
    patience: usize,
    all_search_slots: &[String],
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
        .search_slots
        .clone()
        .unwrap_or_else(|| all_search_slots.to_vec());
    let mut pool: Vec<&str> = all_search_slots.iter().map(String::as_str).collect();
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
         best search quality for {} rounds or more; high-regret tasks: {}; search tasks {} → {}",
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
        action: Move::Curriculum { slots: tasks },
    })
}

#[cfg(test)]
mod tests {
    use super::super::fixture::*;
    use super::super::*;
    use crate::search::lineage::LineageRecord;

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
                slots: vec!["t1".into(), "t3".into()]
            }
        );
        assert_eq!(events[0].islands, vec![0, 1]);
        let d = &events[0].diagnosis;
        assert!(d.contains("all 2 islands") && d.contains("t1 (improved by 1 of 6"));
        assert!(d.contains("t0, t1, t2, t3 → t1, t3"), "{d}");

        let moved = after(&state, &events);
        assert_eq!(
            moved.search_slots,
            Some(vec!["t1".to_string(), "t3".to_string()])
        );
        assert!(!should_consult(&moved, 2));

        // Stalled again with nothing new learned: the same task set is not proposed twice.
        let mut l2 = l;
        l2.records
            .extend(events.into_iter().map(LineageRecord::Event));
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
                slots: vec!["t0".into(), "t1".into()]
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
}
