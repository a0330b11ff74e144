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
//! The shared pieces live here: the [`Diagnosis`] of a parent, the domain map from evidence to
//! the edits that address it ([`addresses`]), and [`fresh`], which retries a mutator's seeded
//! random edit until the candidate is valid and new.

pub mod blind;
pub mod breeder;
pub mod evidence;
pub mod llm;
pub mod structural;
pub mod tuner;

use super::evaluation::CostMeasure;
use super::hypervolume::Fitness;
use super::lineage::NodeRecord;
use crate::cancel::CancelToken;
use crate::harness::{EditKind, Evidence, Harness};
use crate::llm::Usage;
use rand::distributions::{Distribution, WeightedIndex};
use rand::Rng;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, HashSet};

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

/// The edits that address each kind of evidence, from the domain (DOMAIN.md and the stages'
/// behaviour): a stalled run sits in a basin, so it needs basin hopping or independent restarts;
/// a saturated active set is an equioscillation the smooth surrogate resolves badly at this grid,
/// so a finer grid or another parameterisation helps; dead cells cannot revive under the current
/// parameterisation, so swap it; a run with no gain at all needs new stages or material from a
/// program that worked; repaired values mean the parameterisation does not keep the constraints,
/// so swap it for one that does.
pub fn addresses(evidence: Evidence) -> &'static [EditKind] {
    match evidence {
        Evidence::Stalled => &[EditKind::Perturbation, EditKind::Restarts],
        Evidence::ActiveSetSaturated => &[EditKind::Resolution, EditKind::Parameterisation],
        Evidence::DeadCells => &[EditKind::Parameterisation],
        Evidence::NoGain => &[EditKind::Insert, EditKind::Crossover],
        Evidence::Repaired => &[EditKind::Parameterisation],
    }
}

/// Tie-break order of the evidence (lower first).
fn specificity(evidence: Evidence) -> usize {
    match evidence {
        Evidence::Stalled => 0,
        Evidence::ActiveSetSaturated => 1,
        Evidence::DeadCells => 2,
        Evidence::Repaired => 3,
        Evidence::NoGain => 4,
    }
}

/// A parent's evaluation read before editing: where it gains, what evidence its failures show,
/// and whether it is expensive for its gain compared with the island's admitted members.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnosis {
    /// Search tasks evaluated.
    pub tasks: usize,
    /// Tasks with a positive gain.
    pub gained: usize,
    /// Evidence counted over the tasks that gained nothing.
    pub failure_evidence: BTreeMap<Evidence, usize>,
    /// Evidence counted over all tasks.
    pub all_evidence: BTreeMap<Evidence, usize>,
    /// The parent's fitness.
    pub fitness: Fitness,
    /// The parent costs more than 1.25× the median admitted member while its quality is no
    /// better than their median (needs at least two other admitted members in the history).
    pub expensive: bool,
    /// The run's cost measure (the unit of the fitness's cost and latency).
    pub cost: CostMeasure,
}

impl Diagnosis {
    /// Diagnoses `ctx.parent` against the island's history.
    pub fn of(ctx: &MutationContext) -> Diagnosis {
        let node = ctx.parent.0;
        let mut failure_evidence = BTreeMap::new();
        let mut all_evidence = BTreeMap::new();
        for task in &node.evaluation.tasks {
            for &e in &task.evidence {
                *all_evidence.entry(e).or_insert(0) += 1;
                if task.gain <= 0.0 {
                    *failure_evidence.entry(e).or_insert(0) += 1;
                }
            }
        }
        let fitness = node.evaluation.fitness;
        let others: Vec<Fitness> = ctx
            .history
            .iter()
            .filter(|(n, _)| n.admitted() && n.id != node.id)
            .map(|(n, _)| n.evaluation.fitness)
            .filter(Fitness::is_finite)
            .collect();
        let expensive = others.len() >= 2 && {
            let cost = median(others.iter().map(|f| f.cost).collect());
            let quality = median(others.iter().map(|f| f.quality).collect());
            fitness.cost > 1.25 * cost && fitness.quality <= quality
        };
        Diagnosis {
            tasks: node.evaluation.tasks.len(),
            gained: node
                .evaluation
                .tasks
                .iter()
                .filter(|t| t.gain > 0.0)
                .count(),
            failure_evidence,
            all_evidence,
            fitness,
            expensive,
            cost: ctx.cost,
        }
    }

    /// Whether more than half the tasks gained nothing.
    pub fn mostly_failing(&self) -> bool {
        2 * (self.tasks - self.gained) > self.tasks
    }

    /// The evidence of the failed tasks (of all tasks if none failed), most frequent first, ties
    /// to the more specific evidence; [`Evidence::NoGain`] comes last whatever its count, since it
    /// accompanies every failure and says nothing about its cause.
    pub fn ranked(&self) -> Vec<(Evidence, usize)> {
        let counts = if self.failure_evidence.is_empty() {
            &self.all_evidence
        } else {
            &self.failure_evidence
        };
        let mut ranked: Vec<(Evidence, usize)> = counts.iter().map(|(&e, &c)| (e, c)).collect();
        ranked.sort_by_key(|&(e, c)| (e == Evidence::NoGain, std::cmp::Reverse(c), specificity(e)));
        ranked
    }

    /// The most frequent failure evidence (see [`Diagnosis::ranked`]).
    pub fn dominant(&self) -> Option<Evidence> {
        self.ranked().first().map(|&(e, _)| e)
    }

    /// The diagnosis in words, one line each.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "diagnosis: gains on {}/{} search tasks (quality {:.4}, {})",
            self.gained,
            self.tasks,
            self.fitness.quality,
            self.cost.fitness_text(&self.fitness)
        )];
        let ranked = self.ranked();
        if !ranked.is_empty() {
            let scope = if self.failure_evidence.is_empty() {
                "all tasks"
            } else {
                "failed tasks"
            };
            let list: Vec<String> = ranked
                .iter()
                .map(|(e, c)| format!("{} ×{c}", evidence_key(*e)))
                .collect();
            lines.push(format!("evidence on {scope}: {}", list.join(", ")));
        }
        if self.expensive {
            lines.push(
                "diagnosis: expensive for its gain (cost above 1.25× the island's median, \
                 quality not above it)"
                    .into(),
            );
        }
        lines
    }
}

/// The TOML key of a kind of evidence.
pub fn evidence_key(evidence: Evidence) -> String {
    toml::Value::try_from(evidence)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        return 0.0;
    }
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
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

#[cfg(test)]
pub(crate) mod fixtures {
    //! Lineage nodes built by hand for the mutators' tests.

    use super::*;
    use crate::search::admission::Verdict;
    use crate::search::evaluation::{Evaluation, TaskResult};
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
    use crate::harness::seed_harnesses;

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
        let mut child = seeds[0].clone();
        child.programs += 1;
        let name = child_name(&seeds[0], "tuner", &child);
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
        let h = seed_harnesses().remove(2);
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
        let h = seed_harnesses().remove(0);
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
