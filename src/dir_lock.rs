//! Exclusive locks on run and benchmark directories: one milo process at a time appends to a
//! lineage or a benchmark. The lock is an operating-system lock on `DIR/milo.lock` (released when
//! the process ends, however it ends), and the file holds the holder's PID so that a second
//! process can name it. The PID is written in place: the lock belongs to the file, which must
//! therefore never be replaced.

use crate::error::{write_error, MiloError, Result};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::Path;

/// Name of the lock file in a locked directory.
pub const LOCK_FILE: &str = "milo.lock";

/// A held lock on a directory; dropping it releases the lock.
#[derive(Debug)]
pub struct DirLock {
    /// The open, locked file (the lock lives as long as it).
    _file: File,
}

impl DirLock {
    /// Locks `dir` (which must exist) for this process, or fails with [`MiloError::Busy`] naming
    /// the lock file and the holder's PID when another process holds it.
    pub fn acquire(dir: &Path) -> Result<DirLock> {
        DirLock::acquire_file(dir.join(LOCK_FILE))
    }

    /// Locks the lock file `path` itself (created if missing; its folder must exist): for a
    /// lock that guards one file of a folder rather than the folder.
    pub fn acquire_file(path: std::path::PathBuf) -> Result<DirLock> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(write_error(&path))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                // A process id is a few digits: a lock file grown huge is not read whole.
                let pid = (&file)
                    .take(64)
                    .read_to_string(&mut text)
                    .ok()
                    .and_then(|_| text.trim().parse().ok());
                return Err(MiloError::Busy { path, pid });
            }
            Err(TryLockError::Error(e)) => return Err(write_error(&path)(e)),
        }
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .and_then(|()| file.sync_data())
            .map_err(write_error(&path))?;
        Ok(DirLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_naming_the_holder_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = DirLock::acquire(dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert_eq!(text.trim(), std::process::id().to_string());
        let err = DirLock::acquire(dir.path()).unwrap_err();
        assert!(
            matches!(&err, MiloError::Busy { pid: Some(p), .. } if *p == std::process::id()),
            "{err}"
        );
        let message = err.to_string();
        assert!(
            message.contains(LOCK_FILE) && message.contains("PID"),
            "{message}"
        );
        drop(first);
        DirLock::acquire(dir.path()).unwrap();
    }
}
