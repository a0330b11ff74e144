//! Symmetrisation: `f ← (f + reverse f) / 2`.
//!
//! The scores are invariant under reversing f, so the symmetric average is a cheap jump to
//! another basin; a program follows it with a polish and keeps it only if it helps.

use super::{Stage, StageOutcome};
use crate::optimize::Budget;
use crate::problems::Problem;
use serde::{Deserialize, Serialize};

/// Mirror the values and average (f ← (f + reverse f)/2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Symmetrize {}

impl Stage for Symmetrize {
    fn kind(&self) -> &'static str {
        "symmetrize"
    }

    fn spends_evaluations(&self) -> bool {
        false
    }

    fn run(
        &self,
        _problem: &dyn Problem,
        start: &[f64],
        _budget: &Budget,
        _seed: u64,
    ) -> StageOutcome {
        StageOutcome::plain(symmetrize(start))
    }
}

/// The average of the values and their mirror image.
pub fn symmetrize(values: &[f64]) -> Vec<f64> {
    values
        .iter()
        .zip(values.iter().rev())
        .map(|(a, b)| 0.5 * (a + b))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_is_symmetric_and_idempotent() {
        let v = vec![1.0, 2.0, 5.0, 0.0];
        let s = symmetrize(&v);
        assert_eq!(s, vec![0.5, 3.5, 3.5, 0.5]);
        assert_eq!(symmetrize(&s), s);
        let sum: f64 = v.iter().sum();
        assert_eq!(s.iter().sum::<f64>(), sum);
    }
}
