//! The finalize stage: zero values below a threshold and project onto the problem's rules.
//! (The runner verifies the result exactly before reporting any improvement.)

use crate::problems::Problem;
use crate::program::FinalizeParams;

/// `start` with |values| below `zero_below` set to 0 and the problem's repair applied.
pub fn run(problem: &dyn Problem, start: &[f64], params: &FinalizeParams) -> Vec<f64> {
    let mut values: Vec<f64> = start
        .iter()
        .map(|&x| if x.abs() < params.zero_below { 0.0 } else { x })
        .collect();
    problem.repair(&mut values);
    values
}
