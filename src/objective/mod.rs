//! The shared machinery of the smooth surrogates of the problems' scores: the [`Objective`]
//! trait, the [`SmoothMax`] that replaces the max over lags, the preallocated real-FFT workspace
//! ([`fft::ConvolutionWorkspace`]) and the smoothed peak ratio shared by the first and third
//! problems ([`peak_ratio::PeakRatio`]). Each problem's own surrogate lives in its folder under
//! [`crate::problems`] and is reached through [`Problem::objective`](crate::problems::Problem::objective).
//!
//! Each surrogate replaces the max over the `2n − 1` lags by a [`SmoothMax`] applied to
//! unit-sized (score-sized) quantities, so that the log-sum-exp bias `ln(2n − 1)/β` is an absolute
//! error on the score, and is always to be **minimised** (a maximisation is negated). Values and
//! gradients cost `O(n log n)`: the gradient of `Σ_k w_k (f∗f)_k` is `2·(w ⋆ f)`, one more pair of
//! FFTs of the same size.

pub mod fft;
pub mod peak_ratio;
pub mod smooth_max;

pub use smooth_max::{SmoothMax, SmoothMaxName};

/// Real FFTs of size `N = fft_len(2n − 1)` (forward and inverse alike) that one
/// [`Objective::value_and_gradient`] performs, for every arena problem: the forward transform of
/// `f` (or of the Erdős `h'`, whose complement needs none), the inverse that gives the lags, the
/// forward transform of the weights over the lags and the inverse that gives the gradient. The
/// spectrum of `f` is reused between value and gradient. Asserted by each problem's tests.
pub const FFTS_PER_VALUE_AND_GRADIENT: usize = 4;

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

/// The two parts `N` and `D̃` of a ratio score `N/D` with a smoothed `D̃`, for Dinkelbach's method
/// (see [`Problem::ratio_terms`](crate::problems::Problem::ratio_terms)).
pub trait RatioObjective: Send {
    /// `(N, D̃)` at `f`, writing the gradient of `a·N + b·D̃` with respect to `f` into `grad`.
    fn evaluate(&mut self, f: &[f64], a: f64, b: f64, grad: &mut [f64]) -> (f64, f64);

    /// `(N, D)` at `f` without smoothing or gradient (`N/D` is the true score).
    fn true_parts(&mut self, f: &[f64]) -> (f64, f64);
}

/// Shared helpers for the tests of every problem file.
#[cfg(test)]
pub(crate) mod testing {
    use super::{Objective, SmoothMax};
    use rand::{Rng, SeedableRng};

    /// The surrogate of the problem `slug` for arrays of length `n`.
    fn objective_for(slug: &str, n: usize, smooth: SmoothMax) -> Box<dyn Objective> {
        crate::problems::by_slug(slug).unwrap().objective(n, smooth)
    }

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
        let mut objective = objective_for(slug, n, smooth);
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

    /// One `value_and_gradient` performs [`FFTS_PER_VALUE_AND_GRADIENT`](super::FFTS_PER_VALUE_AND_GRADIENT)
    /// real FFTs (after a first call, which may compute once-per-workspace spectra).
    pub fn check_fft_count(slug: &str, f: &[f64]) {
        let n = f.len();
        let mut objective = objective_for(slug, n, SmoothMax::LogSumExp { beta: 50.0 });
        let mut grad = vec![0.0; n];
        objective.value_and_gradient(f, &mut grad);
        for _ in 0..2 {
            let before = super::fft::transforms_on_this_thread();
            objective.value_and_gradient(f, &mut grad);
            let count = super::fft::transforms_on_this_thread() - before;
            assert_eq!(count, super::FFTS_PER_VALUE_AND_GRADIENT, "{slug} n={n}");
        }
    }

    /// `score()` against the crate's own float64 score.
    pub fn check_score(slug: &str, f: &[f64]) {
        let expected = crate::problems::by_slug(slug).unwrap().score_fast(f).value;
        let mut objective = objective_for(slug, f.len(), SmoothMax::PNorm { p: 8.0 });
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
            let mut objective = objective_for(slug, n, SmoothMax::LogSumExp { beta });
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
        let mut objective = objective_for(slug, n, SmoothMax::LogSumExp { beta: 1e6 });
        let mut grad = vec![0.0; n];
        let value = objective.value_and_gradient(f, &mut grad);
        assert!(value.is_finite(), "{slug}: {value}");
        assert!(grad.iter().all(|g| g.is_finite()), "{slug}");
        assert!(grad.iter().any(|&g| g != 0.0), "{slug}");
    }
}
