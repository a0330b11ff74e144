//! Optimizer stages, one file each. Some transform a construction directly (resolution changes,
//! perturbations, symmetrisation: small pure functions of the values and a seeded RNG); the
//! optimizing ones take a start, their parameters, a [`Budget`](crate::optimize::Budget) whose
//! evaluation counter they charge once per objective evaluation, and a seed, and return a
//! [`StageOutcome`]. The runner keeps the best construction across stages and verifies it.

pub mod adam;
pub mod dinkelbach;
pub mod finalize;
pub mod lbfgs;
pub mod perturb;
pub mod prune_regrow;
pub mod resample;
pub mod sequential_lp;
pub mod symmetrize;

/// What an optimizing stage hands back to the runner.
#[derive(Clone, Debug)]
pub struct StageOutcome {
    /// The stage's best construction (any length the stage chose).
    pub values: Vec<f64>,
    /// The last smoothing temperature used, if the stage used one (for the trace).
    pub beta: Option<f64>,
}
