//! Append-only JSON-lines record files: how runs keep what they did so a killed run resumes.
//!
//! Every record is one line, appended and synced before the caller goes on. Reading back
//! tolerates a torn last line (a run killed mid-write): it is dropped, and [`AppendLog::open`]
//! cuts it off the file so appends continue on a clean line. A bad line before the last is
//! corruption, reported with its line number; a line past [`RECORD_LINE_CAP`] is refused, and a
//! refused file costs at most one line of memory ([`read_records`]). Only regular files are read or appended to (a
//! symbolic link, a FIFO or a device there is refused, never followed or blocked on). Each line is scrubbed of the secrets in use
//! ([`secrets::scrub_json`]) before it is written: a record may quote a server or a model.

use crate::atomic_file::open_regular;
use crate::bounded_read::{past_cap, RECORD_LINE_CAP};
use crate::error::{quoted, read_error, write_error, MiloError, Result};
use crate::secrets;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

/// An open record file, appending records of type `T`.
pub struct AppendLog<T> {
    path: PathBuf,
    file: File,
    records: PhantomData<T>,
}

impl<T: Serialize + DeserializeOwned> AppendLog<T> {
    /// Creates the file; `None` when it already exists (the caller says what to do instead).
    pub fn create(path: &Path) -> Result<Option<AppendLog<T>>> {
        match OpenOptions::new().create_new(true).append(true).open(path) {
            Ok(file) => Ok(Some(AppendLog {
                path: path.to_path_buf(),
                file,
                records: PhantomData,
            })),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(None),
            Err(e) => Err(write_error(path)(e)),
        }
    }

    /// Opens an existing file: its records (a torn last line dropped and cut off) and the log,
    /// ready to append.
    pub fn open(path: &Path) -> Result<(AppendLog<T>, Vec<T>)> {
        let (records, good_bytes) = read_records(path)?;
        let file = open_regular(
            path,
            "record file",
            OpenOptions::new().append(true),
            read_error(path),
        )?;
        file.set_len(good_bytes).map_err(write_error(path))?;
        file.sync_all().map_err(write_error(path))?;
        let log = AppendLog {
            path: path.to_path_buf(),
            file,
            records: PhantomData,
        };
        Ok((log, records))
    }

    /// Appends a record durably (it survives a kill right after this returns).
    pub fn append(&mut self, record: &T) -> Result<()> {
        self.append_all(std::slice::from_ref(record))
    }

    /// Appends records durably in one write, so a kill leaves all of them or none (a write torn
    /// by a crash of the machine leaves a prefix, its torn last line dropped on reading).
    pub fn append_all(&mut self, records: &[T]) -> Result<()> {
        let mut lines = String::new();
        for record in records {
            let line = serde_json::to_string(record).expect("records serialise to JSON");
            lines.push_str(&secrets::scrub_json(&line));
            lines.push('\n');
        }
        self.file
            .write_all(lines.as_bytes())
            .map_err(write_error(&self.path))?;
        self.file.sync_data().map_err(write_error(&self.path))
    }
}

/// Reads the records of a file and the byte length of its complete lines. A last line without
/// its newline, or that does not parse, is a torn write and is dropped; a blank line is skipped;
/// a bad line before the last is corruption and an error naming the line; a line longer than
/// [`RECORD_LINE_CAP`] is an error naming the line and the cap.
///
/// The file is read twice, line by line: first every line is checked and dropped, then the
/// records of its good part are kept. So a refused file costs at most one line of memory,
/// however many good records come before its bad line.
pub fn read_records<T: DeserializeOwned>(path: &Path) -> Result<(Vec<T>, u64)> {
    let good = each_record::<T>(path, u64::MAX, drop)?;
    let mut records = Vec::new();
    each_record(path, good, |record| records.push(record))?;
    Ok((records, good))
}

/// Reads the first `length` bytes of `path` line by line as [`read_records`] describes, handing
/// each record to `keep`; the byte length of its complete, good lines.
fn each_record<T: DeserializeOwned>(
    path: &Path,
    length: u64,
    mut keep: impl FnMut(T),
) -> Result<u64> {
    let file = open_regular(
        path,
        "record file",
        OpenOptions::new().read(true),
        read_error(path),
    )?;
    let mut reader = BufReader::new(file.take(length));
    let mut good = 0u64;
    let mut line = Vec::new();
    let mut number = 0;
    let mut pending_error: Option<String> = None;
    loop {
        line.clear();
        let read = (&mut reader)
            .take(RECORD_LINE_CAP + 1)
            .read_until(b'\n', &mut line)
            .map_err(read_error(path))?;
        if read == 0 {
            break;
        }
        number += 1;
        if let Some(message) = pending_error.take() {
            return Err(MiloError::Malformed {
                path: path.to_path_buf(),
                message,
            });
        }
        if !line.ends_with(b"\n") {
            if read as u64 > RECORD_LINE_CAP {
                return Err(past_cap(path, &format!("line {number}"), RECORD_LINE_CAP));
            }
            break;
        }
        if line.trim_ascii().is_empty() {
            good += read as u64;
            continue;
        }
        match serde_json::from_slice::<T>(line.trim_ascii_end()) {
            Ok(record) => {
                keep(record);
                good += read as u64;
            }
            Err(e) => pending_error = Some(format!("line {number}: {}", quoted(&e.to_string()))),
        }
    }
    Ok(good)
}

/// Seconds since the Unix epoch, now: the timestamp records carry.
pub fn unix_seconds() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_past_its_cap_is_refused_naming_the_line_and_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("records.jsonl");
        std::fs::write(&path, "{\"n\": 1}\n").unwrap();
        // A second line of zero bytes (sparse), one byte longer than the cap, without a newline.
        let file = OpenOptions::new().append(true).open(&path).unwrap();
        let first_line = file.metadata().unwrap().len();
        file.set_len(first_line + RECORD_LINE_CAP + 1).unwrap();
        let message = read_records::<serde_json::Value>(&path)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("line 2 is past its size cap of 64 MiB"),
            "{message}"
        );
        // One byte shorter, it is a torn last line: dropped, the first record kept.
        file.set_len(first_line + RECORD_LINE_CAP).unwrap();
        let (records, good) = read_records::<serde_json::Value>(&path).unwrap();
        assert_eq!(records, [serde_json::json!({"n": 1})]);
        assert_eq!(good, first_line);
    }

    #[derive(serde::Deserialize, Debug)]
    struct Numbered {
        #[allow(dead_code)]
        n: u64,
    }

    #[test]
    fn a_bad_line_is_named_in_one_short_line_and_blank_lines_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("records.jsonl");
        let long = format!("\"{}\"", "a".repeat(100_000));
        std::fs::write(&path, format!("{{\"n\": 1}}\n\n{long}\n{{\"n\": 2}}\n")).unwrap();
        let message = read_records::<Numbered>(&path).unwrap_err().to_string();
        assert!(
            message.contains("line 3: invalid type: string"),
            "{message}"
        );
        assert!(message.len() < 1000, "{} bytes", message.len());
        assert!(!message.contains('\n'));
        std::fs::write(&path, "{\"n\": 1}\n  \n{\"n\": 2}\n{\"n\"").unwrap();
        let (records, good) = read_records::<Numbered>(&path).unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(good, "{\"n\": 1}\n  \n{\"n\": 2}\n".len() as u64);
    }
}
