//! Third autocorrelation inequality: minimise `|max(f∗f)|/(∫f)²` over signed `f`.

pub mod objective;

use super::{check_finite, peak_ratio, FastScore, Problem, ProblemSpec};
use crate::error::{format_value, Violation};
use crate::objective::{Objective, SmoothMax};
use crate::optimize::Parameterisation;
use num_rational::BigRational;

/// The arena's floor on `(Σf·dx)²`, below which a construction is rejected.
const MIN_SQUARED_INTEGRAL: f64 = 1e-9;

/// The third autocorrelation problem (`third-autocorrelation-inequality`).
pub struct ThirdAutocorrelation {
    spec: ProblemSpec,
}

impl ThirdAutocorrelation {
    /// Loads the embedded data file.
    pub fn new() -> Self {
        ThirdAutocorrelation {
            spec: super::embedded_spec(
                "third-autocorrelation-inequality",
                include_str!("../../../problems/third-autocorrelation-inequality.toml"),
            ),
        }
    }
}

impl Problem for ThirdAutocorrelation {
    fn spec(&self) -> &ProblemSpec {
        &self.spec
    }

    fn objective(&self, n: usize, smooth: SmoothMax) -> Box<dyn Objective> {
        Box::new(objective::ThirdAutocorrelationObjective::new(n, smooth))
    }

    fn parameterisations(&self) -> &'static [Parameterisation] {
        &[Parameterisation::Raw]
    }

    /// DOMAIN.md: third, ×4 from 1,600 samples: floor 1e4 → 1.4537598, 1e1 → 1.4526843.
    fn beta_floor_after_resample(&self) -> f64 {
        1e1
    }

    fn default_program(&self) -> &'static str {
        include_str!("../../../problems/optimizers/third-autocorrelation-inequality.default.toml")
    }

    #[cfg(feature = "gmp")]
    fn score_exact_gmp(&self, values: &[f64]) -> Option<BigRational> {
        crate::exact::gmp::third_autocorrelation_score(values)
    }

    /// Any sign is allowed; the squared integral `(Σf·dx)²` is checked in float64 as the arena does.
    fn check(&self, values: &[f64]) -> Result<(), Violation> {
        let slug = &self.spec.slug;
        check_finite(slug, values)?;
        let dx = 0.5 / values.len() as f64;
        let sum: f64 = values.iter().sum();
        let squared = (sum * dx) * (sum * dx);
        if squared.is_nan() || squared < MIN_SQUARED_INTEGRAL {
            return Err(Violation::whole(
                slug,
                "(Σf·dx)² must be ≥ 1e-9 (the integral is too close to zero)",
                Some(format_value(squared)),
            ));
        }
        Ok(())
    }

    fn score_fast(&self, values: &[f64]) -> FastScore {
        peak_ratio::fast(values, true)
    }

    fn lags(&self, values: &[f64]) -> Vec<f64> {
        crate::fast::autoconvolve(values).values
    }

    /// Any sign is allowed: nothing to repair.
    fn repair(&self, _values: &mut [f64]) -> usize {
        0
    }

    fn score_exact(&self, values: &[f64]) -> BigRational {
        peak_ratio::exact(values, true)
    }
}
