//! Second autocorrelation inequality: maximise `L2²/(L1·L∞)` of `c = g∗g`, `g = max(f, 0)`.
//!
//! With `m = 2n − 1` coefficients, `h = 1/(m+1)`, the arena's piecewise-linear quadrature gives
//! `A = L2² = (h/3)·(2·Σc_k² + Σc_k·c_(k+1))` (zero end points), `L = L1 = Σc/(m+1)` and
//! `L∞ = max c`. The optimizers pass `f ≥ 0`, so the surrogate takes `g = f` (no clipping; then
//! `c ≥ 0` and `|c| = c`).
//!
//! Surrogate, to minimise: `V = −A/(L²·M)` with `M = SM(u)`, `u = c/L` — the smooth max applied to
//! the unit-sized ratios `c_k/L1` (so `L·M` smooths `L∞`, and the log-sum-exp bias stays
//! `≤ ln(m)/β` on the score, since `max u ≥ 1`). For the p-norm, `L·SM(c/L) = SM(c)` exactly.
//! Gradient with respect to `c`, `w = ∂M/∂u`:
//! `∂V/∂c_k = −A'_k/(L²M) + 2A/(L³M(m+1)) + A/(L²M²)·(w_k − Σ_j w_j u_j/(m+1))/L`,
//! `A'_k = (h/3)(4c_k + c_(k−1) + c_(k+1))`; then `∂V/∂f = 2·(∂V/∂c ⋆ f)` through the FFT
//! adjoint.

use crate::fast::compensated_sum;
use crate::objective::fft::ConvolutionWorkspace;
use crate::objective::smooth_max::weighted_sum;
use crate::objective::{Objective, RatioObjective, SmoothMax};

/// The second problem's surrogate `−L2²/(L1·L·SM(c/L1))` (`second-autocorrelation-inequality`).
pub struct SecondAutocorrelationObjective {
    terms: RatioTerms,
    /// `max(f, 0)` for [`score`](Objective::score) (length `n`).
    clipped: Vec<f64>,
}

impl SecondAutocorrelationObjective {
    /// Workspaces for arrays of length `n ≥ 1`.
    pub fn new(n: usize, smooth: SmoothMax) -> Self {
        SecondAutocorrelationObjective {
            terms: RatioTerms::new(n, smooth),
            clipped: vec![0.0; n],
        }
    }
}

impl Objective for SecondAutocorrelationObjective {
    /// `V = −N/D̃ = −A/(L²·SM(c/L))` and its gradient; assumes `f ≥ 0` with a positive sum.
    fn value_and_gradient(&mut self, f: &[f64], grad: &mut [f64]) -> f64 {
        assert_eq!(grad.len(), f.len());
        let (numerator, denominator) = self.terms.parts(f);
        // ∇(−N/D̃) = −∇N/D̃ + N·∇D̃/D̃².
        self.terms.gradient(
            -1.0 / denominator,
            numerator / (denominator * denominator),
            grad,
        );
        -numerator / denominator
    }

    /// The arena's float64 score of `max(f, 0)` (positive; not negated).
    fn score(&mut self, f: &[f64]) -> f64 {
        self.clipped
            .iter_mut()
            .zip(f)
            .for_each(|(g, x)| *g = x.max(0.0));
        let c = self.terms.convolution(&self.clipped);
        let m = c.len();
        let h = 1.0 / (m as f64 + 1.0);
        // As the arena: interval widths from the grid linspace(−1/2, 1/2, m + 2).
        let grid = |j: usize| if j == m + 1 { 0.5 } else { j as f64 * h - 0.5 };
        let y = |j: usize| if j == 0 || j > m { 0.0 } else { c[j - 1] };
        let l2_squared = compensated_sum((0..=m).map(|j| {
            let (y1, y2) = (y(j), y(j + 1));
            ((grid(j + 1) - grid(j)) / 3.0) * (y1 * y1 + y1 * y2 + y2 * y2)
        }));
        let l1 = compensated_sum(c.iter().map(|x| x.abs())) / (m as f64 + 1.0);
        let linf = c.iter().fold(0.0f64, |acc, x| acc.max(x.abs()));
        l2_squared / (l1 * linf)
    }
}

/// Numerator `N = L2²` and smoothed denominator `D̃ = L1²·SM(c/L1)` of the second problem's
/// score for `f ≥ 0`, `c = f∗f`, with their gradients, through a preallocated FFT workspace.
///
/// With `m = 2n − 1` lags, `I = m + 1` intervals and `h = 1/I`:
/// `N = (h/3)·(2·Σc_k² + Σc_k·c_(k+1))`, `∂N/∂c_k = (h/3)(4c_k + c_(k−1) + c_(k+1))`;
/// `L = Σc/I`, `u = c/L`, `M = SM(u)`, `w = ∂SM/∂u`, `D̃ = L²M`,
/// `∂D̃/∂c_k = 2LM/I + L·(w_k − Σ_j w_j u_j/I)`; then `∂/∂f = 2·(∂/∂c ⋆ f)`.
pub struct RatioTerms {
    smooth: SmoothMax,
    workspace: ConvolutionWorkspace,
    /// `c = f∗f` (length `2n − 1`).
    conv: Vec<f64>,
    /// `u = c/L`, then the gradient with respect to `c` (length `2n − 1`).
    unit: Vec<f64>,
    /// `∂SM/∂u` (length `2n − 1`).
    weights: Vec<f64>,
    /// `L1` at the last [`parts`](Self::parts) point.
    l1: f64,
    /// `SM(c/L1)` at the last [`parts`](Self::parts) point.
    sm: f64,
}

impl RatioTerms {
    /// Workspaces for arrays of length `n ≥ 1`, with the smooth max `smooth` inside `D̃`.
    pub fn new(n: usize, smooth: SmoothMax) -> Self {
        RatioTerms {
            smooth,
            workspace: ConvolutionWorkspace::new(n),
            conv: vec![0.0; 2 * n - 1],
            unit: vec![0.0; 2 * n - 1],
            weights: vec![0.0; 2 * n - 1],
            l1: f64::NAN,
            sm: f64::NAN,
        }
    }

    /// `(N, D̃)` at `f` (assumed `≥ 0` with a positive sum), keeping what
    /// [`gradient`](Self::gradient) needs.
    pub fn parts(&mut self, f: &[f64]) -> (f64, f64) {
        self.workspace.autoconvolve(f, &mut self.conv);
        let (numerator, l1) = numerator_and_l1(&self.conv);
        let inv_l1 = 1.0 / l1;
        self.unit
            .iter_mut()
            .zip(&self.conv)
            .for_each(|(u, ck)| *u = ck * inv_l1);
        let sm = self.smooth.value_and_weights(&self.unit, &mut self.weights);
        self.l1 = l1;
        self.sm = sm;
        (numerator, l1 * l1 * sm)
    }

    /// The gradient of `a·N + b·D̃` with respect to `f` at the point of the last
    /// [`parts`](Self::parts) call, into `grad`.
    pub fn gradient(&mut self, a: f64, b: f64, grad: &mut [f64]) {
        let c = &self.conv;
        let m = c.len();
        let intervals = (m + 1) as f64;
        let (l1, sm) = (self.l1, self.sm);
        let weighted = weighted_sum(&self.weights, &self.unit);
        let quad = a / (3.0 * intervals);
        let constant = b * (2.0 * l1 * sm / intervals - l1 * weighted / intervals);
        let per_weight = b * l1;
        let at = |prev: f64, ck: f64, next: f64, wk: f64| {
            quad * (4.0 * ck + prev + next) + constant + per_weight * wk
        };
        // The interior without per-lag branches (so it vectorises), then the two ends, whose
        // missing neighbour is 0.
        for ((u, window), &wk) in self.unit[1..]
            .iter_mut()
            .zip(c.windows(3))
            .zip(&self.weights[1..])
        {
            *u = at(window[0], window[1], window[2], wk);
        }
        let next = if m > 1 { c[1] } else { 0.0 };
        self.unit[0] = at(0.0, c[0], next, self.weights[0]);
        if m > 1 {
            self.unit[m - 1] = at(c[m - 2], c[m - 1], 0.0, self.weights[m - 1]);
        }
        self.workspace.autoconvolution_adjoint(&self.unit, grad);
    }

    /// `(N, D̃)` at `f`, writing the gradient of `a·N + b·D̃` with respect to `f` into `grad`.
    pub fn evaluate(&mut self, f: &[f64], a: f64, b: f64, grad: &mut [f64]) -> (f64, f64) {
        assert_eq!(grad.len(), f.len());
        let parts = self.parts(f);
        self.gradient(a, b, grad);
        parts
    }

    /// `c = f∗f` (length `2n − 1`), in the workspace's buffer.
    pub fn convolution(&mut self, f: &[f64]) -> &[f64] {
        self.workspace.autoconvolve(f, &mut self.conv);
        &self.conv
    }

    /// `(N, L1·L∞)` at `f ≥ 0` without smoothing or gradient.
    pub fn true_parts(&mut self, f: &[f64]) -> (f64, f64) {
        self.workspace.autoconvolve(f, &mut self.conv);
        let (numerator, l1) = numerator_and_l1(&self.conv);
        let peak = self.conv.iter().fold(0.0f64, |m, &x| m.max(x.abs()));
        (numerator, l1 * peak)
    }
}

impl RatioObjective for RatioTerms {
    fn evaluate(&mut self, f: &[f64], a: f64, b: f64, grad: &mut [f64]) -> (f64, f64) {
        RatioTerms::evaluate(self, f, a, b, grad)
    }

    fn true_parts(&mut self, f: &[f64]) -> (f64, f64) {
        RatioTerms::true_parts(self, f)
    }
}

/// `N = (h/3)(2Σc² + Σc_k c_(k+1))` and `L1 = Σc/(m+1)` of the convolution `c`.
fn numerator_and_l1(c: &[f64]) -> (f64, f64) {
    let m = c.len();
    let intervals = (m + 1) as f64;
    let mut squares = 0.0;
    let mut neighbours = 0.0;
    let mut total = 0.0;
    for k in 0..m {
        squares += c[k] * c[k];
        total += c[k];
        if k + 1 < m {
            neighbours += c[k] * c[k + 1];
        }
    }
    (
        (2.0 * squares + neighbours) / (3.0 * intervals),
        total / intervals,
    )
}

#[cfg(test)]
mod tests {
    use crate::objective::testing::*;

    const SLUG: &str = "second-autocorrelation-inequality";

    #[test]
    fn gradient_matches_central_differences() {
        for (seed, n) in [5usize, 17, 64, 200].into_iter().enumerate() {
            let f = random(n, 60 + seed as u64, 0.05, 1.0);
            for smooth in smooth_maxima() {
                check_gradient(SLUG, &f, smooth, 1e-5);
            }
        }
    }

    #[test]
    fn score_matches_the_crate_fast_score() {
        for n in [1usize, 2, 5, 17, 64, 200, 3000] {
            check_score(SLUG, &random(n, 70 + n as u64, 0.0, 1.0));
        }
        // Slightly negative values are clipped, as the arena does.
        let mut f = random(100, 71, 0.0, 1.0);
        f[3] = -5e-7;
        f[50] = -1e-6;
        check_score(SLUG, &f);
    }

    #[test]
    fn log_sum_exp_approaches_the_negated_score_from_above() {
        for n in [5usize, 64, 200] {
            check_lse_bias(SLUG, &random(n, 80 + n as u64, 0.0, 1.0), true);
        }
    }

    #[test]
    fn value_and_gradient_does_the_documented_number_of_ffts() {
        for n in [1usize, 5, 200] {
            check_fft_count(SLUG, &random(n, 120 + 2 * n as u64, 0.0, 1.0));
        }
    }

    #[test]
    fn n_30000_runs_in_milliseconds() {
        check_fast_at_30000(SLUG, &random(30_000, 7, 0.0, 1.0));
    }
}
