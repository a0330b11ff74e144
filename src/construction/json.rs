//! JSON constructions: the arena's `{"values": [...]}`, the arena API's
//! `{"data": {"values": [...]}}` (a solution entry as served), or a bare array.
//!
//! Numbers parse to the nearest float64 exactly as Python and numpy do (serde_json with
//! `float_roundtrip`); writing uses the shortest round-trip form, so read → write → read is
//! bit-identical. Content that Python would accept but the arena rejects (`NaN`, `Infinity`,
//! numbers beyond float64 range) is reported as an invalid construction with its index; text that
//! is not JSON at all is reported as a malformed file with line and column.

use super::{ParseError, FILE_RULES};
use crate::bounded_read::MOST_VALUES;
use crate::error::Violation;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::cell::Cell;
use std::collections::HashSet;
use std::fmt;

/// The arena JSON text `{"values": [...]}` of finite values, shortest round-trip formatting.
pub fn to_json(values: &[f64]) -> std::result::Result<String, Violation> {
    super::check_finite(values)?;
    Ok(json_text(values))
}

/// The JSON text `{"values": [...]}` of values already checked finite.
pub(super) fn json_text(values: &[f64]) -> String {
    serde_json::json!({ "values": values }).to_string()
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
    ParseError::Malformed(format!("malformed JSON: {message}"))
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
