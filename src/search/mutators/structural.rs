//! The structural mutator: rewrites of the edit menu, the diagnosis rules and the control flow.
//!
//! Diagnosis first: edits that address the dominant failure evidence are added to the menu or
//! swapped to the top weight; edits no current evidence calls for are the ones dropped; evidence
//! the parent shows without a rule gets one (the dominant evidence first), and a rule whose
//! evidence still comes with failed tasks may be dropped. Control flow follows the gains: a
//! mostly failing parent revises its parent program instead of chaining from the best, gets
//! substantially more edits per revision, and a stalled one runs from the task's start; a mostly
//! gaining parent chains from the best, runs from the best construction, and makes single edits.
//! Racing ([`Racing`]) is switched on or off, with a small weight either way.

use super::{
    addresses, edit_count, evidence_key, fresh, mean_weight, pick_weighted, round_sig, widened,
    Diagnosis, DraftChild, MutationContext, MutationError, Mutator, Proposal,
};
use crate::harness::{kind_key, EditKind, Evidence, Harness, Racing, RevisionBase, Rule, RunFrom};
use rand::seq::SliceRandom;
use rand::Rng;

/// The structural-rewrite mutator.
pub struct Structural;

impl Mutator for Structural {
    fn name(&self) -> &'static str {
        "structural"
    }

    fn propose(&self, ctx: &MutationContext) -> Result<Proposal, MutationError> {
        let diagnosis = Diagnosis::of(ctx);
        let parent = ctx.parent.1;
        let plan = plan(parent, &diagnosis);
        fresh(
            ctx,
            self.name(),
            diagnosis.lines(),
            &[],
            |rng, try_number| rewrite(parent, &widened(&plan, try_number), rng, try_number),
        )
    }
}

/// One structural rewrite.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Action {
    AddKind(EditKind),
    RemoveKind(EditKind),
    Swap(EditKind, EditKind),
    SwapAny,
    FlipRevise,
    FlipRunFrom,
    AddRule(Evidence),
    DropRule(usize),
    EditsPerProgram(i64),
    SingleEdit,
    Race(bool),
}

type Plan = Vec<(f64, (Action, &'static str))>;

/// The rewrites worth trying for this diagnosis, with weights and reasons.
fn plan(parent: &Harness, diagnosis: &Diagnosis) -> Plan {
    let mut plan: Plan = Vec::new();
    let dominant = diagnosis.dominant();
    let called_for = |kind: &EditKind| {
        diagnosis
            .ranked()
            .iter()
            .any(|(e, _)| addresses(*e).contains(kind))
    };
    let addresses_dominant =
        |kind: &EditKind| dominant.is_some_and(|e| addresses(e).contains(kind));
    let weight = |kind: &EditKind| parent.menu.get(kind).copied().unwrap_or(0.0);
    let present: Vec<EditKind> = EditKind::ALL
        .into_iter()
        .filter(|k| weight(k) > 0.0)
        .collect();

    for kind in EditKind::ALL.into_iter().filter(|k| weight(k) <= 0.0) {
        if addresses_dominant(&kind) {
            plan.push((
                3.0,
                (Action::AddKind(kind), "the dominant evidence calls for it"),
            ));
        } else if called_for(&kind) {
            plan.push((
                1.0,
                (Action::AddKind(kind), "some failure evidence calls for it"),
            ));
        } else {
            plan.push((0.3, (Action::AddKind(kind), "a new edit to try")));
        }
    }
    if present.len() >= 2 {
        for &kind in &present {
            if called_for(&kind) {
                plan.push((0.1, (Action::RemoveKind(kind), "a leaner menu")));
            } else {
                let why = "no current evidence calls for it";
                plan.push((1.0, (Action::RemoveKind(kind), why)));
            }
        }
        plan.push((0.3, (Action::SwapAny, "a different emphasis")));
    }
    if let Some(&heaviest) = present
        .iter()
        .max_by(|a, b| weight(a).total_cmp(&weight(b)))
    {
        for &kind in present.iter().filter(|k| addresses_dominant(k)) {
            if weight(&kind) < weight(&heaviest) {
                let why = "the edit addressing the dominant evidence takes the top weight";
                plan.push((2.0, (Action::Swap(kind, heaviest), why)));
            }
        }
    }

    let failing = diagnosis.mostly_failing();
    plan.push((0.5, (Action::FlipRevise, "another revision base")));
    plan.push((0.5, (Action::FlipRunFrom, "another starting construction")));
    if failing && parent.revise == RevisionBase::Best {
        let why = "chaining from a best that rarely improves narrows the search";
        plan.push((2.0, (Action::FlipRevise, why)));
    }
    if !failing && parent.revise == RevisionBase::Parent {
        plan.push((2.0, (Action::FlipRevise, "revisions work: chain them")));
    }
    if dominant == Some(Evidence::Stalled) && parent.run_from == RunFrom::Best {
        let why = "runs stall at the best construction: start afresh";
        plan.push((2.0, (Action::FlipRunFrom, why)));
    }
    if !failing && parent.run_from == RunFrom::Start {
        let why = "revisions work: continue from the best construction";
        plan.push((2.0, (Action::FlipRunFrom, why)));
    }

    let has_rule = |e: Evidence| parent.rules.iter().any(|r| r.when == e);
    for e in Evidence::ALL.into_iter().filter(|&e| !has_rule(e)) {
        if Some(e) == dominant {
            plan.push((
                3.0,
                (Action::AddRule(e), "the dominant evidence has no rule"),
            ));
        } else if diagnosis.all_evidence.contains_key(&e) {
            plan.push((1.5, (Action::AddRule(e), "observed evidence has no rule")));
        } else {
            plan.push((
                0.2,
                (Action::AddRule(e), "a rule for evidence not seen yet"),
            ));
        }
    }
    for (i, rule) in parent.rules.iter().enumerate() {
        if diagnosis.failure_evidence.contains_key(&rule.when) {
            let why = "the rule fired, yet its tasks still gained nothing";
            plan.push((1.0, (Action::DropRule(i), why)));
        } else if !diagnosis.all_evidence.contains_key(&rule.when) {
            plan.push((0.3, (Action::DropRule(i), "its evidence never appears")));
        }
    }

    if failing {
        let why = "most tasks gain nothing: much bolder revisions";
        plan.push((1.5, (Action::EditsPerProgram(2), why)));
        plan.push((1.0, (Action::EditsPerProgram(3), why)));
    } else if parent.edits_per_program > 1 {
        let why = "most tasks gain: single, attributable edits";
        plan.push((1.5, (Action::SingleEdit, why)));
    }
    plan.push((
        0.3,
        (Action::EditsPerProgram(2), "a different revision size"),
    ));
    plan.push((
        0.3,
        (Action::EditsPerProgram(-2), "a different revision size"),
    ));
    // Neither way wins everywhere (`examples/racing.rs`): a small, even weight.
    match &parent.racing {
        None => plan.push((
            0.3,
            (Action::Race(true), "race revisions against the parent"),
        )),
        Some(_) => plan.push((0.3, (Action::Race(false), "revisions in turn"))),
    }
    plan
}

/// One rewrite of `parent` from the plan, sometimes two (up to three on late tries); the lines
/// say what changed and why.
fn rewrite(
    parent: &Harness,
    plan: &Plan,
    rng: &mut impl Rng,
    try_number: usize,
) -> Option<DraftChild> {
    let count = edit_count(try_number, 0.3, rng);
    let mut child = parent.clone();
    let mut lines = Vec::new();
    for _ in 0..count {
        let (action, why) = pick_weighted(plan, rng)?;
        if let Some(change) = apply(&mut child, action, rng) {
            lines.push(format!("structural: {change} ({why})"));
        }
    }
    Some((child, lines))
}

fn apply(h: &mut Harness, action: Action, rng: &mut impl Rng) -> Option<String> {
    match action {
        Action::AddKind(kind) => {
            if h.menu.get(&kind).is_some_and(|&w| w > 0.0) {
                return None;
            }
            let w = round_sig(mean_weight(h) * rng.gen_range(0.5..=1.5));
            h.menu.insert(kind, w);
            Some(format!("add menu.{} = {w}", kind_key(kind)))
        }
        Action::RemoveKind(kind) => {
            let w = h.menu.remove(&kind)?;
            if h.menu.values().all(|&w| w <= 0.0) {
                return None;
            }
            Some(format!("remove menu.{} (was {w})", kind_key(kind)))
        }
        Action::Swap(a, b) => swap(h, a, b),
        Action::SwapAny => {
            let kinds: Vec<EditKind> = h.menu.keys().copied().collect();
            let pair: Vec<EditKind> = kinds.choose_multiple(rng, 2).copied().collect();
            swap(h, *pair.first()?, *pair.get(1)?)
        }
        Action::FlipRevise => {
            let (before, after) = match h.revise {
                RevisionBase::Best => (RevisionBase::Best, RevisionBase::Parent),
                RevisionBase::Parent => (RevisionBase::Parent, RevisionBase::Best),
            };
            h.revise = after;
            Some(format!("revise {before:?} -> {after:?}").to_lowercase())
        }
        Action::FlipRunFrom => {
            let (before, after) = match h.run_from {
                RunFrom::Best => (RunFrom::Best, RunFrom::Start),
                RunFrom::Start => (RunFrom::Start, RunFrom::Best),
            };
            h.run_from = after;
            Some(format!("run_from {before:?} -> {after:?}").to_lowercase())
        }
        Action::AddRule(e) => {
            if h.rules.iter().any(|r| r.when == e) {
                return None;
            }
            let prefer = addresses(e).to_vec();
            let boost = round_sig(rng.gen_range(2.0..=4.0));
            let mut line = format!(
                "add rule when {} prefer [{}] boost {boost}",
                evidence_key(e),
                keys(&prefer)
            );
            // A rule multiplies menu weights, so a preferred edit missing from the menu joins it.
            let start = round_sig(mean_weight(h) * 0.5);
            for &kind in &prefer {
                if !h.menu.get(&kind).is_some_and(|&w| w > 0.0) {
                    h.menu.insert(kind, start);
                    line.push_str(&format!("; add menu.{} = {start}", kind_key(kind)));
                }
            }
            h.rules.push(Rule {
                when: e,
                prefer,
                boost,
            });
            Some(line)
        }
        Action::DropRule(i) => {
            if i >= h.rules.len() {
                return None;
            }
            let rule = h.rules.remove(i);
            Some(format!(
                "drop rule when {} prefer [{}]",
                evidence_key(rule.when),
                keys(&rule.prefer)
            ))
        }
        Action::EditsPerProgram(step) => {
            let next = (h.edits_per_program as i64 + step).clamp(1, 8) as usize;
            set_edits(h, next)
        }
        Action::SingleEdit => set_edits(h, 1),
        Action::Race(on) => match (on, h.racing) {
            (true, None) => {
                let racing = Racing::DEFAULT;
                h.racing = Some(racing);
                Some(format!(
                    "race: {} candidates, first rung {}, eta {}",
                    racing.candidates, racing.first_rung, racing.eta
                ))
            }
            (false, Some(_)) => {
                h.racing = None;
                Some("no race: revisions in turn".into())
            }
            _ => None,
        },
    }
}

fn set_edits(h: &mut Harness, next: usize) -> Option<String> {
    if next == h.edits_per_program {
        return None;
    }
    let line = format!("edits_per_program {} -> {next}", h.edits_per_program);
    h.edits_per_program = next;
    Some(line)
}

fn swap(h: &mut Harness, a: EditKind, b: EditKind) -> Option<String> {
    let wa = *h.menu.get(&a)?;
    let wb = *h.menu.get(&b)?;
    if wa == wb {
        return None;
    }
    h.menu.insert(a, wb);
    h.menu.insert(b, wa);
    Some(format!(
        "swap menu.{} and menu.{} ({wa} <-> {wb})",
        kind_key(a),
        kind_key(b)
    ))
}

fn keys(kinds: &[EditKind]) -> String {
    kinds
        .iter()
        .map(|&k| kind_key(k))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::policy_hash;
    use super::*;
    use crate::harness::seed_harnesses;
    use std::collections::HashSet;

    #[test]
    fn proposals_are_deterministic_valid_and_new() {
        let h = seed_harnesses().remove(2);
        let n = node("n0", None, &h, &[0.0, 1.0], &[&[Evidence::DeadCells]], true);
        let rejected = HashSet::new();
        let a = Structural
            .propose(&context((&n, &h), vec![], &rejected, 5))
            .unwrap();
        let b = Structural
            .propose(&context((&n, &h), vec![], &rejected, 5))
            .unwrap();
        assert_eq!(a, b);
        for s in 0..16 {
            let p = Structural
                .propose(&context((&n, &h), vec![], &rejected, s))
                .unwrap();
            assert!(p.harness.check().is_ok());
            assert_ne!(policy_hash(&p.harness), policy_hash(&h));
            assert!(p.evidence.iter().any(|l| l.starts_with("structural: ")));
        }
    }

    #[test]
    fn it_never_repeats_a_rejected_harness() {
        for h in seed_harnesses() {
            let n = node("n0", None, &h, &[0.0, 2.0], &[&[Evidence::Stalled]], true);
            assert_eq!(never_repeats_rejected(&Structural, (&n, &h), None, 25), 25);
        }
    }

    /// A parent whose failures stall with no rule for it mostly gets a rule for stalls, or the
    /// stall-addressing edits added or promoted.
    #[test]
    fn the_dominant_evidence_shapes_the_rewrite() {
        let h = seed_harnesses().remove(1);
        assert!(h.rules.is_empty());
        let stalled: &[Evidence] = &[Evidence::Stalled, Evidence::NoGain];
        let n = node("n0", None, &h, &[0.0, 0.0, 1.0], &[stalled, stalled], true);
        let rejected = HashSet::new();
        let mut helped = 0;
        let total = 100;
        for s in 0..total {
            let p = Structural
                .propose(&context((&n, &h), vec![], &rejected, s))
                .unwrap();
            let stall_weight = |x: &Harness| {
                let w = x.edit_weights(&[Evidence::Stalled]);
                (w[6] + w[7]) / w.iter().sum::<f64>()
            };
            if p.harness.rules.iter().any(|r| r.when == Evidence::Stalled)
                || stall_weight(&p.harness) > stall_weight(&h)
            {
                helped += 1;
            }
        }
        assert!(helped * 3 > total, "helped {helped}/{total}");
    }
}
