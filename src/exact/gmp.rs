//! A second, independent exact scorer for the four EinsteinArena problems, on GMP through `rug`.
//!
//! It shares nothing with the default verifier (`dyadic` + NTT convolution) except the problem
//! definitions:
//!
//! - every float64 is split exactly into `±odd · 2^exponent` by reading its bits here;
//! - the array becomes integers over one common power of two (the smallest exponent present);
//! - convolutions and correlations go through Kronecker substitution: the integers are packed
//!   into one big `rug::Integer` with slots of a whole number of 64-bit words, wide enough for
//!   every output coefficient, and GMP multiplies or squares it;
//! - signs are handled by packing `P − M` (positive and negative parts) into one signed big
//!   integer and reading the product back in *balanced* digits (each slot in
//!   `[−2^(w−1), 2^(w−1))`, with a borrow into the next slot), so one GMP product suffices;
//! - each score formula is then evaluated in exact rational arithmetic, literally from its
//!   definition, on integer numerators over a common denominator with one final division.

use std::cmp::Ordering;

use num_bigint::{BigInt, BigUint, Sign};
use num_rational::BigRational;
use rug::integer::{Order, UnsignedPrimitive};
use rug::{Integer, Rational};

// The four problems' exact scores, each reached through its problem's
// `Problem::score_exact_gmp`. Inputs must already be validated (finite, non-empty, problem
// constraints met, non-zero sum); each returns the reduced rational (numerator, denominator > 0)
// as num-rational's [`BigRational`], so callers can compare it with the default verifier, or
// `None` (instead of dividing by zero) if the score's denominator is zero, which validated
// inputs never produce.

/// The exact Erdős minimum overlap score.
pub fn erdos_min_overlap_score(values: &[f64]) -> Option<BigRational> {
    erdos_min_overlap(values).map(|r| to_big_rational(&r))
}

/// The exact first autocorrelation score.
pub fn first_autocorrelation_score(values: &[f64]) -> Option<BigRational> {
    first_autocorrelation(values).map(|r| to_big_rational(&r))
}

/// The exact second autocorrelation score.
pub fn second_autocorrelation_score(values: &[f64]) -> Option<BigRational> {
    second_autocorrelation(values).map(|r| to_big_rational(&r))
}

/// The exact third autocorrelation score.
pub fn third_autocorrelation_score(values: &[f64]) -> Option<BigRational> {
    third_autocorrelation(values).map(|r| to_big_rational(&r))
}

// ---------------------------------------------------------------------------------------------
// float64 → integers over a common power of two
// ---------------------------------------------------------------------------------------------

/// One float64 read from its bits: `value = ±magnitude · 2^exponent`, `magnitude` odd (or zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Split {
    negative: bool,
    magnitude: u64,
    exponent: i32,
}

impl Split {
    /// Splits a finite float64 exactly (subnormals included; ±0 become magnitude 0).
    fn of(x: f64) -> Split {
        let bits = x.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as i32;
        let fraction = bits & ((1u64 << 52) - 1);
        let (magnitude, exponent) = if biased == 0 {
            (fraction, -1074)
        } else {
            (fraction | (1u64 << 52), biased - 1075)
        };
        if magnitude == 0 {
            return Split {
                negative: false,
                magnitude: 0,
                exponent: 0,
            };
        }
        let tz = magnitude.trailing_zeros();
        Split {
            negative: bits >> 63 == 1,
            magnitude: magnitude >> tz,
            exponent: exponent + tz as i32,
        }
    }
}

/// A float64 array as integers `x_i = ±magnitude_i · 2^(exponent_i − scale)` times `2^scale`.
struct Scaled {
    parts: Vec<Split>,
    /// The common power of two: the smallest exponent of a non-zero value (0 if all are zero).
    scale: i32,
    /// Bit length bound of every `|x_i|`.
    max_bits: u64,
}

impl Scaled {
    /// Splits `values`; with `clip_negative`, negative values (and −0) become 0 (`max(f, 0)`).
    fn new(values: &[f64], clip_negative: bool) -> Scaled {
        let parts: Vec<Split> = values
            .iter()
            .map(|&v| {
                let s = Split::of(v);
                if clip_negative && s.negative {
                    Split::of(0.0)
                } else {
                    s
                }
            })
            .collect();
        let scale = parts
            .iter()
            .filter(|p| p.magnitude != 0)
            .map(|p| p.exponent)
            .min()
            .unwrap_or(0);
        let max_bits = parts
            .iter()
            .filter(|p| p.magnitude != 0)
            .map(|p| bit_len(p.magnitude) + (p.exponent - scale) as u64)
            .max()
            .unwrap_or(0);
        Scaled {
            parts,
            scale,
            max_bits,
        }
    }

    fn len(&self) -> usize {
        self.parts.len()
    }

    /// The exact integer sum `Σ x_i`, accumulated per exponent in `i128` first.
    fn sum(&self) -> Integer {
        let top = self
            .parts
            .iter()
            .filter(|p| p.magnitude != 0)
            .map(|p| (p.exponent - self.scale) as usize)
            .max();
        let Some(top) = top else {
            return Integer::new();
        };
        // |bucket| ≤ n · 2^53 < 2^127 for any realistic n.
        let mut buckets = vec![0i128; top + 1];
        for p in self.parts.iter().filter(|p| p.magnitude != 0) {
            let m = i128::from(p.magnitude);
            buckets[(p.exponent - self.scale) as usize] += if p.negative { -m } else { m };
        }
        let mut total = Integer::new();
        for (shift, &b) in buckets.iter().enumerate() {
            if b != 0 {
                total += Integer::from(b) << shift as u32;
            }
        }
        total
    }

    /// Kronecker packing `Σ_j x_(σ(j)) · 2^(64·limbs·j)` with σ the identity, or the reversal
    /// `σ(j) = n−1−j` when `reversed`. Signed values are packed as `P − M`.
    fn pack(&self, limbs: usize, reversed: bool) -> Integer {
        let n = self.len();
        let mut positive = vec![0u64; n * limbs];
        let any_negative = self.parts.iter().any(|p| p.negative);
        let mut negative = if any_negative {
            vec![0u64; n * limbs]
        } else {
            Vec::new()
        };
        for (i, p) in self.parts.iter().enumerate() {
            if p.magnitude == 0 {
                continue;
            }
            let slot = if reversed { n - 1 - i } else { i };
            let bit = slot * limbs * 64 + (p.exponent - self.scale) as usize;
            let buf = if p.negative {
                &mut negative
            } else {
                &mut positive
            };
            let (word, offset) = (bit / 64, bit % 64);
            buf[word] |= p.magnitude << offset;
            if offset != 0 {
                let high = p.magnitude >> (64 - offset);
                if high != 0 {
                    buf[word + 1] |= high;
                }
            }
        }
        let mut packed = Integer::from_digits(&positive, Order::Lsf);
        drop(positive);
        if any_negative {
            packed -= Integer::from_digits(&negative, Order::Lsf);
        }
        packed
    }
}

/// Number of bits of `x` (0 for 0).
fn bit_len(x: u64) -> u64 {
    u64::from(64 - x.leading_zeros())
}

/// Whole 64-bit words needed for a slot of at least `bits` bits.
fn limbs_for(bits: u64) -> usize {
    bits.div_ceil(64).max(1) as usize
}

/// `Σ_{j<n} 2^(64·limbs·j)`: the packing of the all-ones sequence.
fn packed_ones(n: usize, limbs: usize) -> Integer {
    let mut digits = vec![0u64; n * limbs];
    for j in 0..n {
        digits[j * limbs] = 1;
    }
    Integer::from_digits(&digits, Order::Lsf)
}

/// Reads `slots` coefficients of `x = Σ_k c_k · 2^(64·limbs·k)` with every `|c_k| < 2^(64·limbs−1)`,
/// lowest first, passing each to `visit`.
fn unpack_balanced(x: &Integer, slots: usize, limbs: usize, visit: impl FnMut(&Integer)) {
    unpack_digits(x.as_limbs(), x.is_negative(), slots, limbs * 64, visit);
}

/// [`unpack_balanced`] on the magnitude's digits (of GMP's limb type `T`).
fn unpack_digits<T: UnsignedPrimitive>(
    digits: &[T],
    negative: bool,
    slots: usize,
    width: usize,
    mut visit: impl FnMut(&Integer),
) {
    let digit_bits = std::mem::size_of::<T>() * 8;
    debug_assert_eq!(width % digit_bits, 0);
    let per_slot = width / digit_bits;
    let modulus = Integer::from(1) << width as u32;
    let mut c = Integer::new();
    let mut borrow = false;
    for k in 0..slots {
        let lo = (k * per_slot).min(digits.len());
        let hi = ((k + 1) * per_slot).min(digits.len());
        c.assign_digits(&digits[lo..hi], Order::Lsf);
        if borrow {
            c += 1;
        }
        // Balanced digit: values ≥ 2^(w−1) stand for c − 2^w and borrow one unit from above.
        borrow = c.significant_bits() as usize >= width;
        if borrow {
            c -= &modulus;
        }
        if negative {
            c = -c;
        }
        visit(&c);
    }
    debug_assert!(!borrow, "Kronecker slot overflow");
    debug_assert!(digits.len() <= slots * per_slot, "Kronecker slot overflow");
}

/// `int · 2^exp` as an exact rational.
fn times_pow2(int: Integer, exp: i32) -> Rational {
    Rational::from(int) << exp
}

/// Streams the full linear autoconvolution `(x ∗ x)_k`, k = 0..2n−1, of the integers of `arr`.
fn autoconvolve(arr: &Scaled, visit: impl FnMut(&Integer)) {
    let n = arr.len();
    // |c_k| ≤ n · (2^b − 1)² < 2^(2b + bits(n)) must stay below 2^(w−1).
    let limbs = limbs_for(2 * arr.max_bits + bit_len(n as u64) + 1);
    let mut packed = arr.pack(limbs, false);
    packed.square_mut();
    unpack_balanced(&packed, 2 * n - 1, limbs, visit);
}

/// The largest autoconvolution coefficient `max_k (x ∗ x)_k` (as an integer over `2^(2·scale)`).
fn max_autoconvolution(arr: &Scaled) -> Integer {
    let mut best: Option<Integer> = None;
    autoconvolve(arr, |c| match &mut best {
        Some(b) if *c > *b => *b = c.clone(),
        Some(_) => {}
        None => best = Some(c.clone()),
    });
    best.unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// The four scores
// ---------------------------------------------------------------------------------------------

/// Erdős minimum overlap: `λ = (n/2)/Σh`, `h' = λh`,
/// `score = max_lag Σ_i h'_(i+lag)(1 − h'_i) · 2/n`.
///
/// With `h_i = H_i · 2^scale` and `S = Σ H_i`: `h'_i = n·H_i / (2S)` and
/// `1 − h'_i = (2S − n·H_i) / (2S)`; the correlation of the two numerator sequences is taken
/// over the common denominator `(2S)²`.
fn erdos_min_overlap(values: &[f64]) -> Option<Rational> {
    let arr = Scaled::new(values, false);
    let n = arr.len();
    let n_int = Integer::from(n);
    let denominator: Integer = arr.sum() << 1u32; // 2S
    if denominator.is_zero() {
        return None;
    }
    // a_i = n·H_i, b_i = 2S − n·H_i; every |correlation| ≤ n · max|a| · max|b|.
    let a_bits = arr.max_bits + bit_len(n as u64);
    let b_bits = a_bits.max(u64::from(denominator.significant_bits())) + 1;
    let limbs = limbs_for(a_bits + b_bits + bit_len(n as u64) + 1);
    // b packed reversed, so that (a ∗ rev b)_k = Σ_i a_(i+k−(n−1)) b_i = numpy's correlate(a, b)[k].
    let mut b = Integer::from(&denominator * &packed_ones(n, limbs));
    b -= Integer::from(&n_int * &arr.pack(limbs, true));
    let mut product = Integer::from(&n_int * &arr.pack(limbs, false));
    product *= &b;
    drop(b);
    let mut best: Option<Integer> = None;
    unpack_balanced(&product, 2 * n - 1, limbs, |c| match &mut best {
        Some(m) if *c > *m => *m = c.clone(),
        Some(_) => {}
        None => best = Some(c.clone()),
    });
    drop(product);
    let max_correlation = Rational::from((best.unwrap_or_default(), denominator.square()));
    Some(max_correlation * Rational::from((2, n_int)))
}

/// First autocorrelation inequality: `dx = 1/(2n)`, `score = max_k(conv_k·dx) / (Σf·dx)²`.
fn first_autocorrelation(values: &[f64]) -> Option<Rational> {
    let (max_term, denominator) = autocorrelation_ratio(values)?;
    Some(max_term / denominator)
}

/// Third autocorrelation inequality: `dx = 1/(2n)`, `score = |max_k(conv_k·dx)| / (Σf·dx)²`.
fn third_autocorrelation(values: &[f64]) -> Option<Rational> {
    let (max_term, denominator) = autocorrelation_ratio(values)?;
    Some(max_term.abs() / denominator)
}

/// `(max_k(conv_k · dx), (Σf · dx)²)` for the first and third problems.
fn autocorrelation_ratio(values: &[f64]) -> Option<(Rational, Rational)> {
    let arr = Scaled::new(values, false);
    let dx = Rational::from((1, 2 * arr.len()));
    let max_conv = times_pow2(max_autoconvolution(&arr), 2 * arr.scale);
    let sum = times_pow2(arr.sum(), arr.scale);
    let denominator = Rational::from(&sum * &dx).square();
    if denominator.is_zero() {
        return None;
    }
    Some((max_conv * dx, denominator))
}

/// Second autocorrelation inequality: `g = max(f, 0)`, `c = g ∗ g` (m = 2n−1 values),
/// `y = [0, c_0, …, c_(m−1), 0]`, `h = 1/(m+1)`, `L2² = Σ_j (h/3)(y_j² + y_j·y_(j+1) + y_(j+1)²)`
/// over the m+1 intervals, `L1 = Σ|c_k|/(m+1)`, `L∞ = max|c_k|`, `score = L2² / (L1 · L∞)`.
///
/// All of `y` is `Y · 2^(2·scale)` with integers `Y`; the three sums are accumulated on the
/// integers while the coefficients stream out of the Kronecker product.
fn second_autocorrelation(values: &[f64]) -> Option<Rational> {
    let arr = Scaled::new(values, true);
    let m = 2 * arr.len() - 1;
    let mut quadratic = Integer::new(); // Σ_j (Y_j² + Y_j·Y_(j+1) + Y_(j+1)²)
    let mut l1 = Integer::new(); // Σ |C_k|
    let mut linf = Integer::new(); // max |C_k|
    let mut previous = Integer::new(); // y_0 = 0
    autoconvolve(&arr, |c| {
        quadratic += &previous * &previous;
        quadratic += &previous * c;
        quadratic += c * c;
        if c.is_negative() {
            l1 -= c;
        } else {
            l1 += c;
        }
        if c.cmp_abs(&linf) == Ordering::Greater {
            linf.clone_from(c);
            linf.abs_mut();
        }
        previous.clone_from(c);
    });
    // The last interval (y_m, y_(m+1)) = (c_(m−1), 0).
    quadratic += &previous * &previous;

    let s = 2 * arr.scale;
    let h = Rational::from((1, m + 1));
    let l2_squared = Rational::from(&h / 3u32) * times_pow2(quadratic, 2 * s);
    let l1 = times_pow2(l1, s) / Rational::from(m + 1);
    let linf = times_pow2(linf, s);
    let denominator = l1 * linf;
    if denominator.is_zero() {
        return None;
    }
    Some(l2_squared / denominator)
}

// ---------------------------------------------------------------------------------------------
// rug → num
// ---------------------------------------------------------------------------------------------

/// An exact copy of a `rug::Integer` as a `num_bigint::BigInt`, through base-2^32 digits.
fn to_big_int(x: &Integer) -> BigInt {
    let mut digits = vec![0u32; x.significant_digits::<u32>()];
    x.write_digits(&mut digits, Order::Lsf);
    let sign = match x.cmp0() {
        Ordering::Less => Sign::Minus,
        Ordering::Equal => Sign::NoSign,
        Ordering::Greater => Sign::Plus,
    };
    BigInt::from_biguint(sign, BigUint::new(digits))
}

/// An exact copy of a (canonical, so reduced with positive denominator) `rug::Rational`.
fn to_big_rational(x: &Rational) -> BigRational {
    BigRational::new_raw(to_big_int(x.numer()), to_big_int(x.denom()))
}
