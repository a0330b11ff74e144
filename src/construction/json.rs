//! JSON constructions: the arena's `{"values": [...]}`, the arena API's
//! `{"data": {"values": [...]}}` (a solution entry as served), or a bare array.
//!
//! Numbers parse to the nearest float64 exactly as Python and numpy do (serde_json with
//! `float_roundtrip`); writing uses the shortest round-trip digits in the shorter of fixed and
//! exponent notation, without spaces (`0`, not `0.0`), so read → write → read is bit-identical
//! and the text is as small as the values allow. Content that Python would accept but the arena
//! rejects (`NaN`, `Infinity`, numbers beyond float64 range) is reported as an invalid
//! construction with its index; text that is not JSON at all is reported as a malformed file
//! with line and column.

use super::{ParseError, FILE_RULES};
use crate::bounded_read::MOST_VALUES;
use crate::error::{quoted, Violation};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::cell::Cell;
use std::collections::HashSet;
use std::fmt;

/// The arena JSON text `{"values": [...]}` of finite values, shortest round-trip formatting.
pub fn to_json(values: &[f64]) -> std::result::Result<String, Violation> {
    super::check_finite(values)?;
    Ok(json_text(values))
}

/// The JSON text `{"values":[...]}` of values already checked finite, each value in its
/// [`compact_number`] form.
pub(super) fn json_text(values: &[f64]) -> String {
    let mut text = String::with_capacity(13 + values.len() * 20);
    text.push_str("{\"values\":[");
    for (i, &x) in values.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        compact_number(x, &mut text);
    }
    text.push_str("]}");
    text
}

/// A finite nonzero float64's shortest round-trip decimal digits and the place of the decimal
/// point: `|x| = 0.d₁d₂…d_k × 10^point`.
struct Decimal {
    digits: String,
    point: i32,
}

impl Decimal {
    fn of(x: f64) -> Decimal {
        // `{:e}` writes the shortest digits that read back to the same bits: `d.ddde-7`, `de5`.
        let text = format!("{:e}", x.abs());
        let (mantissa, exponent) = text.split_once('e').expect("`{:e}` writes an exponent");
        let exponent: i32 = exponent.parse().expect("`{:e}` writes an integer exponent");
        Decimal {
            digits: mantissa.replace('.', ""),
            point: exponent + 1,
        }
    }

    /// Length of the exponent notation `d[.ddd]e±x` (the sign only when negative).
    fn exponent_len(&self) -> usize {
        let k = self.digits.len();
        k + usize::from(k > 1) + 1 + (self.point - 1).to_string().len()
    }

    /// Length of the fixed notation `ddd00`, `dd.dd` or `0.000dd`.
    fn fixed_len(&self) -> usize {
        let k = self.digits.len() as i64;
        let p = i64::from(self.point);
        let len = if p >= k {
            p
        } else if p > 0 {
            k + 1
        } else {
            2 - p + k
        };
        len as usize
    }
}

/// Appends finite `x` to `out` in the shortest text that reads back to the same bits: the
/// shortest round-trip digits, in fixed or exponent notation, whichever is shorter (fixed on a
/// tie): `0`, `1`, `541940701`, `0.5`, `1e-7`, `1.5e21`. Negative zero is written `-0.0`: a
/// reader that takes `-0` for the integer 0 would lose its sign bit.
pub fn compact_number(x: f64, out: &mut String) {
    if x == 0.0 {
        out.push_str(if x.is_sign_negative() { "-0.0" } else { "0" });
        return;
    }
    if x < 0.0 {
        out.push('-');
    }
    let d = Decimal::of(x);
    let (digits, p) = (d.digits.as_str(), d.point);
    if d.exponent_len() < d.fixed_len() {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push_str(&(p - 1).to_string());
    } else if p as usize >= digits.len() && p > 0 {
        out.push_str(digits);
        out.extend(std::iter::repeat_n('0', p as usize - digits.len()));
    } else if p > 0 {
        out.push_str(&digits[..p as usize]);
        out.push('.');
        out.push_str(&digits[p as usize..]);
    } else {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-p) as usize));
        out.push_str(digits);
    }
}

/// The length of `JSON.stringify({values})` in JavaScript, which the arena measures against its
/// inline limit: JavaScript writes each number with the same shortest digits, but in fixed
/// notation from 1e-6 to below 1e21 (`0.000001`, `100000000000000000000`) and in exponent
/// notation with a sign outside it (`1e-7`, `1e+21`); zero, negative or not, is `0`.
pub fn javascript_json_len(values: &[f64]) -> usize {
    let numbers: usize = values
        .iter()
        .map(|&x| {
            if x == 0.0 {
                return 1;
            }
            let d = Decimal::of(x);
            let sign = usize::from(x < 0.0);
            let in_fixed_range = d.point > -6 && d.point <= 21;
            let body = if in_fixed_range {
                d.fixed_len()
            } else {
                let k = d.digits.len();
                k + usize::from(k > 1) + 2 + (d.point - 1).unsigned_abs().to_string().len()
            };
            sign + body
        })
        .sum();
    "{\"values\":[]}".len() + numbers + values.len().saturating_sub(1)
}

/// Parses the text of a JSON construction: `{"values": [...]}` (other keys ignored), the arena
/// API's `{"data": {"values": [...]}}` (used when the top level has no `values`), or `[...]`.
/// A leading UTF-8 byte-order mark (as some Windows editors save) is skipped.
pub fn parse_values(text: &str) -> std::result::Result<Vec<f64>, ParseError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let index = Cell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = ConstructionSeed { index: &index }
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|_| v));
    match parsed {
        Ok(values) => super::checked(values),
        Err(err) => Err(classify(text, &err, index.get())),
    }
}

/// Turns a serde_json error into an invalid-value report (with index) or a malformed-file report.
fn classify(text: &str, err: &serde_json::Error, index: Option<usize>) -> ParseError {
    let message = err.to_string();
    if let Some(rest) = message.strip_prefix(CONTENT_ERROR) {
        let (i, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        let (rule, token) = rest.split_once('\u{1}').unwrap_or((rest, ""));
        return ParseError::Invalid(Violation {
            problem: FILE_RULES.into(),
            rule: rule.to_string(),
            index: i.parse().ok(),
            value: Some(token.to_string()),
        });
    }
    if let Some(i) = index {
        let token = token_at(text, err.line(), err.column());
        let non_finite = matches!(
            token.as_str(),
            "NaN" | "Infinity" | "-Infinity" | "+Infinity" | "inf" | "-inf"
        ) || (message.starts_with("number out of range") && !token.is_empty());
        if non_finite {
            return ParseError::Invalid(Violation {
                problem: FILE_RULES.into(),
                rule: "every value must be a finite float64 number".into(),
                index: Some(i),
                value: Some(token),
            });
        }
    }
    ParseError::Malformed(format!("malformed JSON: {}", quoted(&message)))
}

/// The token starting at a serde_json error position (1-based line and column; serde points at or
/// just past the token's first character).
fn token_at(text: &str, line: usize, column: usize) -> String {
    let Some(line_text) = text.lines().nth(line.saturating_sub(1)) else {
        return String::new();
    };
    let col = column.saturating_sub(1).min(line_text.len());
    // Walk back to the start of the token (after a separator).
    let start = line_text[..col]
        .rfind(|c: char| c == ',' || c == '[' || c == ':' || c.is_whitespace())
        .map_or(0, |p| p + 1);
    let tail = &line_text[start..];
    let end = tail
        .find(|c: char| c == ',' || c == ']' || c == '}' || c.is_whitespace())
        .unwrap_or(tail.len());
    tail[..end].chars().take(40).collect()
}

/// Prefix marking our own content errors inside serde's error text.
const CONTENT_ERROR: &str = "milo-content-error ";

fn content_error<E: de::Error>(index: usize, rule: &str, token: &str) -> E {
    E::custom(format!("{CONTENT_ERROR}{index} {rule}\u{1}{token}"))
}

/// Top level: an object with a `values` key, or a bare array.
struct ConstructionSeed<'a> {
    index: &'a Cell<Option<usize>>,
}

impl<'de> DeserializeSeed<'de> for ConstructionSeed<'_> {
    type Value = Vec<f64>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Vec<f64>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ConstructionSeed<'_> {
    type Value = Vec<f64>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(r#"an object {"values": [...]} or an array of numbers"#)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> std::result::Result<Vec<f64>, A::Error> {
        ValuesSeed { index: self.index }.visit_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Vec<f64>, A::Error> {
        let mut values = None;
        let mut data_values = None;
        let mut keys = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            refuse_repeated(&mut keys, &key)?;
            if key == "values" {
                values = Some(map.next_value_seed(ValuesSeed { index: self.index })?);
            } else if key == "data" {
                data_values = map.next_value_seed(DataSeed { index: self.index })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        values.or(data_values).ok_or_else(|| {
            de::Error::custom(r#"the object has no "values" key (nor "data": {"values": [...]})"#)
        })
    }
}

/// Readers disagree on a repeated key (serde keeps the first, Python the last), so the same file
/// would score differently: a key seen before is refused, naming it.
fn refuse_repeated<E: de::Error>(
    keys: &mut HashSet<String>,
    key: &str,
) -> std::result::Result<(), E> {
    if keys.insert(key.to_string()) {
        return Ok(());
    }
    let shown: String = key.chars().take(40).collect();
    Err(E::custom(format!(
        "duplicate key {shown:?} (every key must appear once)"
    )))
}

/// The value of a top-level `data` key: the values of an object `{"values": [...]}` (the arena
/// API's solution entry), or nothing for any other value.
struct DataSeed<'a> {
    index: &'a Cell<Option<usize>>,
}

impl<'de> DeserializeSeed<'de> for DataSeed<'_> {
    type Value = Option<Vec<f64>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DataSeed<'_> {
    type Value = Option<Vec<f64>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(r#"any JSON value (an object {"values": [...]} is read)"#)
    }

    fn visit_map<A: MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut values = None;
        let mut keys = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            refuse_repeated(&mut keys, &key)?;
            if key == "values" {
                values = Some(map.next_value_seed(ValuesSeed { index: self.index })?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(values)
    }

    fn visit_seq<A: SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
        Ok(None)
    }
}

/// The `values` array: numbers only, tracking the index being read for error reports.
struct ValuesSeed<'a> {
    index: &'a Cell<Option<usize>>,
}

impl<'de> DeserializeSeed<'de> for ValuesSeed<'_> {
    type Value = Vec<f64>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Vec<f64>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ValuesSeed<'_> {
    type Value = Vec<f64>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of numbers")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Vec<f64>, A::Error> {
        let mut out = Vec::new();
        loop {
            let i = out.len();
            self.index.set(Some(i));
            if i == MOST_VALUES {
                // Stop before reading on: memory stays bounded whatever the file holds.
                if seq.next_element::<IgnoredAny>()?.is_some() {
                    return Err(content_error(
                        i,
                        &format!(
                            "a construction may hold at most {MOST_VALUES} values (twice the \
                             largest problem's max_len)"
                        ),
                        &format!("{} values or more", MOST_VALUES + 1),
                    ));
                }
                break;
            }
            match seq.next_element_seed(ElementSeed { index: i })? {
                None => break,
                Some(x) => out.push(x),
            }
        }
        self.index.set(None);
        Ok(out)
    }
}

/// One element of the `values` array: a finite number, else an error naming its index, its kind
/// and its first characters. A nested array or an object is refused on its first character,
/// never built (a file of one huge nested array must not cost its size many times over).
struct ElementSeed {
    index: usize,
}

impl<'de> DeserializeSeed<'de> for ElementSeed {
    type Value = f64;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<f64, D::Error> {
        d.deserialize_any(self)
    }
}

impl ElementSeed {
    fn not_a_number<E: de::Error>(&self, kind: &str, token: &str) -> E {
        let token: String = token.chars().take(40).collect();
        content_error(
            self.index,
            &format!("every value must be a number, found {kind}"),
            &token,
        )
    }
}

impl<'de> Visitor<'de> for ElementSeed {
    type Value = f64;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number")
    }

    fn visit_f64<E: de::Error>(self, x: f64) -> std::result::Result<f64, E> {
        if x.is_finite() {
            Ok(x)
        } else {
            Err(content_error(
                self.index,
                "every value must be a finite float64 number",
                &x.to_string(),
            ))
        }
    }

    fn visit_i64<E: de::Error>(self, x: i64) -> std::result::Result<f64, E> {
        Ok(x as f64)
    }

    fn visit_u64<E: de::Error>(self, x: u64) -> std::result::Result<f64, E> {
        Ok(x as f64)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> std::result::Result<f64, E> {
        let quoted = serde_json::to_string(text).unwrap_or_default();
        Err(self.not_a_number("a string", &quoted))
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> std::result::Result<f64, E> {
        Err(self.not_a_number("a boolean", &b.to_string()))
    }

    fn visit_unit<E: de::Error>(self) -> std::result::Result<f64, E> {
        Err(self.not_a_number("null", "null"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> std::result::Result<f64, A::Error> {
        Err(self.not_a_number("a nested array", "["))
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> std::result::Result<f64, A::Error> {
        Err(self.not_a_number("an object", "{"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(text: &str) -> Violation {
        match parse_values(text) {
            Err(ParseError::Invalid(v)) => v,
            other => panic!("expected invalid for {text:?}, got {other:?}"),
        }
    }

    fn malformed(text: &str) -> String {
        match parse_values(text) {
            Err(ParseError::Malformed(m)) => m,
            other => panic!("expected malformed for {text:?}, got {other:?}"),
        }
    }

    fn compact(x: f64) -> String {
        let mut out = String::new();
        compact_number(x, &mut out);
        out
    }

    #[test]
    fn the_writer_is_compact_and_write_then_read_keeps_every_bit() {
        for (x, text) in [
            (0.0, "0"),
            (-0.0, "-0.0"),
            (1.0, "1"),
            (541940701.0, "541940701"),
            (0.5, "0.5"),
            (-2.5e-8, "-2.5e-8"),
            (1e-7, "1e-7"),
            (0.01, "0.01"),
            (0.001, "1e-3"),
            (0.0001, "1e-4"),
            (1e21, "1e21"),
            (1.5e300, "1.5e300"),
            (123.456, "123.456"),
            (5e-324, "5e-324"),
        ] {
            assert_eq!(compact(x), text, "{x:e}");
        }
        let mut state = 0x853c_49e6_748f_ea9bu64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state ^ (state >> 29)
        };
        let mut values = vec![
            0.0,
            -0.0,
            f64::MAX,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE / 3.0,
            123456789012345680.0,
            9.876543210987654e19,
            1e22,
            1.0 / 3.0,
            1e-6,
        ];
        values.extend(
            (0..20_000)
                .map(|_| f64::from_bits(next()))
                .filter(|x| x.is_finite()),
        );
        values
            .extend((0..2_000).map(|i| (next() % 1_000_000_000) as f64 * 10f64.powi(i % 40 - 20)));
        let text = json_text(&values);
        assert!(text.starts_with("{\"values\":[0,-0.0,"), "{}", &text[..40]);
        let back = parse_values(&text).unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&values));
        for &x in &values {
            let old = serde_json::to_string(&x).unwrap();
            assert!(
                compact(x).len() <= old.len(),
                "{x:e}: {} vs {old}",
                compact(x)
            );
        }
    }

    #[test]
    fn the_javascript_length_is_what_json_stringify_writes() {
        let values = [
            0.0,
            -0.0,
            1e-6,
            1e-7,
            1e21,
            1e20,
            1.5,
            -2.5e-8,
            541940701.0,
            0.1,
        ];
        let javascript = r#"{"values":[0,0,0.000001,1e-7,1e+21,100000000000000000000,1.5,-2.5e-8,541940701,0.1]}"#;
        assert_eq!(javascript_json_len(&values), javascript.len());
        assert_eq!(javascript_json_len(&[]), r#"{"values":[]}"#.len());
    }

    #[test]
    fn reads_both_shapes_and_ignores_extra_keys() {
        let a = parse_values(r#"{"name": "x", "values": [1, 0.5, 2e-3], "extra": {"a": [1]}}"#);
        assert_eq!(a.unwrap(), vec![1.0, 0.5, 0.002]);
        assert_eq!(parse_values("[0.1, 3]").unwrap(), vec![0.1, 3.0]);
    }

    #[test]
    fn a_byte_order_mark_is_skipped() {
        assert_eq!(
            parse_values("\u{feff}{\"values\": [1, 2.5]}").unwrap(),
            vec![1.0, 2.5]
        );
    }

    #[test]
    fn parses_to_nearest_float_like_python() {
        // Decimal strings that naive parsers round wrongly.
        let v = parse_values("[2.2250738585072011e-308, 0.1, 9007199254740993, 5e-324]").unwrap();
        assert_eq!(v[0].to_bits(), 0x000f_ffff_ffff_ffff);
        assert_eq!(v[1], 0.1);
        assert_eq!(v[2], 9007199254740992.0);
        assert_eq!(v[3], f64::from_bits(1));
    }

    #[test]
    fn reports_non_finite_tokens_with_index() {
        let v = invalid("[1, 2, NaN, 4]");
        assert_eq!((v.index, v.value.as_deref()), (Some(2), Some("NaN")));
        let v = invalid(r#"{"values": [0.5, -Infinity]}"#);
        assert_eq!((v.index, v.value.as_deref()), (Some(1), Some("-Infinity")));
        let v = invalid("[1e400]");
        assert_eq!((v.index, v.value.as_deref()), (Some(0), Some("1e400")));
    }

    #[test]
    fn reports_wrong_element_types_with_index() {
        let v = invalid(r#"[1, "abc"]"#);
        assert_eq!(v.index, Some(1));
        assert!(v.rule.contains("string"), "{}", v.rule);
        let v = invalid("[1, 2, [3]]");
        assert_eq!(v.index, Some(2));
        assert!(v.rule.contains("nested array"));
        assert!(invalid("[null]").rule.contains("null"));
        let v = invalid(r#"[1, {"a": 1}]"#);
        assert_eq!(v.index, Some(1));
        assert!(v.rule.contains("an object"), "{}", v.rule);
        // serde adds where the value stands.
        let v = invalid("[true]").value.unwrap();
        assert!(v.starts_with("true at line 1"), "{v}");
    }

    #[test]
    fn a_huge_file_is_refused_past_its_value_cap_and_a_nested_array_never_built() {
        let at_cap = format!("[{}0]", "0,".repeat(MOST_VALUES - 1));
        assert_eq!(parse_values(&at_cap).unwrap().len(), MOST_VALUES);
        let past = format!("[{}0]", "0,".repeat(MOST_VALUES));
        let v = invalid(&past);
        assert_eq!(v.index, Some(MOST_VALUES));
        assert!(v.rule.contains("at most 4000000 values"), "{}", v.rule);
        // One nested array of many values: refused on its first character, at its index.
        let nested = format!("[1, [{}0]]", "0,".repeat(1000));
        let v = invalid(&nested);
        assert_eq!(v.index, Some(1));
        assert!(
            v.value.as_deref().unwrap().starts_with("[ at line 1"),
            "{v:?}"
        );
        assert!(v.rule.contains("nested array"), "{}", v.rule);
    }

    #[test]
    fn empty_and_malformed_inputs() {
        assert!(invalid("[]").rule.contains("no values"));
        assert!(malformed("[1, 2").contains("line 1"));
        assert!(malformed(r#"{"value": [1]}"#).contains("no \"values\""));
        assert!(malformed("").contains("malformed"));
        assert!(malformed("[1, 2] x").contains("trailing"));
        assert!(malformed("42").contains("expected"));
    }

    #[test]
    fn duplicate_keys_are_refused_naming_the_key() {
        let m = malformed(r#"{"values": [2, 2], "values": [1, 0.5]}"#);
        assert!(m.contains(r#"duplicate key "values""#), "{m}");
        let m = malformed(r#"{"note": 1, "values": [1], "note": 2}"#);
        assert!(m.contains(r#"duplicate key "note""#), "{m}");
    }

    #[test]
    fn reads_the_arena_api_data_shape() {
        let entry = r#"{"id": 7, "data": {"values": [0.5, 2], "note": "x"}, "score": 1.5}"#;
        assert_eq!(parse_values(entry).unwrap(), vec![0.5, 2.0]);
        // A top-level "values" wins over "data", wherever either stands.
        let both = r#"{"data": {"values": [9]}, "values": [1, 2]}"#;
        assert_eq!(parse_values(both).unwrap(), vec![1.0, 2.0]);
        let other = r#"{"data": [1, 2], "values": [3]}"#;
        assert_eq!(parse_values(other).unwrap(), vec![3.0]);
        assert!(malformed(r#"{"data": {"vals": [1]}}"#).contains(r#"nor "data""#));
        assert!(malformed(r#"{"data": "x"}"#).contains(r#"no "values""#));
        let v = invalid(r#"{"data": {"values": [1, NaN]}}"#);
        assert_eq!((v.index, v.value.as_deref()), (Some(1), Some("NaN")));
        let m = malformed(r#"{"data": {"values": [1], "values": [2]}}"#);
        assert!(m.contains(r#"duplicate key "values""#), "{m}");
    }
}
