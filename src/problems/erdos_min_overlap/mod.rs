//! Erdős minimum overlap: minimise `max_k ∫ h(x+k)(1 − h(x)) dx` over `0 ≤ h ≤ 1`, `∫h = 1`.
//!
//! The arena rescales `h` to sum `n/2`, then takes `max(correlate(h, 1 − h, "full")) · 2/n`. The
//! exact verifier applies the rescale as real-number arithmetic: with `λ = n/(2S)`, the lag-`k`
//! correlation is `λ·P_k − λ²·R_k` (`P_k` the sum of the overlapping part of `h`, `R_k` the
//! autocorrelation), so the score is `max_k (2S·P_k − n·R_k) / (2S²)`.

pub mod lag_model;
pub mod objective;

use super::{check_finite, check_some_positive, FastScore, LagModel, Problem, ProblemSpec};
use crate::error::Violation;
use crate::exact::convolution::convolve_each;
use crate::exact::dyadic::DyadicArray;
use crate::fast::{self, gamma, UNIT_ROUNDOFF};
use crate::objective::{Objective, SmoothMax};
use crate::optimize::Parameterisation;
use num_bigint::BigInt;
use num_rational::BigRational;

/// The Erdős minimum overlap problem (`erdos-min-overlap`).
pub struct ErdosMinOverlap {
    spec: ProblemSpec,
}

impl ErdosMinOverlap {
    /// Loads the embedded data file.
    pub fn new() -> Self {
        ErdosMinOverlap {
            spec: super::embedded_spec(
                "erdos-min-overlap",
                include_str!("../../../problems/erdos-min-overlap.toml"),
            ),
        }
    }
}

impl Problem for ErdosMinOverlap {
    fn spec(&self) -> &ProblemSpec {
        &self.spec
    }

    fn objective(&self, n: usize, smooth: SmoothMax) -> Box<dyn Objective> {
        Box::new(objective::ErdosMinOverlapObjective::new(n, smooth))
    }

    fn parameterisations(&self) -> &'static [Parameterisation] {
        &[Parameterisation::Sigmoid]
    }

    fn default_program(&self) -> &'static str {
        include_str!("../../../problems/optimizers/erdos-min-overlap.default.toml")
    }

    fn lag_model(&self) -> Option<&dyn LagModel> {
        Some(&lag_model::Overlap)
    }

    #[cfg(feature = "gmp")]
    fn score_exact_gmp(&self, values: &[f64]) -> Option<BigRational> {
        crate::exact::gmp::erdos_min_overlap_score(values)
    }

    /// Values in `[0, 1]`, a non-zero sum, and values still in `[0, 1]` after the rescale to sum
    /// `n/2` (checked exactly: `n·h_i ≤ 2·Σh`).
    fn check(&self, values: &[f64]) -> Result<(), Violation> {
        let slug = &self.spec.slug;
        check_finite(slug, values)?;
        if let Some(i) = values.iter().position(|&x| !(0.0..=1.0).contains(&x)) {
            return Err(Violation::at(
                slug,
                "every value must be in [0, 1]",
                i,
                values[i],
            ));
        }
        check_some_positive(
            slug,
            values,
            "the sum must be non-zero (all values are zero)",
        )?;
        let a = DyadicArray::from_f64(values);
        let twice_sum = a.integer_sum() * 2;
        let n = BigInt::from(values.len());
        if let Some(i) = (0..values.len()).find(|&i| &n * a.integer(i) > twice_sum) {
            return Err(Violation::at(
                slug,
                "every value must be ≤ 1 after the rescale to sum n/2 (n·h_i ≤ 2·Σh)",
                i,
                values[i],
            ));
        }
        Ok(())
    }

    fn score_fast(&self, values: &[f64]) -> FastScore {
        let n = values.len();
        let sum = fast::compensated_sum(values.iter().copied());
        let factor = (n as f64 / 2.0) / sum;
        let h: Vec<f64> = values.iter().map(|x| x * factor).collect();
        let one_minus: Vec<f64> = h.iter().map(|x| 1.0 - x).collect();
        let corr = fast::correlate_full(&h, &one_minus);
        let (peak, _) = fast::argmax(&corr.values);
        let value = peak * 2.0 / n as f64;
        // Each h'_i carries a relative error ρ from the sum and the scaling; it moves every
        // correlation term h'_(i+k)(1 − h'_i) by at most ρ·h'_(i+k)·(1 + 2h'_i) + u·h'_(i+k).
        let rho = gamma(n) + 3.0 * UNIT_ROUNDOFF;
        let h_sum = n as f64 / 2.0;
        let h_max = h.iter().fold(0.0f64, |m, &x| m.max(x));
        let input = h_sum * (rho * (1.0 + 2.0 * h_max) + UNIT_ROUNDOFF);
        let bound = (corr.error_bound + input) * 2.0 / n as f64 + value.abs() * 2.0 * UNIT_ROUNDOFF;
        FastScore {
            value,
            error_bound: 2.0 * bound,
        }
    }

    /// Correlation of the rescaled h with 1 − h at every lag (the score is its max · 2/n).
    fn lags(&self, values: &[f64]) -> Vec<f64> {
        let n = values.len();
        let sum = fast::compensated_sum(values.iter().copied());
        let h: Vec<f64> = values
            .iter()
            .map(|x| x * ((n as f64 / 2.0) / sum))
            .collect();
        let one_minus: Vec<f64> = h.iter().map(|x| 1.0 - x).collect();
        fast::correlate_full(&h, &one_minus).values
    }

    /// Clips to [0, 1], then caps the tallest values at the level c where c = 2·mean(min(h, c)),
    /// so that every value stays ≤ 1 after the rescale to sum n/2.
    fn repair(&self, values: &mut [f64]) -> usize {
        let mut changed = 0;
        for x in values.iter_mut() {
            let clipped = x.clamp(0.0, 1.0);
            if clipped != *x {
                *x = clipped;
                changed += 1;
            }
        }
        if self.check(values).is_ok() || !values.iter().any(|&x| x > 0.0) {
            return changed;
        }
        let n = values.len() as f64;
        let capped_gap = |c: f64| 2.0 * values.iter().map(|&x| x.min(c)).sum::<f64>() / n - c;
        // capped_gap > 0 near 0 and < 0 at the maximum: bisect for the root, stay on the safe side.
        let (mut lo, mut hi) = (0.0f64, values.iter().fold(0.0f64, |m, &x| m.max(x)));
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if capped_gap(mid) >= 0.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let mut cap = lo;
        loop {
            let capped: Vec<f64> = values.iter().map(|&x| x.min(cap)).collect();
            if self.check(&capped).is_ok() || cap == 0.0 {
                for (x, y) in values.iter_mut().zip(capped) {
                    if *x != y {
                        *x = y;
                        changed += 1;
                    }
                }
                return changed;
            }
            cap *= 1.0 - 1e-12;
        }
    }

    fn score_exact(&self, values: &[f64]) -> BigRational {
        let n = values.len();
        let a = DyadicArray::from_f64(values);
        let sum = a.integer_sum();
        let prefix = prefix_sums(&a);
        let twice_sum = &sum * 2;
        let n_big = BigInt::from(n);
        let (mut j, mut peak) = (0, None::<BigInt>);
        // R for all lags at once: a ∗ reverse(a), index j ↔ lag j − (n − 1).
        convolve_each(&a, &a.reversed(), |r| {
            // Overlap sum P for lag j − (n−1): h[lag..n) for lag ≥ 0, h[0..n+lag) otherwise.
            let overlap = if j >= n - 1 {
                &prefix[n] - &prefix[j - (n - 1)]
            } else {
                prefix[j + 1].clone()
            };
            let value = &twice_sum * overlap - &n_big * r;
            if peak.as_ref().is_none_or(|p| value > *p) {
                peak = Some(value);
            }
            j += 1;
        });
        let peak = peak.expect("non-empty construction");
        super::exact_ratio(peak, &sum * &sum * 2)
    }
}

/// `prefix[k] = a_0 + … + a_(k−1)` as exact integers.
fn prefix_sums(a: &DyadicArray) -> Vec<BigInt> {
    let mut out = Vec::with_capacity(a.len() + 1);
    let mut running = BigInt::from(0);
    out.push(running.clone());
    for i in 0..a.len() {
        running += a.integer(i);
        out.push(running.clone());
    }
    out
}
