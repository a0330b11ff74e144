//! The Erdős problem's lags for sequential LP: `C_L = Σ_i λh_(i+L)·(1 − λh_i)` with the constant
//! `λ = n/(2Σh)` (score `max C·2/n`), and the box `0 ≤ h ≤ min(1, 2Σh/n)` (`[0, 1]` before and
//! after the arena's rescale).

use crate::problems::LagModel;

/// The rescaled correlation `correlate(λh, 1 − λh)` as a lag model.
pub struct Overlap;

impl LagModel for Overlap {
    fn lags(&self, x: &[f64]) -> Vec<f64> {
        let lambda = rescale(x);
        let h: Vec<f64> = x.iter().map(|v| v * lambda).collect();
        let rest: Vec<f64> = h.iter().map(|v| 1.0 - v).collect();
        crate::fast::correlate_full(&h, &rest).values
    }

    fn factor(&self, x: &[f64]) -> f64 {
        rescale(x)
    }

    /// `C_L = Σ_i λh_(i+L)(1 − λh_i)`, `L = k − (n − 1)`:
    /// `∂C_L/∂h_j = λ·[0 ≤ j−L < n] − λ²·(h_(j−L) + h_(j+L))`, out-of-range `h = 0`.
    fn gradient_entry(&self, x: &[f64], lambda: f64, k: usize, j: usize) -> f64 {
        let n = x.len();
        let lag = k as isize - (n as isize - 1);
        let j = j as isize;
        let at = |i: isize| {
            if (0..n as isize).contains(&i) {
                Some(x[i as usize])
            } else {
                None
            }
        };
        let mut g = 0.0;
        if let Some(h) = at(j - lag) {
            g += lambda - lambda * lambda * h;
        }
        if let Some(h) = at(j + lag) {
            g -= lambda * lambda * h;
        }
        g
    }

    /// `λ`.
    fn row_scale(&self, x: &[f64]) -> f64 {
        rescale(x)
    }

    /// `min(1, 2Σh/n)` with a 1e-12 relative margin against rounding of the new sum.
    fn upper(&self, x: &[f64]) -> f64 {
        upper(x)
    }

    fn bounds(&self, x: &[f64], upper: f64, r: f64, j: usize) -> (f64, f64) {
        ((-r).max(-x[j]), r.min((upper - x[j]).max(0.0)))
    }

    fn finish(&self, x: &[f64], delta: &[(usize, f64)]) -> Vec<f64> {
        let mut y = x.to_vec();
        for &(j, d) in delta {
            y[j] += d;
        }
        for v in &mut y {
            *v = v.clamp(0.0, 1.0);
        }
        // Lowering values lowers the sum and so the cap; a few passes settle it.
        for _ in 0..4 {
            let cap = upper(&y);
            let mut changed = false;
            for v in &mut y {
                if *v > cap {
                    *v = cap;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        y
    }
}

/// The arena's rescale factor `n/(2Σh)`.
fn rescale(x: &[f64]) -> f64 {
    let sum = crate::fast::compensated_sum(x.iter().copied());
    (x.len() as f64 / 2.0) / sum
}

/// `min(1, 2Σh/n)·(1 − 1e-12)`: the largest value the Erdős rules allow, with a margin.
fn upper(x: &[f64]) -> f64 {
    let sum = crate::fast::compensated_sum(x.iter().copied());
    (2.0 * sum / x.len() as f64).min(1.0) * (1.0 - 1e-12)
}
