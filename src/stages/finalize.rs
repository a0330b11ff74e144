//! The finalize stage: zero values below a threshold and project onto the problem's rules.
//! (The runner verifies the result exactly before reporting any improvement.)

use super::{non_negative, Stage, StageOutcome, Tunable, TuneRange};
use crate::optimize::Budget;
use crate::problems::Problem;
use serde::{Deserialize, Serialize};

/// The final stage: zero values below a threshold, check constraints, verify exactly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finalize {
    /// Absolute threshold below which values become exactly zero (0 = keep all).
    #[serde(default)]
    pub zero_below: f64,
}

/// The tunable parameters of the final stage.
const TUNABLE: &[Tunable] = &[Tunable::new("zero_below", TuneRange::Positive)];

impl Stage for Finalize {
    fn kind(&self) -> &'static str {
        "finalize"
    }

    fn spends_evaluations(&self) -> bool {
        false
    }

    fn check(&self, path: &str) -> Result<(), String> {
        non_negative(path, "zero_below", self.zero_below)
    }

    fn tunable(&self) -> &'static [Tunable] {
        TUNABLE
    }

    /// `start` with |values| below `zero_below` set to 0 and the problem's repair applied.
    fn run(
        &self,
        problem: &dyn Problem,
        start: &[f64],
        _budget: &Budget,
        _seed: u64,
    ) -> StageOutcome {
        let mut values: Vec<f64> = start
            .iter()
            .map(|&x| if x.abs() < self.zero_below { 0.0 } else { x })
            .collect();
        problem.repair(&mut values);
        StageOutcome::plain(values)
    }
}
