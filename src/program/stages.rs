//! The optimizer stages a program can name, each with its typed parameters and their defaults.
//!
//! These are the parameters as a program file states them; executing them is the runner's job.

use serde::{Deserialize, Serialize};

/// How free variables map to construction values (see DOMAIN.md: f = v² for f ≥ 0, a sigmoid
/// for 0 ≤ h ≤ 1, raw values for the signed problem).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParameterisationName {
    /// f = v².
    Square,
    /// f = exp(v).
    Exp,
    /// h = sigmoid(v), then the arena's rescale.
    Sigmoid,
    /// f = v.
    Raw,
}

impl ParameterisationName {
    /// The parameterisation this name stands for.
    pub fn build(self) -> crate::optimize::Parameterisation {
        use crate::optimize::Parameterisation as P;
        match self {
            ParameterisationName::Square => P::Square,
            ParameterisationName::Exp => P::Exp,
            ParameterisationName::Sigmoid => P::Sigmoid,
            ParameterisationName::Raw => P::Raw,
        }
    }
}

/// Which smooth surrogate replaces the max over lags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SmoothMaxName {
    /// Log-sum-exp with temperature β.
    LogSumExp,
    /// p-norm with exponent p = β.
    PNorm,
}

impl SmoothMaxName {
    /// The smooth max with temperature (or exponent) `beta`.
    pub fn build(self, beta: f64) -> crate::objective::SmoothMax {
        match self {
            SmoothMaxName::LogSumExp => crate::objective::SmoothMax::LogSumExp { beta },
            SmoothMaxName::PNorm => crate::objective::SmoothMax::PNorm { p: beta },
        }
    }
}

fn default_betas() -> Vec<f64> {
    vec![1e2, 1e3, 1e4, 1e5, 1e6]
}
fn default_history() -> usize {
    200
}
fn default_iterations() -> u64 {
    2_000
}
fn default_lr() -> f64 {
    1e-2
}
fn default_noise() -> f64 {
    1e-3
}
fn default_factor() -> usize {
    2
}
fn default_relative_noise() -> f64 {
    1e-6
}
fn default_active_lags() -> usize {
    100
}
fn default_trust_radius() -> f64 {
    1e-3
}
fn default_fraction() -> f64 {
    0.01
}
fn default_zero_below() -> f64 {
    0.0
}

/// L-BFGS on the smooth surrogate, one run per β of the cascade, warm-started.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LbfgsParams {
    /// Parameterisation of the values.
    pub parameterisation: ParameterisationName,
    /// Smooth max used in the surrogate.
    #[serde(default = "smooth_default")]
    pub smooth_max: SmoothMaxName,
    /// The β cascade (raised from low to high).
    #[serde(default = "default_betas")]
    pub betas: Vec<f64>,
    /// L-BFGS history length.
    #[serde(default = "default_history")]
    pub history: usize,
    /// Iterations per β.
    #[serde(default = "default_iterations")]
    pub iterations: u64,
}

fn smooth_default() -> SmoothMaxName {
    SmoothMaxName::LogSumExp
}

/// Adam with gradient noise and elitist restarts (exploration).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdamParams {
    /// Parameterisation of the values.
    pub parameterisation: ParameterisationName,
    /// Temperature of the log-sum-exp surrogate.
    #[serde(default = "adam_beta")]
    pub beta: f64,
    /// Learning rate.
    #[serde(default = "default_lr")]
    pub learning_rate: f64,
    /// Standard deviation of the gradient noise, relative to the gradient's RMS.
    #[serde(default = "default_noise")]
    pub gradient_noise: f64,
    /// Iterations.
    #[serde(default = "default_iterations")]
    pub iterations: u64,
    /// Iterations without a new best true score after which Adam restarts (fresh moments) from
    /// the best point.
    #[serde(default = "adam_patience")]
    pub patience: u64,
}

fn adam_patience() -> u64 {
    200
}

fn adam_beta() -> f64 {
    1e3
}

/// Dinkelbach's method for the ratio objective (second problem): maximise N − λD, λ ← N/D.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DinkelbachParams {
    /// Outer λ updates.
    #[serde(default = "dinkelbach_rounds")]
    pub rounds: usize,
    /// The inner L-BFGS run.
    pub inner: LbfgsParams,
}

fn dinkelbach_rounds() -> usize {
    5
}

/// Sequential LP over the most active lags inside a trust region (first and Erdős problems).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LpParams {
    /// How many of the largest lags enter the LP.
    #[serde(default = "default_active_lags")]
    pub active_lags: usize,
    /// Trust-region radius (max-norm of the step).
    #[serde(default = "default_trust_radius")]
    pub trust_radius: f64,
    /// LP solves.
    #[serde(default = "lp_steps")]
    pub steps: usize,
}

fn lp_steps() -> usize {
    20
}

/// How a resolution change maps samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResampleMethod {
    /// Each sample repeated k times (score-preserving).
    BlockRepeat,
    /// Linear interpolation onto the finer grid.
    Linear,
    /// Averages of k consecutive samples (coarser grid).
    Pool,
}

/// A change of resolution by an integer factor, with tie-breaking noise.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResampleParams {
    /// How samples map to the new grid.
    pub method: ResampleMethod,
    /// The integer factor (finer for block_repeat/linear, coarser for pool).
    #[serde(default = "default_factor")]
    pub factor: usize,
    /// Noise added afterwards, relative to the values' spread.
    #[serde(default = "default_relative_noise")]
    pub noise: f64,
}

/// A random perturbation: multiplicative noise on a fraction of the support.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerturbParams {
    /// Fraction of the cells perturbed (1.0 = all).
    #[serde(default = "default_fraction")]
    pub fraction: f64,
    /// Relative size of the multiplicative noise.
    #[serde(default = "perturb_scale")]
    pub scale: f64,
}

fn perturb_scale() -> f64 {
    0.01
}

/// Prune–regrow: zero the smallest cells, re-optimise, regrow.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PruneRegrowParams {
    /// Fraction of the support zeroed per level.
    #[serde(default = "default_fraction")]
    pub fraction: f64,
    /// Number of levels.
    #[serde(default = "prune_levels")]
    pub levels: usize,
}

fn prune_levels() -> usize {
    3
}

/// The final stage: zero values below a threshold, check constraints, verify exactly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinalizeParams {
    /// Absolute threshold below which values become exactly zero (0 = keep all).
    #[serde(default = "default_zero_below")]
    pub zero_below: f64,
}
