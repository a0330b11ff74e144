//! The mutator pool: agents that propose a child harness from a parent (and a co-parent).
//!
//! Every mutator works diagnose-first (it reads the parent's evaluation and the island's history
//! before it edits) and never proposes a harness equal to a rejected one or to its parent.
//! One small file per mutator; [`NAMES`] lists the pool of built-in ones (the search finds them
//! by name through [`super::parts`]):
//!
//! - [`tuner`]: small numeric nudges of one or two knobs, chosen by the diagnosis;
//! - [`structural`]: rewrites of the edit menu, the rules and the control flow;
//! - [`evidence`]: rules and weights for the dominant failure evidence, steered by which past
//!   edits were admitted or rejected;
//! - [`breeder`]: uniform crossover of the parent with a co-parent;
//! - [`blind`]: a one-shot edit that reads nothing but the parent (benchmark ablation only, not
//!   in the pool);
//! - [`llm`]: a language model rewrites the harness from the same evidence (joins a run's pool
//!   by name, `--mutators tuner,llm`; it needs an agents file, so it is not in [`NAMES`]).
//!
//! Here: the [`Mutator`] trait, what it sees and returns, and the registry by name. The shared
//! pieces live beside it: `diagnosis.rs` (the [`Diagnosis`] of a parent and the domain map from
//! evidence to the edits that address it, [`addresses`]) and `drafting.rs` ([`fresh`], which
//! retries a mutator's seeded random edit until the candidate is valid and new).

pub mod blind;
pub mod breeder;
mod diagnosis;
mod drafting;
pub mod evidence;
pub mod llm;
pub mod structural;
pub mod tuner;

pub use diagnosis::{addresses, evidence_key, Diagnosis};
pub use drafting::{
    child_name, edit_count, fresh, mean_weight, pick_weighted, policy_hash, rng_for, round_sig,
    widened, DraftChild, MAX_TRIES, WIDEN_AFTER,
};

use super::evaluation::CostMeasure;
use super::lineage::NodeRecord;
use crate::cancel::CancelToken;
use crate::harness::Harness;
use crate::llm::Usage;
use std::collections::HashSet;

/// What a mutator may look at. Validation results are never shown to mutators.
pub struct MutationContext<'a> {
    /// The parent node and its harness.
    pub parent: (&'a NodeRecord, &'a Harness),
    /// A co-parent (a breeder's second parent, or a node grafted from another island).
    pub co_parent: Option<(&'a NodeRecord, &'a Harness)>,
    /// The children proposed for this island so far (admitted and rejected), oldest first,
    /// with their harnesses.
    pub history: Vec<(&'a NodeRecord, &'a Harness)>,
    /// Content hashes of every harness rejected anywhere in the run.
    pub rejected: &'a HashSet<String>,
    /// Seed of the mutator's random choices (derived from the run seed, round and island).
    pub seed: u64,
    /// The run's cost measure: the unit of every cost and latency the mutator reads.
    pub cost: CostMeasure,
    /// The run's token: cancelling it abandons a model's request in flight.
    pub cancel: CancelToken,
}

/// A proposed child harness with the diagnosis that motivated it.
#[derive(Clone, Debug, PartialEq)]
pub struct Proposal {
    /// The child harness (checked, different from the parent and from every rejected one).
    pub harness: Harness,
    /// The evidence read and the diagnosis made, one line each.
    pub evidence: Vec<String>,
    /// Tokens (and dollars) spent making it: zero for a built-in mutator.
    pub usage: Usage,
}

/// Why a mutator proposed no child; the search records it as a failure and the island skips
/// the round.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum MutationError {
    /// Every candidate drawn was invalid, the parent's policy again, or already known.
    #[error("nothing new after {tries} candidates")]
    NothingNew {
        /// Candidates drawn.
        tries: usize,
    },
    /// The mutator itself failed (e.g. an agent behind it did not answer).
    #[error("{message}")]
    Failed {
        /// What went wrong, in one line.
        message: String,
        /// Tokens (and dollars) the failed proposal spent.
        usage: Usage,
    },
}

impl MutationError {
    /// Tokens (and dollars) spent before the failure (none for [`MutationError::NothingNew`]).
    pub fn usage(&self) -> Usage {
        match self {
            MutationError::NothingNew { .. } => Usage::default(),
            MutationError::Failed { usage, .. } => *usage,
        }
    }
}

/// A mutator: proposes a child harness.
pub trait Mutator: Send + Sync {
    /// The mutator's name, recorded in the lineage.
    fn name(&self) -> &'static str;

    /// A child of `ctx.parent`, or why there is none.
    fn propose(&self, ctx: &MutationContext) -> Result<Proposal, MutationError>;
}

/// Names of the pool of built-in mutators, in order (the blind one is not in the pool).
pub const NAMES: [&str; 4] = ["tuner", "structural", "evidence", "breeder"];

/// Names of every built-in mutator [`by_name`] knows: the pool, then the benchmark's blind one.
pub const KNOWN: [&str; 5] = ["tuner", "structural", "evidence", "breeder", "blind"];

/// The built-in mutator called `name`, if there is one ([`super::parts::mutator`] is the
/// registry that names the known ones in its error).
pub fn by_name(name: &str) -> Option<Box<dyn Mutator>> {
    match name {
        "tuner" => Some(Box::new(tuner::Tuner)),
        "structural" => Some(Box::new(structural::Structural)),
        "evidence" => Some(Box::new(evidence::EvidenceDriven)),
        "breeder" => Some(Box::new(breeder::Breeder)),
        "blind" => Some(Box::new(blind::Blind)),
        _ => None,
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! Lineage nodes built by hand for the mutators' tests.

    use super::*;
    use crate::harness::Evidence;
    use crate::search::admission::Verdict;
    use crate::search::evaluation::{Evaluation, TaskResult};
    use crate::search::hypervolume::Fitness;
    use crate::suite::Split;

    /// A node for `harness` with one task per gain (`evidence[i]` on task i, none if missing);
    /// quality is the best gain and cost 10 per task.
    pub(crate) fn node(
        id: &str,
        parent: Option<&str>,
        harness: &Harness,
        gains: &[f64],
        evidence: &[&[Evidence]],
        admitted: bool,
    ) -> NodeRecord {
        let tasks: Vec<TaskResult> = gains
            .iter()
            .enumerate()
            .map(|(i, &gain)| TaskResult {
                task: format!("t{i}"),
                split: Split::Search,
                start_exact: "1".into(),
                end_exact: "1".into(),
                gain,
                evaluations: 1000,
                cpu_seconds: 10.0,
                wall_seconds: 10.0,
                usage: Default::default(),
                work: 1e6,
                evidence: evidence.get(i).map(|e| e.to_vec()).unwrap_or_default(),
                edits: vec![],
                best_program: None,
                construction: None,
                writer: None,
            })
            .collect();
        NodeRecord {
            id: id.into(),
            island: 0,
            round: usize::from(parent.is_some()),
            parents: parent.map(|p| vec![p.to_string()]).unwrap_or_default(),
            mutator: if parent.is_some() { "test" } else { "seed" }.into(),
            harness: harness.content_hash(),
            name: harness.name.clone(),
            edit: String::new(),
            evidence: vec![],
            usage: Default::default(),
            evaluation: Evaluation {
                fitness: Fitness {
                    quality: gains.iter().copied().fold(0.0, f64::max),
                    cost: 10.0 * gains.len() as f64,
                    latency: 10.0,
                },
                gains: gains.to_vec(),
                tasks,
                reused: false,
            },
            parent_evaluation: None,
            verdict: Verdict {
                admitted,
                hypervolume_before: 0.0,
                hypervolume_after: 0.0,
                reason: if admitted { "grows" } else { "dominated" }.into(),
            },
            validation: None,
            at: None,
        }
    }

    /// A context over `parent` with no co-parent, the given history and rejected set.
    pub(crate) fn context<'a>(
        parent: (&'a NodeRecord, &'a Harness),
        history: Vec<(&'a NodeRecord, &'a Harness)>,
        rejected: &'a HashSet<String>,
        seed: u64,
    ) -> MutationContext<'a> {
        MutationContext {
            parent,
            co_parent: None,
            history,
            rejected,
            seed,
            cost: CostMeasure::Counted,
            cancel: CancelToken::new(),
        }
    }

    /// Runs `mutator` repeatedly, adding each proposal's hash to the rejected set, and checks
    /// every proposal is valid, new and different from the parent; returns how many it made.
    pub(crate) fn never_repeats_rejected(
        mutator: &dyn Mutator,
        parent: (&NodeRecord, &Harness),
        co_parent: Option<(&NodeRecord, &Harness)>,
        rounds: usize,
    ) -> usize {
        let mut rejected = HashSet::new();
        let mut made = 0;
        for _ in 0..rounds {
            let ctx = MutationContext {
                parent,
                co_parent,
                history: vec![parent],
                rejected: &rejected,
                seed: 7,
                cost: CostMeasure::Counted,
                cancel: CancelToken::new(),
            };
            let Ok(p) = mutator.propose(&ctx) else {
                break;
            };
            let hash = p.harness.content_hash();
            assert!(
                !rejected.contains(&hash),
                "{} repeated {hash}",
                mutator.name()
            );
            assert!(p.harness.check().is_ok());
            assert_ne!(policy_hash(&p.harness), policy_hash(parent.1));
            assert!(!p.evidence.is_empty());
            made += 1;
            rejected.insert(hash);
        }
        made
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;
    use crate::harness::{seed_harnesses, Evidence};
    use rand::Rng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn every_named_mutator_is_found_by_its_name() {
        for name in NAMES {
            assert_eq!(by_name(name).map(|m| m.name()), Some(name));
        }
        assert!(by_name("oracle").is_none());
    }

    #[test]
    fn child_names_do_not_nest_and_follow_the_policy() {
        let seeds = seed_harnesses();
        let mut child = seeds[1].clone();
        child.programs += 1;
        let name = child_name(&seeds[1], "tuner", &child);
        assert!(name.starts_with("steady-polish+tuner-"), "{name}");
        child.name = name.clone();
        let mut grandchild = child.clone();
        grandchild.programs += 1;
        let again = child_name(&child, "breeder", &grandchild);
        assert!(again.starts_with("steady-polish+breeder-"), "{again}");
        assert_eq!(again.matches('+').count(), 1);
        assert_ne!(name[name.len() - 8..], again[again.len() - 8..]);
    }

    #[test]
    fn the_diagnosis_ranks_specific_failure_evidence_first() {
        let h = seed_harnesses().remove(3);
        let e = [
            &[Evidence::NoGain, Evidence::Stalled][..],
            &[Evidence::NoGain, Evidence::Stalled, Evidence::DeadCells][..],
            &[Evidence::DeadCells][..],
        ];
        let n = node("n0", None, &h, &[0.0, 0.0, 2.0], &e, true);
        let rejected = HashSet::new();
        let ctx = context((&n, &h), vec![], &rejected, 1);
        let d = Diagnosis::of(&ctx);
        assert_eq!((d.tasks, d.gained), (3, 1));
        assert!(d.mostly_failing());
        assert_eq!(d.dominant(), Some(Evidence::Stalled));
        assert_eq!(d.failure_evidence.get(&Evidence::DeadCells), Some(&1));
        assert_eq!(d.all_evidence.get(&Evidence::DeadCells), Some(&2));
        assert!(d.lines().iter().any(|l| l.contains("stalled ×2")));
    }

    #[test]
    fn fresh_skips_rejected_and_known_policies_and_gives_up() {
        let h = seed_harnesses().remove(1);
        let n = node("n0", None, &h, &[1.0], &[], true);
        let mut rejected = HashSet::new();
        let bump = |rng: &mut ChaCha8Rng, _: usize| {
            let mut c = h.clone();
            c.programs = rng.gen_range(1..=3);
            Some((c, vec!["bump".to_string()]))
        };
        let mut seen = Vec::new();
        for _ in 0..2 {
            let ctx = context((&n, &h), vec![], &rejected, 3);
            let p = fresh(&ctx, "test", vec![], &[], bump).expect("a new value is left");
            assert_ne!(p.harness.programs, h.programs);
            seen.push(p.harness.programs);
            rejected.insert(p.harness.content_hash());
        }
        seen.sort();
        let mut expected: Vec<usize> = (1..=3).filter(|&p| p != h.programs).collect();
        expected.sort();
        assert_eq!(seen, expected);
        let ctx = context((&n, &h), vec![], &rejected, 3);
        assert_eq!(
            fresh(&ctx, "test", vec![], &[], bump),
            Err(MutationError::NothingNew { tries: MAX_TRIES })
        );
    }
}
