//! The default suite, embedded in the binary with its starts and its program, so an installed
//! `milo` runs its main command (`milo evolve` without `--suite`) away from the source tree.
//! A run writes the files into its own directory ([`write_default_suite`]), keeping their
//! relative layout, so the suite's relative paths and sha256 pins hold unchanged and a resumed
//! run reads the same bytes.

use crate::atomic_file;
use crate::bounded_read::{read_regular_file_capped, CONSTRUCTION_CAP};
use crate::error::{write_error, MiloError, Result};
use std::path::{Path, PathBuf};

/// The folder of a run directory that holds the embedded default suite.
pub const DEFAULT_SUITE_DIR: &str = "default-suite";

/// The suite file, relative to [`DEFAULT_SUITE_DIR`].
const SUITE_FILE: &str = "problems/suites/default.toml";

/// Every file of the default suite, by its path relative to the repository root.
const FILES: &[(&str, &[u8])] = &[
    (
        SUITE_FILE,
        include_bytes!("../../problems/suites/default.toml"),
    ),
    (
        "problems/optimizers/third-autocorrelation-inequality.default.toml",
        include_bytes!("../../problems/optimizers/third-autocorrelation-inequality.default.toml"),
    ),
    (
        "constructions/third-autocorrelation-inequality/opt-arcsine-s1.json",
        include_bytes!("../../constructions/third-autocorrelation-inequality/opt-arcsine-s1.json"),
    ),
    (
        "constructions/third-autocorrelation-inequality/opt-bump-s3.json",
        include_bytes!("../../constructions/third-autocorrelation-inequality/opt-bump-s3.json"),
    ),
    (
        "constructions/third-autocorrelation-inequality/opt-arcsine-s2.json",
        include_bytes!("../../constructions/third-autocorrelation-inequality/opt-arcsine-s2.json"),
    ),
];

/// Writes the embedded default suite under `run_dir/default-suite/` (files already there must
/// hold the same bytes; none is replaced) and returns the suite file's path.
pub fn write_default_suite(run_dir: &Path) -> Result<PathBuf> {
    let root = run_dir.join(DEFAULT_SUITE_DIR);
    for (relative, bytes) in FILES {
        let path = root.join(relative);
        match read_regular_file_capped(&path, CONSTRUCTION_CAP, "default-suite file") {
            Ok(found) if found == *bytes => continue,
            Ok(_) => {
                return Err(MiloError::Malformed {
                    path,
                    message: "differs from the default suite embedded in this milo; \
                              pass --suite to run on an edited suite"
                        .into(),
                })
            }
            Err(e) if e.is_missing_file() => {}
            Err(e) => return Err(e),
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(write_error(parent))?;
        }
        atomic_file::create_new(&path, bytes)?;
    }
    Ok(root.join(SUITE_FILE))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::Suite;

    #[test]
    fn the_written_default_suite_loads_with_its_pins_and_matches_the_source_tree() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_default_suite(dir.path()).unwrap();
        let written = Suite::load(&path).unwrap();
        let source = Suite::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(SUITE_FILE)).unwrap();
        assert_eq!(written.pin, source.pin);
        assert_eq!(written.tasks.len(), source.tasks.len());
        // Writing again (a resumed run) finds the same bytes and changes nothing.
        assert_eq!(write_default_suite(dir.path()).unwrap(), path);
    }

    #[test]
    fn an_edited_copy_is_refused_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_default_suite(dir.path()).unwrap();
        std::fs::write(&path, "name = \"edited\"\n").unwrap();
        let err = write_default_suite(dir.path()).unwrap_err();
        assert!(
            err.to_string().contains("differs from the default suite"),
            "{err}"
        );
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "name = \"edited\"\n"
        );
    }
}
