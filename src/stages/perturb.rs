//! Perturbation for basin hopping: multiplicative noise on a random fraction of the cells.
//!
//! DOMAIN.md: "multiplicative noise on a few percent of the support, or ~1% globally". Seeded,
//! so the same seed gives the same bits.

use super::{fraction, positive, Stage, StageOutcome, Tunable, TuneRange};
use crate::optimize::Budget;
use crate::problems::Problem;
use rand::seq::index::sample;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

/// A random perturbation: multiplicative noise on a fraction of the support.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Perturb {
    /// Fraction of the cells perturbed (1.0 = all).
    #[serde(default = "default_fraction")]
    pub fraction: f64,
    /// Relative size of the multiplicative noise.
    #[serde(default = "default_scale")]
    pub scale: f64,
}

fn default_fraction() -> f64 {
    0.01
}
fn default_scale() -> f64 {
    0.01
}

/// The tunable parameters of a perturbation.
const TUNABLE: &[Tunable] = &[
    Tunable::new("fraction", TuneRange::Fraction),
    Tunable::new("scale", TuneRange::Positive),
];

impl Stage for Perturb {
    fn kind(&self) -> &'static str {
        "perturb"
    }

    fn spends_evaluations(&self) -> bool {
        false
    }

    fn check(&self, path: &str) -> Result<(), String> {
        fraction(path, "fraction", self.fraction)?;
        positive(path, "scale", self.scale)
    }

    fn tunable(&self) -> &'static [Tunable] {
        TUNABLE
    }

    fn run(
        &self,
        _problem: &dyn Problem,
        start: &[f64],
        _budget: &Budget,
        seed: u64,
    ) -> StageOutcome {
        StageOutcome::plain(perturb(start, self.fraction, self.scale, seed))
    }
}

/// `values` with `round(fraction·n)` cells (at least one when `fraction > 0`) multiplied by
/// `1 + scale·z`, `z` standard normal, chosen and drawn from `seed`.
pub fn perturb(values: &[f64], fraction: f64, scale: f64, seed: u64) -> Vec<f64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let n = values.len();
    let count = if fraction > 0.0 {
        ((fraction * n as f64).round() as usize).clamp(1, n)
    } else {
        0
    };
    let mut out = values.to_vec();
    for i in sample(&mut rng, n, count) {
        let z: f64 = rng.sample(StandardNormal);
        out[i] *= 1.0 + scale * z;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touches_the_requested_fraction_deterministically() {
        let v: Vec<f64> = (1..=200).map(|i| i as f64).collect();
        let a = perturb(&v, 0.05, 0.1, 42);
        let changed = a.iter().zip(&v).filter(|(x, y)| x != y).count();
        assert_eq!(changed, 10);
        let bits = |w: &[f64]| w.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a), bits(&perturb(&v, 0.05, 0.1, 42)));
        assert_ne!(bits(&a), bits(&perturb(&v, 0.05, 0.1, 43)));
        assert_eq!(perturb(&v, 0.0, 0.1, 1), v);
    }

    #[test]
    fn zeros_stay_zero_under_multiplicative_noise() {
        let v = vec![0.0; 10];
        assert_eq!(perturb(&v, 1.0, 0.5, 3), v);
    }
}
