//! The first problem's lags for sequential LP: `(f∗f)_k`, with the box `f ≥ 0`.

use crate::problems::LagModel;

/// The autoconvolution `(f∗f)_k` as a lag model.
pub struct Autoconvolution;

impl LagModel for Autoconvolution {
    fn lags(&self, x: &[f64]) -> Vec<f64> {
        crate::fast::autoconvolve(x).values
    }

    fn factor(&self, _x: &[f64]) -> f64 {
        1.0
    }

    /// `(f∗f)_k = Σ_i f_i f_(k−i)`: derivative `2·f_(k−j)`.
    fn gradient_entry(&self, x: &[f64], _lambda: f64, k: usize, j: usize) -> f64 {
        if k >= j && k - j < x.len() {
            2.0 * x[k - j]
        } else {
            0.0
        }
    }

    /// `2·max f`.
    fn row_scale(&self, x: &[f64]) -> f64 {
        2.0 * x.iter().fold(0.0f64, |m, &a| m.max(a))
    }

    fn upper(&self, _x: &[f64]) -> f64 {
        f64::INFINITY
    }

    fn bounds(&self, x: &[f64], _upper: f64, r: f64, j: usize) -> (f64, f64) {
        ((-r).max(-x[j]), r)
    }

    fn finish(&self, x: &[f64], delta: &[(usize, f64)]) -> Vec<f64> {
        let mut y = x.to_vec();
        for &(j, d) in delta {
            y[j] += d;
        }
        for v in &mut y {
            *v = v.max(0.0);
        }
        y
    }
}
