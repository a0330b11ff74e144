//! Continuous optimisation of constructions, independent of any particular objective.
//!
//! An objective is a closure `(v, grad) ↦ value` on free variables `v`. Pieces, one concept each:
//! - [`param`]: parameterisations `f = φ(v)` (square, exp, sigmoid, raw) with their chain rule;
//! - [`mask`]: frozen cells (gradient entries zeroed);
//! - [`budget`]: evaluation and wall-clock limits shared across stages;
//! - [`lbfgs`]: in-place L-BFGS with a strong-Wolfe line search, keeping the best point;
//! - [`cascade`](mod@cascade): a β cascade of L-BFGS runs, each warm-started from the previous best.

pub mod budget;
pub mod cascade;
pub mod lbfgs;
pub mod mask;
pub mod param;

#[cfg(test)]
mod lbfgs_tests;

pub use budget::{Budget, Exhaustion};
pub use cascade::{cascade, CascadeOutcome, CascadeSplit, CascadeStage};
pub use lbfgs::{minimise, LbfgsOutcome, LbfgsSettings};
pub use mask::Mask;
pub use param::Parameterisation;
