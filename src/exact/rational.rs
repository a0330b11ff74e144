//! Exact rationals as decimal text, and decimal text as exact rationals.

use num_bigint::{BigInt, Sign};
use num_integer::Integer;
use num_rational::BigRational;
use num_traits::{Signed, ToPrimitive, Zero};

/// Significant digits printed for exact scores by default.
pub const SCORE_DIGITS: usize = 40;

/// `q` rounded half-to-even to `digits` significant digits, as `d.ddd…e<exp>` (`"0"` for zero).
pub fn decimal_string(q: &BigRational, digits: usize) -> String {
    assert!(digits >= 1, "at least one significant digit");
    if q.is_zero() {
        return "0".into();
    }
    let sign = if q.is_negative() { "-" } else { "" };
    let num = q.numer().abs();
    let den = q.denom().abs();
    // First guess of the decimal exponent from bit lengths, then correct it.
    let log10_2 = std::f64::consts::LOG10_2;
    let mut exp10 = ((num.bits() as f64 - den.bits() as f64) * log10_2).floor() as i64;
    loop {
        let significand = scaled_round(&num, &den, digits as i64 - 1 - exp10);
        let upper = BigInt::from(10u32).pow(digits as u32);
        let lower = BigInt::from(10u32).pow(digits as u32 - 1);
        if significand >= upper {
            exp10 += 1;
        } else if significand < lower {
            exp10 -= 1;
        } else {
            let text = significand.to_string();
            let (head, tail) = text.split_at(1);
            return if tail.is_empty() {
                format!("{sign}{head}e{exp10}")
            } else {
                format!("{sign}{head}.{tail}e{exp10}")
            };
        }
    }
}

/// `round_half_even(num/den · 10^power)` for positive `num`, `den`.
fn scaled_round(num: &BigInt, den: &BigInt, power: i64) -> BigInt {
    let ten = BigInt::from(10u32);
    let (n, d) = if power >= 0 {
        (num * ten.pow(power as u32), den.clone())
    } else {
        (num.clone(), den * ten.pow((-power) as u32))
    };
    let (q, r) = n.div_rem(&d);
    let twice = &r * 2;
    if twice > d || (twice == d && q.is_odd()) {
        q + 1
    } else {
        q
    }
}

/// Parses a decimal number (`1.5`, `-3e-7`, `0.38092303510845016`) as the exact rational it denotes.
pub fn parse_decimal(text: &str) -> Option<BigRational> {
    let text = text.trim();
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(p) => (&text[..p], text[p + 1..].parse::<i64>().ok()?),
        None => (text, 0),
    };
    let (negative, digits) = match mantissa.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, mantissa.strip_prefix('+').unwrap_or(mantissa)),
    };
    let (int_part, frac_part) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = format!("{int_part}{frac_part}");
    if all_digits.is_empty() || !all_digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if exponent.abs() > 100_000 {
        return None;
    }
    let mut value = BigInt::parse_bytes(all_digits.as_bytes(), 10)?;
    if negative {
        value = -value;
    }
    let power = exponent - frac_part.len() as i64;
    let ten = BigInt::from(10u32);
    Some(if power >= 0 {
        BigRational::from_integer(value * ten.pow(power as u32))
    } else {
        BigRational::new(value, ten.pow((-power) as u32))
    })
}

/// The exact rational value of a finite float64.
pub fn from_f64(x: f64) -> BigRational {
    BigRational::from_float(x).expect("finite float64")
}

/// The exact decimal value of a float64's shortest round-trip text (e.g. `1e-8` from a TOML file).
pub fn decimal_of_f64(x: f64) -> BigRational {
    parse_decimal(&format!("{x:e}")).expect("Rust prints finite floats as decimals")
}

/// Nearest-ish float64 of a rational (for display next to exact values).
pub fn to_f64(q: &BigRational) -> f64 {
    q.to_f64().unwrap_or_else(|| {
        // Huge parts: divide after shifting both to a safe size.
        let shift = q.numer().bits().max(q.denom().bits()).saturating_sub(1000);
        let n = q.numer() >> shift;
        let d = q.denom() >> shift;
        n.to_f64().unwrap_or(f64::NAN) / d.to_f64().unwrap_or(f64::NAN)
    })
}

/// Builds `num / den` (den ≠ 0) reduced.
pub fn ratio(num: BigInt, den: BigInt) -> BigRational {
    if den.sign() == Sign::Minus {
        BigRational::new(-num, -den)
    } else {
        BigRational::new(num, den)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(n: i64, d: i64) -> BigRational {
        BigRational::new(n.into(), d.into())
    }

    #[test]
    fn prints_significant_digits_half_even() {
        assert_eq!(decimal_string(&q(1, 3), 5), "3.3333e-1");
        assert_eq!(decimal_string(&q(2, 3), 5), "6.6667e-1");
        assert_eq!(decimal_string(&q(-25, 10), 1), "-2e0");
        assert_eq!(decimal_string(&q(35, 10), 1), "4e0");
        assert_eq!(decimal_string(&q(99999, 1), 3), "1.00e5");
        assert_eq!(decimal_string(&q(1, 1000), 3), "1.00e-3");
        assert_eq!(decimal_string(&q(0, 1), 3), "0");
    }

    #[test]
    fn parses_decimals_exactly() {
        assert_eq!(parse_decimal("1.5").unwrap(), q(3, 2));
        assert_eq!(parse_decimal("-3e-7").unwrap(), q(-3, 10_000_000));
        assert_eq!(parse_decimal("2.5E2").unwrap(), q(250, 1));
        assert!(parse_decimal("abc").is_none());
        assert!(parse_decimal("1.2.3").is_none());
        assert!(parse_decimal("").is_none());
        assert_eq!(decimal_of_f64(1e-8), q(1, 100_000_000));
    }

    #[test]
    fn float_to_rational_round_trips() {
        for x in [0.1, -2.5e-300, 5e-324, 1e300] {
            assert_eq!(to_f64(&from_f64(x)), x);
        }
    }
}
