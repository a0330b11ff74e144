//! The exact line search of sequential LP: along a step `δ` with `Σδ = 0` (the sum, and so the
//! Erdős rescale, fixed), every lag of a [`LagModel`] is a quadratic in the step length,
//! `lag_k(x + tδ) = a_k + b_k·t + c_k·t²`, so the peak along the line is the maximum of
//! quadratics. Three lag evaluations (at `t = 0, ½, 1`) give every quadratic exactly (up to
//! rounding); the length that minimises their maximum on `[0, 1]` is found on a grid, then
//! refined by golden section inside the grid cell around the best point.

use crate::problems::LagModel;

/// Grid points on `[0, 1]` before the golden-section refinement.
const GRID: usize = 64;

/// Golden-section iterations inside the best grid cell (the cell shrinks by 0.618 each).
const REFINE: usize = 40;

/// Each lag's quadratic along the line: `(a, b, c)` with `lag(t) = a + b·t + c·t²`.
pub struct LineQuadratics {
    terms: Vec<(f64, f64, f64)>,
}

impl LineQuadratics {
    /// The quadratics from the lag values at `t = 0`, `½` and `1` (equal lengths).
    pub fn from_samples(at0: &[f64], at_half: &[f64], at1: &[f64]) -> LineQuadratics {
        let terms = at0
            .iter()
            .zip(at_half)
            .zip(at1)
            .map(|((&a, &h), &e)| {
                let c = 2.0 * (e - 2.0 * h + a);
                (a, e - a - c, c)
            })
            .collect();
        LineQuadratics { terms }
    }

    /// The peak along the line at length `t`: the largest quadratic there.
    pub fn peak(&self, t: f64) -> f64 {
        self.terms.iter().fold(f64::NEG_INFINITY, |m, &(a, b, c)| {
            m.max(a + t * (b + t * c))
        })
    }

    /// The length in `[0, 1]` with the lowest peak, and that peak.
    pub fn best_length(&self) -> (f64, f64) {
        let (mut best_t, mut best) = (0.0, self.peak(0.0));
        for i in 1..=GRID {
            let t = i as f64 / GRID as f64;
            let p = self.peak(t);
            if p < best {
                (best_t, best) = (t, p);
            }
        }
        let cell = 1.0 / GRID as f64;
        let (mut lo, mut hi) = ((best_t - cell).max(0.0), (best_t + cell).min(1.0));
        let ratio = (5f64.sqrt() - 1.0) / 2.0;
        for _ in 0..REFINE {
            let (t1, t2) = (hi - ratio * (hi - lo), lo + ratio * (hi - lo));
            if self.peak(t1) < self.peak(t2) {
                hi = t2;
            } else {
                lo = t1;
            }
        }
        let t = (lo + hi) / 2.0;
        let p = self.peak(t);
        if p < best {
            (t, p)
        } else {
            (best_t, best)
        }
    }
}

/// The best length along `δ` (pairs `(j, δ_j)`) from `x` whose lags are `lags`: the lags at
/// `x + δ/2` and `x + δ` (two evaluations of [`LagModel::lags`]) give the quadratics.
pub fn best_length(model: &dyn LagModel, x: &[f64], lags: &[f64], delta: &[(usize, f64)]) -> f64 {
    let along = |t: f64| {
        let mut y = x.to_vec();
        for &(j, d) in delta {
            y[j] += t * d;
        }
        model.lags(&y)
    };
    LineQuadratics::from_samples(lags, &along(0.5), &along(1.0))
        .best_length()
        .0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quadratics_are_recovered_from_three_samples() {
        let exact = [(1.0, -2.0, 3.0), (0.5, 0.25, -1.0)];
        let at = |t: f64| -> Vec<f64> {
            exact
                .iter()
                .map(|&(a, b, c)| a + b * t + c * t * t)
                .collect()
        };
        let q = LineQuadratics::from_samples(&at(0.0), &at(0.5), &at(1.0));
        for t in [0.0, 0.1, 0.37, 0.8, 1.0] {
            let want = at(t).into_iter().fold(f64::NEG_INFINITY, f64::max);
            assert!((q.peak(t) - want).abs() < 1e-12, "t={t}");
        }
    }

    #[test]
    fn the_best_length_minimises_the_peak_of_crossing_quadratics() {
        // Peak of 1 − t and 0.2 + t²: they cross where t² + t − 0.8 = 0, t ≈ 0.5247.
        let q = LineQuadratics {
            terms: vec![(1.0, -1.0, 0.0), (0.2, 0.0, 1.0)],
        };
        let (t, p) = q.best_length();
        let cross = (-1.0 + (1.0f64 + 3.2).sqrt()) / 2.0;
        assert!((t - cross).abs() < 1e-9, "{t} vs {cross}");
        assert!((p - (1.0 - cross)).abs() < 1e-9);
        // A peak rising from t = 0 keeps the length 0.
        let up = LineQuadratics {
            terms: vec![(1.0, 0.5, 0.0)],
        };
        assert_eq!(up.best_length(), (0.0, 1.0));
    }
}
