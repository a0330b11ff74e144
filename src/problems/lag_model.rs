//! The lag model of a score that is, at a fixed sum of the values, the maximum over lags of a
//! quadratic function of the values: what the sequential LP stage linearises
//! (`crate::stages::sequential_lp`). The first problem (`(f∗f)_k`) and the Erdős problem
//! (`C_L = Σ_i λh_(i+L)·(1 − λh_i)`) give one each, in their folders.

/// The lags of a score, their gradients, and the problem's box on the values.
pub trait LagModel: Send + Sync {
    /// The lag values whose maximum the score is (up to a positive factor fixed by the sum).
    fn lags(&self, x: &[f64]) -> Vec<f64>;

    /// The factor `λ` the lags' gradients use at `x` (the Erdős rescale `n/(2Σh)`; 1 otherwise).
    fn factor(&self, x: &[f64]) -> f64;

    /// `∂lag_k/∂x_j` at `x`, with `λ = factor(x)`, lag index `k` as in [`LagModel::lags`].
    fn gradient_entry(&self, x: &[f64], lambda: f64, k: usize, j: usize) -> f64;

    /// The natural size of a lag's gradient at `x` (scales the LP's rows).
    fn row_scale(&self, x: &[f64]) -> f64;

    /// The upper limit of a value at `x` (infinite when there is none).
    fn upper(&self, x: &[f64]) -> f64;

    /// Bounds of a step `δ_j` at trust radius `r`: the problem's box at `x` (with `upper`),
    /// intersected with `[−r, r]`.
    fn bounds(&self, x: &[f64], upper: f64, r: f64, j: usize) -> (f64, f64);

    /// `x + δ` (pairs `(j, δ_j)`) brought back into the box exactly (rounding of the LP and of
    /// the new sum).
    fn finish(&self, x: &[f64], delta: &[(usize, f64)]) -> Vec<f64>;
}
