//! The smoothed peak ratio `SM(2n·(f∗f)/S²)` (`S = Σf`) shared by the first and third problems'
//! surrogates. Gradient: `∂/∂f_i = (2n/S²)·2·(w ⋆ f)_i − (2/S)·Σ_k w_k r_k`, `w = ∂SM/∂r`.

use super::fft::ConvolutionWorkspace;
use super::smooth_max::weighted_sum;
use super::SmoothMax;

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
        let weighted = weighted_sum(&self.weights, &self.ratios);
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
