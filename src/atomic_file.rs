//! Atomic replacement of files. Every file milo rewrites (`best.json` and its provenance, bench
//! summaries and results, content-addressed harnesses and starts, report pages and figures, the
//! outputs of `optimize` and `suite freeze`) goes through here: the content is written to a
//! temporary sibling, synced, and renamed over the name, so a kill or a full disk leaves the old
//! file or the new one, never a torn one. Append-only record files stay appends
//! ([`crate::records`]).
//!
//! Only regular files are ever replaced: a name that holds anything else — a directory, a
//! symbolic link (whatever it points to), a FIFO, a device or a socket — is refused with a usage
//! error naming it, and left as it was (so `milo convert a.npy /dev/null --force`, even as root,
//! leaves the device alone).

use crate::error::{write_error, MiloError, Result};
use std::fs::{File, FileType};
use std::io::Write;
use std::path::Path;
use tempfile::NamedTempFile;

/// Replaces `path` with `bytes` (creating it if needed), atomically.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    write_with(path, |file| file.write_all(bytes))
}

/// Whether `path`'s name asks for gzip (it ends in `.gz`, any case).
pub fn is_gzip_path(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"))
}

/// Replaces `path` with `bytes` atomically, gzipped when its name ends in `.gz`
/// ([`is_gzip_path`]).
pub fn write_gzipped_if_named(path: &Path, bytes: &[u8]) -> Result<()> {
    if !is_gzip_path(path) {
        return write(path, bytes);
    }
    write_with(path, |file| {
        let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
        gz.write_all(bytes)?;
        gz.finish().map(|_| ())
    })
}

/// Replaces `path` atomically with what `fill` writes into the temporary sibling.
pub fn write_with(path: &Path, fill: impl FnOnce(&mut File) -> std::io::Result<()>) -> Result<()> {
    let mut temp = sibling(path, "")?;
    fill(temp.as_file_mut()).map_err(write_error(path))?;
    commit(temp, path, false)
}

/// Writes `path`, which must not exist, atomically: it appears whole or not at all, and a file
/// that appears there meanwhile is kept (an `AlreadyExists` write error).
pub fn create_new(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut temp = sibling(path, "")?;
    temp.write_all(bytes).map_err(write_error(path))?;
    commit(temp, path, true)
}

/// Replaces `path` atomically with a file that `render` writes at the path it is given (a
/// temporary sibling with the same extension, for writers that only take a path, like figure
/// backends choosing the format by extension).
pub fn write_through(path: &Path, render: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let extension = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let temp = sibling(path, &extension)?;
    render(temp.path())?;
    commit(temp, path, false)
}

/// Refuses `path` when it exists and is not a regular file (see the module); a missing `path`
/// or a regular file passes.
pub fn check_replaceable(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => Ok(()),
        Ok(meta) => Err(MiloError::Usage(format!(
            "{}: milo replaces only regular files, and this is {}; choose another path",
            path.display(),
            kind_of(meta.file_type())
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(write_error(path)(e)),
    }
}

/// Opens `path` (a `what`: "lock file", "ledger"…) with `options` (reading, locking, or appending
/// to a record file), refusing anything but a regular file with a one-line usage error naming it
/// and what it is, at once: a name that holds something else is not opened, a symbolic link is
/// not followed and a FIFO does not block the open (`O_NOFOLLOW | O_NONBLOCK`), and what was
/// opened is checked again. Nothing behind a refused name is read or written. Any other failure
/// goes through `on_error`.
pub fn open_regular(
    path: &Path,
    what: &str,
    options: &mut std::fs::OpenOptions,
    on_error: impl FnOnce(std::io::Error) -> MiloError,
) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let refused = |kind: &str| {
        MiloError::Usage(format!(
            "{}: {what} must be a regular file, and this is {kind}",
            path.display()
        ))
    };
    // A device is not even opened (opening some has effects of its own).
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.is_file() {
            return Err(refused(kind_of(meta.file_type())));
        }
    }
    let file = match options
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => {
            return Err(refused("a symbolic link"))
        }
        // Opened for writing, a FIFO without a reader.
        Err(e) if e.raw_os_error() == Some(nix::libc::ENXIO) => return Err(refused("a FIFO")),
        Err(e) => return Err(on_error(e)),
    };
    // What was opened may differ from what was looked at.
    let meta = file.metadata().map_err(on_error)?;
    if !meta.is_file() {
        return Err(refused(kind_of(meta.file_type())));
    }
    Ok(file)
}

/// What a file type is, in words ("a FIFO", "a directory"…), for messages refusing it.
pub fn kind_of(file_type: FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// A new temporary file beside `path` (same directory, so the rename stays on one file system),
/// named `.NAME.XXXXXX.partial` plus `extension`; refused before anything is written when `path`
/// is not a regular file ([`check_replaceable`]).
fn sibling(path: &Path, extension: &str) -> Result<NamedTempFile> {
    check_replaceable(path)?;
    let dir = parent(path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (prefix, suffix) = (format!(".{name}."), format!(".partial{extension}"));
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(&suffix);
    // Files milo writes are shared as they are (reports, best constructions): readable by all
    // unless the umask says otherwise, as files a shell creates are (the temporary file would
    // otherwise be private to its owner).
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    builder.tempfile_in(dir).map_err(write_error(path))
}

/// Syncs the temporary file, renames it to `path` (refusing to replace a file if `no_clobber`,
/// and anything but a regular file in any case — checked again, as it may have appeared while
/// the content was written) and syncs the directory so the rename itself survives a crash.
fn commit(temp: NamedTempFile, path: &Path, no_clobber: bool) -> Result<()> {
    // Writers given only the path (see `write_through`) wrote through their own handle: reopen
    // it to sync what they wrote.
    File::open(temp.path())
        .and_then(|f| f.sync_all())
        .and_then(|()| temp.as_file().sync_all())
        .map_err(write_error(path))?;
    check_replaceable(path)?;
    let persisted = if no_clobber {
        temp.persist_noclobber(path)
    } else {
        temp.persist(path)
    };
    persisted.map_err(|e| MiloError::Write {
        path: path.to_path_buf(),
        source: e.error,
    })?;
    // Directories cannot be opened for syncing on every platform; the rename has happened.
    if let Ok(dir) = File::open(parent(path)) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// The directory holding `path` (`.` for a bare file name).
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn replaces_whole_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("best.json");
        write(&path, b"old").unwrap();
        write(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(names(dir.path()), ["best.json"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_written_file_gets_the_permissions_a_plainly_created_file_gets() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain.json");
        std::fs::write(&plain, b"x").unwrap();
        let path = dir.path().join("best.json");
        write(&path, b"new").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), mode(&plain), "{:o}", mode(&path));
    }

    #[test]
    fn a_failed_write_keeps_the_old_file_and_names_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("best.json");
        write(&path, b"old").unwrap();
        let err = write_with(&path, |_| Err(std::io::Error::other("disk full"))).unwrap_err();
        assert!(matches!(err, MiloError::Write { .. }), "{err}");
        assert!(err.to_string().starts_with("cannot write "), "{err}");
        assert!(err.to_string().contains("best.json"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(names(dir.path()), ["best.json"]);
    }

    #[test]
    fn create_new_refuses_an_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("suite.toml");
        create_new(&path, b"first").unwrap();
        let err = create_new(&path, b"second").unwrap_err();
        assert!(err.to_string().contains("suite.toml"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        assert_eq!(names(dir.path()), ["suite.toml"]);
    }

    #[cfg(unix)]
    #[test]
    fn only_regular_files_are_replaceable() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("best.json");
        assert!(check_replaceable(&file).is_ok(), "a missing file");
        std::fs::write(&file, b"old").unwrap();
        assert!(check_replaceable(&file).is_ok(), "a regular file");
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let err = write(&link, b"new").unwrap_err().to_string();
        assert!(err.contains("this is a symbolic link"), "{err}");
        assert!(err.contains("link.json"), "{err}");
        assert_eq!(std::fs::read(&file).unwrap(), b"old");
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        let err = write(dir.path(), b"new").unwrap_err();
        assert!(matches!(err, MiloError::Usage(_)), "{err}");
        assert!(err.to_string().contains("a directory"), "{err}");
        // Only checked, never written: the system's devices are refused and left alone.
        for device in ["/dev/null", "/dev/full"] {
            let path = Path::new(device);
            let err = check_replaceable(path).unwrap_err().to_string();
            assert!(err.contains("a character device"), "{err}");
            let meta = std::fs::symlink_metadata(path).unwrap();
            assert!(meta.file_type().is_char_device(), "{device}");
        }
        assert_eq!(names(dir.path()), ["best.json", "link.json"]);
    }

    #[test]
    fn write_through_keeps_the_extension_for_path_writers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("figure.png");
        write_through(&path, |temp| {
            assert_eq!(temp.extension().unwrap(), "png");
            std::fs::write(temp, b"png bytes").map_err(write_error(temp))
        })
        .unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"png bytes");
        assert_eq!(names(dir.path()), ["figure.png"]);
    }
}
