//! Secrets milo holds (API keys, upload tokens) and the one scrubber that keeps them out of
//! everything milo stores, prints or renders.
//!
//! A server or a model may send a secret back: echoed whole, JSON-escaped (`sk\/…`, `\u0073…`),
//! percent-encoded, HTML-escaped, base64-encoded (standard or URL-safe, at any alignment),
//! hex-encoded, in other letter case (upper-cased, lower-cased), or cut to a piece (a
//! 200-character excerpt ending inside it). [`Secrets::scrub`] replaces every run of text holding
//! any piece of [`MIN_PIECE`] or more characters of a secret, in any of those encodings (up to
//! [`DECODE_LAYERS`] nested layers of escapes), with [`REDACTED`]; pieces are matched without
//! regard to ASCII letter case. A secret shorter than [`MIN_PIECE`] is removed only whole.
//!
//! The process keeps the secrets in use in one registry: [`remember`] adds a key when milo reads
//! it, and [`scrub`] and [`scrub_json`] clean a text against all of them. Every text that came
//! from a server or a model passes through them before it is stored (ledgers, lineage records,
//! logs), printed or rendered.

use base64::Engine;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::RwLock;

/// What a removed run of text is replaced by.
pub const REDACTED: &str = "<redacted>";
/// The shortest piece of a secret removed wherever it appears (a shorter secret is removed whole).
pub const MIN_PIECE: usize = 8;
/// Layers of escapes undone over one another (e.g. a percent-encoded JSON escape).
pub const DECODE_LAYERS: usize = 3;

/// A set of secrets, as the pieces of them (and of their encodings) to remove from texts. Its
/// `Debug` shows only how many secrets it holds.
#[derive(Clone, Default)]
pub struct Secrets {
    /// The secrets as given (to add each once).
    secrets: Vec<String>,
    /// Byte strings to remove, by length, ASCII lower-cased: every [`MIN_PIECE`]-byte window of
    /// each secret and of each of its base64 and hex encodings (the whole of a shorter one).
    pieces: BTreeMap<usize, HashSet<Vec<u8>>>,
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "Secrets({} held)", self.secrets.len())
    }
}

impl Secrets {
    /// No secrets: scrubbing changes nothing.
    pub const fn new() -> Secrets {
        Secrets {
            secrets: Vec::new(),
            pieces: BTreeMap::new(),
        }
    }

    /// Adds `secret` (surrounding whitespace ignored; an empty one is ignored).
    pub fn add(&mut self, secret: &str) {
        let secret = secret.trim();
        if secret.is_empty() || self.secrets.iter().any(|s| s == secret) {
            return;
        }
        self.secrets.push(secret.to_string());
        for form in forms(secret.as_bytes()) {
            let width = form.len().min(MIN_PIECE);
            let set = self.pieces.entry(width).or_default();
            for window in form.windows(width) {
                set.insert(window.to_ascii_lowercase());
            }
        }
    }

    /// Whether no secret is held.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// `text` with every run holding a piece of a secret, in any encoding, replaced by
    /// [`REDACTED`].
    pub fn scrub<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if self.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut view = View::raw(text);
        let mut runs = self.runs(&view);
        for _ in 0..DECODE_LAYERS {
            match view.decoded(Escapes::All) {
                Some(decoded) => {
                    runs.extend(self.runs(&decoded));
                    view = decoded;
                }
                None => break,
            }
        }
        replace_runs(text, runs.into_iter())
    }

    /// A JSON text (one serialized value) with each string in it scrubbed as [`Secrets::scrub`]
    /// does, its JSON escapes read as such, so the result is JSON of the same shape.
    pub fn scrub_json<'t>(&self, json: &'t str) -> Cow<'t, str> {
        if self.is_empty() {
            return Cow::Borrowed(json);
        }
        let mut runs = Vec::new();
        for (start, end) in string_contents(json) {
            let raw = View::raw(&json[start..end]);
            // Without JSON escapes the string's text is its value.
            let mut view = raw.decoded(Escapes::Json).unwrap_or(raw);
            for layer in 0..DECODE_LAYERS {
                runs.extend(
                    self.runs(&view)
                        .into_iter()
                        .map(|(a, b)| (a + start, b + start)),
                );
                if layer + 1 == DECODE_LAYERS {
                    break;
                }
                match view.decoded(Escapes::All) {
                    Some(decoded) => view = decoded,
                    None => break,
                }
            }
        }
        replace_runs(json, runs.into_iter())
    }

    /// The byte ranges of the original text (as `view` maps them) holding a piece, in any
    /// ASCII letter case.
    fn runs(&self, view: &View) -> Vec<(usize, usize)> {
        let lower = view.bytes.to_ascii_lowercase();
        self.pieces
            .iter()
            .flat_map(|(&width, set)| {
                lower
                    .windows(width)
                    .enumerate()
                    .filter(move |(_, window)| set.contains(*window))
                    .map(move |(i, _)| view.span(i, i + width))
            })
            .collect()
    }
}

/// The byte forms of a secret to look for: itself, its hex encoding, and the parts of its
/// base64 encodings (standard and URL-safe) that do not depend on the bytes around it, at each
/// of the three alignments it may have in a longer encoded text.
fn forms(secret: &[u8]) -> Vec<Vec<u8>> {
    let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    let mut forms = vec![secret.to_vec(), hex.into_bytes()];
    let engines = [
        base64::engine::general_purpose::STANDARD_NO_PAD,
        base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ];
    for engine in engines {
        for offset in 0..3 {
            let mut bytes = vec![0u8; offset];
            bytes.extend_from_slice(secret);
            let encoded = engine.encode(&bytes).into_bytes();
            // Characters wholly inside the secret's bits: from ceil(8·offset/6) to
            // floor(8·(offset + len)/6).
            let first = (8 * offset).div_ceil(6);
            let last = (8 * (offset + secret.len()) / 6).min(encoded.len());
            if first < last {
                forms.push(encoded[first..last].to_vec());
            }
        }
    }
    forms
}

/// Which escapes a decoding undoes.
#[derive(Clone, Copy, PartialEq)]
enum Escapes {
    /// JSON string escapes only (`\"`, `\\`, `\/`, `\n`…, `\uXXXX`).
    Json,
    /// JSON string escapes, percent-encoding (`%2F`) and HTML character references (`&#47;`,
    /// `&#x2f;`, `&amp;`…).
    All,
}

/// A text as bytes, each with the range of the original text it stands for.
struct View {
    bytes: Vec<u8>,
    /// `(start, end)` in the original text, per byte; `None` for the original itself.
    spans: Option<Vec<(usize, usize)>>,
}

impl View {
    /// The text itself.
    fn raw(text: &str) -> View {
        View {
            bytes: text.as_bytes().to_vec(),
            spans: None,
        }
    }

    /// The original range of bytes `from..to` of the view.
    fn span(&self, from: usize, to: usize) -> (usize, usize) {
        match &self.spans {
            None => (from, to),
            Some(spans) => (spans[from].0, spans[to - 1].1),
        }
    }

    /// The view with one layer of `escapes` undone, or `None` when it holds none.
    fn decoded(&self, escapes: Escapes) -> Option<View> {
        let b = &self.bytes;
        let mut bytes = Vec::with_capacity(b.len());
        let mut spans = Vec::with_capacity(b.len());
        let mut changed = false;
        let mut i = 0;
        while i < b.len() {
            let (out, used) = match decode_one(&b[i..], escapes) {
                Some(found) => {
                    changed = true;
                    found
                }
                None => (Decoded::Byte(b[i]), 1),
            };
            let span = self.span(i, i + used);
            match out {
                Decoded::Byte(byte) => {
                    bytes.push(byte);
                    spans.push(span);
                }
                Decoded::Char(c) => {
                    let mut buffer = [0u8; 4];
                    for &byte in c.encode_utf8(&mut buffer).as_bytes() {
                        bytes.push(byte);
                        spans.push(span);
                    }
                }
            }
            i += used;
        }
        changed.then_some(View {
            bytes,
            spans: Some(spans),
        })
    }
}

/// What an escape stands for.
enum Decoded {
    Byte(u8),
    Char(char),
}

/// The escape at the start of `b`, if there is one: what it stands for and its length.
fn decode_one(b: &[u8], escapes: Escapes) -> Option<(Decoded, usize)> {
    match b.first()? {
        b'\\' => {
            let simple = match *b.get(1)? {
                b'"' => Some(b'"'),
                b'\\' => Some(b'\\'),
                b'/' => Some(b'/'),
                b'b' => Some(8),
                b'f' => Some(12),
                b'n' => Some(b'\n'),
                b'r' => Some(b'\r'),
                b't' => Some(b'\t'),
                _ => None,
            };
            if let Some(byte) = simple {
                return Some((Decoded::Byte(byte), 2));
            }
            let unit = hex_value(b.get(1..6).filter(|u| u[0] == b'u')?.get(1..)?)?;
            if (0xD800..0xDC00).contains(&unit) {
                let low = b
                    .get(6..12)
                    .filter(|l| l.starts_with(b"\\u"))
                    .and_then(|l| hex_value(&l[2..]))
                    .filter(|l| (0xDC00..0xE000).contains(l));
                if let Some(low) = low {
                    let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                    return Some((Decoded::Char(char::from_u32(code)?), 12));
                }
            }
            Some((Decoded::Char(char::from_u32(unit).unwrap_or('\u{fffd}')), 6))
        }
        b'%' if escapes == Escapes::All => {
            let value = hex_value(b.get(1..3)?)?;
            Some((Decoded::Byte(value as u8), 3))
        }
        b'&' if escapes == Escapes::All => {
            let end = b.iter().take(12).position(|&c| c == b';')?;
            let name = std::str::from_utf8(&b[1..end]).ok()?;
            let c = match name {
                "amp" => '&',
                "lt" => '<',
                "gt" => '>',
                "quot" => '"',
                "apos" => '\'',
                _ => {
                    let number = name.strip_prefix('#')?;
                    let code = match number.strip_prefix(['x', 'X']) {
                        Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                        None => number.parse().ok()?,
                    };
                    char::from_u32(code)?
                }
            };
            Some((Decoded::Char(c), end + 1))
        }
        _ => None,
    }
}

/// The value of hexadecimal digits (all of `digits`), if they are all hexadecimal.
fn hex_value(digits: &[u8]) -> Option<u32> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
}

/// The byte ranges of the contents of the string literals of a JSON text (quotes excluded).
fn string_contents(json: &str) -> Vec<(usize, usize)> {
    let b = json.as_bytes();
    let mut ranges = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'"' {
            i += 1;
            continue;
        }
        let start = i + 1;
        let mut j = start;
        while j < b.len() && b[j] != b'"' {
            j += if b[j] == b'\\' { 2 } else { 1 };
        }
        let end = j.min(b.len());
        ranges.push((start, end));
        i = end + 1;
    }
    ranges
}

/// `text` with the byte ranges `runs` (widened to whole characters, merged where they overlap or
/// touch) each replaced by [`REDACTED`].
fn replace_runs(text: &str, runs: impl Iterator<Item = (usize, usize)>) -> Cow<'_, str> {
    let mut runs: Vec<(usize, usize)> = runs
        .map(|(mut start, mut end)| {
            while !text.is_char_boundary(start) {
                start -= 1;
            }
            while !text.is_char_boundary(end) {
                end += 1;
            }
            (start, end)
        })
        .collect();
    if runs.is_empty() {
        return Cow::Borrowed(text);
    }
    runs.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let mut current: Option<(usize, usize)> = None;
    for (start, end) in runs {
        match &mut current {
            Some((_, current_end)) if start <= *current_end => {
                *current_end = (*current_end).max(end);
            }
            _ => {
                if let Some((s, e)) = current.take() {
                    out.push_str(&text[at..s]);
                    out.push_str(REDACTED);
                    at = e;
                }
                current = Some((start, end));
            }
        }
    }
    if let Some((s, e)) = current {
        out.push_str(&text[at..s]);
        out.push_str(REDACTED);
        at = e;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// The secrets this process uses.
static IN_USE: RwLock<Secrets> = RwLock::new(Secrets::new());

/// Adds `secret` to the secrets this process uses (every later [`scrub`] removes it).
pub fn remember(secret: &str) {
    let known = IN_USE
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .secrets
        .iter()
        .any(|s| s == secret.trim());
    if !known {
        IN_USE
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .add(secret);
    }
}

/// Adds the value of the environment variable `name`, when it is set, to the secrets in use.
pub fn remember_variable(name: &str) {
    if let Some(value) = std::env::var_os(name) {
        remember(&value.to_string_lossy());
    }
}

/// `text` scrubbed of the secrets in use (see [`Secrets::scrub`]).
pub fn scrub(text: &str) -> Cow<'_, str> {
    IN_USE.read().unwrap_or_else(|e| e.into_inner()).scrub(text)
}

/// A JSON text scrubbed of the secrets in use (see [`Secrets::scrub_json`]).
pub fn scrub_json(json: &str) -> Cow<'_, str> {
    IN_USE
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .scrub_json(json)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-live/Q7f+9zX2pLm4Rt8Vw0Yb";

    fn secrets() -> Secrets {
        let mut secrets = Secrets::new();
        secrets.add(KEY);
        secrets
    }

    /// Whether `text` holds any piece of [`KEY`] of [`MIN_PIECE`] characters.
    fn holds_a_piece(text: &str) -> bool {
        KEY.as_bytes()
            .windows(MIN_PIECE)
            .any(|w| text.contains(std::str::from_utf8(w).unwrap()))
    }

    #[test]
    fn the_key_goes_in_every_encoding_a_server_may_echo_it_in() {
        let s = secrets();
        let json_slash = KEY.replace('/', "\\/");
        let json_unicode: String = KEY
            .chars()
            .map(|c| format!("\\u{:04x}", c as u32))
            .collect();
        let percent: String = KEY.bytes().map(|b| format!("%{b:02X}")).collect();
        let percent_lower = KEY.replace('/', "%2f").replace('+', "%2b");
        let entities: String = KEY.chars().map(|c| format!("&#{};", c as u32)).collect();
        let engines = [
            base64::engine::general_purpose::STANDARD,
            base64::engine::general_purpose::URL_SAFE,
        ];
        let mut echoes = vec![
            KEY.to_string(),
            json_slash,
            json_unicode,
            percent,
            percent_lower,
            entities,
            KEY[..18].to_string(),
            KEY[KEY.len() - 9..].to_string(),
            KEY.replace('/', "%5C/"),
            KEY.to_uppercase(),
            KEY.to_lowercase(),
            KEY.bytes().map(|b| format!("{b:02x}")).collect(),
            KEY.bytes().map(|b| format!("{b:02X}")).collect(),
        ];
        for engine in engines {
            for prefix in ["", "a", "ab", "abc"] {
                let token = engine.encode(format!("{prefix}Bearer {KEY}"));
                echoes.push(token.clone());
                echoes.push(token[..token.len() * 2 / 3].to_string());
            }
        }
        for echo in echoes {
            let text = format!("server says: {echo} (end)");
            let scrubbed = s.scrub(&text);
            assert!(scrubbed.contains(REDACTED), "{echo} -> {scrubbed}");
            assert!(scrubbed.starts_with("server says: "), "{scrubbed}");
            assert!(scrubbed.ends_with(" (end)"), "{scrubbed}");
            assert!(!holds_a_piece(&scrubbed), "{scrubbed}");
        }
        let double = KEY.replace('/', "%252F");
        assert!(!holds_a_piece(&s.scrub(&double)));
    }

    #[test]
    fn text_without_the_key_is_left_alone_and_a_short_piece_stays() {
        let s = secrets();
        let text = "a 7-char piece sk-live stays; so does ünïcode & 100% of %zz and \\q";
        assert_eq!(s.scrub(text), text);
        assert_eq!(Secrets::new().scrub(KEY), KEY);
        let mut short = Secrets::new();
        short.add("abc");
        assert_eq!(short.scrub("xabcx ab"), "x<redacted>x ab");
    }

    #[test]
    fn json_stays_json_and_loses_the_key_inside_its_strings() {
        let s = secrets();
        let value = serde_json::json!({
            "agentName": format!("{KEY}\"quoted\\"),
            "error": format!("excerpt {}", &KEY[..19]),
            "n": 3,
            KEY: "a key as a field name",
        });
        let json = serde_json::to_string(&value).unwrap();
        let scrubbed = s.scrub_json(&json);
        let back: serde_json::Value = serde_json::from_str(&scrubbed).unwrap();
        assert!(!holds_a_piece(&scrubbed), "{scrubbed}");
        assert_eq!(back["agentName"], "<redacted>\"quoted\\");
        assert_eq!(back["error"], "excerpt <redacted>");
        assert_eq!(back["n"], 3);
        let escaped = format!("{{\"a\":\"{}\"}}", KEY.replace('/', "\\/"));
        let back: serde_json::Value = serde_json::from_str(&s.scrub_json(&escaped)).unwrap();
        assert_eq!(back["a"], REDACTED);
        let percent: String = KEY.bytes().map(|b| format!("%{b:02X}")).collect();
        let encoded = serde_json::json!({ "a": percent }).to_string();
        let back: serde_json::Value = serde_json::from_str(&s.scrub_json(&encoded)).unwrap();
        assert_eq!(back["a"], REDACTED);
    }

    #[test]
    fn the_debug_form_holds_no_secret() {
        assert_eq!(format!("{:?}", secrets()), "Secrets(1 held)");
    }
}
