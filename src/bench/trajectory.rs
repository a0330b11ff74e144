//! A run as the benchmark sees it, whatever the method: the evaluations it made in order (search
//! tasks, with their CPU time and when they were recorded) and the validation of its best
//! candidate; [`summarise`] turns it into a [`RunSummary`] with its best-so-far curve.

use super::results::{Batch, CurvePoint, RunSummary};
use crate::problems::Direction;
use crate::search::evaluation::{Evaluation, TaskResult};

/// One evaluation of a candidate (a harness or a program) on the search tasks.
#[derive(Clone, Debug)]
pub struct TrajectoryStep {
    /// The evaluation.
    pub evaluation: Evaluation,
    /// Its validation, if the candidate was validated.
    pub validation: Option<Evaluation>,
    /// When it was recorded (seconds since the Unix epoch), if known.
    pub at: Option<f64>,
}

/// A method's run: its steps in order.
#[derive(Clone, Debug, Default)]
pub struct Trajectory {
    /// When the run started (seconds since the Unix epoch).
    pub started_at: f64,
    /// Every step.
    pub steps: Vec<TrajectoryStep>,
}

/// What identifies a run in a benchmark.
#[derive(Clone, Debug)]
pub struct RunLabel {
    /// The method.
    pub method: String,
    /// The seed.
    pub seed: u64,
    /// The batch.
    pub batch: Batch,
    /// The run's directory relative to the benchmark's.
    pub dir: String,
}

/// The float value of an exact decimal string (as stored in task results).
fn value(decimal: &str) -> f64 {
    decimal.parse().unwrap_or(f64::NAN)
}

/// The best result of `tasks` in `direction`, as (exact string, float); `start` compares the
/// starts instead of the ends.
fn best_of<'a>(
    tasks: impl Iterator<Item = &'a TaskResult>,
    direction: Direction,
    start: bool,
) -> Option<(String, f64)> {
    tasks
        .map(|t| {
            let exact = if start { &t.start_exact } else { &t.end_exact };
            (exact.clone(), value(exact))
        })
        .reduce(|a, b| if direction.better(&b.1, &a.1) { b } else { a })
}

/// The index of the best of `evaluations`: the best quality (ties: the lower cost, then the
/// earlier). A method validates it; [`summarise`] reads a run by it.
pub fn best_candidate<'a>(evaluations: impl Iterator<Item = &'a Evaluation>) -> Option<usize> {
    evaluations
        .enumerate()
        .reduce(|(i, a), (j, b)| {
            if b.fitness.outranks(&a.fitness) {
                (j, b)
            } else {
                (i, a)
            }
        })
        .map(|(i, _)| i)
}

/// The run's chosen candidate among `steps`: the best by search quality among the validated
/// steps, or among all when none was validated. A search validates several candidates (each
/// island's best when it became so) and re-runs parents on other rounds' tasks; a parent's re-run
/// is no candidate of its own, and choosing by search quality keeps the validation held out.
fn chosen_candidate(steps: &[TrajectoryStep]) -> Option<&TrajectoryStep> {
    let validated: Vec<&TrajectoryStep> = steps.iter().filter(|s| s.validation.is_some()).collect();
    let pool = if validated.is_empty() {
        steps.iter().collect()
    } else {
        validated
    };
    best_candidate(pool.iter().map(|s| &s.evaluation)).map(|i| pool[i])
}

/// How many of `evaluations`, in order, end within `budget` CPU seconds.
pub fn within_budget<'a>(evaluations: impl Iterator<Item = &'a Evaluation>, budget: f64) -> usize {
    let mut cpu = 0.0;
    evaluations
        .take_while(|e| {
            cpu += e.spent_cpu_seconds();
            cpu <= budget
        })
        .count()
}

/// The run's summary, read at the budget: the best verified search score (the best exact end
/// score of any task, never a sum of gains, so it is right for methods whose starts compound)
/// over the steps that ended within `budget` CPU seconds, the quality of the best of those
/// candidates and its validation. The best-so-far curve covers every step as a step function:
/// a point where the best changed, plus the first and the last step (a run of days keeps its
/// improvements, not a point per step).
pub fn summarise(
    label: RunLabel,
    trajectory: &Trajectory,
    direction: Direction,
    budget: f64,
) -> RunSummary {
    let steps = &trajectory.steps;
    let counted = within_budget(steps.iter().map(|s| &s.evaluation), budget);
    // Each step's starts count from that step on (a search may reach a start first in a later
    // round): a compounding method's later starts are its own earlier results, which must not
    // count before they end, in the best read at the budget or in the curve.
    let first_starts = steps.iter().take(1).flat_map(|s| &s.evaluation.tasks);
    let mut best = best_of(first_starts, direction, true).unwrap_or((String::new(), f64::NAN));
    let mut cpu = 0.0;
    let mut curve: Vec<CurvePoint> = Vec::new();
    let mut at_budget = best.clone();
    for (i, step) in steps.iter().enumerate() {
        cpu += step.evaluation.spent_cpu_seconds();
        // The step's starts, then its ends.
        let tasks = &step.evaluation.tasks;
        for found in [true, false]
            .into_iter()
            .filter_map(|start| best_of(tasks.iter(), direction, start))
        {
            if direction.better(&found.1, &best.1) || best.1.is_nan() {
                best = found;
            }
        }
        if i < counted {
            at_budget = best.clone();
        }
        let point = CurvePoint {
            cpu_seconds: cpu,
            wall_seconds: step.at.map_or(0.0, |at| at - trajectory.started_at),
            best: best.1,
        };
        // The previous point is dropped when it only repeats the best before it.
        if let [.., before, last] = curve.as_slice() {
            if before.best.total_cmp(&last.best).is_eq() {
                curve.pop();
            }
        }
        curve.push(point);
    }
    let chosen = chosen_candidate(&steps[..counted]);
    let validation = chosen.and_then(|s| s.validation.as_ref());
    let validation_best = validation.and_then(|v| best_of(v.tasks.iter(), direction, false));
    RunSummary {
        method: label.method,
        seed: label.seed,
        batch: label.batch,
        dir: label.dir,
        cpu_seconds: cpu,
        process_cpu_seconds: None,
        wall_seconds: curve.last().map_or(0.0, |p| p.wall_seconds),
        steps: steps.len(),
        counted_steps: counted,
        best_exact: at_budget.0,
        best: at_budget.1,
        quality: chosen.map_or(0.0, |s| s.evaluation.fitness.quality),
        validation_best_exact: validation_best.as_ref().map(|b| b.0.clone()),
        validation_best: validation_best.map(|b| b.1),
        validation_quality: validation.map(|v| v.fitness.quality),
        curve,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::hypervolume::Fitness;
    use crate::suite::Split;

    /// A step of one task from `start` to `end`, taking one CPU second.
    fn step(start: &str, end: &str) -> TrajectoryStep {
        let gain = (value(start) - value(end)).max(0.0);
        let task = TaskResult {
            task: "a/p/s1".into(),
            split: Split::Search,
            start_exact: start.into(),
            end_exact: end.into(),
            gain,
            evaluations: 1,
            work: 1.0,
            cpu_seconds: 1.0,
            wall_seconds: 1.0,
            usage: Default::default(),
            evidence: vec![],
            edits: vec![],
            best_program: None,
            construction: None,
            writer: None,
        };
        TrajectoryStep {
            evaluation: Evaluation {
                tasks: vec![task],
                fitness: Fitness {
                    quality: gain,
                    cost: 1.0,
                    latency: 1.0,
                },
                gains: vec![gain],
                reused: false,
            },
            validation: None,
            at: None,
        }
    }

    fn label() -> RunLabel {
        RunLabel {
            method: "stock".into(),
            seed: 1,
            batch: Batch::First,
            dir: String::new(),
        }
    }

    #[test]
    fn a_compounding_run_is_read_by_its_best_end_score_within_the_budget() {
        // Each step starts from the previous step's end (minimised); the third ends after the
        // budget, but its start (the second's end) was reached within it.
        let trajectory = Trajectory {
            started_at: 0.0,
            steps: vec![step("1.0", "0.9"), step("0.9", "0.7"), step("0.7", "0.6")],
        };
        let summary = summarise(label(), &trajectory, Direction::Minimize, 2.0);
        assert_eq!((summary.best_exact.as_str(), summary.best), ("0.7", 0.7));
        let curve: Vec<f64> = summary.curve.iter().map(|p| p.best).collect();
        assert_eq!(curve, vec![0.9, 0.7, 0.6]);
        // Read after the first step only, the later steps' starts must not count.
        let summary = summarise(label(), &trajectory, Direction::Minimize, 1.0);
        assert_eq!((summary.best_exact.as_str(), summary.best), ("0.9", 0.9));
        // Nor in the curve of a run read whole: each point is the best its step had reached.
        let summary = summarise(label(), &trajectory, Direction::Minimize, 3.0);
        assert_eq!(summary.best, 0.6);
        let curve: Vec<f64> = summary.curve.iter().map(|p| p.best).collect();
        assert_eq!(curve, vec![0.9, 0.7, 0.6]);
    }

    #[test]
    fn the_curve_keeps_the_first_step_each_change_of_the_best_and_the_last_step() {
        // Each step starts from the suite's start: the best changes at steps 2 and 5 only.
        let ends = ["0.9", "0.95", "0.8", "0.85", "0.8", "0.7", "0.75", "0.9"];
        let trajectory = Trajectory {
            started_at: 0.0,
            steps: ends.iter().map(|end| step("1.0", end)).collect(),
        };
        let summary = summarise(label(), &trajectory, Direction::Minimize, 100.0);
        let curve: Vec<(f64, f64)> = summary
            .curve
            .iter()
            .map(|p| (p.cpu_seconds, p.best))
            .collect();
        assert_eq!(curve, vec![(1.0, 0.9), (3.0, 0.8), (6.0, 0.7), (8.0, 0.7)]);
        assert_eq!((summary.steps, summary.cpu_seconds), (8, 8.0));
    }

    #[test]
    fn a_search_is_read_by_its_best_validated_candidate() {
        // The second step (a parent's re-run, say) has the best search quality but no
        // validation; the run's candidate is the best validated one, the third.
        let mut steps = vec![step("1.0", "0.95"), step("1.0", "0.5"), step("1.0", "0.9")];
        for (i, quality) in [(0, 11.0), (2, 12.0)] {
            let mut validation = steps[i].evaluation.clone();
            validation.fitness.quality = quality;
            steps[i].validation = Some(validation);
        }
        let trajectory = Trajectory {
            started_at: 0.0,
            steps,
        };
        let summary = summarise(label(), &trajectory, Direction::Minimize, 3.0);
        assert_eq!(summary.validation_quality, Some(12.0));
        assert!((summary.quality - 0.1).abs() < 1e-12, "{}", summary.quality);
        // Unvalidated runs are read by their best search quality, as before.
        let mut plain = trajectory.clone();
        plain.steps.iter_mut().for_each(|s| s.validation = None);
        let summary = summarise(label(), &plain, Direction::Minimize, 3.0);
        assert_eq!((summary.quality, summary.validation_quality), (0.5, None));
    }
}
