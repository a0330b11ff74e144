//! Second autocorrelation inequality: maximise `‖f∗f‖₂² / (‖f∗f‖₁·‖f∗f‖_∞)` over `f ≥ 0`.
//!
//! The arena clips values at 0 (after allowing down to −1e-6), convolves, and integrates `‖c‖₂²`
//! with a piecewise-linear quadrature on `m + 2` points (zero end points, `h = 1/(m+1)`). The
//! exact verifier applies that quadrature as real-number arithmetic; `h` cancels and the score is
//! `(2·Σc_k² + Σc_k·c_(k+1)) / (3·Σ|c_k|·max|c_k|)`.

pub mod objective;

use super::{check_finite, check_some_positive, FastScore, Problem, ProblemSpec};
use crate::error::Violation;
use crate::exact::convolution::autoconvolve_each;
use crate::exact::dyadic::DyadicArray;
use crate::fast::{self, gamma, UNIT_ROUNDOFF};
use crate::objective::{Objective, RatioObjective, SmoothMax};
use crate::optimize::Parameterisation;
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{Signed, Zero};

/// The smallest value the arena accepts before clipping at zero.
const NEGATIVE_TOLERANCE: f64 = -1e-6;

/// The second autocorrelation problem (`second-autocorrelation-inequality`).
pub struct SecondAutocorrelation {
    spec: ProblemSpec,
}

impl SecondAutocorrelation {
    /// Loads the embedded data file.
    pub fn new() -> Self {
        SecondAutocorrelation {
            spec: super::embedded_spec(
                "second-autocorrelation-inequality",
                include_str!("../../../problems/second-autocorrelation-inequality.toml"),
            ),
        }
    }
}

fn clipped(values: &[f64]) -> Vec<f64> {
    values.iter().map(|&x| x.max(0.0)).collect()
}

impl Problem for SecondAutocorrelation {
    fn spec(&self) -> &ProblemSpec {
        &self.spec
    }

    fn objective(&self, n: usize, smooth: SmoothMax) -> Box<dyn Objective> {
        Box::new(objective::SecondAutocorrelationObjective::new(n, smooth))
    }

    fn parameterisations(&self) -> &'static [Parameterisation] {
        &[Parameterisation::Square, Parameterisation::Exp]
    }

    fn default_program(&self) -> &'static str {
        include_str!("../../../problems/optimizers/second-autocorrelation-inequality.default.toml")
    }

    fn ratio_terms(&self, n: usize, smooth: SmoothMax) -> Option<Box<dyn RatioObjective>> {
        Some(Box::new(objective::RatioTerms::new(n, smooth)))
    }

    #[cfg(feature = "gmp")]
    fn score_exact_gmp(&self, values: &[f64]) -> Option<BigRational> {
        crate::exact::gmp::second_autocorrelation_score(values)
    }

    fn check(&self, values: &[f64]) -> Result<(), Violation> {
        let slug = &self.spec.slug;
        check_finite(slug, values)?;
        if let Some(i) = values.iter().position(|&x| x < NEGATIVE_TOLERANCE) {
            return Err(Violation::at(
                slug,
                "every value must be ≥ -1e-6 (then it is clipped at 0)",
                i,
                values[i],
            ));
        }
        check_some_positive(
            slug,
            values,
            "the sum must be positive after clipping at 0 (no positive value)",
        )?;
        Ok(())
    }

    fn score_fast(&self, values: &[f64]) -> FastScore {
        let g = fast::normalized(&clipped(values));
        let conv = fast::autoconvolve(&g);
        let c = &conv.values;
        let m = c.len();
        let h = 1.0 / (m as f64 + 1.0);
        // L2² over the m+1 intervals of y = [0, c_0, …, c_(m−1), 0], each interval's width taken
        // from the grid as numpy's `diff(linspace(-0.5, 0.5, m + 2))` produces it.
        let grid = |j: usize| if j == m + 1 { 0.5 } else { j as f64 * h - 0.5 };
        let y = |j: usize| if j == 0 || j > m { 0.0 } else { c[j - 1] };
        let l2_squared = fast::compensated_sum((0..=m).map(|j| {
            let (y1, y2) = (y(j), y(j + 1));
            ((grid(j + 1) - grid(j)) / 3.0) * (y1 * y1 + y1 * y2 + y2 * y2)
        }));
        let abs_sum = fast::compensated_sum(c.iter().map(|x| x.abs()));
        let l1 = abs_sum / (m as f64 + 1.0);
        let linf = c.iter().fold(0.0f64, |acc, x| acc.max(x.abs()));
        let value = l2_squared / (l1 * linf);
        // First-order propagation of the per-coefficient FFT error ε and the sums' rounding.
        let eps = conv.error_bound;
        let d_l2 =
            2.0 * h * eps * abs_sum + h * (m as f64 + 1.0) * eps * eps + gamma(m + 4) * l2_squared;
        let d_l1 = (m as f64 * eps + gamma(m + 2) * abs_sum) / (m as f64 + 1.0);
        let relative = d_l2 / l2_squared + d_l1 / l1 + eps / linf + 4.0 * UNIT_ROUNDOFF;
        FastScore {
            value,
            error_bound: 2.0 * value * relative,
        }
    }

    fn lags(&self, values: &[f64]) -> Vec<f64> {
        crate::fast::autoconvolve(&clipped(values)).values
    }

    fn repair(&self, values: &mut [f64]) -> usize {
        super::clip_negatives(values)
    }

    fn score_exact(&self, values: &[f64]) -> BigRational {
        let a = DyadicArray::from_f64(&clipped(values));
        let mut squares = BigInt::zero();
        let mut neighbours = BigInt::zero();
        let mut abs_sum = BigInt::zero();
        let mut peak = BigInt::zero();
        let mut previous: Option<BigInt> = None;
        autoconvolve_each(&a, |ck| {
            squares += &ck * &ck;
            if let Some(before) = &previous {
                neighbours += before * &ck;
            }
            let magnitude = ck.abs();
            abs_sum += &magnitude;
            if magnitude > peak {
                peak = magnitude;
            }
            previous = Some(ck);
        });
        super::exact_ratio(squares * 2 + neighbours, abs_sum * peak * 3)
    }
}
