//! Smooth maxima of a vector and their gradients, evaluated stably.
//!
//! - Log-sum-exp: `SM(x) = max x + (1/β)·ln Σ_k exp(β(x_k − max x))`; its gradient is the softmax
//!   weights (non-negative, summing to 1). `max x ≤ SM(x) ≤ max x + ln(K)/β` for `K` entries.
//! - p-norm: `SM(x) = (Σ_k |x_k|^p)^(1/p)`, computed as `M·(Σ_k (|x_k|/M)^p)^(1/p)` with
//!   `M = max |x_k|`; its gradient is `sign(x_k)·(|x_k|/SM)^(p−1)`. It smooths `max |x_k|`, and
//!   `max |x| ≤ SM(x) ≤ K^(1/p)·max |x|`.
//!
//! Both are meant for unit-sized `x` (the objectives pass score-sized quantities), so that the
//! bias `ln(K)/β` is an absolute error on the score.

/// Which smooth max a program names (its temperature is given separately).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SmoothMaxName {
    /// Log-sum-exp with temperature β.
    LogSumExp,
    /// p-norm with exponent p = β.
    PNorm,
}

impl SmoothMaxName {
    /// The smooth max with temperature (or exponent) `beta`.
    pub fn build(self, beta: f64) -> SmoothMax {
        match self {
            SmoothMaxName::LogSumExp => SmoothMax::LogSumExp { beta },
            SmoothMaxName::PNorm => SmoothMax::PNorm { p: beta },
        }
    }
}

/// How the max over lags is smoothed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SmoothMax {
    /// Log-sum-exp at inverse temperature `beta > 0`: bias at most `ln(K)/β` above the max.
    LogSumExp {
        /// Inverse temperature; larger is closer to the max.
        beta: f64,
    },
    /// The `p`-norm (`p ≥ 1`) of the vector: a smooth `max |x_k|`, bias at most a factor `K^(1/p)`.
    PNorm {
        /// The exponent; larger is closer to the max.
        p: f64,
    },
}

impl SmoothMax {
    /// `SM(x)`, writing `∂SM/∂x_k` into `weights` (same length as `x`, which must be non-empty).
    ///
    /// Stable for any finite `x`: log-sum-exp subtracts the max before exponentiating, and the
    /// p-norm works on `|x|/max |x|`. An all-zero `x` gives 0 with zero weights under the p-norm.
    pub fn value_and_weights(self, x: &[f64], weights: &mut [f64]) -> f64 {
        assert_eq!(x.len(), weights.len());
        assert!(!x.is_empty(), "the smooth max of an empty vector");
        match self {
            SmoothMax::LogSumExp { beta } => log_sum_exp(beta, x, weights),
            SmoothMax::PNorm { p } => p_norm(p, x, weights),
        }
    }

    /// `SM(x)` alone (same formulas, no gradient).
    pub fn value(self, x: &[f64]) -> f64 {
        assert!(!x.is_empty(), "the smooth max of an empty vector");
        match self {
            SmoothMax::LogSumExp { beta } => {
                let top = x.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v));
                let sum: f64 = x.iter().map(|&v| (beta * (v - top)).exp()).sum();
                top + sum.ln() / beta
            }
            SmoothMax::PNorm { p } => {
                let top = x.iter().fold(0.0f64, |m, &v| m.max(v.abs()));
                if top == 0.0 {
                    return 0.0;
                }
                let sum: f64 = x.iter().map(|&v| (v.abs() / top).powf(p)).sum();
                top * sum.powf(1.0 / p)
            }
        }
    }
}

/// Below this argument `f64::exp` returns exactly `+0.0` (the true value is under half of the
/// smallest subnormal, `exp(−745.14)`; a margin covers libm's last-bit error).
const EXP_ZERO_BELOW: f64 = -746.0;

/// `max_k map(x_k)` (NaN entries ignored, as by [`f64::max`]; `−∞` for an all-NaN `x`), over
/// four independent running maxima: the max is exact, so the result is the serial fold's, without
/// its chain of dependent comparisons.
fn max_of(x: &[f64], map: impl Fn(f64) -> f64) -> f64 {
    let mut lanes = [f64::NEG_INFINITY; 4];
    let chunks = x.chunks_exact(4);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (m, &v) in lanes.iter_mut().zip(chunk) {
            *m = m.max(map(v));
        }
    }
    let top = rest.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(map(v)));
    lanes.iter().fold(top, |m, &l| m.max(l))
}

/// `Σ_k w_k·x_k` in index order, skipping the zero weights (at large β most log-sum-exp weights
/// are exactly 0): the same value as the full serial sum for finite `x` (adding a zero product
/// changes nothing once the sum is non-zero), without a dependent addition per entry.
pub(crate) fn weighted_sum(weights: &[f64], x: &[f64]) -> f64 {
    let mut sum = 0.0;
    for (&w, &v) in weights.iter().zip(x) {
        if w != 0.0 {
            sum += w * v;
        }
    }
    sum
}

fn log_sum_exp(beta: f64, x: &[f64], weights: &mut [f64]) -> f64 {
    let top = max_of(x, |v| v);
    let mut sum = 0.0;
    for (w, &v) in weights.iter_mut().zip(x) {
        // exp(z) is exactly +0.0 for z < −745.2 (below half the smallest subnormal), so skip the
        // call there, and the addition of that +0.0 (which leaves the positive sum unchanged): at
        // large β most lags fall far below the max. Same bits as calling exp and adding (NaN
        // fails the test and still goes through exp).
        let z = beta * (v - top);
        if z < EXP_ZERO_BELOW {
            *w = 0.0;
        } else {
            *w = z.exp();
            sum += *w;
        }
    }
    // sum ≥ 1 (the max contributes exp(0)).
    let inv = 1.0 / sum;
    weights.iter_mut().for_each(|w| *w *= inv);
    top + sum.ln() / beta
}

fn p_norm(p: f64, x: &[f64], weights: &mut [f64]) -> f64 {
    let top = max_of(x, f64::abs).max(0.0);
    if top == 0.0 {
        weights.iter_mut().for_each(|w| *w = 0.0);
        return 0.0;
    }
    // weights_k hold (|x_k|/M)^(p−1) first; then Σ (|x_k|/M)^p = Σ weights_k·|x_k|/M.
    let mut sum = 0.0;
    for (w, &v) in weights.iter_mut().zip(x) {
        let r = v.abs() / top;
        let r_pm1 = r.powf(p - 1.0);
        sum += r_pm1 * r;
        *w = if v == 0.0 { 0.0 } else { r_pm1 * v.signum() };
    }
    // SM = M·sum^(1/p); ∂SM/∂x_k = sign·(|x_k|/SM)^(p−1) = sign·(|x_k|/M)^(p−1)·sum^(−(p−1)/p).
    let factor = sum.powf(-(p - 1.0) / p);
    weights.iter_mut().for_each(|w| *w *= factor);
    top * sum.powf(1.0 / p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn gradients_match_central_differences() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for sm in [
            SmoothMax::LogSumExp { beta: 1.0 },
            SmoothMax::LogSumExp { beta: 30.0 },
            SmoothMax::PNorm { p: 2.0 },
            SmoothMax::PNorm { p: 9.5 },
        ] {
            let x: Vec<f64> = (0..25).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let mut w = vec![0.0; x.len()];
            let v = sm.value_and_weights(&x, &mut w);
            assert!((v - sm.value(&x)).abs() <= 1e-14 * v.abs().max(1.0));
            for k in 0..x.len() {
                let step = 1e-6;
                let (mut up, mut down) = (x.clone(), x.clone());
                up[k] += step;
                down[k] -= step;
                let fd = (sm.value(&up) - sm.value(&down)) / (2.0 * step);
                assert!((fd - w[k]).abs() <= 1e-7, "{sm:?} k={k}: {fd} vs {}", w[k]);
            }
        }
    }

    #[test]
    fn stable_and_bounded() {
        // Huge β and huge values: no overflow, within the bias bound of the max.
        let x = [1e6, 1e6 - 1.0, -3e7, 1e6];
        let lse = SmoothMax::LogSumExp { beta: 1e13 };
        let v = lse.value(&x);
        assert!(v >= 1e6 && v <= 1e6 + (4f64).ln() / 1e13 + 1e-9);
        let pn = SmoothMax::PNorm { p: 1e4 };
        let v = pn.value(&x);
        assert!(v >= 3e7 && v <= 3e7 * 4f64.powf(1e-4) * (1.0 + 1e-15));
        let mut w = [0.0; 4];
        assert_eq!(pn.value_and_weights(&[0.0; 4], &mut w), 0.0);
        assert_eq!(w, [0.0; 4]);
        let v = lse.value_and_weights(&x, &mut w);
        assert!(v.is_finite() && (w.iter().sum::<f64>() - 1.0).abs() < 1e-15);
        assert_eq!(w[2], 0.0);
    }
}
