//! The blind mutator: a one-shot edit that reads nothing but the parent harness — no evaluation,
//! no evidence, no history. Rung A of the benchmark's ablation ladder, the baseline that shows
//! what diagnosis and memory add.
//!
//! It hands the tuner or the structural mutator (a fair coin from the seed) a context in which
//! the parent's evaluation is blank and the history empty, so their diagnosis finds nothing.

use super::structural::Structural;
use super::tuner::Tuner;
use super::{MutationContext, MutationError, Mutator, Proposal};
use crate::search::evaluation::{CostMeasure, Quality};
use crate::search::lineage::NodeRecord;

/// The one-shot, evidence-blind mutator.
pub struct Blind;

impl Mutator for Blind {
    fn name(&self) -> &'static str {
        "blind"
    }

    fn propose(&self, ctx: &MutationContext) -> Result<Proposal, MutationError> {
        let (node, harness) = ctx.parent;
        let unseen = NodeRecord {
            evaluation: node
                .evaluation
                .restricted(&[], Quality::Best, CostMeasure::Counted),
            ..node.clone()
        };
        let blind = MutationContext {
            parent: (&unseen, harness),
            co_parent: None,
            history: Vec::new(),
            rejected: ctx.rejected,
            seed: ctx.seed,
            cost: ctx.cost,
            cancel: ctx.cancel.clone(),
        };
        let inner: &dyn Mutator = if ctx.seed.is_multiple_of(2) {
            &Tuner
        } else {
            &Structural
        };
        let mut proposal = inner.propose(&blind)?;
        proposal
            .evidence
            .retain(|line| !line.starts_with("diagnosis"));
        Ok(proposal)
    }
}
