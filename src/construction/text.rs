//! Plain-text constructions: what `np.savetxt` writes for a 1-D array (one value per line), or
//! all values on one line, separated by blanks or by commas.
//!
//! Read: `#` starts a comment to the end of its line; blank lines are skipped; a line holds its
//! values separated by commas (each field one number, blanks around it allowed) or by blanks.
//! More than one line holding more than one value is a table, not a construction, and is refused.
//! Each number parses to the nearest float64 (Rust's parser rounds correctly, as Python's and
//! numpy's do). A token that is not a number is a malformed input naming the line and token; a
//! number beyond float64 (`1e400`, `inf`, `nan`) an invalid construction naming its index.
//!
//! Written: one value per line, shortest round-trip form, so `np.loadtxt` reads back the same
//! bits.

use super::{ParseError, FILE_RULES};
use crate::error::Violation;
use std::io::Write;

/// Longest token shown in an error.
const TOKEN_SHOWN: usize = 40;

/// The values of a text construction (see the module's rules).
pub fn parse_text(text: &str) -> Result<Vec<f64>, ParseError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut values = Vec::new();
    // The first line holding several values, and how many lines hold any.
    let mut wide_line = None;
    let mut lines_with_values = 0usize;
    for (number, line) in text.lines().enumerate().map(|(i, l)| (i + 1, l)) {
        let content = line.split_once('#').map_or(line, |(before, _)| before);
        let before = values.len();
        if content.contains(',') {
            for (field, token) in content.split(',').map(str::trim).enumerate() {
                if token.is_empty() || token.contains(char::is_whitespace) {
                    return Err(ParseError::Malformed(format!(
                        "text line {number}, field {}: each comma-separated field must be one \
                         number; got {:?}",
                        field + 1,
                        shown(token)
                    )));
                }
                values.push(number_at(token, number, values.len())?);
            }
        } else {
            for token in content.split_whitespace() {
                values.push(number_at(token, number, values.len())?);
            }
        }
        let count = values.len() - before;
        if count > 0 {
            lines_with_values += 1;
        }
        if count > 1 && wide_line.is_none() {
            wide_line = Some((number, count));
        }
        if let (Some((line, count)), true) = (wide_line, lines_with_values > 1) {
            return Err(ParseError::Malformed(format!(
                "text must hold one value per line or all values on one line; line {line} holds \
                 {count} values while other lines hold values too (a table)"
            )));
        }
    }
    super::checked(values)
}

/// The float64 of `token` (on line `line`, value `index`).
fn number_at(token: &str, line: usize, index: usize) -> Result<f64, ParseError> {
    match token.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        Ok(_) => Err(ParseError::Invalid(Violation {
            problem: FILE_RULES.into(),
            rule: "every value must be a finite float64 number".into(),
            index: Some(index),
            value: Some(shown(token)),
        })),
        Err(_) => Err(ParseError::Malformed(format!(
            "text line {line}: every token must be a number; got {:?}",
            shown(token)
        ))),
    }
}

/// At most [`TOKEN_SHOWN`] characters of `token`.
fn shown(token: &str) -> String {
    token.chars().take(TOKEN_SHOWN).collect()
}

/// Writes `values` to `out` one per line, shortest round-trip form.
pub fn write_text(values: &[f64], out: &mut impl Write) -> std::io::Result<()> {
    for x in values {
        writeln!(out, "{x:?}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn malformed(text: &str) -> String {
        match parse_text(text) {
            Err(ParseError::Malformed(m)) => m,
            other => panic!("expected malformed for {text:?}, got {other:?}"),
        }
    }

    #[test]
    fn reads_what_np_savetxt_writes() {
        let saved = "# a header\n1.000000000000000056e-01\n3.333333333333333148e-01\n\
                     4.940656458412465442e-324\n-0.000000000000000000e+00\n";
        let back = parse_text(saved).unwrap();
        assert_eq!(back[0], 0.1);
        assert_eq!(back[1], 1.0 / 3.0);
        assert_eq!(back[2].to_bits(), 1);
        assert_eq!(back[3].to_bits(), (-0.0f64).to_bits());
    }

    #[test]
    fn reads_one_line_with_commas_or_blanks_and_crlf() {
        assert_eq!(parse_text("1, 2.5,3e-1\n").unwrap(), vec![1.0, 2.5, 0.3]);
        assert_eq!(parse_text("1 2.5\t3e-1").unwrap(), vec![1.0, 2.5, 0.3]);
        assert_eq!(
            parse_text("\u{feff}1\r\n2\r\n\r\n").unwrap(),
            vec![1.0, 2.0]
        );
        assert_eq!(parse_text("1 # one\n+2 # two\n").unwrap(), vec![1.0, 2.0]);
        assert!(malformed("1,\n2,\n").contains("field 2"));
    }

    #[test]
    fn parses_to_nearest_float_like_python() {
        let v = parse_text("2.2250738585072011e-308\n9007199254740993\n5e-324").unwrap();
        assert_eq!(v[0].to_bits(), 0x000f_ffff_ffff_ffff);
        assert_eq!(v[1], 9007199254740992.0);
        assert_eq!(v[2], f64::from_bits(1));
    }

    #[test]
    fn refuses_tables_bad_tokens_and_empty_fields_naming_the_line() {
        let m = malformed("1 2\n3 4\n");
        assert!(m.contains("line 1 holds 2 values"), "{m}");
        let m = malformed("1\n2\n3, 4\n");
        assert!(m.contains("line 3 holds 2 values"), "{m}");
        let m = malformed("1\n2\nabc\n");
        assert!(m.contains("line 3") && m.contains("\"abc\""), "{m}");
        let m = malformed("1,,2");
        assert!(m.contains("field 2"), "{m}");
        let m = malformed("1, 2 3");
        assert!(m.contains("\"2 3\""), "{m}");
    }

    #[test]
    fn values_beyond_float64_are_invalid_with_their_index() {
        for (text, index, token) in [
            ("1\n1e400\n", 1, "1e400"),
            ("0 nan", 1, "nan"),
            ("-inf", 0, "-inf"),
        ] {
            match parse_text(text) {
                Err(ParseError::Invalid(v)) => {
                    assert_eq!((v.index, v.value.as_deref()), (Some(index), Some(token)))
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn writes_one_value_per_line_that_reads_back_bit_for_bit() {
        let values = [0.1, 1.0 / 3.0, 5e-324, -0.0, 1e300, 2.0];
        let mut out = Vec::new();
        write_text(&values, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), values.len());
        let back = parse_text(&text).unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&values));
    }
}
