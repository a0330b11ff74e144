//! Third autocorrelation inequality: minimise `2n·|max_k (f∗f)_k| / S²` over signed `f`.
//!
//! Surrogate: `SM(2n·(f∗f)/S²)`, the smooth max of the signed ratios without the absolute value.
//! It assumes the max is positive, as it is at every sensible construction; in fact always when
//! `S ≠ 0`, since `Σ_k (f∗f)_k = S²` makes the max at least the mean `S²/(2n − 1) > 0`. With
//! [`SmoothMax::PNorm`] the surrogate smooths `max_k |r_k|` instead, which equals the score
//! unless the most negative lag outweighs the peak. Gradient as for the first problem.

use crate::objective::peak_ratio::PeakRatio;
use crate::objective::{Objective, SmoothMax};

/// The third problem's surrogate `SM(2n·(f∗f)/S²)` (`third-autocorrelation-inequality`).
pub struct ThirdAutocorrelationObjective {
    inner: PeakRatio,
}

impl ThirdAutocorrelationObjective {
    /// Workspaces for arrays of length `n ≥ 1`.
    pub fn new(n: usize, smooth: SmoothMax) -> Self {
        ThirdAutocorrelationObjective {
            inner: PeakRatio::new(n, smooth),
        }
    }
}

impl Objective for ThirdAutocorrelationObjective {
    fn value_and_gradient(&mut self, f: &[f64], grad: &mut [f64]) -> f64 {
        self.inner.value_and_gradient(f, grad)
    }

    fn score(&mut self, f: &[f64]) -> f64 {
        self.inner.score(f, true)
    }
}

#[cfg(test)]
mod tests {
    use crate::objective::testing::*;

    const SLUG: &str = "third-autocorrelation-inequality";

    #[test]
    fn gradient_matches_central_differences() {
        for (seed, n) in [5usize, 17, 64, 200].into_iter().enumerate() {
            // Signed values with a positive mean, so S is well away from 0.
            let f = random(n, 30 + seed as u64, -0.6, 1.0);
            for smooth in smooth_maxima() {
                check_gradient(SLUG, &f, smooth, 1e-5);
            }
        }
    }

    #[test]
    fn score_matches_the_crate_fast_score() {
        for n in [1usize, 2, 5, 17, 64, 200, 3000] {
            check_score(SLUG, &random(n, 40 + n as u64, -0.6, 1.0));
        }
    }

    #[test]
    fn log_sum_exp_approaches_the_score_from_above() {
        for n in [5usize, 64, 200] {
            check_lse_bias(SLUG, &random(n, 50 + n as u64, -0.6, 1.0), false);
        }
    }

    #[test]
    fn value_and_gradient_does_the_documented_number_of_ffts() {
        for n in [1usize, 5, 200] {
            check_fft_count(SLUG, &random(n, 120 + 3 * n as u64, -0.6, 1.0));
        }
    }

    #[test]
    fn n_30000_runs_in_milliseconds() {
        check_fast_at_30000(SLUG, &random(30_000, 6, -0.6, 1.0));
    }
}
