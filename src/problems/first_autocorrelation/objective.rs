//! First autocorrelation inequality: minimise `2n·max_k (f∗f)_k / S²` (`S = Σf`, `f ≥ 0`).
//!
//! Surrogate: `SM(r)` with `r_k = 2n·(f∗f)_k / S²`, already score-sized. Gradient:
//! `∂/∂f_i = (2n/S²)·2·(w ⋆ f)_i − (2/S)·Σ_k w_k r_k`, `w = ∂SM/∂r`, through the
//! [`PeakRatio`] it shares with the third problem.

use crate::objective::peak_ratio::PeakRatio;
use crate::objective::{Objective, SmoothMax};

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
    use crate::objective::testing::*;

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
    fn value_and_gradient_does_the_documented_number_of_ffts() {
        for n in [1usize, 5, 200] {
            check_fft_count(SLUG, &random(n, 120 + n as u64, 0.0, 1.0));
        }
    }

    #[test]
    fn n_30000_runs_in_milliseconds() {
        check_fast_at_30000(SLUG, &random(30_000, 5, 0.0, 1.0));
    }
}
