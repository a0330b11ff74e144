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

use super::fft::ConvolutionWorkspace;
use super::{Objective, SmoothMax};
use crate::fast::compensated_sum;

/// The second problem's surrogate `−L2²/(L1·L·SM(c/L1))` (`second-autocorrelation-inequality`).
pub struct SecondAutocorrelationObjective {
    smooth: SmoothMax,
    workspace: ConvolutionWorkspace,
    /// `c = f∗f` (length `2n − 1`).
    conv: Vec<f64>,
    /// `u = c/L1`, then `∂V/∂c` (length `2n − 1`).
    unit: Vec<f64>,
    /// `∂SM/∂u` (length `2n − 1`).
    weights: Vec<f64>,
    /// `max(f, 0)` for [`score`](Objective::score) (length `n`).
    clipped: Vec<f64>,
}

impl SecondAutocorrelationObjective {
    /// Workspaces for arrays of length `n ≥ 1`.
    pub fn new(n: usize, smooth: SmoothMax) -> Self {
        SecondAutocorrelationObjective {
            smooth,
            workspace: ConvolutionWorkspace::new(n),
            conv: vec![0.0; 2 * n - 1],
            unit: vec![0.0; 2 * n - 1],
            weights: vec![0.0; 2 * n - 1],
            clipped: vec![0.0; n],
        }
    }
}

impl Objective for SecondAutocorrelationObjective {
    /// `V = −A/(L²·SM(c/L))` and its gradient; assumes `f ≥ 0` with a positive sum.
    fn value_and_gradient(&mut self, f: &[f64], grad: &mut [f64]) -> f64 {
        assert_eq!(grad.len(), f.len());
        self.workspace.autoconvolve(f, &mut self.conv);
        let c = &self.conv;
        let m = c.len();
        let intervals = (m + 1) as f64;
        let h = 1.0 / intervals;
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
        let a = (h / 3.0) * (2.0 * squares + neighbours);
        let l1 = total / intervals;
        let inv_l1 = 1.0 / l1;
        self.unit
            .iter_mut()
            .zip(c)
            .for_each(|(u, ck)| *u = ck * inv_l1);
        let sm = self.smooth.value_and_weights(&self.unit, &mut self.weights);
        let weighted: f64 = self
            .weights
            .iter()
            .zip(&self.unit)
            .map(|(w, u)| w * u)
            .sum();
        let value = -a / (l1 * l1 * sm);
        // ∂V/∂c_k into `unit`.
        let quad = -(h / 3.0) / (l1 * l1 * sm);
        let constant = 2.0 * a / (l1 * l1 * l1 * sm * intervals)
            - a / (l1 * l1 * l1 * sm * sm) * weighted / intervals;
        let per_weight = a / (l1 * l1 * l1 * sm * sm);
        for k in 0..m {
            let prev = if k > 0 { c[k - 1] } else { 0.0 };
            let next = if k + 1 < m { c[k + 1] } else { 0.0 };
            self.unit[k] =
                quad * (4.0 * c[k] + prev + next) + constant + per_weight * self.weights[k];
        }
        self.workspace.autoconvolution_adjoint(&self.unit, grad);
        value
    }

    /// The arena's float64 score of `max(f, 0)` (positive; not negated).
    fn score(&mut self, f: &[f64]) -> f64 {
        self.clipped
            .iter_mut()
            .zip(f)
            .for_each(|(g, x)| *g = x.max(0.0));
        self.workspace.autoconvolve(&self.clipped, &mut self.conv);
        let c = &self.conv;
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

#[cfg(test)]
mod tests {
    use super::super::testing::*;

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
    fn n_30000_runs_in_milliseconds() {
        check_fast_at_30000(SLUG, &random(30_000, 7, 0.0, 1.0));
    }
}
