//! Evidence read off a run's trace: what went wrong (or right) when a program ran on a task.
//!
//! The optimizer-writing agent diagnoses its parent program's run with these, and the harness's
//! rules map each to the edits it prefers.

use crate::runner::RunOutcome;
use serde::{Deserialize, Serialize};

/// One diagnosable fact about a program's run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    /// The exact scores show no improvement over the start.
    NoGain,
    /// The last optimizer stage gained (almost) nothing: the program ran into a plateau.
    Stalled,
    /// Many lags sit at the maximum (within 1e-9): the surrogate's max is saturated, an
    /// equioscillation the smooth surrogate handles badly.
    ActiveSetSaturated,
    /// Many cells are exactly zero and cannot revive under the parameterisation.
    DeadCells,
    /// Some stage produced values the problem's repair had to move back onto the valid set.
    Repaired,
}

impl Evidence {
    /// Every kind of evidence, in a fixed order.
    pub const ALL: [Evidence; 5] = [
        Evidence::NoGain,
        Evidence::Stalled,
        Evidence::ActiveSetSaturated,
        Evidence::DeadCells,
        Evidence::Repaired,
    ];
}

/// Fraction of the cells that must be exactly zero for [`Evidence::DeadCells`].
pub const DEAD_CELL_FRACTION: f64 = 0.25;
/// Active-set size, as a fraction of the number of cells, for [`Evidence::ActiveSetSaturated`].
pub const SATURATED_FRACTION: f64 = 0.02;
/// A last stage whose relative gain is below this counts as [`Evidence::Stalled`].
pub const STALL_RELATIVE_GAIN: f64 = 1e-9;

/// The evidence in one run's outcome (sorted, without repeats).
pub fn diagnose(outcome: &RunOutcome) -> Vec<Evidence> {
    let mut found = Vec::new();
    if !outcome.improved {
        found.push(Evidence::NoGain);
    }
    let optimizer_stages: Vec<_> = outcome
        .trace
        .stages
        .iter()
        .filter(|s| s.evaluations > 0)
        .collect();
    if let Some(last) = optimizer_stages.last() {
        let scale = last.score_before.abs().max(f64::MIN_POSITIVE);
        if last.gain.abs() <= STALL_RELATIVE_GAIN * scale {
            found.push(Evidence::Stalled);
        }
        let n = last.n.max(1) as f64;
        if last.active_set as f64 >= SATURATED_FRACTION * n {
            found.push(Evidence::ActiveSetSaturated);
        }
        if last.dead_cells as f64 >= DEAD_CELL_FRACTION * n {
            found.push(Evidence::DeadCells);
        }
    }
    if outcome.trace.stages.iter().any(|s| s.repaired > 0) {
        found.push(Evidence::Repaired);
    }
    found.sort();
    found.dedup();
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::{StageRecord, Trace};
    use num_rational::BigRational;

    fn stage(gain: f64, n: usize, active: usize, dead: usize, repaired: usize) -> StageRecord {
        StageRecord {
            path: "steps[0]".into(),
            kind: "lbfgs".into(),
            score_before: 1.5,
            score_after: 1.5 - gain,
            gain,
            evaluations: 10,
            seconds: 0.1,
            cpu_seconds: 0.1,
            beta: None,
            n,
            active_set: active,
            dead_cells: dead,
            repaired,
            note: None,
        }
    }

    fn outcome(improved: bool, stages: Vec<StageRecord>) -> RunOutcome {
        RunOutcome {
            best: vec![1.0],
            start_exact: BigRational::from_integer(1.into()),
            best_exact: BigRational::from_integer(1.into()),
            improved,
            trace: Trace {
                stages,
                ..Trace::default()
            },
            evaluations: 10,
            seconds: 0.1,
            interrupted: false,
            start_over_limit: false,
        }
    }

    #[test]
    fn each_kind_of_evidence_is_read_off_its_own_symptom() {
        let healthy = outcome(true, vec![stage(1e-3, 100, 1, 0, 0)]);
        assert!(diagnose(&healthy).is_empty());
        assert_eq!(
            diagnose(&outcome(false, vec![stage(1e-3, 100, 1, 0, 0)])),
            vec![Evidence::NoGain]
        );
        assert_eq!(
            diagnose(&outcome(true, vec![stage(0.0, 100, 1, 0, 0)])),
            vec![Evidence::Stalled]
        );
        assert_eq!(
            diagnose(&outcome(true, vec![stage(1e-3, 100, 5, 0, 0)])),
            vec![Evidence::ActiveSetSaturated]
        );
        assert_eq!(
            diagnose(&outcome(true, vec![stage(1e-3, 100, 1, 40, 0)])),
            vec![Evidence::DeadCells]
        );
        assert_eq!(
            diagnose(&outcome(true, vec![stage(1e-3, 100, 1, 0, 3)])),
            vec![Evidence::Repaired]
        );
    }
}
