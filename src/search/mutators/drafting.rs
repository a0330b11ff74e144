//! Drafting a child: the seeded random source, the widening of a mutator's choices once the
//! likely candidates are spent, and [`fresh`], which retries a mutator's random edit until the
//! candidate is valid and new, then names it.

use super::{MutationContext, MutationError, Proposal};
use crate::harness::Harness;
use crate::llm::Usage;
use rand::distributions::{Distribution, WeightedIndex};
use rand::Rng;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;

/// Candidates [`fresh`] draws before it gives up.
pub const MAX_TRIES: usize = 50;

/// From this try on, mutators widen their search (flatter choice weights, more edits at once):
/// the likely candidates were all known or rejected.
pub const WIDEN_AFTER: usize = 15;

/// `plan`'s weights, flattened to 1 once `try_number` reaches [`WIDEN_AFTER`].
pub fn widened<T: Clone>(plan: &[(f64, T)], try_number: usize) -> Vec<(f64, T)> {
    if try_number < WIDEN_AFTER {
        plan.to_vec()
    } else {
        plan.iter().map(|(_, x)| (1.0, x.clone())).collect()
    }
}

/// How many edits a candidate makes: 1 or 2 before [`WIDEN_AFTER`] (2 with probability
/// `two`), 1–3 after.
pub fn edit_count(try_number: usize, two: f64, rng: &mut impl Rng) -> usize {
    if try_number < WIDEN_AFTER {
        1 + usize::from(rng.gen_bool(two))
    } else {
        rng.gen_range(1..=3)
    }
}

/// A candidate child and the lines describing the edits that made it.
pub type DraftChild = (Harness, Vec<String>);

/// The policy's content hash: [`Harness::content_hash`] with the name and description blanked,
/// so two harnesses that only differ in their names count as the same policy.
pub fn policy_hash(harness: &Harness) -> String {
    let mut policy = harness.clone();
    policy.name.clear();
    policy.description.clear();
    policy.content_hash()
}

/// Longest family part of a child's name (the part before `+`).
const FAMILY_CHARS: usize = 24;

/// A child's name: the parent's family (its name up to the first `+`), the mutator and the first
/// 8 digits of the child's [`policy_hash`] — short, without nesting, and a function of the
/// policy, so the same policy proposed again from the same family gets the same content hash.
pub fn child_name(parent: &Harness, mutator: &str, child: &Harness) -> String {
    let family: String = parent
        .name
        .split('+')
        .next()
        .unwrap_or_default()
        .chars()
        .take(FAMILY_CHARS)
        .collect();
    let hash = policy_hash(child);
    format!("{family}+{mutator}-{}", &hash[..8])
}

/// The seeded random source of a mutator's choices.
pub fn rng_for(ctx: &MutationContext) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(ctx.seed)
}

/// Draws candidates from `attempt` (given the seeded rng and the try number) until one passes
/// [`Harness::check`], differs in policy from the parent, from every harness in `also_avoid` and
/// from every harness in the island's history, and whose content hash is not in `ctx.rejected`;
/// [`MutationError::NothingNew`] after [`MAX_TRIES`]. The child is named by [`child_name`] and keeps the parent's
/// description; the proposal's evidence is `diagnosis` followed by the candidate's edit lines.
pub fn fresh(
    ctx: &MutationContext,
    mutator: &str,
    diagnosis: Vec<String>,
    also_avoid: &[&Harness],
    mut attempt: impl FnMut(&mut ChaCha8Rng, usize) -> Option<DraftChild>,
) -> Result<Proposal, MutationError> {
    let parent = ctx.parent.1;
    let seen: HashSet<String> = std::iter::once(parent)
        .chain(also_avoid.iter().copied())
        .chain(ctx.history.iter().map(|(_, h)| *h))
        .map(policy_hash)
        .collect();
    let mut rng = rng_for(ctx);
    for try_number in 0..MAX_TRIES {
        let Some((mut child, edits)) = attempt(&mut rng, try_number) else {
            continue;
        };
        if edits.is_empty() || child.check().is_err() || seen.contains(&policy_hash(&child)) {
            continue;
        }
        child.description = parent.description.clone();
        child.name = child_name(parent, mutator, &child);
        if ctx.rejected.contains(&child.content_hash()) {
            continue;
        }
        let mut evidence = diagnosis;
        evidence.extend(edits);
        return Ok(Proposal {
            harness: child,
            evidence,
            usage: Usage::default(),
        });
    }
    Err(MutationError::NothingNew { tries: MAX_TRIES })
}

/// One of `items`, drawn with probability proportional to its weight (`None` if no weight is
/// positive).
pub fn pick_weighted<T: Clone>(items: &[(f64, T)], rng: &mut impl Rng) -> Option<T> {
    let index = WeightedIndex::new(items.iter().map(|(w, _)| w.max(0.0))).ok()?;
    Some(items[index.sample(rng)].1.clone())
}

/// `x` rounded to four significant digits (keeps mutated harnesses readable).
pub fn round_sig(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let scale = 10f64.powi(3 - x.abs().log10().floor() as i32);
    (x * scale).round() / scale
}

/// Mean of the positive menu weights (1 for an empty menu): the weight a new kind starts with.
pub fn mean_weight(harness: &Harness) -> f64 {
    let positive: Vec<f64> = harness
        .menu
        .values()
        .copied()
        .filter(|&w| w > 0.0)
        .collect();
    if positive.is_empty() {
        1.0
    } else {
        positive.iter().sum::<f64>() / positive.len() as f64
    }
}
