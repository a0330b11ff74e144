//! The toy problem's surrogate: the first problem's smoothed peak ratio `SM(2n·(f∗f)/S²)` scaled
//! by `(2n − 1)/(2n)`, so that it smooths the toy's score.

use crate::objective::peak_ratio::PeakRatio;
use crate::objective::{Objective, SmoothMax};

/// `(2n − 1)/(2n)·SM(2n·(f∗f)/S²)`.
pub struct ToyObjective {
    inner: PeakRatio,
    scale: f64,
}

impl ToyObjective {
    /// Workspaces for arrays of length `n ≥ 1`.
    pub fn new(n: usize, smooth: SmoothMax) -> Self {
        ToyObjective {
            inner: PeakRatio::new(n, smooth),
            scale: super::scale(n),
        }
    }
}

impl Objective for ToyObjective {
    fn value_and_gradient(&mut self, f: &[f64], grad: &mut [f64]) -> f64 {
        let value = self.inner.value_and_gradient(f, grad);
        grad.iter_mut().for_each(|g| *g *= self.scale);
        value * self.scale
    }

    fn score(&mut self, f: &[f64]) -> f64 {
        self.inner.score(f, false) * self.scale
    }
}

#[cfg(test)]
mod tests {
    use crate::objective::testing::*;

    const SLUG: &str = "toy-autoconvolution-peak";

    #[test]
    fn gradient_and_score_match() {
        for (seed, n) in [5usize, 17, 64].into_iter().enumerate() {
            let f = random(n, 90 + seed as u64, 0.0, 1.0);
            for smooth in smooth_maxima() {
                check_gradient(SLUG, &f, smooth, 1e-5);
            }
            check_score(SLUG, &f);
            check_fft_count(SLUG, &f);
        }
    }
}
