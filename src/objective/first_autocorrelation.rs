//! First autocorrelation inequality: minimise `2n·max_k (f∗f)_k / S²` (`S = Σf`, `f ≥ 0`).
//!
//! Surrogate: `SM(r)` with `r_k = 2n·(f∗f)_k / S²`, already score-sized. Gradient:
//! `∂/∂f_i = (2n/S²)·2·(w ⋆ f)_i − (2/S)·Σ_k w_k r_k`, `w = ∂SM/∂r`. The same machinery serves the
//! third problem ([`PeakRatio`]).

use super::fft::ConvolutionWorkspace;
use super::{Objective, SmoothMax};

/// The smoothed peak ratio `SM(2n·(f∗f)/S²)` shared by the first and third problems, with
/// preallocated buffers.
pub struct PeakRatio {
    smooth: SmoothMax,
    workspace: ConvolutionWorkspace,
    /// `f∗f`, then `r = 2n·(f∗f)/S²` (length `2n − 1`).
    ratios: Vec<f64>,
    /// `∂SM/∂r` (length `2n − 1`).
    weights: Vec<f64>,
}

impl PeakRatio {
    /// Buffers for arrays of length `n ≥ 1`.
    pub fn new(n: usize, smooth: SmoothMax) -> Self {
        PeakRatio {
            smooth,
            workspace: ConvolutionWorkspace::new(n),
            ratios: vec![0.0; 2 * n - 1],
            weights: vec![0.0; 2 * n - 1],
        }
    }

    /// `SM(2n·(f∗f)/S²)` and its gradient (assumes `S ≠ 0`).
    pub fn value_and_gradient(&mut self, f: &[f64], grad: &mut [f64]) -> f64 {
        let n = f.len();
        assert_eq!(grad.len(), n);
        let sum: f64 = f.iter().sum();
        let scale = 2.0 * n as f64 / (sum * sum);
        self.workspace.autoconvolve(f, &mut self.ratios);
        self.ratios.iter_mut().for_each(|c| *c *= scale);
        let value = self
            .smooth
            .value_and_weights(&self.ratios, &mut self.weights);
        let weighted: f64 = self
            .weights
            .iter()
            .zip(&self.ratios)
            .map(|(w, r)| w * r)
            .sum();
        self.workspace.autoconvolution_adjoint(&self.weights, grad);
        let shift = 2.0 * weighted / sum;
        grad.iter_mut().for_each(|g| *g = *g * scale - shift);
        value
    }

    /// The arena's float64 score `max(conv·dx)/(S·dx)²`, `dx = 0.5/n` (absolute value of the max
    /// when `absolute`).
    pub fn score(&mut self, f: &[f64], absolute: bool) -> f64 {
        let n = f.len();
        let dx = 0.5 / n as f64;
        self.workspace.autoconvolve(f, &mut self.ratios);
        let peak = self
            .ratios
            .iter()
            .map(|c| c * dx)
            .fold(f64::NEG_INFINITY, f64::max);
        let sum = crate::fast::compensated_sum(f.iter().copied());
        let norm = (sum * dx) * (sum * dx);
        let peak = if absolute { peak.abs() } else { peak };
        peak / norm
    }
}

/// The first problem's surrogate `SM(2n·(f∗f)/S²)` (`first-autocorrelation-inequality`).
pub struct FirstAutocorrelationObjective {
    inner: PeakRatio,
}

impl FirstAutocorrelationObjective {
    /// Workspaces for arrays of length `n ≥ 1`.
    pub fn new(n: usize, smooth: SmoothMax) -> Self {
        FirstAutocorrelationObjective {
            inner: PeakRatio::new(n, smooth),
        }
    }
}

impl Objective for FirstAutocorrelationObjective {
    fn value_and_gradient(&mut self, f: &[f64], grad: &mut [f64]) -> f64 {
        self.inner.value_and_gradient(f, grad)
    }

    fn score(&mut self, f: &[f64]) -> f64 {
        self.inner.score(f, false)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;

    const SLUG: &str = "first-autocorrelation-inequality";

    #[test]
    fn gradient_matches_central_differences() {
        for (seed, n) in [5usize, 17, 64, 200].into_iter().enumerate() {
            let f = random(n, seed as u64, 0.0, 1.0);
            for smooth in smooth_maxima() {
                check_gradient(SLUG, &f, smooth, 1e-5);
            }
        }
    }

    #[test]
    fn score_matches_the_crate_fast_score() {
        for n in [1usize, 2, 5, 17, 64, 200, 3000] {
            check_score(SLUG, &random(n, 10 + n as u64, 0.0, 1.0));
        }
    }

    #[test]
    fn log_sum_exp_approaches_the_score_from_above() {
        for n in [5usize, 64, 200] {
            check_lse_bias(SLUG, &random(n, 20 + n as u64, 0.0, 1.0), false);
        }
    }

    #[test]
    fn n_30000_runs_in_milliseconds() {
        check_fast_at_30000(SLUG, &random(30_000, 5, 0.0, 1.0));
    }
}
