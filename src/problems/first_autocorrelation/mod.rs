//! First autocorrelation inequality: minimise `max(f∗f)/(∫f)²` over `f ≥ 0`.

pub mod lag_model;
pub mod objective;

use super::{
    check_finite, check_some_positive, peak_ratio, FastScore, LagModel, Problem, ProblemSpec,
};
use crate::error::Violation;
use crate::objective::{Objective, SmoothMax};
use crate::optimize::Parameterisation;
use num_rational::BigRational;

/// The first autocorrelation problem (`first-autocorrelation-inequality`).
pub struct FirstAutocorrelation {
    spec: ProblemSpec,
}

impl FirstAutocorrelation {
    /// Loads the embedded data file.
    pub fn new() -> Self {
        FirstAutocorrelation {
            spec: super::embedded_spec(
                "first-autocorrelation-inequality",
                include_str!("../../../problems/first-autocorrelation-inequality.toml"),
            ),
        }
    }
}

impl Problem for FirstAutocorrelation {
    fn spec(&self) -> &ProblemSpec {
        &self.spec
    }

    fn objective(&self, n: usize, smooth: SmoothMax) -> Box<dyn Objective> {
        Box::new(objective::FirstAutocorrelationObjective::new(n, smooth))
    }

    fn parameterisations(&self) -> &'static [Parameterisation] {
        &[Parameterisation::Square, Parameterisation::Exp]
    }

    /// DOMAIN.md: first from the AlphaEvolve start, ×4: floor 1e2 → 1.5048705 in 34 s.
    fn beta_floor_after_resample(&self) -> f64 {
        1e2
    }

    fn default_program(&self) -> &'static str {
        include_str!("../../../problems/optimizers/first-autocorrelation-inequality.default.toml")
    }

    fn lag_model(&self) -> Option<&dyn LagModel> {
        Some(&lag_model::Autoconvolution)
    }

    #[cfg(feature = "gmp")]
    fn score_exact_gmp(&self, values: &[f64]) -> Option<BigRational> {
        crate::exact::gmp::first_autocorrelation_score(values)
    }

    fn check(&self, values: &[f64]) -> Result<(), Violation> {
        let slug = &self.spec.slug;
        check_finite(slug, values)?;
        if let Some(i) = values.iter().position(|&x| x < 0.0) {
            return Err(Violation::at(slug, "every value must be ≥ 0", i, values[i]));
        }
        check_some_positive(slug, values, "the sum must be > 0 (all values are zero)")?;
        Ok(())
    }

    fn score_fast(&self, values: &[f64]) -> FastScore {
        peak_ratio::fast(values, false)
    }

    fn lags(&self, values: &[f64]) -> Vec<f64> {
        crate::fast::autoconvolve(values).values
    }

    fn repair(&self, values: &mut [f64]) -> usize {
        super::clip_negatives(values)
    }

    fn score_exact(&self, values: &[f64]) -> BigRational {
        peak_ratio::exact(values, false)
    }
}
