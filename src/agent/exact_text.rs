//! Serde for exact scores as `p/q` text (`p` when the denominator is 1): exact in any format,
//! readable in JSON. Use with `#[serde(with = "crate::agent::exact_text")]`.

use num_rational::BigRational;
use serde::{de::Error, Deserialize, Deserializer, Serializer};

/// Writes `value` as `p/q` text.
pub fn serialize<S: Serializer>(value: &BigRational, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

/// Reads `p/q` (or `p`) text back; a zero denominator or any other text is an error naming it.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<BigRational, D::Error> {
    let text = String::deserialize(deserializer)?;
    text.parse::<BigRational>()
        .map_err(|_| D::Error::custom(format!("not an exact score p/q: '{text}'")))
}
