//! Reads of local files under a size cap, so a hostile input (`/dev/zero`, a sparse 2 GB file, a
//! gzip bomb) costs at most the cap in memory and ends in a one-line [`MiloError::Malformed`]
//! (exit 6) naming the kind of file and its cap.
//!
//! The reads go through [`Read::take`] with one byte past the cap: a file's reported length is
//! only a hint (`/dev/zero` reports 0), so the cap is enforced on the bytes actually read, and
//! on the bytes a gzip stream inflates to.

use crate::error::{quoted, read_error, MiloError, Result};
use std::io::Read;
use std::path::Path;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// The largest `max_len` of any problem (the second autocorrelation inequality's); a test in
/// [`crate::problems`] holds every problem to it.
pub const LARGEST_MAX_LEN: u64 = 2_000_000;
/// Most values a construction may hold as it is read: twice [`LARGEST_MAX_LEN`] (room for
/// `--allow-oversize`). A file holding more is refused while it is read, so the values of a
/// refused file cost at most 32 MB (a [`CONSTRUCTION_CAP`] file of `0,0,…` would otherwise be
/// 65 million values, 520 MB).
pub const MOST_VALUES: usize = 2 * LARGEST_MAX_LEN as usize;
/// Bytes one value may take in a construction file: a shortest round-trip float64 is at most
/// 24 characters, with room for separators, indentation and longer decimal expansions.
pub const BYTES_PER_VALUE: u64 = 64;
/// Largest construction file, and largest construction once gunzipped: [`BYTES_PER_VALUE`] for
/// each of [`LARGEST_MAX_LEN`] values, rounded up to whole MiB plus 1 MiB (124 MiB), so that a
/// refused input (a gzip bomb, `/dev/zero`) costs well under 200 MB of memory.
pub const CONSTRUCTION_CAP: u64 = (LARGEST_MAX_LEN * BYTES_PER_VALUE).div_ceil(MIB) * MIB + MIB;
/// Largest definition or settings file: suites, programs and harnesses (TOML), campaign
/// settings and provenance (JSON): 16 MiB.
pub const CONFIG_CAP: u64 = 16 * MIB;
/// Largest line of a JSON-lines record file (lineages, benchmark steps, the arena ledger): what
/// one record can legitimately hold, 64 MiB. The largest text a record quotes is a diff of two
/// definition files (a node's edit: old and new harness, each at most [`CONFIG_CAP`]; a step's
/// program; a ledger's leaderboard is an answer of at most 16 MiB), and JSON escaping at most
/// doubles the bytes of TOML text (tab, newline, quote and backslash become two bytes; other
/// control characters are not TOML): 2 × 2 × [`CONFIG_CAP`]. A refused line costs at most this
/// much memory, well under 200 MB.
pub const RECORD_LINE_CAP: u64 = 2 * 2 * CONFIG_CAP;
/// Largest arena credentials file (one short key): 64 KiB.
pub const CREDENTIALS_CAP: u64 = 64 * KIB;
/// The caps of one kind of JSON record file, read as a stream by [`read_json_capped`]: its
/// bytes, and its items (array values and object entries, counted as the commas and opening
/// brackets outside strings). The items bound what the parsed value holds in memory whatever
/// the density of the text (`[[],[],…]` is 24 bytes of memory for every 3 bytes of file), and
/// the strings of any such file hold at most [`JSON_TEXT_CAP`] bytes in all.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JsonCaps {
    /// Most bytes the file may hold.
    pub bytes: u64,
    /// Most items (array values and object entries) the file may hold.
    pub items: u64,
}
/// Bytes all the strings of one JSON record file may hold together: one definition file
/// JSON-escaped (2 × [`CONFIG_CAP`]: a trace's program, an attempt's parent), plus 1 MiB for
/// names, paths and exact scores: 33 MiB.
pub const JSON_TEXT_CAP: u64 = 2 * CONFIG_CAP + MIB;
/// Settings and summaries written once: a benchmark's `bench.json` (at most 64 methods and
/// 2 × 1,000 seeds), its runs' start times and CPU spent, a transfer method's provenance, the
/// `PULL.json` of `milo arena pull` (at most 100 entries): a definition file's cap
/// ([`CONFIG_CAP`]), 2^20 items.
pub const SETTINGS_JSON: JsonCaps = JsonCaps {
    bytes: CONFIG_CAP,
    items: 1 << 20,
};
/// A spool's attempt task or worker result: one construction of at most [`LARGEST_MAX_LEN`]
/// values as serde writes them (a shortest round-trip float64 and its comma, at most 25 bytes:
/// 48 MiB), plus the programs, harness and agents file it quotes ([`JSON_TEXT_CAP`]): 81 MiB;
/// the values plus 2^20 items.
pub const ATTEMPT_JSON: JsonCaps = JsonCaps {
    bytes: (LARGEST_MAX_LEN * 25).div_ceil(MIB) * MIB + JSON_TEXT_CAP,
    items: LARGEST_MAX_LEN + (1 << 20),
};
/// Records that grow with a benchmark: a run's `summary.json` and the `results.json` of all
/// runs (a best-so-far curve point, four items, per evaluation), a spool's job list: 2^21
/// curve points (about 270 MB as milo writes them, pretty) and 512 MiB.
pub const RECORDS_JSON: JsonCaps = JsonCaps {
    bytes: 512 * MIB,
    items: 8 << 20,
};
/// An optimize trace (a point per improvement, a record per stage, the program it ran): 2^20
/// items and 256 MiB. Its points are read through a generic value first (the file flattens
/// the trace into its top level), about 150 bytes of memory each, so fewer items than
/// [`RECORDS_JSON`].
pub const TRACE_JSON: JsonCaps = JsonCaps {
    bytes: 256 * MIB,
    items: 1 << 20,
};

/// What standard input is called in messages (as the path of its errors).
pub const STDIN_NAME: &str = "standard input";

/// First buffer size when growing towards the cap.
const FIRST_CHUNK: usize = 64 * 1024;

/// The bytes of `path`, at most `cap` of them; a longer file is a [`MiloError::Malformed`]
/// saying "`what` is past its size cap of …".
pub fn read_bytes_capped(path: &Path, cap: u64, what: &str) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path).map_err(read_error(path))?;
    read_file_capped(file, path, cap, what)
}

/// [`read_bytes_capped`] of `file`, already open (`path` names it in errors).
fn read_file_capped(file: std::fs::File, path: &Path, cap: u64, what: &str) -> Result<Vec<u8>> {
    let length_hint = file.metadata().map_or(0, |m| m.len());
    refuse_past_cap_by_length(&file, path, what, cap)?;
    let bytes = read_at_most(file, cap.saturating_add(1), length_hint).map_err(read_error(path))?;
    if bytes.len() as u64 > cap {
        return Err(past_cap(path, what, cap));
    }
    Ok(bytes)
}

/// A regular `file` longer than `cap` refused on its length, before a byte is read (a sparse
/// 10 GB file costs nothing); a file of another kind has no length to go by.
fn refuse_past_cap_by_length(
    file: &std::fs::File,
    path: &Path,
    what: &str,
    cap: u64,
) -> Result<()> {
    match file.metadata() {
        Ok(meta) if meta.is_file() && meta.len() > cap => Err(MiloError::Malformed {
            path: path.to_path_buf(),
            message: format!(
                "{what} is past its size cap of {} ({} bytes)",
                size_text(cap),
                meta.len()
            ),
        }),
        _ => Ok(()),
    }
}

/// Refuses `path` unless it is a regular file or a link to one: a FIFO, device, socket or
/// directory (itself or behind a link) is a one-line usage error naming it and what it is,
/// before anything opens it. For files that a definition or a record names rather than the
/// user (a suite's programs and starts, a resumed trace's start), where a link may be the
/// user's own but nothing else belongs; a missing file passes (its read says so).
pub fn require_file(path: &Path, what: &str) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => Err(MiloError::Usage(format!(
            "{}: {what} must be a regular file, and this is {}",
            path.display(),
            crate::atomic_file::kind_of(meta.file_type())
        ))),
        _ => Ok(()),
    }
}

/// `path` opened to read, which must be a regular file (a `what` milo wrote and reads back): a
/// symbolic link, FIFO, device, socket or directory there is refused at once with a one-line
/// usage error naming it and what it is, never followed, opened or blocked on
/// ([`crate::atomic_file::open_regular`]).
fn open_regular_to_read(path: &Path, what: &str) -> Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    crate::atomic_file::open_regular(path, what, options.read(true), read_error(path))
}

/// The bytes of `path`, which must be a regular file ([`open_regular_to_read`]), at most `cap`
/// of them (else as [`read_bytes_capped`]).
pub fn read_regular_file_capped(path: &Path, cap: u64, what: &str) -> Result<Vec<u8>> {
    read_file_capped(open_regular_to_read(path, what)?, path, cap, what)
}

/// The bytes of standard input, at most `cap` of them; more is a [`MiloError::Malformed`] on
/// `standard input` saying "`what` is past its size cap of …".
pub fn read_stdin_capped(cap: u64, what: &str) -> Result<Vec<u8>> {
    let name = Path::new(STDIN_NAME);
    let bytes = read_at_most(std::io::stdin().lock(), cap.saturating_add(1), 0)
        .map_err(read_error(name))?;
    if bytes.len() as u64 > cap {
        return Err(past_cap(name, what, cap));
    }
    Ok(bytes)
}

/// The UTF-8 text of `path`, at most `cap` bytes (see [`read_bytes_capped`]); text that is not
/// UTF-8 is a [`MiloError::Malformed`] naming the first bad byte.
pub fn read_text_capped(path: &Path, cap: u64, what: &str) -> Result<String> {
    utf8_text(path, read_bytes_capped(path, cap, what)?, what)
}

/// The UTF-8 text of `path`, which must be a regular file ([`open_regular_to_read`]), at most
/// `cap` bytes (else as [`read_text_capped`]).
pub fn read_regular_text_capped(path: &Path, cap: u64, what: &str) -> Result<String> {
    utf8_text(path, read_regular_file_capped(path, cap, what)?, what)
}

/// `bytes` (read from `path`, a `what`) as text, or the error naming its first byte that is not
/// UTF-8.
fn utf8_text(path: &Path, bytes: Vec<u8>, what: &str) -> Result<String> {
    String::from_utf8(bytes).map_err(|e| MiloError::Malformed {
        path: path.to_path_buf(),
        message: format!(
            "{what} is not UTF-8 text (byte {})",
            e.utf8_error().valid_up_to()
        ),
    })
}

/// The gunzipped bytes of `compressed` (read from `path`, concatenated members allowed), at
/// most `cap` of them; a stream inflating past it is a [`MiloError::Malformed`] saying "`what`
/// is past its size cap of … once gunzipped", a broken stream one saying it is not readable.
pub fn gunzip_capped(path: &Path, compressed: &[u8], cap: u64, what: &str) -> Result<Vec<u8>> {
    let decoder = flate2::read::MultiGzDecoder::new(compressed);
    let length_hint = (compressed.len() as u64).saturating_mul(4);
    finish_gunzip(
        path,
        read_at_most(decoder, cap.saturating_add(1), length_hint),
        cap,
        what,
    )
}

/// The magic bytes that open every gzip stream.
pub const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];

/// The bytes of `path`, gunzipped when it opens with the gzip magic bytes ([`GZIP_MAGIC`]), at most
/// `cap` of them before and after: one open and one pass over the file (a pipe works too), and
/// the compressed bytes are never held whole, so a refused file costs about what it unpacked
/// before the refusal (errors as [`read_bytes_capped`] and [`gunzip_capped`]).
pub fn read_maybe_gzipped_capped(path: &Path, cap: u64, what: &str) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path).map_err(read_error(path))?;
    read_maybe_gzipped_file(file, path, cap, what)
}

/// [`read_maybe_gzipped_capped`] of `path`, which must be a regular file
/// ([`open_regular_to_read`]).
pub fn read_regular_maybe_gzipped_capped(path: &Path, cap: u64, what: &str) -> Result<Vec<u8>> {
    read_maybe_gzipped_file(open_regular_to_read(path, what)?, path, cap, what)
}

/// [`read_maybe_gzipped_capped`] of `file`, already open (`path` names it in errors).
fn read_maybe_gzipped_file(
    file: std::fs::File,
    path: &Path,
    cap: u64,
    what: &str,
) -> Result<Vec<u8>> {
    use std::io::BufRead;
    let length_hint = file.metadata().map_or(0, |m| m.len());
    refuse_past_cap_by_length(&file, path, what, cap)?;
    let mut reader = std::io::BufReader::new(file.take(cap.saturating_add(1)));
    let head = reader.fill_buf().map_err(read_error(path))?;
    if !head.starts_with(GZIP_MAGIC) {
        let bytes =
            read_at_most(reader, cap.saturating_add(1), length_hint).map_err(read_error(path))?;
        if bytes.len() as u64 > cap {
            return Err(past_cap(path, what, cap));
        }
        return Ok(bytes);
    }
    // What it unpacks to is unknown: the buffer grows with what arrives.
    let decoder = flate2::read::MultiGzDecoder::new(reader);
    finish_gunzip(
        path,
        read_at_most(decoder, cap.saturating_add(1), 0),
        cap,
        what,
    )
}

/// The gunzipped bytes, or the error naming a broken stream or the cap passed.
fn finish_gunzip(
    path: &Path,
    read: std::io::Result<Vec<u8>>,
    cap: u64,
    what: &str,
) -> Result<Vec<u8>> {
    let bytes = read.map_err(|e| MiloError::Malformed {
        path: path.to_path_buf(),
        message: format!("not a readable gzip stream: {e}"),
    })?;
    if bytes.len() as u64 > cap {
        return Err(MiloError::Malformed {
            path: path.to_path_buf(),
            message: format!(
                "{what} is past its size cap of {} once gunzipped",
                size_text(cap)
            ),
        });
    }
    Ok(bytes)
}

/// The value of the JSON file `path` (a `what`), read as a stream within `caps` and
/// [`JSON_TEXT_CAP`]: the bytes are never held whole, so a refused file costs at most what its
/// parsed value held when it was refused. A regular file longer than `caps.bytes` is refused
/// before a byte is read; a file past any cap while it is read, or not JSON of the expected
/// shape, is a [`MiloError::Malformed`] (exit 6) naming the cap and the size, or saying "not a
/// readable `what`" with the line and column. Every JSON file read by name is one milo wrote (a
/// trace, a benchmark's or a campaign's records, a spool's tasks), so `path` must be a regular
/// file ([`open_regular_to_read`]).
pub fn read_json_capped<T: serde::de::DeserializeOwned>(
    path: &Path,
    caps: JsonCaps,
    what: &str,
) -> Result<T> {
    read_json_file_capped(open_regular_to_read(path, what)?, path, caps, what)
}

/// [`read_json_capped`] of `file`, already open (`path` names it in errors).
pub fn read_json_file_capped<T: serde::de::DeserializeOwned>(
    file: std::fs::File,
    path: &Path,
    caps: JsonCaps,
    what: &str,
) -> Result<T> {
    use std::io::BufRead;
    refuse_past_cap_by_length(&file, path, what, caps.bytes)?;
    let mut reader = std::io::BufReader::new(file);
    let gzipped = reader
        .fill_buf()
        .map_err(read_error(path))?
        .starts_with(GZIP_MAGIC);
    // Gzipped JSON (a trace named `*.gz`) is read through the decoder: the caps count what it
    // unpacks to.
    let source: Box<dyn Read> = if gzipped {
        Box::new(flate2::read::MultiGzDecoder::new(reader))
    } else {
        Box::new(reader)
    };
    let mut guard = JsonGuard::new(source, caps);
    let parsed = serde_json::from_reader(std::io::BufReader::new(&mut guard));
    if let Some(passed) = guard.passed {
        return Err(MiloError::Malformed {
            path: path.to_path_buf(),
            message: match passed {
                Passed::Bytes => format!(
                    "{what} is past its size cap of {} (more bytes)",
                    size_text(caps.bytes)
                ),
                Passed::Items => format!(
                    "{what} is past its cap of {} items (array values and object entries)",
                    caps.items
                ),
                Passed::Text => format!(
                    "{what} holds strings past their cap of {} in all",
                    size_text(JSON_TEXT_CAP)
                ),
            },
        });
    }
    parsed.map_err(|e: serde_json::Error| match e.io_error_kind() {
        Some(_) => read_error(path)(e.into()),
        None => MiloError::Malformed {
            path: path.to_path_buf(),
            message: format!("not a readable {what}: {}", quoted(&e.to_string())),
        },
    })
}

/// Which cap of [`JsonCaps`] a JSON file passed.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Passed {
    Bytes,
    Items,
    Text,
}

/// A reader of JSON text that counts its bytes, its items and the bytes inside its strings as
/// they pass (a quote opens or closes a string unless a backslash escapes it), and fails once
/// one of them is past its cap.
struct JsonGuard<R> {
    inner: R,
    caps: JsonCaps,
    bytes: u64,
    items: u64,
    text: u64,
    in_string: bool,
    escaped: bool,
    passed: Option<Passed>,
}

impl<R: Read> JsonGuard<R> {
    fn new(inner: R, caps: JsonCaps) -> JsonGuard<R> {
        JsonGuard {
            inner,
            caps,
            bytes: 0,
            items: 0,
            text: 0,
            in_string: false,
            escaped: false,
            passed: None,
        }
    }

    fn count(&mut self, chunk: &[u8]) -> Option<Passed> {
        self.bytes += chunk.len() as u64;
        if self.bytes > self.caps.bytes {
            return Some(Passed::Bytes);
        }
        for &b in chunk {
            if self.in_string {
                match (self.escaped, b) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => {
                        self.in_string = false;
                        continue;
                    }
                    _ => {}
                }
                self.text += 1;
            } else {
                match b {
                    b'"' => self.in_string = true,
                    b',' | b'[' | b'{' => self.items += 1,
                    _ => {}
                }
            }
        }
        if self.items > self.caps.items {
            Some(Passed::Items)
        } else if self.text > JSON_TEXT_CAP {
            Some(Passed::Text)
        } else {
            None
        }
    }
}

impl<R: Read> Read for JsonGuard<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.passed.is_none() {
            let n = self.inner.read(buf)?;
            self.passed = self.count(&buf[..n]);
            if self.passed.is_none() {
                return Ok(n);
            }
        }
        Err(std::io::Error::other("past a cap of the file"))
    }
}

/// The error for `what` at `path` being longer than `cap` bytes.
pub fn past_cap(path: &Path, what: &str, cap: u64) -> MiloError {
    MiloError::Malformed {
        path: path.to_path_buf(),
        message: format!("{what} is past its size cap of {}", size_text(cap)),
    }
}

/// A byte count as people write caps: "1 GiB", "16 MiB", "64 KiB", else "N bytes".
pub fn size_text(bytes: u64) -> String {
    match bytes {
        b if b >= GIB && b % GIB == 0 => format!("{} GiB", b / GIB),
        b if b >= MIB && b % MIB == 0 => format!("{} MiB", b / MIB),
        b if b >= KIB && b % KIB == 0 => format!("{} KiB", b / KIB),
        b => format!("{b} bytes"),
    }
}

/// Reads `reader` to its end or to `limit` bytes, whichever comes first. The buffer starts just
/// past `length_hint` and doubles, never past the limit, so a read never holds more than the
/// limit (a plain `read_to_end` would double a full 1 GiB buffer to 2 GiB for its last byte).
fn read_at_most(reader: impl Read, limit: u64, length_hint: u64) -> std::io::Result<Vec<u8>> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut reader = reader.take(limit as u64);
    // One byte past the hint, so a file of the hinted length ends without growing the buffer.
    let first = usize::try_from(length_hint.saturating_add(1))
        .unwrap_or(usize::MAX)
        .max(FIRST_CHUNK)
        .min(limit);
    let mut bytes: Vec<u8> = Vec::new();
    let mut filled = 0;
    loop {
        if filled == bytes.len() {
            if filled == limit {
                break;
            }
            let grown = if filled == 0 {
                first
            } else {
                filled.saturating_mul(2).min(limit)
            };
            bytes.reserve_exact(grown - filled);
            bytes.resize(grown, 0);
        }
        match reader.read(&mut bytes[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    bytes.truncate(filled);
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_of(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn a_file_is_gunzipped_as_it_is_read_only_when_it_opens_with_the_magic() {
        let dir = tempfile::tempdir().unwrap();
        let plain = b"{\"values\": [1, 2, 3]}".repeat(10);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&plain).unwrap();
        let gzipped = gz.finish().unwrap();
        let read = |name: &str, bytes: &[u8], cap: u64| {
            read_maybe_gzipped_capped(&file_of(dir.path(), name, bytes), cap, "construction")
        };
        assert_eq!(read("a.json.gz", &gzipped, 1_000).unwrap(), plain);
        assert_eq!(read("a.json", &plain, 1_000).unwrap(), plain);
        // The cap holds after gunzip, for a file far under it before.
        let cap = plain.len() as u64 - 1;
        assert!(gzipped.len() < plain.len());
        let e = read("b.json.gz", &gzipped, cap).unwrap_err().to_string();
        assert!(e.contains("once gunzipped"), "{e}");
        let e = read("b.json", &plain, cap).unwrap_err().to_string();
        assert!(e.contains("past its size cap"), "{e}");
        // The magic and then no gzip stream.
        let e = read("c.json.gz", &[0x1f, 0x8b, 8, 0, 1, 2, 3, 4, 5, 6, 7], 1_000);
        assert!(e
            .unwrap_err()
            .to_string()
            .contains("not a readable gzip stream"));
    }

    #[test]
    fn a_file_at_its_cap_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let content: Vec<u8> = (0..100u8).collect();
        let path = file_of(dir.path(), "at-cap", &content);
        assert_eq!(read_bytes_capped(&path, 100, "record").unwrap(), content);
        assert_eq!(read_bytes_capped(&path, 1000, "record").unwrap(), content);
    }

    #[test]
    fn a_file_one_byte_past_its_cap_is_refused_naming_what_and_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = file_of(dir.path(), "past-cap", &[b'x'; 101]);
        let err = read_bytes_capped(&path, 100, "record").unwrap_err();
        assert_eq!(err.exit_code(), crate::error::EXIT_INPUT);
        let message = err.to_string();
        assert!(message.contains("past-cap"), "{message}");
        assert!(
            message.contains("record is past its size cap of 100 bytes"),
            "{message}"
        );
    }

    #[test]
    fn a_regular_file_past_its_cap_is_refused_on_its_length_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("output");
        // Sparse, 10 GB: no disk, and no byte of it read.
        std::fs::File::create(&path)
            .unwrap()
            .set_len(10_000_000_000)
            .unwrap();
        for read in [
            read_bytes_capped,
            read_regular_file_capped,
            read_maybe_gzipped_capped,
        ] {
            let message = read(&path, 100, "the output").unwrap_err().to_string();
            assert!(
                message.ends_with(
                    "output: the output is past its size cap of 100 bytes (10000000000 bytes)"
                ),
                "{message}"
            );
        }
    }

    #[test]
    fn a_file_grown_past_the_first_chunk_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let content: Vec<u8> = (0..5 * FIRST_CHUNK).map(|i| (i % 251) as u8).collect();
        let path = file_of(dir.path(), "long", &content);
        let cap = content.len() as u64;
        assert_eq!(read_bytes_capped(&path, cap, "record").unwrap(), content);
        assert!(read_bytes_capped(&path, cap - 1, "record").is_err());
    }

    #[test]
    fn dev_zero_stops_at_the_cap() {
        let path = Path::new("/dev/zero");
        let cap = 3 * FIRST_CHUNK as u64 + 7;
        let message = read_bytes_capped(path, cap, "construction")
            .unwrap_err()
            .to_string();
        assert!(
            message.contains(&format!(
                "construction is past its size cap of {}",
                size_text(cap)
            )),
            "{message}"
        );
    }

    #[test]
    fn text_that_is_not_utf8_is_malformed_naming_the_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = file_of(dir.path(), "latin1.toml", b"name = \"caf\xe9\"");
        let err = read_text_capped(&path, CONFIG_CAP, "program").unwrap_err();
        assert_eq!(err.exit_code(), crate::error::EXIT_INPUT);
        assert!(err.to_string().contains("byte 11"), "{err}");
    }

    fn gzip(content: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(content).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn a_gzip_bomb_stops_at_the_cap_once_gunzipped() {
        let inflated = 4 * FIRST_CHUNK + 1;
        let bomb = gzip(&vec![0u8; inflated]);
        assert!(bomb.len() < inflated / 100, "a bomb: {} bytes", bomb.len());
        let path = Path::new("bomb.json.gz");
        let cap = inflated as u64 - 1;
        let message = gunzip_capped(path, &bomb, cap, "construction")
            .unwrap_err()
            .to_string();
        assert!(
            message.contains(&format!(
                "construction is past its size cap of {} once gunzipped",
                size_text(cap)
            )),
            "{message}"
        );
        let whole = gunzip_capped(path, &bomb, inflated as u64, "construction").unwrap();
        assert_eq!(whole.len(), inflated);
    }

    #[test]
    fn concatenated_gzip_members_are_read_and_a_broken_stream_is_malformed() {
        let mut two = gzip(b"[1, ");
        two.extend(gzip(b"2]"));
        let path = Path::new("two.json.gz");
        assert_eq!(
            gunzip_capped(path, &two, 100, "construction").unwrap(),
            b"[1, 2]"
        );
        let broken = &two[..two.len() / 3];
        let message = gunzip_capped(path, broken, 100, "construction")
            .unwrap_err()
            .to_string();
        assert!(message.contains("not a readable gzip stream"), "{message}");
    }

    #[test]
    fn a_json_file_past_its_size_cap_is_refused_before_a_byte_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench.json");
        // Sparse: reading it whole would cost 16 MiB; it is refused on its length alone.
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(SETTINGS_JSON.bytes + 1).unwrap();
        let err = read_json_capped::<serde_json::Value>(&path, SETTINGS_JSON, "benchmark record")
            .unwrap_err();
        assert_eq!(err.exit_code(), crate::error::EXIT_INPUT);
        assert!(
            err.to_string().ends_with(
                "bench.json: benchmark record is past its size cap of 16 MiB (16777217 bytes)"
            ),
            "{err}"
        );
    }

    #[test]
    fn json_items_are_counted_outside_strings_and_refused_past_their_cap() {
        let dir = tempfile::tempdir().unwrap();
        let caps = JsonCaps {
            bytes: 1_000,
            items: 5,
        };
        let read = |text: &str| {
            let path = file_of(dir.path(), "r.json", text.as_bytes());
            read_json_capped::<serde_json::Value>(&path, caps, "record")
        };
        // `[` and four commas: five items.
        assert_eq!(
            read("[1,2,3,4,5]").unwrap(),
            serde_json::json!([1, 2, 3, 4, 5])
        );
        let err = read("[1,2,3,4,5,6]").unwrap_err();
        assert_eq!(err.exit_code(), crate::error::EXIT_INPUT);
        assert!(
            err.to_string()
                .contains("record is past its cap of 5 items (array values and object entries)"),
            "{err}"
        );
        // Commas, brackets and escaped quotes inside strings are text, not items.
        let text = r#"["a,b,[{", "\",[{,"]"#;
        assert_eq!(read(text).unwrap()[1], "\",[{,");
        // A longer regular file is refused on its length; a device (or a pipe), which has
        // none, once its bytes pass the cap.
        let long = format!("[\"{}\"]", "x".repeat(1_000));
        let err = read(&long).unwrap_err().to_string();
        assert!(err.contains("(1004 bytes)"), "{err}");
        let zero = Path::new("/dev/zero");
        let device = std::fs::File::open(zero).unwrap();
        let err = read_json_file_capped::<serde_json::Value>(device, zero, caps, "record")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("record is past its size cap of 1000 bytes (more bytes)"),
            "{err}"
        );
        let err = read("[1, 2").unwrap_err().to_string();
        assert!(err.contains("not a readable record: EOF"), "{err}");
    }

    #[test]
    fn regular_only_readers_refuse_links_fifos_and_devices_at_once_naming_them() {
        let dir = tempfile::tempdir().unwrap();
        let real = file_of(dir.path(), "real.json", b"[1, 2]");
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let fifo = dir.path().join("fifo.json");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        type Reader = fn(&Path) -> Result<()>;
        let readers: [(&str, Reader); 4] = [
            ("bytes", |p| {
                read_regular_file_capped(p, 100, "record").map(drop)
            }),
            ("text", |p| {
                read_regular_text_capped(p, 100, "record").map(drop)
            }),
            ("gzip", |p| {
                read_regular_maybe_gzipped_capped(p, 100, "record").map(drop)
            }),
            ("json", |p| {
                read_json_capped::<serde_json::Value>(p, SETTINGS_JSON, "record").map(drop)
            }),
        ];
        for (name, read) in readers {
            read(&real).unwrap_or_else(|e| panic!("{name}: {e}"));
            for (path, kind) in [
                (link.as_path(), "a symbolic link"),
                (fifo.as_path(), "a FIFO"),
                (Path::new("/dev/zero"), "a character device"),
                (dir.path(), "a directory"),
            ] {
                // A FIFO without a writer would block a plain open: run where a hang fails.
                let (sent, got) = std::sync::mpsc::channel();
                let path = path.to_path_buf();
                std::thread::spawn(move || sent.send(read(&path)));
                let err = got
                    .recv_timeout(std::time::Duration::from_secs(10))
                    .unwrap_or_else(|_| panic!("{name} blocked on {kind}"))
                    .unwrap_err();
                assert_eq!(err.exit_code(), crate::error::EXIT_USAGE, "{name}: {err}");
                let message = err.to_string();
                assert!(
                    message.contains("record must be a regular file") && message.contains(kind),
                    "{name}: {message}"
                );
            }
        }
    }

    #[test]
    fn json_strings_past_their_cap_in_all_are_refused_while_read() {
        let dir = tempfile::tempdir().unwrap();
        let caps = JsonCaps {
            bytes: 2 * JSON_TEXT_CAP,
            items: 10,
        };
        let half = "y".repeat((JSON_TEXT_CAP / 2) as usize);
        let at_cap = format!("[\"{half}\",\"{half}\"]");
        let path = file_of(dir.path(), "at.json", at_cap.as_bytes());
        assert!(read_json_capped::<Vec<String>>(&path, caps, "trace").is_ok());
        let past = format!("[\"{half}\",\"{half}\",\"z\"]");
        let path = file_of(dir.path(), "past.json", past.as_bytes());
        let err = read_json_capped::<Vec<String>>(&path, caps, "trace").unwrap_err();
        assert!(
            err.to_string()
                .contains("trace holds strings past their cap of 33 MiB in all"),
            "{err}"
        );
    }

    #[test]
    fn sizes_read_as_people_write_caps() {
        assert_eq!(size_text(CONSTRUCTION_CAP), "124 MiB");
        assert_eq!(size_text(CONFIG_CAP), "16 MiB");
        assert_eq!(size_text(RECORD_LINE_CAP), "64 MiB");
        assert_eq!(size_text(CREDENTIALS_CAP), "64 KiB");
        assert_eq!(size_text(1000), "1000 bytes");
    }
}
