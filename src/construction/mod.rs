//! Construction files: reading a construction from JSON, numpy's `.npy` or plain text (any of
//! them optionally gzipped, or from standard input), and writing one in the format its name asks
//! for.
//!
//! **Reading** chooses the reader by content first, then by name ([`Format::detect`]):
//! gzip (bytes `1f 8b`) is gunzipped under the same cap and the rest applies to what it holds;
//! bytes starting with `\x93NUMPY` are `.npy`; a name ending in `.npy` is `.npy` too (so a
//! truncated one is reported as such); a name ending in `.json` is JSON; otherwise the first
//! non-blank character decides: `{` or `[` is JSON, anything else is text. Every read is bounded
//! ([`crate::bounded_read`]): [`CONSTRUCTION_CAP`] before and after gunzip, standard input too.
//!
//! - JSON ([`json`]): `{"values": [...]}`, the arena API's `{"data": {"values": [...]}}`, or a
//!   bare array. Numbers parse to the nearest float64 exactly as Python and numpy do.
//! - `.npy` ([`npy`]): a 1-D array of float64, or of float32 or integers that convert to float64
//!   exactly; any other shape or dtype is refused naming the rule and what the file holds.
//! - text ([`text`]): numbers separated by blanks or commas, one per line or all on one line,
//!   `#` comments (what `np.savetxt` writes).
//!
//! Values that are not finite are an invalid construction naming the first index (exit 3); an
//! empty construction too. Anything unreadable is a malformed input (exit 6).
//!
//! **Writing** ([`write_values`]) follows the name: `.npy` is a float64 `.npy`, `.txt` and
//! `.csv` are text (one value per line), anything else is JSON `{"values": [...]}`; a further
//! `.gz` gzips it. Floats are written in shortest round-trip form (text, JSON) or as their bits
//! (`.npy`), so read → write → read is bit-identical in every format.

pub mod json;
pub mod npy;
pub mod text;

pub use crate::bounded_read::STDIN_NAME;
pub use json::{parse_values, to_json};

use crate::bounded_read::{
    gunzip_capped, read_maybe_gzipped_capped, read_regular_maybe_gzipped_capped, read_stdin_capped,
    CONSTRUCTION_CAP, GZIP_MAGIC,
};
use crate::error::{MiloError, Result, Violation};
use std::io::Write;
use std::path::Path;

/// Label used in violations found while reading, before any problem is known.
const FILE_RULES: &str = "construction file";

/// The argument that names standard input instead of a file.
pub const STDIN_ARGUMENT: &str = "-";

/// Why the bytes of a construction could not be turned into values.
#[derive(Debug)]
pub enum ParseError {
    /// The input is well-formed but a value is not a finite number, or there is no value.
    Invalid(Violation),
    /// The input is not the expected format.
    Malformed(String),
}

/// A construction file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `{"values": [...]}` (or, read, a bare array or the arena API's `data` shape).
    Json,
    /// numpy's binary `.npy`, a 1-D array.
    Npy,
    /// Numbers separated by blanks or commas.
    Text,
}

impl Format {
    /// The format to read `bytes` (already gunzipped) named `name` in (see the module's rules).
    pub fn detect(name: &Path, bytes: &[u8]) -> Format {
        if bytes.starts_with(npy::MAGIC) {
            return Format::Npy;
        }
        match extension(name).as_deref() {
            Some("npy") => return Format::Npy,
            Some("json") => return Format::Json,
            _ => {}
        }
        let text = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
        match text.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{' | b'[') => Format::Json,
            _ => Format::Text,
        }
    }

    /// The format a file named `path` is written in: `.npy` → [`Format::Npy`], `.txt` and `.csv`
    /// → [`Format::Text`], anything else → [`Format::Json`] (a trailing `.gz` is looked through).
    pub fn of_name(path: &Path) -> Format {
        match extension(path).as_deref() {
            Some("npy") => Format::Npy,
            Some("txt" | "csv") => Format::Text,
            _ => Format::Json,
        }
    }
}

/// The lowercase extension of `path`, looking through a trailing `.gz` (`x.npy.gz` → `npy`).
fn extension(path: &Path) -> Option<String> {
    let inner = if crate::atomic_file::is_gzip_path(path) {
        Path::new(path.file_stem()?)
    } else {
        path
    };
    inner
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
}

/// Reads the values of a construction file in any of the formats (see the module's rules), or of
/// standard input when `path` is `-` ([`STDIN_ARGUMENT`]); at most [`CONSTRUCTION_CAP`] bytes
/// before and after gunzip.
pub fn read_values(path: &Path) -> Result<Vec<f64>> {
    if path == Path::new(STDIN_ARGUMENT) {
        let bytes = read_stdin_capped(CONSTRUCTION_CAP, "construction")?;
        return decode(Path::new(STDIN_NAME), bytes);
    }
    // One pass over the file, gunzipped as it is read: the compressed bytes are never held whole.
    let bytes = read_maybe_gzipped_capped(path, CONSTRUCTION_CAP, "construction")?;
    decode_plain(path, bytes)
}

/// The values of a construction file milo wrote and reads back (a run's `best.json`, a resumed
/// run's `--out`), read as [`read_values`] reads a file, which must be a regular file: a link,
/// FIFO or device there is refused at once, never followed or blocked on.
pub fn read_record_values(path: &Path) -> Result<Vec<f64>> {
    let bytes = read_regular_maybe_gzipped_capped(path, CONSTRUCTION_CAP, "construction")?;
    decode_plain(path, bytes)
}

/// The values in `bytes`, read from `source` (its name picks the format where the content does
/// not; errors name it).
pub fn decode(source: &Path, bytes: Vec<u8>) -> Result<Vec<f64>> {
    let bytes = if bytes.starts_with(GZIP_MAGIC) {
        gunzip_capped(source, &bytes, CONSTRUCTION_CAP, "construction")?
    } else {
        bytes
    };
    decode_plain(source, bytes)
}

/// The values in `bytes` that are no longer gzipped (see [`decode`]).
fn decode_plain(source: &Path, bytes: Vec<u8>) -> Result<Vec<f64>> {
    let parsed = match Format::detect(source, &bytes) {
        Format::Npy => npy::parse_npy(&bytes),
        Format::Json => utf8(bytes, "JSON").and_then(|t| json::parse_values(&t)),
        Format::Text => utf8(bytes, "text").and_then(|t| text::parse_text(&t)),
    };
    parsed.map_err(|e| match e {
        ParseError::Invalid(v) => MiloError::Invalid(v),
        ParseError::Malformed(message) => MiloError::Malformed {
            path: source.to_path_buf(),
            message,
        },
    })
}

/// The bytes as UTF-8 text for the reader of `format`, or a malformed-input error naming the
/// first byte that is not.
fn utf8(bytes: Vec<u8>, format: &str) -> std::result::Result<String, ParseError> {
    String::from_utf8(bytes).map_err(|e| {
        ParseError::Malformed(format!(
            "not UTF-8 text (byte {}); expected {format}, a .npy file, optionally gzipped",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// `values` if there is at least one and every one is finite; otherwise the violation.
fn checked(values: Vec<f64>) -> std::result::Result<Vec<f64>, ParseError> {
    if values.is_empty() {
        return Err(ParseError::Invalid(Violation::whole(
            FILE_RULES,
            "the construction has no values (empty array)",
            None,
        )));
    }
    check_finite(&values).map_err(ParseError::Invalid)?;
    Ok(values)
}

/// The first value that is not finite, as a violation naming its index.
fn check_finite(values: &[f64]) -> std::result::Result<(), Violation> {
    match values.iter().enumerate().find(|(_, x)| !x.is_finite()) {
        Some((i, &x)) => Err(Violation::at(
            FILE_RULES,
            "every value must be a finite float64 number",
            i,
            x,
        )),
        None => Ok(()),
    }
}

/// Writes `values` (finite) to `out` in `format`.
fn write_format(format: Format, values: &[f64], out: &mut impl Write) -> std::io::Result<()> {
    match format {
        Format::Json => out.write_all(json::json_text(values).as_bytes()),
        Format::Npy => npy::write_npy(values, out),
        Format::Text => text::write_text(values, out),
    }
}

/// Writes values in the format `path` names ([`Format::of_name`]; gzipped when it ends in `.gz`),
/// replacing `path` atomically. Values that are not finite are refused before anything is
/// written.
pub fn write_values(path: &Path, values: &[f64]) -> Result<()> {
    check_finite(values)?;
    let format = Format::of_name(path);
    crate::atomic_file::write_with(path, |file| {
        if crate::atomic_file::is_gzip_path(path) {
            let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
            write_format(format, values, &mut gz)?;
            gz.finish().map(|_| ())
        } else {
            let mut buffered = std::io::BufWriter::new(file);
            write_format(format, values, &mut buffered)?;
            buffered.flush()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(values: &[f64]) -> Vec<u64> {
        values.iter().map(|x| x.to_bits()).collect()
    }

    /// Values that stress a round trip: non-terminating binary fractions, the smallest
    /// subnormal, a negative zero, the extremes of float64.
    fn awkward() -> Vec<f64> {
        vec![
            0.1,
            1.0 / 3.0,
            5e-324,
            -0.0,
            1e300,
            123456789.12345679,
            f64::MAX,
            f64::MIN_POSITIVE,
            -2.5e-7,
        ]
    }

    #[test]
    fn write_then_read_is_bit_identical_in_every_format() {
        let dir = tempfile::tempdir().unwrap();
        let values = awkward();
        for name in [
            "c.json",
            "c.json.gz",
            "c.npy",
            "c.npy.gz",
            "c.txt",
            "c.csv",
            "c.TXT.gz",
            "c",
        ] {
            let path = dir.path().join(name);
            write_values(&path, &values).unwrap();
            let back = read_values(&path).unwrap();
            assert_eq!(bits(&back), bits(&values), "{name}");
        }
    }

    #[test]
    fn writing_follows_the_name() {
        let dir = tempfile::tempdir().unwrap();
        let read = |name: &str| {
            let path = dir.path().join(name);
            write_values(&path, &[0.5, 2.0]).unwrap();
            std::fs::read(path).unwrap()
        };
        assert!(read("a.npy").starts_with(npy::MAGIC));
        assert_eq!(read("a.json"), br#"{"values":[0.5,2]}"#);
        assert_eq!(read("best.JSON"), br#"{"values":[0.5,2]}"#);
        assert_eq!(read("a.txt"), b"0.5\n2.0\n");
        assert_eq!(read("no-extension"), br#"{"values":[0.5,2]}"#);
        assert!(read("a.npy.gz").starts_with(GZIP_MAGIC));
    }

    #[test]
    fn non_finite_values_are_not_written() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a.json", "a.npy", "a.txt"] {
            let err = write_values(&dir.path().join(name), &[1.0, f64::NAN]).unwrap_err();
            assert!(err.to_string().contains("index 1"), "{name}: {err}");
            assert!(!dir.path().join(name).exists(), "{name}");
        }
    }

    #[test]
    fn the_reader_is_chosen_by_content_then_by_name() {
        let p = Path::new;
        assert_eq!(Format::detect(p("x"), b"\x93NUMPY\x01\x00"), Format::Npy);
        assert_eq!(Format::detect(p("x.json"), b"\x93NUMPY"), Format::Npy);
        assert_eq!(Format::detect(p("x.npy"), b"\x93NUM"), Format::Npy);
        assert_eq!(Format::detect(p("x.NPY.gz"), b"1 2"), Format::Npy);
        assert_eq!(Format::detect(p("x.json"), b"1 2"), Format::Json);
        assert_eq!(Format::detect(p("x"), b"  \n[1]"), Format::Json);
        assert_eq!(Format::detect(p("x.txt"), b"\xef\xbb\xbf{}"), Format::Json);
        assert_eq!(Format::detect(p(STDIN_NAME), b"1\n2\n"), Format::Text);
        assert_eq!(Format::detect(p("x.csv"), b""), Format::Text);
    }

    #[test]
    fn every_format_reports_empty_and_non_finite_values_as_invalid() {
        let violation = |source: &str, bytes: &[u8]| match decode(Path::new(source), bytes.into()) {
            Err(MiloError::Invalid(v)) => v,
            other => panic!("{source}: expected invalid, got {other:?}"),
        };
        assert!(violation("a.txt", b"# only a comment\n")
            .rule
            .contains("no values"));
        assert_eq!(violation("a.txt", b"1\nnan\n").index, Some(1));
        assert_eq!(
            violation("a.json", b"[]").rule,
            violation("a.txt", b"").rule
        );
        let mut npy_nan = Vec::new();
        npy::write_npy(&[1.0, 2.0, 3.0], &mut npy_nan).unwrap();
        let last = npy_nan.len() - 8;
        npy_nan[last..].copy_from_slice(&f64::NAN.to_le_bytes());
        let v = violation("a.npy", &npy_nan);
        assert_eq!((v.index, v.value.as_deref()), (Some(2), Some("NaN")));
    }

    #[test]
    fn gzip_is_looked_through_for_every_format() {
        let gzip = |bytes: &[u8]| {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            gz.write_all(bytes).unwrap();
            gz.finish().unwrap()
        };
        let values = [0.25, 1.5];
        for format in [Format::Json, Format::Npy, Format::Text] {
            let mut plain = Vec::new();
            write_format(format, &values, &mut plain).unwrap();
            let bytes = gzip(&plain);
            let back = decode(Path::new(STDIN_NAME), bytes).unwrap();
            assert_eq!(back, values, "{format:?}");
        }
    }

    #[test]
    fn text_that_is_not_utf8_names_the_byte() {
        let err = decode(Path::new("a.txt"), b"1\n\xff\n".to_vec()).unwrap_err();
        assert_eq!(err.exit_code(), crate::error::EXIT_INPUT);
        assert!(err.to_string().contains("byte 2"), "{err}");
    }
}
