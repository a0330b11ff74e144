//! The agent's API key: where it is read from, and the promise that it never reaches a file, a
//! log or an error message.
//!
//! The key comes from the environment variable [`KEY_VARIABLE`] or, failing that, from the file the
//! arena's agent guide names (`~/.config/einsteinarena/credentials.json`, `{"api_key": "…"}`). It is
//! held in an [`ApiKey`] whose `Debug` prints no secret; making one adds it to the secrets in use
//! ([`crate::secrets::remember`]), so every text milo builds from a server's answer is scrubbed of
//! it (in any encoding) before it is shown or written.

use crate::bounded_read::{read_bytes_capped, CREDENTIALS_CAP};
use crate::error::{MiloError, Result};
use std::fmt;
use std::path::PathBuf;

/// The environment variable holding the key.
pub const KEY_VARIABLE: &str = "EINSTEIN_ARENA_API_KEY";
/// The credentials file, under the home directory.
const CREDENTIALS: &str = ".config/einsteinarena/credentials.json";
/// Longest key accepted (keys are short tokens; a longer one is a wrong file).
const MAX_KEY_CHARS: usize = 4096;

/// An arena API key. Its `Debug` and `Display` never show it.
#[derive(Clone)]
pub struct ApiKey(String);

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl ApiKey {
    /// The key from [`KEY_VARIABLE`], else from the credentials file; a usage error naming both
    /// places (never the key) when neither holds a usable one.
    pub fn load() -> Result<ApiKey> {
        if let Some(text) = std::env::var_os(KEY_VARIABLE) {
            let text = text
                .into_string()
                .map_err(|_| MiloError::Usage(format!("{KEY_VARIABLE} is not UTF-8 text")))?;
            return ApiKey::new(&text)
                .map_err(|rule| MiloError::Usage(format!("{KEY_VARIABLE}: the key {rule}")));
        }
        let path = credentials_path().ok_or_else(missing)?;
        let bytes = match read_bytes_capped(&path, CREDENTIALS_CAP, "credentials file") {
            Ok(bytes) => bytes,
            Err(e) if e.is_missing_file() => return Err(missing()),
            Err(e) => return Err(e),
        };
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|_| MiloError::Malformed {
                path: path.clone(),
                message: "not JSON; expected {\"api_key\": \"…\"}".into(),
            })?;
        let text = value
            .get("api_key")
            .and_then(|k| k.as_str())
            .ok_or_else(|| MiloError::Malformed {
                path: path.clone(),
                message: "no string \"api_key\"".into(),
            })?;
        ApiKey::new(text).map_err(|rule| MiloError::Malformed {
            path,
            message: format!("the \"api_key\" {rule}"),
        })
    }

    /// A key from its text, added to the secrets in use; the error (which never quotes the key)
    /// says which rule it breaks.
    pub fn new(text: &str) -> std::result::Result<ApiKey, String> {
        let key = ApiKey::token(text)?;
        crate::secrets::remember(&key.0);
        Ok(key)
    }

    /// A one-time token the server handed out (an upload ticket's), checked as a key is but not
    /// added to the secrets in use: the next ticket, which shares its form, must stay readable.
    pub(super) fn token(text: &str) -> std::result::Result<ApiKey, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("is empty".into());
        }
        if text.chars().count() > MAX_KEY_CHARS {
            return Err(format!("is longer than {MAX_KEY_CHARS} characters"));
        }
        if !text.chars().all(|c| c.is_ascii_graphic()) {
            return Err("must be printable ASCII without spaces".into());
        }
        Ok(ApiKey(text.to_string()))
    }

    /// The `Authorization` header's value.
    pub(super) fn bearer(&self) -> String {
        format!("Bearer {}", self.0)
    }
}

/// `~/.config/einsteinarena/credentials.json`, when a home directory is known.
fn credentials_path() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|home| PathBuf::from(home).join(CREDENTIALS))
}

fn missing() -> MiloError {
    MiloError::Usage(format!(
        "no arena API key: set {KEY_VARIABLE} or write ~/{CREDENTIALS} as {{\"api_key\": \"…\"}}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_never_printed_and_is_redacted_from_text() {
        let key = ApiKey::new("  sk-secret-123 ").unwrap();
        assert_eq!(format!("{key:?}"), "ApiKey(<redacted>)");
        assert_eq!(key.bearer(), "Bearer sk-secret-123");
        assert_eq!(
            crate::secrets::scrub("bad key sk-secret-123, sk-secret-12"),
            "bad key <redacted>, <redacted>"
        );
    }

    #[test]
    fn keys_that_could_split_a_header_are_refused_without_quoting_them() {
        for bad in ["", "two words", "line\nbreak", "tab\tkey", "zoë"] {
            let err = ApiKey::new(bad).unwrap_err();
            assert!(bad.is_empty() || !err.contains(bad), "{err}");
        }
        assert!(ApiKey::new(&"k".repeat(MAX_KEY_CHARS + 1)).is_err());
    }
}
