//! The evidence-driven mutator: reads the failure evidence of the parent's tasks and which past
//! edits of the island were admitted or rejected, then edits towards what is known to help.
//!
//! Diagnosis first: the dominant failure evidence (the most frequent on tasks that gained
//! nothing; [`Evidence::NoGain`] loses ties to the evidence that says why) gets a rule, or its
//! rule a larger boost, and the edits that address it ([`super::addresses`]: stalled →
//! perturbation/restarts, saturated active set → resolution/parameterisation, dead cells or
//! repairs → parameterisation, no gain → insert/crossover) get more menu weight. The history
//! teaches which way to move the rest: for every child in the island's history whose parent's
//! harness is known, the change of each edit's share of the menu counts for that edit if the
//! child was admitted and against it if it was rejected; the most favoured edit gains weight and
//! the most disfavoured loses some (unless it addresses the dominant evidence).

use super::{
    addresses, evidence_key, fresh, mean_weight, round_sig, Diagnosis, DraftChild, MutationContext,
    MutationError, Mutator, Proposal,
};
use crate::harness::{kind_key, EditKind, Evidence, Harness, Rule};
use rand::seq::SliceRandom;
use rand::Rng;
use std::collections::{BTreeMap, HashMap};

/// The evidence-driven mutator.
pub struct EvidenceDriven;

impl Mutator for EvidenceDriven {
    fn name(&self) -> &'static str {
        "evidence"
    }

    fn propose(&self, ctx: &MutationContext) -> Result<Proposal, MutationError> {
        let diagnosis = Diagnosis::of(ctx);
        let learned = Learned::from_history(ctx);
        let mut lines = diagnosis.lines();
        lines.extend(learned.lines());
        let ranked: Vec<Evidence> = diagnosis.ranked().into_iter().map(|(e, _)| e).collect();
        let parent = ctx.parent.1;
        fresh(ctx, self.name(), lines, &[], |rng, try_number| {
            edit(parent, &ranked, &learned, rng, try_number)
        })
    }
}

/// Score above which (in menu share) a history signal counts.
const SIGNAL: f64 = 1e-9;
/// Tries that stay on the dominant evidence before others are drawn too.
const FOCUSED_TRIES: usize = 20;
/// Largest boost the mutator gives a rule.
const MAX_BOOST: f64 = 100.0;

/// What the island's history says about each edit kind.
#[derive(Clone, Debug, Default, PartialEq)]
struct Learned {
    admitted: usize,
    rejected: usize,
    /// Sum over children of (change of the kind's menu share) × (+1 admitted, −1 rejected).
    score: BTreeMap<EditKind, f64>,
}

/// A kind's share of the menu's total weight.
fn share(h: &Harness, kind: EditKind) -> f64 {
    let total: f64 = h.menu.values().sum();
    h.menu.get(&kind).copied().unwrap_or(0.0) / total.max(f64::MIN_POSITIVE)
}

impl Learned {
    fn from_history(ctx: &MutationContext) -> Learned {
        let mut harness_of: HashMap<&str, &Harness> = HashMap::new();
        for (node, h) in ctx
            .history
            .iter()
            .chain([&ctx.parent])
            .chain(&ctx.co_parent)
        {
            harness_of.insert(node.id.as_str(), *h);
        }
        let mut learned = Learned::default();
        for (node, child) in &ctx.history {
            let Some(parent) = node
                .parents
                .first()
                .and_then(|p| harness_of.get(p.as_str()))
            else {
                continue;
            };
            let sign = if node.admitted() {
                learned.admitted += 1;
                1.0
            } else {
                learned.rejected += 1;
                -1.0
            };
            for kind in EditKind::ALL {
                let delta = share(child, kind) - share(parent, kind);
                *learned.score.entry(kind).or_insert(0.0) += sign * delta;
            }
        }
        learned
    }

    fn favoured(&self) -> Option<EditKind> {
        self.score
            .iter()
            .filter(|(_, &s)| s > SIGNAL)
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(&k, _)| k)
    }

    fn disfavoured(&self) -> Option<EditKind> {
        self.score
            .iter()
            .filter(|(_, &s)| s < -SIGNAL)
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(&k, _)| k)
    }

    fn lines(&self) -> Vec<String> {
        if self.admitted + self.rejected == 0 {
            return vec!["history: no children with a known parent yet".into()];
        }
        let mut lines = vec![format!(
            "history: {} admitted and {} rejected children",
            self.admitted, self.rejected
        )];
        if let Some(k) = self.favoured() {
            lines.push(format!(
                "history: admitted children raised (or rejected ones lowered) menu.{} (score {:+.3})",
                kind_key(k),
                self.score[&k]
            ));
        }
        if let Some(k) = self.disfavoured() {
            lines.push(format!(
                "history: rejected children raised (or admitted ones lowered) menu.{} (score {:+.3})",
                kind_key(k),
                self.score[&k]
            ));
        }
        lines
    }
}

/// Adds a rule for `e` or strengthens its rule; the line says which.
fn rule_for(h: &mut Harness, e: Evidence, rng: &mut impl Rng) -> String {
    let fix = addresses(e);
    if let Some(rule) = h.rules.iter_mut().find(|r| r.when == e) {
        let before = rule.boost;
        rule.boost = round_sig((before * rng.gen_range(1.25..=2.0)).min(MAX_BOOST)).max(before);
        for &kind in fix {
            if !rule.prefer.contains(&kind) {
                rule.prefer.push(kind);
            }
        }
        format!(
            "evidence: strengthen the rule when {}: boost {before} -> {}, prefer [{}]",
            evidence_key(e),
            rule.boost,
            keys(&rule.prefer)
        )
    } else {
        let boost = round_sig(rng.gen_range(2.0..=4.0));
        h.rules.push(Rule {
            when: e,
            prefer: fix.to_vec(),
            boost,
        });
        format!(
            "evidence: add a rule when {} prefer [{}] boost {boost}",
            evidence_key(e),
            keys(fix)
        )
    }
}

/// Raises `kind`'s menu weight (adds it if missing); the line says by how much.
fn raise(h: &mut Harness, kind: EditKind, rng: &mut impl Rng) -> String {
    let before = h.menu.get(&kind).copied().unwrap_or(0.0);
    let after = if before > 0.0 {
        round_sig(before * rng.gen_range(1.1..=1.5))
    } else {
        round_sig(mean_weight(h) * rng.gen_range(0.5..=1.0))
    };
    h.menu.insert(kind, after);
    format!("menu.{} {before} -> {after}", kind_key(kind))
}

/// One evidence-driven edit of `parent`.
fn edit(
    parent: &Harness,
    ranked: &[Evidence],
    learned: &Learned,
    rng: &mut impl Rng,
    try_number: usize,
) -> Option<DraftChild> {
    let mut child = parent.clone();
    let mut lines = Vec::new();
    let target = if try_number < FOCUSED_TRIES || ranked.len() < 2 {
        ranked.first().copied()
    } else {
        Some(ranked[rng.gen_range(0..ranked.len())])
    };
    let fix: &[EditKind] = target.map(addresses).unwrap_or(&[]);
    if let Some(e) = target {
        lines.push(rule_for(&mut child, e, rng));
        for &kind in fix {
            let line = raise(&mut child, kind, rng);
            lines.push(format!("evidence: {line} (addresses {})", evidence_key(e)));
        }
        if let Some(&second) = ranked.iter().find(|&&x| Some(x) != target) {
            if rng.gen_bool(0.3) {
                lines.push(rule_for(&mut child, second, rng));
            }
        }
    }
    if let Some(kind) = learned.favoured().filter(|k| !fix.contains(k)) {
        let line = raise(&mut child, kind, rng);
        lines.push(format!(
            "evidence: {line} (admitted children moved this way)"
        ));
    }
    if let Some(kind) = learned.disfavoured().filter(|k| !fix.contains(k)) {
        if let Some(&before) = child.menu.get(&kind).filter(|&&w| w > 0.0) {
            let after = round_sig(before * rng.gen_range(0.5..=0.9));
            child.menu.insert(kind, after);
            lines.push(format!(
                "evidence: menu.{} {before} -> {after} (rejected children moved this way)",
                kind_key(kind)
            ));
        }
    }
    if lines.is_empty() {
        let kinds: Vec<EditKind> = child.menu.keys().copied().collect();
        let kind = *kinds.choose(rng)?;
        let line = raise(&mut child, kind, rng);
        lines.push(format!(
            "evidence: {line} (no failure evidence nor history signal: a small reweighting)"
        ));
    }
    Some((child, lines))
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

    fn index(kind: EditKind) -> usize {
        EditKind::ALL.iter().position(|&k| k == kind).unwrap()
    }

    #[test]
    fn it_raises_the_edits_addressing_the_dominant_evidence() {
        let rejected = HashSet::new();
        for h in seed_harnesses() {
            let saturated: &[Evidence] = &[Evidence::NoGain, Evidence::ActiveSetSaturated];
            let e = [
                saturated,
                saturated,
                &[Evidence::Stalled, Evidence::NoGain][..],
            ];
            let n = node("n0", None, &h, &[0.0, 0.0, 0.0, 1.0], &e, true);
            let first = EvidenceDriven
                .propose(&context((&n, &h), vec![], &rejected, 4))
                .unwrap();
            let again = EvidenceDriven
                .propose(&context((&n, &h), vec![], &rejected, 4))
                .unwrap();
            assert_eq!(first, again);
            for seed in 0..10 {
                let p = EvidenceDriven
                    .propose(&context((&n, &h), vec![], &rejected, seed))
                    .unwrap();
                let dominant = [Evidence::ActiveSetSaturated];
                let before = h.edit_weights(&dominant);
                let after = p.harness.edit_weights(&dominant);
                let share = |w: &[f64]| {
                    addresses(dominant[0])
                        .iter()
                        .map(|&k| w[index(k)])
                        .sum::<f64>()
                        / w.iter().sum::<f64>()
                };
                assert!(
                    share(&after) > share(&before),
                    "{}: {:?}",
                    h.name,
                    p.evidence
                );
                for &kind in addresses(dominant[0]) {
                    assert!(after[index(kind)] > before[index(kind)], "{kind:?}");
                }
                assert!(p.harness.rules.iter().any(|r| r.when == dominant[0]));
                assert!(p
                    .evidence
                    .iter()
                    .any(|l| l.contains("active_set_saturated ×2")));
            }
        }
    }

    #[test]
    fn it_prefers_edits_admitted_before_over_rejected_ones() {
        let seed = seed_harnesses().remove(3);
        let dead: &[Evidence] = &[Evidence::DeadCells];
        let root = node("n0", None, &seed, &[0.0, 1.0], &[dead], true);
        let up = |kind: EditKind, factor: f64| {
            let mut h = seed.clone();
            *h.menu.get_mut(&kind).unwrap() *= factor;
            h.name = format!("{kind:?}-{factor}");
            h
        };
        let (r1, r2, d1) = (
            up(EditKind::Restarts, 2.0),
            up(EditKind::Restarts, 3.0),
            up(EditKind::Delete, 4.0),
        );
        let a1 = node("n1", Some("n0"), &r1, &[0.0, 2.0], &[dead], true);
        let a2 = node("n2", Some("n0"), &r2, &[0.0, 2.0], &[dead], true);
        let x1 = node("n3", Some("n0"), &d1, &[0.0, 0.0], &[dead], false);
        let history = vec![(&root, &seed), (&a1, &r1), (&a2, &r2), (&x1, &d1)];
        let rejected: HashSet<String> = [d1.content_hash()].into();
        for s in 0..10 {
            let ctx = context((&root, &seed), history.clone(), &rejected, s);
            let p = EvidenceDriven.propose(&ctx).unwrap();
            let w = |h: &Harness, k| h.menu[&k];
            assert!(w(&p.harness, EditKind::Restarts) > w(&seed, EditKind::Restarts));
            assert!(w(&p.harness, EditKind::Delete) < w(&seed, EditKind::Delete));
            assert!(
                w(&p.harness, EditKind::Parameterisation) > w(&seed, EditKind::Parameterisation)
            );
            assert!(p
                .evidence
                .iter()
                .any(|l| l.contains("2 admitted and 1 rejected")));
            assert!(p.harness.check().is_ok());
            assert_ne!(policy_hash(&p.harness), policy_hash(&seed));
        }
    }

    #[test]
    fn it_never_repeats_a_rejected_harness() {
        for h in seed_harnesses() {
            let stalled: &[Evidence] = &[Evidence::Stalled, Evidence::NoGain];
            let e = [stalled, &[Evidence::DeadCells, Evidence::NoGain][..]];
            let n = node("n0", None, &h, &[0.0, 0.0, 1.0], &e, true);
            assert_eq!(
                never_repeats_rejected(&EvidenceDriven, (&n, &h), None, 25),
                25
            );
        }
        let h = seed_harnesses().remove(1);
        let quiet = node("n0", None, &h, &[1.0, 1.0], &[], true);
        assert_eq!(
            never_repeats_rejected(&EvidenceDriven, (&quiet, &h), None, 10),
            10
        );
    }
}
