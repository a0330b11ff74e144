//! Trimming: drop the zero cells at both ends.
//!
//! The second problem's score depends only on the sequence `f∗f`, not on the grid width (its
//! `1/(m+1)` factors cancel), so trimming keeps that score exactly; a block repeat afterwards
//! then refines the support alone (on the AlphaEvolve start, the last 18,246 of 50,000 cells are
//! zero). The other problems' scores depend on `n`: there it is a different construction.

use super::{Stage, StageOutcome};
use crate::optimize::Budget;
use crate::problems::Problem;
use serde::{Deserialize, Serialize};

/// Drop the zero cells at both ends (keeps the second problem's score exactly).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trim {}

impl Stage for Trim {
    fn kind(&self) -> &'static str {
        "trim"
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
        StageOutcome::plain(trim(start))
    }
}

/// `values` without the zero cells at both ends (unchanged if every cell is zero).
pub fn trim(values: &[f64]) -> Vec<f64> {
    match (
        values.iter().position(|&x| x != 0.0),
        values.iter().rposition(|&x| x != 0.0),
    ) {
        (Some(first), Some(last)) => values[first..=last].to_vec(),
        _ => values.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problems::by_slug;
    use crate::stages::resample::block_repeat;

    #[test]
    fn trim_drops_end_zeros_and_keeps_the_second_score_exactly() {
        assert_eq!(trim(&[0.0, 0.0, 1.5, 0.0, 2.0, 0.0]), vec![1.5, 0.0, 2.0]);
        assert_eq!(trim(&[0.0, 0.0]), vec![0.0, 0.0]);
        assert_eq!(trim(&[3.0]), vec![3.0]);
        let p = by_slug("second-autocorrelation-inequality").unwrap();
        let mut values = vec![0.0; 7];
        values.extend((0..60).map(|i| ((i * 37) % 11) as f64 / 7.0));
        values.extend([0.0; 30]);
        let trimmed = trim(&values);
        assert_eq!(trimmed.len(), 59, "the first of the 60 is 0 too");
        assert_eq!(p.score_exact(&values), p.score_exact(&trimmed));
        assert_eq!(
            p.score_exact(&values),
            p.score_exact(&block_repeat(&trimmed, 3))
        );
    }
}
