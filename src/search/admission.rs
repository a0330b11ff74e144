//! Admission of a child harness into its parent's island, on the same tasks and seeds as the
//! parent (common random numbers): the child joins only when its per-task gains beat the
//! parent's by more than two paired standard errors, or tie with them within that and its
//! per-task cost is lower by more than two paired standard errors. One lucky task cannot make
//! a champion. The verdict also records the hypervolume of {parent, child} against a reference
//! point adapted to the two (see [`super::hypervolume::reference_for`]) and says why in words,
//! with the cost in its true unit.

use super::evaluation::{CostMeasure, Evaluation};
use super::hypervolume::{hypervolume, reference_for};
use serde::{Deserialize, Serialize};

/// How many paired standard errors a difference must clear.
pub const STANDARD_ERRORS: f64 = 2.0;

/// The outcome of [`admit`], recorded in the lineage with the child.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Whether the child joins the island's admitted set.
    pub admitted: bool,
    /// Hypervolume of the parent's fitness on the child's tasks.
    pub hypervolume_before: f64,
    /// Hypervolume of the parent and the child together.
    pub hypervolume_after: f64,
    /// Why: the paired differences of gain (and cost) against their standard errors.
    pub reason: String,
}

/// Mean and standard error of paired differences (0 ± 0 for none; the error is 0 for one).
pub(crate) fn paired(differences: &[f64]) -> (f64, f64) {
    let n = differences.len();
    if n == 0 {
        return (0.0, 0.0);
    }
    let mean = differences.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return (mean, 0.0);
    }
    let variance = differences.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n as f64 - 1.0);
    (mean, (variance / n as f64).sqrt())
}

impl Verdict {
    /// The verdict on a child that was not evaluated, and why.
    pub fn unevaluated(reason: String) -> Verdict {
        Verdict {
            admitted: false,
            hypervolume_before: 0.0,
            hypervolume_after: 0.0,
            reason,
        }
    }

    /// A verdict on `child` against `parent`, with the hypervolume of the two recorded.
    pub fn new(parent: &Evaluation, child: &Evaluation, admitted: bool, reason: String) -> Verdict {
        let points = [parent.fitness, child.fitness];
        let reference = reference_for(&points);
        Verdict {
            admitted,
            hypervolume_before: hypervolume(&points[..1], reference),
            hypervolume_after: hypervolume(&points, reference),
            reason,
        }
    }
}

/// The paired comparison of a child with its parent on the same tasks: per-task differences of
/// gain (child − parent) and of cost (parent − child, a saving), with their means and paired
/// standard errors. `Err` says why the two cannot be compared.
pub(crate) struct Paired {
    /// Tasks compared.
    pub n: usize,
    /// Mean gain over the parent and its standard error.
    pub gain: (f64, f64),
    /// Mean saving of cost and its standard error.
    pub saving: (f64, f64),
}

impl Paired {
    /// The comparison of `child` with `parent` under `measure`.
    pub fn of(
        parent: &Evaluation,
        child: &Evaluation,
        measure: CostMeasure,
    ) -> std::result::Result<Paired, String> {
        let same_tasks = parent.tasks.len() == child.tasks.len()
            && parent
                .tasks
                .iter()
                .zip(&child.tasks)
                .all(|(p, c)| p.task == c.task);
        if !same_tasks || child.tasks.is_empty() {
            return Err("not evaluated on its parent's tasks".into());
        }
        if !child.fitness.is_finite() {
            return Err(format!("fitness {:?} is not finite", child.fitness));
        }
        let gains: Vec<f64> = parent
            .gains
            .iter()
            .zip(&child.gains)
            .map(|(p, c)| c - p)
            .collect();
        let savings: Vec<f64> = parent
            .tasks
            .iter()
            .zip(&child.tasks)
            .map(|(p, c)| measure.task_cost(p) - measure.task_cost(c))
            .collect();
        Ok(Paired {
            n: gains.len(),
            gain: paired(&gains),
            saving: paired(&savings),
        })
    }

    /// The gain in words: `mean gain over the parent +G ± E (paired SE, N tasks)`.
    pub fn gain_text(&self) -> String {
        let (gain, error) = self.gain;
        format!(
            "mean gain over the parent {gain:+.4} ± {error:.4} (paired SE, {} tasks)",
            self.n
        )
    }

    /// The saving in words, in the cost's unit.
    pub fn saving_text(&self, measure: CostMeasure) -> String {
        let (saving, error) = self.saving;
        format!(
            "mean saving {saving:+.4} ± {error:.4} {}",
            measure.cost_unit()
        )
    }
}

/// Decides whether `child` joins its parent's island, both evaluated on the same tasks (in the
/// same order) under `measure`.
pub fn admit(parent: &Evaluation, child: &Evaluation, measure: CostMeasure) -> Verdict {
    let verdict = |admitted, reason: String| Verdict::new(parent, child, admitted, reason);
    let stats = match Paired::of(parent, child, measure) {
        Ok(stats) => stats,
        Err(reason) => return verdict(false, reason),
    };
    let (gain, gain_error) = stats.gain;
    let (saving, saving_error) = stats.saving;
    let gain_text = stats.gain_text();
    if gain > 0.0 && gain > STANDARD_ERRORS * gain_error {
        return verdict(true, format!("beats its parent: {gain_text}"));
    }
    if gain.abs() > STANDARD_ERRORS * gain_error {
        return verdict(false, format!("loses to its parent: {gain_text}"));
    }
    let saving_text = stats.saving_text(measure);
    if saving > 0.0 && saving > STANDARD_ERRORS * saving_error {
        return verdict(
            true,
            format!("ties its parent and is cheaper: {gain_text}; {saving_text}"),
        );
    }
    verdict(
        false,
        format!("ties its parent and is not cheaper: {gain_text}; {saving_text}"),
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::search::evaluation::TaskResult;
    use crate::search::hypervolume::Fitness;
    use crate::suite::Split;

    /// An evaluation with these per-task gains and costs (cell-evaluations, so counted cost).
    pub(crate) fn evaluation(gains: &[f64], work: &[f64]) -> Evaluation {
        let tasks: Vec<TaskResult> = gains
            .iter()
            .zip(work)
            .enumerate()
            .map(|(i, (&gain, &work))| TaskResult {
                task: format!("s/p/r1k{i}"),
                split: Split::Search,
                start_exact: "1".into(),
                end_exact: "1".into(),
                gain,
                evaluations: 1,
                work,
                cpu_seconds: 0.0,
                wall_seconds: 0.0,
                usage: Default::default(),
                evidence: vec![],
                edits: vec![],
                best_program: None,
                construction: None,
                writer: None,
            })
            .collect();
        Evaluation {
            tasks,
            fitness: Fitness {
                quality: gains.iter().copied().fold(0.0, f64::max),
                cost: work.iter().sum::<f64>() / 1e6,
                latency: work.iter().copied().fold(0.0, f64::max) / 1e6,
            },
            gains: gains.to_vec(),
            reused: false,
        }
    }

    const WORK: [f64; 4] = [1e6; 4];

    #[test]
    fn a_consistent_gain_is_admitted_and_one_lucky_task_is_not() {
        let parent = evaluation(&[1.0, 1.0, 1.0, 1.0], &WORK);
        let better = evaluation(&[1.5, 1.4, 1.6, 1.5], &WORK);
        let v = admit(&parent, &better, CostMeasure::Counted);
        assert!(
            v.admitted && v.reason.starts_with("beats its parent"),
            "{v:?}"
        );
        // Quality (the best task) jumps from 1 to 9, but three tasks got worse: the mean
        // difference (1.25) is within two paired standard errors (2 × 2.25).
        let lucky = evaluation(&[9.0, 0.0, 0.0, 0.0], &WORK);
        let v = admit(&parent, &lucky, CostMeasure::Counted);
        assert!(!v.admitted && v.reason.contains("ties its parent"), "{v:?}");
        let worse = evaluation(&[0.5, 0.5, 0.4, 0.6], &WORK);
        let v = admit(&parent, &worse, CostMeasure::Counted);
        assert!(!v.admitted && v.reason.starts_with("loses"), "{v:?}");
    }

    #[test]
    fn a_tie_is_admitted_only_when_cheaper_and_the_unit_is_named() {
        let parent = evaluation(&[1.0, 2.0, 1.0, 2.0], &WORK);
        let cheaper = evaluation(&[1.0, 2.0, 1.0, 2.0], &[5e5, 6e5, 5e5, 4e5]);
        let v = admit(&parent, &cheaper, CostMeasure::Counted);
        assert!(v.admitted, "{v:?}");
        assert!(v.reason.contains("M cell-evaluations"), "{}", v.reason);
        let same = admit(&parent, &parent.clone(), CostMeasure::Counted);
        assert!(
            !same.admitted && same.reason.contains("not cheaper"),
            "{same:?}"
        );
        assert_eq!(same.hypervolume_before, same.hypervolume_after);
    }

    #[test]
    fn other_tasks_are_refused() {
        let parent = evaluation(&[1.0, 1.0], &[1e6; 2]);
        let mut child = evaluation(&[2.0, 2.0], &[1e6; 2]);
        child.tasks[1].task = "s/p/r2k1".into();
        assert!(!admit(&parent, &child, CostMeasure::Counted).admitted);
    }

    #[test]
    fn the_reference_adapts_to_the_pair() {
        // A child four times as expensive as its parent is still inside the reference.
        let parent = evaluation(&[1.0, 1.0], &[1e6; 2]);
        let child = evaluation(&[2.0, 2.0], &[4e6; 2]);
        let v = admit(&parent, &child, CostMeasure::Counted);
        assert!(
            v.admitted && v.hypervolume_after > v.hypervolume_before,
            "{v:?}"
        );
    }
}
