//! Reads of local files under a size cap, so a hostile input (`/dev/zero`, a sparse 2 GB file, a
//! gzip bomb) costs at most the cap in memory and ends in a one-line [`MiloError::Malformed`]
//! (exit 6) naming the kind of file and its cap.
//!
//! The reads go through [`Read::take`] with one byte past the cap: a file's reported length is
//! only a hint (`/dev/zero` reports 0), so the cap is enforced on the bytes actually read, and
//! on the bytes a gzip stream inflates to.

use crate::error::{read_error, MiloError, Result};
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
/// Largest record file read whole: the arena ledger, benchmark records, spool tasks, results and
/// job lists, pull summaries: 1 GiB.
pub const RECORDS_CAP: u64 = GIB;
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

/// What standard input is called in messages (as the path of its errors).
pub const STDIN_NAME: &str = "standard input";

/// First buffer size when growing towards the cap.
const FIRST_CHUNK: usize = 64 * 1024;

/// The bytes of `path`, at most `cap` of them; a longer file is a [`MiloError::Malformed`]
/// saying "`what` is past its size cap of …".
pub fn read_bytes_capped(path: &Path, cap: u64, what: &str) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path).map_err(read_error(path))?;
    let length_hint = file.metadata().map_or(0, |m| m.len());
    let bytes = read_at_most(file, cap.saturating_add(1), length_hint).map_err(read_error(path))?;
    if bytes.len() as u64 > cap {
        return Err(past_cap(path, what, cap));
    }
    Ok(bytes)
}

/// The bytes of `path`, which must be a regular file, at most `cap` of them (else as
/// [`read_bytes_capped`]). It is opened without following a symbolic link and without blocking
/// (`O_NOFOLLOW | O_NONBLOCK`), then checked on the open file: a FIFO, device, socket, directory
/// or link there is a [`MiloError::Malformed`] naming what it is, never a read that hangs.
pub fn read_regular_file_capped(path: &Path, cap: u64, what: &str) -> Result<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let not_regular = |file_type| MiloError::Malformed {
        path: path.to_path_buf(),
        message: format!(
            "{what} must be a regular file, and this is {}",
            crate::atomic_file::kind_of(file_type)
        ),
    };
    let meta = std::fs::symlink_metadata(path).map_err(read_error(path))?;
    if !meta.is_file() {
        return Err(not_regular(meta.file_type()));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(read_error(path))?;
    // What was opened may differ from what was looked at.
    let meta = file.metadata().map_err(read_error(path))?;
    if !meta.is_file() {
        return Err(not_regular(meta.file_type()));
    }
    let bytes = read_at_most(file, cap.saturating_add(1), meta.len()).map_err(read_error(path))?;
    if bytes.len() as u64 > cap {
        return Err(past_cap(path, what, cap));
    }
    Ok(bytes)
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
    let bytes = read_bytes_capped(path, cap, what)?;
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
    use std::io::BufRead;
    let file = std::fs::File::open(path).map_err(read_error(path))?;
    let length_hint = file.metadata().map_or(0, |m| m.len());
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
    fn sizes_read_as_people_write_caps() {
        assert_eq!(size_text(CONSTRUCTION_CAP), "124 MiB");
        assert_eq!(size_text(CONFIG_CAP), "16 MiB");
        assert_eq!(size_text(RECORD_LINE_CAP), "64 MiB");
        assert_eq!(size_text(CREDENTIALS_CAP), "64 KiB");
        assert_eq!(size_text(1000), "1000 bytes");
    }
}
