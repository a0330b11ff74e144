//! Float64 arrays as exact integers times one common power of two.
//!
//! Every finite float64 is `m · 2^e` with an integer `m` of at most 53 bits. An array of them is
//! therefore `a_i · 2^e_min` with integers `a_i = m_i · 2^(e_i − e_min)`. The exact kernels work on
//! those integers; the common scale cancels in every arena score.

/// One float64 split into an odd signed mantissa and a binary exponent: `value = mantissa · 2^exponent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DyadicValue {
    /// Signed integer part, odd unless the value is zero.
    pub mantissa: i64,
    /// Power of two the mantissa is scaled by (meaningless for zero).
    pub exponent: i32,
}

impl DyadicValue {
    /// Splits a finite float64 exactly. Panics on NaN or infinity (callers validate first).
    pub fn from_f64(x: f64) -> DyadicValue {
        assert!(
            x.is_finite(),
            "DyadicValue::from_f64 needs a finite value, got {x}"
        );
        if x == 0.0 {
            return DyadicValue {
                mantissa: 0,
                exponent: 0,
            };
        }
        let bits = x.to_bits();
        let sign = if bits >> 63 == 1 { -1i64 } else { 1 };
        let biased = ((bits >> 52) & 0x7ff) as i32;
        let fraction = (bits & ((1u64 << 52) - 1)) as i64;
        let (mut mantissa, mut exponent) = if biased == 0 {
            (fraction, -1074)
        } else {
            (fraction | (1i64 << 52), biased - 1075)
        };
        let shift = mantissa.trailing_zeros() as i32;
        mantissa >>= shift;
        exponent += shift;
        DyadicValue {
            mantissa: sign * mantissa,
            exponent,
        }
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.mantissa == 0
    }
}

/// The `e` with `2^e ≤ |x| < 2^(e+1)` for a finite non-zero `x`, subnormals included.
pub fn binary_exponent(x: f64) -> i32 {
    let d = DyadicValue::from_f64(x);
    d.exponent + 63 - d.mantissa.unsigned_abs().leading_zeros() as i32
}

/// A float64 array as integers `a_i` times the common scale `2^exponent`, without materialising
/// the (possibly very wide) integers: `a_i = mantissa_i · 2^(shift_i)`.
#[derive(Clone, Debug)]
pub struct DyadicArray {
    /// The values, each split exactly.
    pub values: Vec<DyadicValue>,
    /// The common exponent: the smallest exponent of any non-zero value (0 if all are zero).
    pub exponent: i32,
}

impl DyadicArray {
    /// Splits every value of a finite float64 array. Panics on NaN or infinity (validate first).
    pub fn from_f64(xs: &[f64]) -> DyadicArray {
        let values: Vec<DyadicValue> = xs.iter().map(|&x| DyadicValue::from_f64(x)).collect();
        let exponent = values
            .iter()
            .filter(|v| !v.is_zero())
            .map(|v| v.exponent)
            .min()
            .unwrap_or(0);
        DyadicArray { values, exponent }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the array has no values.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// How far left the mantissa of value `i` is shifted in the integer `a_i`.
    pub fn shift(&self, i: usize) -> u32 {
        let v = self.values[i];
        if v.is_zero() {
            0
        } else {
            (v.exponent - self.exponent) as u32
        }
    }

    /// The largest bit length of any `|a_i|` (0 for an all-zero array).
    pub fn max_bits(&self) -> u32 {
        (0..self.len())
            .filter(|&i| !self.values[i].is_zero())
            .map(|i| 64 - self.values[i].mantissa.unsigned_abs().leading_zeros() + self.shift(i))
            .max()
            .unwrap_or(0)
    }

    /// The integer `a_i` as a big integer.
    pub fn integer(&self, i: usize) -> num_bigint::BigInt {
        num_bigint::BigInt::from(self.values[i].mantissa) << self.shift(i)
    }

    /// The same values in reverse order (same common exponent).
    pub fn reversed(&self) -> DyadicArray {
        let mut values = self.values.clone();
        values.reverse();
        DyadicArray {
            values,
            exponent: self.exponent,
        }
    }

    /// Sum of all `a_i`, exactly.
    pub fn integer_sum(&self) -> num_bigint::BigInt {
        (0..self.len()).map(|i| self.integer(i)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_values_exactly() {
        for &x in &[
            1.0,
            -3.5,
            0.1,
            1e-300,
            5e-324,
            f64::MAX,
            -f64::MIN_POSITIVE,
            123456.789,
        ] {
            let d = DyadicValue::from_f64(x);
            assert!(d.mantissa % 2 != 0, "{x}");
            let back = d.mantissa as f64
                * 2f64.powi(d.exponent.clamp(-1022, 1023))
                * 2f64.powi(d.exponent - d.exponent.clamp(-1022, 1023));
            assert_eq!(back, x, "{x} -> {d:?}");
        }
    }

    #[test]
    fn array_integers_share_one_scale() {
        let a = DyadicArray::from_f64(&[0.5, 0.25, 3.0, 0.0]);
        assert_eq!(a.exponent, -2);
        let ints: Vec<i64> = (0..4)
            .map(|i| i64::try_from(a.integer(i)).unwrap())
            .collect();
        assert_eq!(ints, vec![2, 1, 12, 0]);
        assert_eq!(a.max_bits(), 4);
    }
}
