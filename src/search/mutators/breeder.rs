//! The breeder: uniform crossover of the parent with a co-parent.
//!
//! The co-parent is `ctx.co_parent` (a grafted node or a breeder's second parent); without one,
//! the best-quality admitted harness of the island's history whose policy differs from the
//! parent's (ties to the cheaper); without that either, the breeder falls back to a small tuning
//! step ([`super::tuner`]).
//!
//! Diagnosis first: it compares the two parents (quality, cost, the tasks each gains on, and the
//! tasks only the co-parent gains on). The child takes each scalar (programs, edits_per_program,
//! revise, run_from, tune_range, stop_after_failures, triage, verify_top, and the `[racing]`
//! section) whole from one parent at random; the budget split whole from the higher-quality parent (probability 0.6), the other
//! one (0.2), or averaged share by share (0.2 — the average of two valid splits is valid); each
//! menu weight from either parent or their average (a kind missing from a parent weighs 0, and a
//! 0 result leaves the kind out); the rules as the union of both parents' rules deduplicated by
//! `when`, a shared `when` taking either parent's rule. The child differs from both parents.

use super::{
    fresh, policy_hash, tuner, Diagnosis, DraftChild, MutationContext, MutationError, Mutator,
    Proposal,
};
use crate::harness::{kind_key, EditKind, Harness, Rule};
use crate::search::evaluation::CostMeasure;
use crate::search::lineage::NodeRecord;
use rand::Rng;
use std::collections::BTreeSet;

/// The crossover mutator.
pub struct Breeder;

impl Mutator for Breeder {
    fn name(&self) -> &'static str {
        "breeder"
    }

    fn propose(&self, ctx: &MutationContext) -> Result<Proposal, MutationError> {
        let diagnosis = Diagnosis::of(ctx);
        let (parent_node, parent) = ctx.parent;
        let mut lines = diagnosis.lines();
        let co = match ctx.co_parent {
            Some(co) => Some((co, "the given co-parent")),
            None => best_other(ctx).map(|co| (co, "the best admitted harness of the island")),
        };
        let Some(((co_node, co_parent), source)) = co else {
            lines.push(
                "breeder: no co-parent and no other admitted harness: a small tuning step instead"
                    .into(),
            );
            return fresh(ctx, self.name(), lines, &[], |rng, try_number| {
                tuner::nudge(parent, &diagnosis, rng, try_number)
            });
        };
        lines.extend(compare(parent_node, co_node, source, ctx.cost));
        let co_better = co_node.evaluation.fitness.quality > parent_node.evaluation.fitness.quality;
        fresh(ctx, self.name(), lines, &[co_parent], |rng, _| {
            Some(cross(parent, co_parent, co_better, rng))
        })
    }
}

/// The best-quality admitted node of the history whose policy differs from the parent's.
fn best_other<'a>(ctx: &MutationContext<'a>) -> Option<(&'a NodeRecord, &'a Harness)> {
    let own = policy_hash(ctx.parent.1);
    let mut best: Option<(&NodeRecord, &Harness)> = None;
    for &(node, h) in &ctx.history {
        if !node.admitted() || !node.evaluation.fitness.is_finite() || policy_hash(h) == own {
            continue;
        }
        let better =
            best.is_none_or(|(b, _)| node.evaluation.fitness.outranks(&b.evaluation.fitness));
        if better {
            best = Some((node, h));
        }
    }
    best
}

/// The two parents compared, one line each (costs in `cost`'s units).
fn compare(parent: &NodeRecord, co: &NodeRecord, source: &str, cost: CostMeasure) -> Vec<String> {
    let gaining = |n: &NodeRecord| -> BTreeSet<String> {
        n.evaluation
            .tasks
            .iter()
            .filter(|t| t.gain > 0.0)
            .map(|t| t.task.clone())
            .collect()
    };
    let (mine, theirs) = (gaining(parent), gaining(co));
    let describe = |role: &str, n: &NodeRecord, gains: &BTreeSet<String>| {
        format!(
            "breeder: {role} {} ({}): quality {:.4}, {}, gains on {} tasks",
            n.id,
            n.name,
            n.evaluation.fitness.quality,
            cost.fitness_text(&n.evaluation.fitness),
            gains.len()
        )
    };
    let better = if co.evaluation.fitness.quality > parent.evaluation.fitness.quality {
        "the co-parent"
    } else {
        "the parent"
    };
    vec![
        describe("parent", parent, &mine),
        describe(&format!("co-parent ({source})"), co, &theirs),
        format!(
            "breeder: {} tasks gained only by the co-parent, {} only by the parent; the budget \
             split comes from {better} (higher quality) most of the time",
            theirs.difference(&mine).count(),
            mine.difference(&theirs).count()
        ),
    ]
}

/// Where a part of the child came from.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Source {
    Parent,
    Co,
    Average,
}

/// A uniform crossover of `a` (the parent) and `b` (the co-parent); see the module doc.
fn cross(a: &Harness, b: &Harness, b_better: bool, rng: &mut impl Rng) -> DraftChild {
    let mut child = a.clone();
    let mut from_co = Vec::new();
    macro_rules! scalar {
        ($($field:ident),*) => {$(
            if rng.gen_bool(0.5) {
                child.$field = b.$field.clone();
                from_co.push(stringify!($field));
            }
        )*};
    }
    scalar!(
        programs,
        edits_per_program,
        revise,
        run_from,
        tune_range,
        stop_after_failures,
        triage,
        verify_top
    );
    // Drawn only when the parents differ, so crossing two harnesses without a race draws as
    // it did before racing existed.
    if a.racing != b.racing && rng.gen_bool(0.5) {
        child.racing = b.racing;
        from_co.push("racing");
    }
    let mut lines = vec![if from_co.is_empty() {
        "breeder: every scalar from the parent".to_string()
    } else {
        format!("breeder: from the co-parent: {}", from_co.join(", "))
    }];

    let draw: f64 = rng.gen();
    let budget_from = match (draw < 0.6, draw < 0.8) {
        (true, _) if b_better => Source::Co,
        (true, _) => Source::Parent,
        (false, true) if b_better => Source::Parent,
        (false, true) => Source::Co,
        _ => Source::Average,
    };
    child.budget = match budget_from {
        Source::Parent => a.budget,
        Source::Co => b.budget,
        Source::Average => crate::harness::BudgetSplit {
            minimal: (a.budget.minimal + b.budget.minimal) / 2.0,
            explore: (a.budget.explore + b.budget.explore) / 2.0,
            reserve: (a.budget.reserve + b.budget.reserve) / 2.0,
        },
    };
    lines.push(format!(
        "breeder: budget split from {}",
        origin(budget_from)
    ));

    let kinds: BTreeSet<EditKind> = a.menu.keys().chain(b.menu.keys()).copied().collect();
    let mut menu_lines = Vec::new();
    child.menu.clear();
    for kind in kinds {
        let (wa, wb) = (weight(a, kind), weight(b, kind));
        let from = [Source::Parent, Source::Co, Source::Average][rng.gen_range(0..3)];
        let w = match from {
            Source::Parent => wa,
            Source::Co => wb,
            Source::Average => (wa + wb) / 2.0,
        };
        if w > 0.0 {
            child.menu.insert(kind, w);
        }
        if wa != wb {
            menu_lines.push(format!("{} {}", kind_key(kind), origin(from)));
        }
    }
    if !menu_lines.is_empty() {
        lines.push(format!("breeder: menu weights: {}", menu_lines.join(", ")));
    }

    let mut rules: Vec<Rule> = Vec::new();
    let mut rule_lines = Vec::new();
    for rule in a.rules.iter().chain(&b.rules) {
        if rules.iter().any(|r| r.when == rule.when) {
            continue;
        }
        let in_a = a.rules.iter().find(|r| r.when == rule.when);
        let in_b = b.rules.iter().find(|r| r.when == rule.when);
        let (chosen, from) = match (in_a, in_b) {
            (Some(x), Some(y)) if x != y => {
                if rng.gen_bool(0.5) {
                    (y, Source::Co)
                } else {
                    (x, Source::Parent)
                }
            }
            (Some(x), _) => (x, Source::Parent),
            (None, _) => (rule, Source::Co),
        };
        rule_lines.push(format!(
            "{} {}",
            super::evidence_key(rule.when),
            origin(from)
        ));
        rules.push(chosen.clone());
    }
    child.rules = rules;
    if !rule_lines.is_empty() {
        lines.push(format!(
            "breeder: rules (union by evidence): {}",
            rule_lines.join(", ")
        ));
    }
    (child, lines)
}

fn weight(h: &Harness, kind: EditKind) -> f64 {
    h.menu.get(&kind).copied().unwrap_or(0.0)
}

fn origin(from: Source) -> &'static str {
    match from {
        Source::Parent => "from the parent",
        Source::Co => "from the co-parent",
        Source::Average => "averaged",
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;
    use crate::harness::{seed_harnesses, Evidence};
    use std::collections::HashSet;

    fn either<T: PartialEq + std::fmt::Debug>(x: T, a: T, b: T) {
        assert!(x == a || x == b, "{x:?} is neither {a:?} nor {b:?}");
    }

    fn assert_bred_from(c: &Harness, a: &Harness, b: &Harness) {
        either(c.programs, a.programs, b.programs);
        either(
            c.edits_per_program,
            a.edits_per_program,
            b.edits_per_program,
        );
        either(c.revise, a.revise, b.revise);
        either(c.run_from, a.run_from, b.run_from);
        either(c.tune_range, a.tune_range, b.tune_range);
        either(
            c.stop_after_failures,
            a.stop_after_failures,
            b.stop_after_failures,
        );
        either(c.triage, a.triage, b.triage);
        either(c.verify_top, a.verify_top, b.verify_top);
        either(c.racing, a.racing, b.racing);
        let avg = |x: f64, y: f64| (x + y) / 2.0;
        let budget_avg = (
            avg(a.budget.minimal, b.budget.minimal),
            avg(a.budget.explore, b.budget.explore),
            avg(a.budget.reserve, b.budget.reserve),
        );
        let triple = |s: crate::harness::BudgetSplit| (s.minimal, s.explore, s.reserve);
        let cb = triple(c.budget);
        assert!(cb == triple(a.budget) || cb == triple(b.budget) || cb == budget_avg);
        for kind in EditKind::ALL {
            let (wc, wa, wb) = (weight(c, kind), weight(a, kind), weight(b, kind));
            assert!(wc == wa || wc == wb || wc == avg(wa, wb), "{kind:?}");
        }
        let whens = |h: &Harness| h.rules.iter().map(|r| r.when).collect::<BTreeSet<_>>();
        assert_eq!(whens(c), &whens(a) | &whens(b));
        assert_eq!(c.rules.len(), whens(c).len());
        for rule in &c.rules {
            assert!(a.rules.contains(rule) || b.rules.contains(rule));
        }
        assert_eq!(c.description, a.description);
    }

    #[test]
    fn the_child_takes_every_field_from_a_parent() {
        let seeds = seed_harnesses();
        let (a, b) = (&seeds[2], &seeds[1]);
        let na = node("n0", None, a, &[0.0, 1.0], &[&[Evidence::Stalled]], true);
        let nb = node("n1", None, b, &[3.0, 0.0], &[], true);
        let rejected = HashSet::new();
        let propose = |seed| {
            let mut ctx = context((&na, a), vec![], &rejected, seed);
            ctx.co_parent = Some((&nb, b));
            Breeder.propose(&ctx).unwrap()
        };
        assert_eq!(propose(3), propose(3));
        let mut budget_from_co = 0;
        for seed in 0..40 {
            let p = propose(seed);
            assert_bred_from(&p.harness, a, b);
            assert!(p.harness.check().is_ok());
            assert_ne!(policy_hash(&p.harness), policy_hash(a));
            assert_ne!(policy_hash(&p.harness), policy_hash(b));
            assert!(p
                .evidence
                .iter()
                .any(|l| l.contains("1 tasks gained only by the co-parent")));
            budget_from_co += usize::from(p.harness.budget == b.budget);
        }
        assert!(
            budget_from_co > 15,
            "{budget_from_co}/40 took the better budget"
        );
    }

    #[test]
    fn without_a_co_parent_it_takes_the_best_admitted_or_tunes() {
        let seeds = seed_harnesses()[1..].to_vec(); // steady-polish, explorer, diagnostician
        let rejected = HashSet::new();
        let n: Vec<NodeRecord> = seeds
            .iter()
            .enumerate()
            .map(|(i, h)| node(&format!("n{i}"), None, h, &[i as f64], &[], i != 1))
            .collect();
        // n1 is rejected, so the best admitted other than the parent n0 is n2.
        let history: Vec<_> = n.iter().zip(&seeds).collect();
        let ctx = context((&n[0], &seeds[0]), history, &rejected, 9);
        let p = Breeder.propose(&ctx).unwrap();
        assert_bred_from(&p.harness, &seeds[0], &seeds[2]);
        assert!(p.evidence.iter().any(|l| l.contains("n2 (diagnostician)")));

        let ctx = context((&n[0], &seeds[0]), vec![(&n[0], &seeds[0])], &rejected, 9);
        let p = Breeder.propose(&ctx).unwrap();
        assert!(p.evidence.iter().any(|l| l.contains("small tuning step")));
        assert!(p.evidence.iter().any(|l| l.starts_with("tuner: ")));
    }

    #[test]
    fn it_never_repeats_a_rejected_harness() {
        let seeds = seed_harnesses();
        let na = node("n0", None, &seeds[0], &[1.0], &[], true);
        let nb = node("n1", None, &seeds[2], &[2.0], &[], true);
        let made = never_repeats_rejected(&Breeder, (&na, &seeds[0]), Some((&nb, &seeds[2])), 25);
        assert_eq!(made, 25);
        assert_eq!(
            never_repeats_rejected(&Breeder, (&na, &seeds[0]), None, 20),
            20
        );
    }
}
