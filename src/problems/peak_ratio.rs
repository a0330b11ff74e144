//! The score shared by the first and third problems: `max(conv(f, f)·dx) / (Σf·dx)²`, `dx = 0.5/n`
//! (the third takes the absolute value of the max). In exact arithmetic `dx` cancels to
//! `2n · max_k c_k / S²`, and so does the common power of two of the dyadic integers.

use super::FastScore;
use crate::exact::convolution::autoconvolve_each;
use crate::exact::dyadic::DyadicArray;
use crate::fast::{self, gamma, UNIT_ROUNDOFF};
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::Signed;

/// Float64 score as the arena computes it, and its a-priori error bound.
///
/// Error sources: each FFT coefficient (bound ε), the sum (γ_n·Σ|f|), and a handful of final
/// multiplications and divisions (8u relative). First order, doubled for safety.
pub fn fast(values: &[f64], absolute: bool) -> FastScore {
    let values = &fast::normalized(values);
    let n = values.len();
    let dx = 0.5 / n as f64;
    let conv = fast::autoconvolve(values);
    let peak = conv
        .values
        .iter()
        .map(|c| c * dx)
        .fold(f64::NEG_INFINITY, f64::max);
    let sum = fast::compensated_sum(values.iter().copied());
    let norm = (sum * dx) * (sum * dx);
    let value = if absolute { peak.abs() } else { peak } / norm;
    let abs_sum: f64 = values.iter().map(|x| x.abs()).sum();
    let sum_rel = gamma(n) * abs_sum / sum.abs();
    let bound =
        (conv.error_bound * dx) / norm + value.abs() * (2.0 * sum_rel + 8.0 * UNIT_ROUNDOFF);
    FastScore {
        value,
        error_bound: 2.0 * bound,
    }
}

/// Exact score `2n · max_k c_k / S²` (absolute value of the max when `absolute`).
pub fn exact(values: &[f64], absolute: bool) -> BigRational {
    let a = DyadicArray::from_f64(values);
    let mut peak: Option<BigInt> = None;
    autoconvolve_each(&a, |c| {
        if peak.as_ref().is_none_or(|p| c > *p) {
            peak = Some(c);
        }
    });
    let mut peak = peak.expect("non-empty construction");
    if absolute {
        peak = peak.abs();
    }
    let sum = a.integer_sum();
    let n = BigInt::from(values.len());
    super::exact_ratio(n * 2 * peak, &sum * &sum)
}
