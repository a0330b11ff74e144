//! Smooth surrogates of the four problems' scores with exact gradients, for optimizers.
//!
//! Each surrogate replaces the max over the `2n − 1` lags by a [`SmoothMax`] applied to
//! unit-sized (score-sized) quantities, so that the log-sum-exp bias `ln(2n − 1)/β` is an absolute
//! error on the score, and is always to be **minimised** (the second problem, a maximisation, is
//! negated). Values and gradients cost `O(n log n)` through a preallocated real-FFT workspace
//! ([`fft::ConvolutionWorkspace`]): the gradient of `Σ_k w_k (f∗f)_k` is `2·(w ⋆ f)`, one more
//! pair of FFTs of the same size. One file per problem:
//!
//! - [`erdos_min_overlap`] — `SM(corr(h', 1 − h'))·2/n` with `h'` rescaled to sum `n/2`;
//! - [`first_autocorrelation`] — `SM(2n·(f∗f)/S²)`;
//! - [`second_autocorrelation`] — `−L2²/(L1²·SM((f∗f)/L1))`, i.e. `−L2²/(L1·L∞)` with `L∞` smoothed;
//! - [`third_autocorrelation`] — `SM(2n·(f∗f)/S²)` for signed `f` (smooths the max, not `|max|`).

pub mod erdos_min_overlap;
pub mod fft;
pub mod first_autocorrelation;
pub mod second_autocorrelation;
pub mod smooth_max;
pub mod third_autocorrelation;

pub use smooth_max::SmoothMax;

/// A differentiable surrogate of one problem's score, always to be MINIMISED (the second problem,
/// a maximisation, is negated).
pub trait Objective: Send {
    /// Surrogate value at `f`; writes `∂value/∂f_i` into `grad` (same length as `f`). `O(n log n)`,
    /// no allocation.
    fn value_and_gradient(&mut self, f: &[f64], grad: &mut [f64]) -> f64;

    /// The problem's true float64 score at `f` (arena formula, no smoothing), for monitoring. Not
    /// negated for the second problem.
    fn score(&mut self, f: &[f64]) -> f64;
}

/// The surrogate for a problem slug with a smooth max, for arrays of length `n ≥ 1` (workspaces
/// preallocated for `n`); `None` for an unknown slug or `n = 0`.
pub fn objective_for(slug: &str, n: usize, smooth: SmoothMax) -> Option<Box<dyn Objective>> {
    if n == 0 {
        return None;
    }
    Some(match slug {
        "erdos-min-overlap" => {
            Box::new(erdos_min_overlap::ErdosMinOverlapObjective::new(n, smooth))
        }
        "first-autocorrelation-inequality" => Box::new(
            first_autocorrelation::FirstAutocorrelationObjective::new(n, smooth),
        ),
        "second-autocorrelation-inequality" => Box::new(
            second_autocorrelation::SecondAutocorrelationObjective::new(n, smooth),
        ),
        "third-autocorrelation-inequality" => Box::new(
            third_autocorrelation::ThirdAutocorrelationObjective::new(n, smooth),
        ),
        _ => return None,
    })
}

/// Shared helpers for the tests of every problem file.
#[cfg(test)]
pub(crate) mod testing {
    use super::{objective_for, SmoothMax};
    use rand::{Rng, SeedableRng};

    /// Seeded random values in `[lo, hi)`.
    pub fn random(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        (0..n).map(|_| rng.gen_range(lo..hi)).collect()
    }

    /// The smooth maxima the gradient tests run through.
    pub fn smooth_maxima() -> Vec<SmoothMax> {
        vec![
            SmoothMax::LogSumExp { beta: 3.0 },
            SmoothMax::LogSumExp { beta: 50.0 },
            SmoothMax::LogSumExp { beta: 500.0 },
            SmoothMax::PNorm { p: 4.0 },
            SmoothMax::PNorm { p: 40.0 },
        ]
    }

    /// Checks the analytic gradient against central differences for every coordinate:
    /// `‖g − g_fd‖_∞ ≤ tol·‖g‖_∞`, with a relative step.
    pub fn check_gradient(slug: &str, f: &[f64], smooth: SmoothMax, tol: f64) {
        let n = f.len();
        let mut objective = objective_for(slug, n, smooth).unwrap();
        let mut grad = vec![0.0; n];
        let value = objective.value_and_gradient(f, &mut grad);
        assert!(value.is_finite());
        let mut scratch = vec![0.0; n];
        let mut x = f.to_vec();
        let mut worst: f64 = 0.0;
        let scale = grad.iter().fold(0.0f64, |m, g| m.max(g.abs()));
        for i in 0..n {
            let step = 1e-4 * f[i].abs().max(1e-2);
            x[i] = f[i] + step;
            let up = objective.value_and_gradient(&x, &mut scratch);
            x[i] = f[i] - step;
            let down = objective.value_and_gradient(&x, &mut scratch);
            x[i] = f[i];
            let fd = (up - down) / (2.0 * step);
            worst = worst.max((fd - grad[i]).abs());
        }
        assert!(
            worst <= tol * scale,
            "{slug} n={n} {smooth:?}: max |g − fd| = {worst:e}, ‖g‖∞ = {scale:e}"
        );
        // The value does not depend on the previous calls (the workspace holds no state).
        let again = objective.value_and_gradient(f, &mut scratch);
        assert_eq!(again, value);
        assert_eq!(scratch, grad);
    }

    /// `score()` against the crate's own float64 score.
    pub fn check_score(slug: &str, f: &[f64]) {
        let expected = crate::problems::by_slug(slug).unwrap().score_fast(f).value;
        let mut objective = objective_for(slug, f.len(), SmoothMax::PNorm { p: 8.0 }).unwrap();
        let got = objective.score(f);
        assert!(
            (got - expected).abs() <= 1e-12 * expected.abs(),
            "{slug} n={}: {got} vs {expected}",
            f.len()
        );
    }

    /// The log-sum-exp surrogate (negated score for a maximisation) lies in
    /// `[target, target + ln(2n − 1)/β]` and approaches it as β grows.
    pub fn check_lse_bias(slug: &str, f: &[f64], negate: bool) {
        let n = f.len();
        let mut grad = vec![0.0; n];
        let mut previous = f64::INFINITY;
        for beta in [1e1, 1e3, 1e5, 1e8, 1e12] {
            let mut objective = objective_for(slug, n, SmoothMax::LogSumExp { beta }).unwrap();
            let score = objective.score(f);
            let target = if negate { -score } else { score };
            let value = objective.value_and_gradient(f, &mut grad);
            let bound = ((2 * n - 1) as f64).ln() / beta;
            let slack = 1e-13 * target.abs();
            assert!(
                value >= target - slack && value <= target + bound + slack,
                "{slug} n={n} β={beta}: {value} vs {target} (+{bound})"
            );
            assert!(value <= previous + slack);
            previous = value;
        }
    }

    /// At n = 30,000 the value and gradient are finite and the gradient is not all zero (speed
    /// is measured in `benches/objective.rs`, not here).
    pub fn check_fast_at_30000(slug: &str, f: &[f64]) {
        let n = f.len();
        let mut objective = objective_for(slug, n, SmoothMax::LogSumExp { beta: 1e6 }).unwrap();
        let mut grad = vec![0.0; n];
        let value = objective.value_and_gradient(f, &mut grad);
        assert!(value.is_finite(), "{slug}: {value}");
        assert!(grad.iter().all(|g| g.is_finite()), "{slug}");
        assert!(grad.iter().any(|&g| g != 0.0), "{slug}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_known_and_others_are_not() {
        for problem in crate::problems::all() {
            assert!(objective_for(problem.slug(), 7, SmoothMax::PNorm { p: 3.0 }).is_some());
        }
        assert!(objective_for("no-such-problem", 7, SmoothMax::PNorm { p: 3.0 }).is_none());
        assert!(objective_for("erdos-min-overlap", 0, SmoothMax::PNorm { p: 3.0 }).is_none());
    }
}
