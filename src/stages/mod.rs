//! Optimizer stages, one file each: the stage's parameters as a program file states them (a serde
//! struct, with their defaults) and its implementation behind the [`Stage`] trait.
//!
//! Some stages transform a construction directly (resolution changes, perturbations,
//! symmetrisation: small pure functions of the values and a seeded RNG); the optimizing ones take
//! a start, a [`Budget`] whose evaluation counter they charge once per objective evaluation, and a
//! seed. Every stage returns a [`StageOutcome`]; the runner keeps the best construction across
//! stages, records what each contributed to the trace, and verifies the best.

pub mod adam;
pub mod command;
pub mod dinkelbach;
pub mod finalize;
pub mod lag_line_search;
pub mod lbfgs;
pub mod lp_solver;
pub mod perturb;
pub mod prune;
pub mod prune_regrow;
pub mod refine;
pub mod resample;
pub mod revive;
pub mod segment_moves;
pub mod sequential_lp;
pub mod symmetrize;
pub mod trim;

use crate::optimize::Budget;
use crate::problems::{FastScore, Problem};

/// What a stage hands back to the runner.
#[derive(Clone, Debug)]
pub struct StageOutcome {
    /// The stage's best construction (any length the stage chose).
    pub values: Vec<f64>,
    /// The last smoothing temperature used, if the stage used one (its contribution to the
    /// trace's stage record).
    pub beta: Option<f64>,
    /// What the user should know about the stage's run (e.g. why an external program's output
    /// was refused); the runner copies it into the trace's stage record.
    pub note: Option<String>,
}

impl StageOutcome {
    /// An outcome without a temperature.
    pub fn plain(values: Vec<f64>) -> StageOutcome {
        StageOutcome {
            values,
            beta: None,
            note: None,
        }
    }
}

/// How a tuning edit may move a numeric parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TuneRange {
    /// A positive number (or every number of a list), scaled freely.
    Positive,
    /// A fraction, scaled then clamped to `[1e-6, 1]`.
    Fraction,
    /// A count, scaled and rounded, in `[1, max]` (and changed by at least one); a program
    /// stating more than `max` is refused when it is read.
    Count(u64),
}

/// A parameter a tuning edit may scale: its key (dotted for a nested table, as in
/// `inner.betas`) and its range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tunable {
    /// The key as written in program files.
    pub key: &'static str,
    /// How it may move.
    pub range: TuneRange,
}

impl Tunable {
    /// A tunable parameter.
    pub const fn new(key: &'static str, range: TuneRange) -> Tunable {
        Tunable { key, range }
    }
}

/// One optimizer stage with its parameters.
pub trait Stage {
    /// The `kind` name of the stage in program files.
    fn kind(&self) -> &'static str;

    /// Whether the stage spends objective evaluations (and so takes a share of the budget), rather
    /// than reshaping the values directly.
    fn spends_evaluations(&self) -> bool;

    /// Value checks serde cannot express; the message names `path.key` (`path` is the step's
    /// path, as `steps[2].body[0]`). A stage without parameters has nothing to check.
    fn check(&self, _path: &str) -> Result<(), String> {
        Ok(())
    }

    /// The numeric parameters a tuning edit may scale, and their ranges (none by default).
    fn tunable(&self) -> &'static [Tunable] {
        &[]
    }

    /// Runs the stage from `start` (valid for `problem`) under `budget` with `seed`.
    fn run(&self, problem: &dyn Problem, start: &[f64], budget: &Budget, seed: u64)
        -> StageOutcome;
}

/// Whether `candidate` is valid for `problem` and its true score strictly better than that of
/// `than` (valid): decided by the float64 scores where they differ by more than their error
/// bounds, else by the exact scores. Never by a surrogate.
pub fn truly_better(problem: &dyn Problem, candidate: &[f64], than: &[f64]) -> bool {
    if problem.check(candidate).is_err() {
        return false;
    }
    let (a, b) = (problem.score_fast(candidate), problem.score_fast(than));
    certainly_better(problem, &a, &b).unwrap_or_else(|| {
        let direction = problem.spec().direction;
        direction.better(&problem.score_exact(candidate), &problem.score_exact(than))
    })
}

/// Whether the construction scored `a` is better than the one scored `b` by their float64
/// scores, when the difference exceeds both error bounds; `None` when only the exact scores can
/// tell.
pub fn certainly_better(problem: &dyn Problem, a: &FastScore, b: &FastScore) -> Option<bool> {
    let gain = problem.spec().direction.gain(a.value, b.value);
    let margin = a.error_bound + b.error_bound;
    if !gain.is_finite() || gain.abs() <= margin {
        None
    } else {
        Some(gain > 0.0)
    }
}

/// `Ok` if `x` is a finite positive number, else the error naming `path.key`.
pub fn positive(path: &str, key: &str, x: f64) -> Result<(), String> {
    if x.is_finite() && x > 0.0 {
        Ok(())
    } else {
        Err(format!("{path}.{key}: must be a positive number, got {x}"))
    }
}

/// `Ok` if `betas` is a non-empty list of positive numbers, else the error naming `path.key` (or
/// `path.key[i]`, the first bad entry).
pub fn betas(path: &str, key: &str, betas: &[f64]) -> Result<(), String> {
    if betas.is_empty() {
        return Err(format!("{path}.{key}: needs at least one β"));
    }
    for (i, &b) in betas.iter().enumerate() {
        positive(path, &format!("{key}[{i}]"), b)?;
    }
    Ok(())
}

/// `Ok` if `x` is in `[0, 1]`, else the error naming `path.key`.
pub fn fraction(path: &str, key: &str, x: f64) -> Result<(), String> {
    if (0.0..=1.0).contains(&x) {
        Ok(())
    } else {
        Err(format!("{path}.{key}: must be in [0, 1], got {x}"))
    }
}

/// `Ok` if `x` is a finite number ≥ 0, else the error naming `path.key`.
pub fn non_negative(path: &str, key: &str, x: f64) -> Result<(), String> {
    if x >= 0.0 && x.is_finite() {
        Ok(())
    } else {
        Err(format!("{path}.{key}: must be ≥ 0"))
    }
}

/// `Ok` if `k ≥ 1`, else the error naming `path.key`.
pub fn at_least_one(path: &str, key: &str, k: usize) -> Result<(), String> {
    if k >= 1 {
        Ok(())
    } else {
        Err(format!("{path}.{key}: must be at least 1"))
    }
}
