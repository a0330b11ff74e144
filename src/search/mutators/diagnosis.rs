//! The diagnosis of a parent before it is edited: where it gains, what evidence its failures
//! show, whether it is expensive for its gain, and the domain map from evidence to the edits
//! that address it.

use super::MutationContext;
use crate::harness::{EditKind, Evidence};
use crate::search::evaluation::CostMeasure;
use crate::search::hypervolume::Fitness;
use std::collections::BTreeMap;

/// The edits that address each kind of evidence, from the domain (DOMAIN.md and the stages'
/// behaviour): a stalled run sits in a basin, so it needs basin hopping, independent restarts or
/// a move gradient descent cannot make (the records' discrete moves);
/// a saturated active set is an equioscillation the smooth surrogate resolves badly at this grid,
/// so a finer grid or another parameterisation helps; dead cells cannot revive under the current
/// parameterisation, so swap it; a run with no gain at all needs new stages or material from a
/// program that worked; repaired values mean the parameterisation does not keep the constraints,
/// so swap it for one that does.
pub fn addresses(evidence: Evidence) -> &'static [EditKind] {
    match evidence {
        Evidence::Stalled => &[
            EditKind::Perturbation,
            EditKind::Restarts,
            EditKind::DiscreteMove,
        ],
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
