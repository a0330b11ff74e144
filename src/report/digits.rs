//! How the report prints numbers: scores to 10 significant digits (exact scores rounded from
//! their decimal text, not through a float), qualities and measures to 3, gaps and differences
//! in scientific notation with 3. The full values stay on the page as titles (see
//! [`super::html::Cell`]).

use crate::exact::rational::{decimal_string, parse_decimal};

/// Significant digits of a score.
pub const SCORE_DIGITS: usize = 10;
/// Significant digits of a quality, a cost, a time.
pub const MEASURE_DIGITS: usize = 3;

/// A float score to [`SCORE_DIGITS`] significant digits (`1.547122865`), `—` when not finite.
pub fn score(x: f64) -> String {
    significant(x, SCORE_DIGITS)
}

/// An axis tick: [`score`]'s digits without trailing zeros (`2.92`, not `2.9200000000000017`
/// or `2.920000000`).
pub fn tick(x: f64) -> String {
    trim_zeros(&score(x))
}

/// A tick of an axis spanning `span`: `x` snapped to 0 when it is floating-point residue
/// (within a billionth of the span, as `-3.9e-17` is), else with the significant digits that
/// resolve a thousandth of the span (at most [`SCORE_DIGITS`]) and no trailing zeros
/// (`0.3`, not `0.30000000000000004`; `1.5699` on a span of 0.4).
pub fn axis_tick(x: f64, span: f64) -> String {
    if !(span.is_finite() && span > 0.0 && x.is_finite()) {
        return tick(x);
    }
    if x.abs() <= span * 1e-9 {
        return "0".into();
    }
    let magnitude = x.abs().log10().floor();
    let resolution = (span * 1e-3).log10().floor();
    let digits = (magnitude - resolution + 1.0).clamp(1.0, SCORE_DIGITS as f64) as usize;
    trim_zeros(&significant(x, digits))
}

/// A number's text without trailing zeros after its point (`2.920` → `2.92`, `1.50e-9` →
/// `1.5e-9`).
fn trim_zeros(text: &str) -> String {
    match text.split_once('e') {
        None if text.contains('.') => text.trim_end_matches('0').trim_end_matches('.').into(),
        Some((mantissa, exponent)) if mantissa.contains('.') => {
            let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
            format!("{mantissa}e{exponent}")
        }
        _ => text.to_string(),
    }
}

/// An exact decimal score (`1.547122865168276…e0`) rounded half-to-even to [`SCORE_DIGITS`]
/// significant digits; text that is not a decimal is returned as it is.
pub fn exact_score(text: &str) -> String {
    match parse_decimal(text) {
        Some(q) => positional(&decimal_string(&q, SCORE_DIGITS)),
        None => text.to_string(),
    }
}

/// A quality, a cost or a time: [`MEASURE_DIGITS`] significant digits, but never fewer than
/// its integer digits (`28430`, `4.07`, `0.0123`); `0` for zero, `—` when not finite.
pub fn measure(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if x.is_finite() && x.abs() >= 10f64.powi(MEASURE_DIGITS as i32) {
        return format!("{x:.0}");
    }
    significant(x, MEASURE_DIGITS)
}

/// A gap or a difference in scientific notation with 3 significant digits (`9.63e-2`); `0`
/// for zero, `—` when not finite.
pub fn gap(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if !x.is_finite() {
        return "—".into();
    }
    format!("{:.*e}", MEASURE_DIGITS - 1, x)
}

/// `x` rounded to `digits` significant digits, positional unless very large or small.
fn significant(x: f64, digits: usize) -> String {
    if !x.is_finite() {
        return "—".into();
    }
    positional(&format!("{:.*e}", digits.max(1) - 1, x))
}

/// `d.ddde<exp>` written positionally (`1.50e-3` → `0.00150`) when the exponent lies in
/// [−6, 15]; otherwise as it is.
fn positional(scientific: &str) -> String {
    let Some((mantissa, exponent)) = scientific.split_once('e') else {
        return scientific.to_string();
    };
    let Ok(exponent) = exponent.parse::<i64>() else {
        return scientific.to_string();
    };
    if !(-6..=15).contains(&exponent) {
        return scientific.to_string();
    }
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let point = 1 + exponent; // digits before the decimal point
    let text = if point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    };
    format!("{sign}{text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_have_ten_significant_digits() {
        assert_eq!(score(1.547122865168276), "1.547122865");
        assert_eq!(score(2.9200000000000017), "2.920000000");
        assert_eq!(score(0.96127159731), "0.9612715973");
        assert_eq!(score(-1.25), "-1.250000000");
        assert_eq!(score(f64::NAN), "—");
        assert_eq!(score(1.5e-9), "1.500000000e-9");
    }

    #[test]
    fn ticks_drop_trailing_zeros() {
        assert_eq!(tick(2.9200000000000017), "2.92");
        assert_eq!(tick(1200.0), "1200");
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(1.5e-9), "1.5e-9");
        assert_eq!(tick(-0.25), "-0.25");
    }

    #[test]
    fn axis_ticks_snap_residue_to_zero_and_keep_the_digits_the_span_needs() {
        assert_eq!(axis_tick(-3.87778781e-17, 2.5), "0");
        assert_eq!(axis_tick(0.30000000000000004, 2.5), "0.3");
        assert_eq!(axis_tick(1.5699, 0.4), "1.5699");
        assert_eq!(axis_tick(1.56990000001, 0.4), "1.5699");
        assert_eq!(axis_tick(-0.25, 1.0), "-0.25");
        assert_eq!(axis_tick(1200.0, 3000.0), "1200");
        assert_eq!(axis_tick(2.5e-7, 1e-6), "2.5e-7");
        // A tiny but real value on a tiny span stays.
        assert_eq!(axis_tick(1e-17, 1e-16), "1e-17");
        assert_eq!(axis_tick(0.5, f64::NAN), "0.5");
    }

    #[test]
    fn exact_scores_round_their_decimal_text() {
        assert_eq!(
            exact_score("1.547122865168276449641490277453137290929e0"),
            "1.547122865"
        );
        // Rounded on the exact decimal: just above the half goes up, exactly the half to even.
        assert_eq!(exact_score("1.5471228655000000000000001e0"), "1.547122866");
        assert_eq!(exact_score("1.2345678905e0"), "1.234567890");
        assert_eq!(exact_score("9.99999999999e-1"), "1.000000000");
        assert_eq!(exact_score("0"), "0");
        assert_eq!(exact_score("not a number"), "not a number");
    }

    #[test]
    fn measures_keep_three_digits_and_their_integer_part() {
        assert_eq!(measure(28429.930226), "28430");
        assert_eq!(measure(4065.1861436141203), "4065");
        assert_eq!(measure(153.9627), "154");
        assert_eq!(measure(4.0651), "4.07");
        assert_eq!(measure(0.012345), "0.0123");
        assert_eq!(measure(0.12), "0.120");
        assert_eq!(measure(0.0), "0");
        assert_eq!(measure(f64::INFINITY), "—");
    }

    #[test]
    fn gaps_are_scientific() {
        assert_eq!(gap(0.0963), "9.63e-2");
        assert_eq!(gap(-1.19248e-4), "-1.19e-4");
        assert_eq!(gap(0.0), "0");
        assert_eq!(gap(f64::NAN), "—");
    }

    #[test]
    fn positional_notation_places_the_point() {
        assert_eq!(positional("1.50e-3"), "0.00150");
        assert_eq!(positional("1.234e2"), "123.4");
        assert_eq!(positional("1.2e3"), "1200");
        assert_eq!(positional("-5e0"), "-5");
        assert_eq!(positional("1.0e-7"), "1.0e-7");
    }
}
