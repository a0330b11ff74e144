//! Exact linear convolution of dyadic integer arrays (multi-prime NTT with CRT).

use super::dyadic::DyadicArray;
use num_bigint::BigInt;

/// Exact linear convolution `c_k = Σ_i a_i · b_(k−i)` of the integers behind two dyadic arrays;
/// length `len(a) + len(b) − 1`, in units of `2^(a.exponent + b.exponent)`.
pub fn convolve(a: &DyadicArray, b: &DyadicArray) -> Vec<BigInt> {
    let _ = (a, b);
    todo!("NTT convolution")
}

/// Exact autoconvolution `a ∗ a` (one forward transform instead of two).
pub fn autoconvolve(a: &DyadicArray) -> Vec<BigInt> {
    convolve(a, a)
}
