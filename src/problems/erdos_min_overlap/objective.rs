//! Erdős minimum overlap: minimise `max_k corr_k · 2/n`, `corr = correlate(h', 1 − h', "full")`,
//! where `h' = λ·h`, `λ = (n/2)/Σh` (the arena's rescale to sum `n/2`).
//!
//! Surrogate: `SM(r)` with `r = corr·2/n` (score-sized). With `a = h'` and `b̃ = reverse(1 − h')`,
//! `corr = a ∗ b̃`, so for weights `W = (2/n)·∂SM/∂r` the adjoints give `∂/∂a = W ⋆ b̃` and
//! `∂/∂b̃ = W ⋆ a`; `g_m = ∂/∂h'_m = (W ⋆ b̃)_m − (W ⋆ a)_(n−1−m)`. Both come from the FFT of `h'`
//! alone ([`ConvolutionWorkspace::complement_correlate`]): four real FFTs per value and gradient.
//! Through the rescale (`∂h'_m/∂h_i = λδ_mi − h'_m/Σh`): `∂/∂h_i = λ·g_i − (Σ_m g_m h'_m)/Σh`.

use crate::fast::compensated_sum;
use crate::objective::fft::ConvolutionWorkspace;
use crate::objective::{Objective, SmoothMax};

/// The Erdős surrogate `SM(correlate(h', 1 − h')·2/n)` (`erdos-min-overlap`).
pub struct ErdosMinOverlapObjective {
    smooth: SmoothMax,
    workspace: ConvolutionWorkspace,
    /// `h'` (length `n`).
    scaled: Vec<f64>,
    /// `corr`, then `r = corr·2/n` (length `2n − 1`).
    ratios: Vec<f64>,
    /// `∂SM/∂r`, then `W` (length `2n − 1`).
    weights: Vec<f64>,
}

impl ErdosMinOverlapObjective {
    /// Workspaces for arrays of length `n ≥ 1`.
    pub fn new(n: usize, smooth: SmoothMax) -> Self {
        ErdosMinOverlapObjective {
            smooth,
            workspace: ConvolutionWorkspace::new(n),
            scaled: vec![0.0; n],
            ratios: vec![0.0; 2 * n - 1],
            weights: vec![0.0; 2 * n - 1],
        }
    }

    /// Fills `scaled` and `ratios = corr` for the rescale `factor`.
    fn correlate(&mut self, f: &[f64], factor: f64) {
        self.scaled
            .iter_mut()
            .zip(f)
            .for_each(|(a, x)| *a = x * factor);
        self.workspace
            .complement_correlate(&self.scaled, &mut self.ratios);
    }
}

impl Objective for ErdosMinOverlapObjective {
    /// `SM(corr·2/n)` and its gradient with respect to the unscaled `h` (assumes `Σh ≠ 0`).
    fn value_and_gradient(&mut self, f: &[f64], grad: &mut [f64]) -> f64 {
        let n = f.len();
        assert_eq!(grad.len(), n);
        let sum: f64 = f.iter().sum();
        let lambda = (n as f64 / 2.0) / sum;
        self.correlate(f, lambda);
        let to_score = 2.0 / n as f64;
        self.ratios.iter_mut().for_each(|c| *c *= to_score);
        let value = self
            .smooth
            .value_and_weights(&self.ratios, &mut self.weights);
        self.weights.iter_mut().for_each(|w| *w *= to_score);
        // g_m = ∂/∂a_m − ∂/∂b̃_(n−1−m), into grad; then the chain rule through the rescale.
        self.workspace
            .complement_correlation_adjoint(&self.weights, grad);
        let dot: f64 = grad.iter().zip(&self.scaled).map(|(g, a)| g * a).sum();
        let shift = dot / sum;
        grad.iter_mut().for_each(|g| *g = lambda * *g - shift);
        value
    }

    /// The arena's float64 score `max(correlate(h', 1 − h', "full"))·2/n`.
    fn score(&mut self, f: &[f64]) -> f64 {
        let n = f.len();
        let sum = compensated_sum(f.iter().copied());
        let factor = (n as f64 / 2.0) / sum;
        self.correlate(f, factor);
        let peak = self.ratios.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x));
        peak * 2.0 / n as f64
    }
}

#[cfg(test)]
mod tests {
    use crate::objective::testing::*;

    const SLUG: &str = "erdos-min-overlap";

    #[test]
    fn gradient_matches_central_differences() {
        for (seed, n) in [5usize, 17, 64, 200].into_iter().enumerate() {
            let f = random(n, 90 + seed as u64, 0.05, 0.95);
            for smooth in smooth_maxima() {
                check_gradient(SLUG, &f, smooth, 1e-5);
            }
        }
    }

    #[test]
    fn score_matches_the_crate_fast_score() {
        for n in [1usize, 2, 5, 17, 64, 200, 3000] {
            check_score(SLUG, &random(n, 100 + n as u64, 0.0, 1.0));
        }
    }

    #[test]
    fn log_sum_exp_approaches_the_score_from_above() {
        for n in [5usize, 64, 200] {
            check_lse_bias(SLUG, &random(n, 110 + n as u64, 0.2, 0.8), false);
        }
    }

    #[test]
    fn value_and_gradient_does_the_documented_number_of_ffts() {
        for n in [1usize, 5, 200] {
            check_fft_count(SLUG, &random(n, 120 + 4 * n as u64, 0.0, 1.0));
        }
    }

    #[test]
    fn n_30000_runs_in_milliseconds() {
        check_fast_at_30000(SLUG, &random(30_000, 8, 0.0, 1.0));
    }
}
