//! Exclusive locks on run and benchmark directories: one milo process at a time appends to a
//! lineage or a benchmark. The lock is an operating-system lock on `DIR/milo.lock` (released when
//! the process ends, however it ends), and the file holds the holder's PID so that a second
//! process can name it. The PID is written in place: the lock belongs to the file, which must
//! therefore never be replaced, and only a regular file is one: a link or a FIFO there is
//! refused, never followed or written through.

use crate::atomic_file::open_regular;
use crate::error::{write_error, MiloError, Result};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::MetadataExt;
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
    /// lock that guards one file of a folder rather than the folder. Only a regular file is a
    /// lock: a symbolic link, a FIFO, a device or a directory at `path` is refused with a usage
    /// error naming it and left as it is ([`open_regular`]).
    pub fn acquire_file(path: std::path::PathBuf) -> Result<DirLock> {
        let mut file = open_regular(
            &path,
            "lock file",
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false),
            write_error(&path),
        )?;
        // Its PID is written in place: a name shared with another file would overwrite that file.
        let links = file.metadata().map_err(write_error(&path))?.nlink();
        if links > 1 {
            return Err(MiloError::Usage(format!(
                "{}: lock file must be a file of its own, and this one has {links} names (a hard \
                 link)",
                path.display()
            )));
        }
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

    #[test]
    fn a_lock_file_that_is_a_link_a_fifo_or_a_device_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join(LOCK_FILE);
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "keep me").unwrap();
        std::os::unix::fs::symlink(&victim, &lock).unwrap();
        let refused = |kind: &str| {
            let err = DirLock::acquire(dir.path()).unwrap_err();
            assert_eq!(err.exit_code(), crate::error::EXIT_USAGE, "{err}");
            let message = err.to_string();
            assert!(
                message.contains(LOCK_FILE) && message.contains(kind),
                "{message}"
            );
        };
        refused("a symbolic link");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
        assert!(std::fs::symlink_metadata(&lock).unwrap().is_symlink());
        std::fs::remove_file(&lock).unwrap();
        nix::unistd::mkfifo(&lock, nix::sys::stat::Mode::S_IRWXU).unwrap();
        refused("a FIFO");
        std::fs::remove_file(&lock).unwrap();
        std::fs::hard_link(&victim, &lock).unwrap();
        refused("hard link");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
        // A device is refused at its own name too (`TRACE.lock` names any path).
        let err = DirLock::acquire_file("/dev/null".into()).unwrap_err();
        assert!(err.to_string().contains("a character device"), "{err}");
    }
}
