//! Transfer: a harness or a program from any run, frozen and benchmarked on a suite of its own.
//!
//! - `harness:PATH`: the built-in writer under one frozen harness, a fresh sample of the tasks'
//!   seeds each step ([`BestOfN`] with a single harness);
//! - `program:PATH`: one program run unchanged on every search task ([`Stock`] with the file's
//!   program in place of each task's own).
//!
//! When a benchmark starts, the file is frozen into its directory as
//! `methods/<kind>-<label>.toml` (label: the file's stem and 8 hex digits of its content hash)
//! with its [`Provenance`] (source run, suite, pin, [`TransferLevel`]) beside it, and the method is named `<kind>:<label>`; a resumed
//! benchmark reads the frozen copy, whatever became of the file.

use super::best_of_n::BestOfN;
use super::stock::Stock;
use super::Method;
use crate::bench::results::{Provenance, TransferLevel};
use crate::error::{write_error, MiloError, Result};
use crate::harness::Harness;
use crate::program::Program;
use crate::search::lineage::{LineageRecord, LINEAGE_FILE};
use crate::suite::Suite;
use sha2::{Digest, Sha256};
use std::path::Path;

/// Where a benchmark keeps its frozen transfer files.
pub const METHODS_DIR: &str = "methods";

/// What a transfer method runs.
#[derive(Clone, Debug)]
enum Frozen {
    Harness(Box<Harness>),
    Program(Program),
}

impl Frozen {
    fn text(&self) -> String {
        match self {
            Frozen::Harness(h) => h.to_toml(),
            Frozen::Program(p) => p.to_toml(),
        }
    }

    fn parse(kind: &str, text: &str, origin: &Path) -> Result<Frozen> {
        match kind {
            "harness" => Ok(Frozen::Harness(Box::new(Harness::parse(text, origin)?))),
            _ => Ok(Frozen::Program(Program::parse(text, origin)?)),
        }
    }
}

/// Whether `name` asks for a transfer method (`harness:PATH` or `program:PATH`).
pub fn is_transfer(name: &str) -> bool {
    name.starts_with("harness:") || name.starts_with("program:")
}

/// Freezes the file a `harness:PATH` or `program:PATH` method names into `bench_dir` and returns
/// the method's frozen name; `target` is the benchmark's suite (for the transfer level).
pub fn freeze(spec: &str, bench_dir: &Path, target: &Suite) -> Result<String> {
    let (kind, path) = spec.split_once(':').expect("a transfer spec has a colon");
    let path = Path::new(path);
    let text = crate::bounded_read::read_text_capped(path, crate::bounded_read::CONFIG_CAP, kind)?;
    let frozen = Frozen::parse(kind, &text, path)?;
    let text = frozen.text();
    let sha256 = format!("{:x}", Sha256::digest(text.as_bytes()));
    let stem = path
        .file_stem()
        .map_or("file".into(), |s| s.to_string_lossy().into_owned());
    let stem: String = stem
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                true => c,
                false => '_',
            },
        )
        .take(40)
        .collect();
    let label = format!("{stem}-{}", &sha256[..8]);
    let name = format!("{kind}:{label}");
    let dir = bench_dir.join(METHODS_DIR);
    std::fs::create_dir_all(&dir).map_err(write_error(&dir))?;
    crate::atomic_file::write(&dir.join(format!("{kind}-{label}.toml")), text.as_bytes())?;
    let provenance = provenance(&name, path, sha256, target);
    let json = serde_json::to_string_pretty(&provenance).expect("provenance serialises");
    crate::atomic_file::write(
        &dir.join(format!("{kind}-{label}.provenance.json")),
        json.as_bytes(),
    )?;
    Ok(name)
}

/// The provenance of `path`: the run it lies in, that run's suite and pin, and how far `target`
/// is from that suite.
fn provenance(name: &str, path: &Path, sha256: String, target: &Suite) -> Provenance {
    let run = path
        .parent()
        .filter(|p| p.file_name().is_some_and(|n| n == "harnesses"))
        .and_then(Path::parent)
        .filter(|run| run.join(LINEAGE_FILE).is_file());
    let started = run.and_then(|run| {
        let (records, _) =
            crate::records::read_records::<LineageRecord>(&run.join(LINEAGE_FILE)).ok()?;
        match records.into_iter().next()? {
            LineageRecord::Started(config) => Some(*config),
            _ => None,
        }
    });
    let source_suite = started.as_ref().map(|c| c.suite.clone());
    let level = source_suite
        .as_ref()
        .and_then(|s| Suite::load(s).ok())
        .map(|source| level(&source, target));
    Provenance {
        method: name.to_string(),
        source: path.to_path_buf(),
        sha256,
        source_run: run.map(Path::to_path_buf),
        source_suite,
        source_suite_pin: started.and_then(|c| c.suite_pin),
        level,
    }
}

/// How far `target` is from `source`, the suite a harness or program was evolved on.
fn level(source: &Suite, target: &Suite) -> TransferLevel {
    if source.pin == target.pin {
        TransferLevel::SameSuite
    } else if source.problem.spec().slug != target.problem.spec().slug {
        TransferLevel::AnotherProblem
    } else if source
        .starts
        .iter()
        .any(|s| target.starts.iter().any(|t| t.sha256 == s.sha256))
    {
        TransferLevel::SharedStart
    } else {
        TransferLevel::SameProblem
    }
}

/// The provenance of every transfer method among `methods`, read from `bench_dir`.
pub fn provenances(methods: &[String], bench_dir: &Path) -> Vec<Provenance> {
    methods
        .iter()
        .filter(|m| is_transfer(m))
        .filter_map(|m| {
            let (kind, label) = m.split_once(':')?;
            let path = bench_dir
                .join(METHODS_DIR)
                .join(format!("{kind}-{label}.provenance.json"));
            crate::bounded_read::read_json_capped(
                &path,
                crate::bounded_read::SETTINGS_JSON,
                "transfer provenance",
            )
            .ok()
        })
        .collect()
}

/// The frozen method called `name` (`harness:<label>` or `program:<label>`) of the benchmark
/// in `bench_dir`: best-of-n with the frozen harness alone, or stock with the frozen program
/// (its `command` steps confined, [`crate::sandbox`]).
pub fn open(name: &str, bench_dir: &Path) -> Result<Box<dyn Method>> {
    let (kind, label) = name.split_once(':').expect("a transfer name has a colon");
    let path = bench_dir
        .join(METHODS_DIR)
        .join(format!("{kind}-{label}.toml"));
    let text = crate::bounded_read::read_regular_text_capped(
        &path,
        crate::bounded_read::CONFIG_CAP,
        kind,
    )?;
    let frozen = Frozen::parse(kind, &text, &path)?;
    let sha256 = format!("{:x}", Sha256::digest(frozen.text().as_bytes()));
    if !label.ends_with(&sha256[..8]) {
        return Err(MiloError::Malformed {
            path,
            message: format!(
                "a frozen {kind} was edited: its name pins {label}, its content hashes to {}",
                &sha256[..8]
            ),
        });
    }
    Ok(match frozen {
        Frozen::Harness(h) => Box::new(BestOfN::with_harness(name.to_string(), *h)),
        // Read back from the benchmark's directory, a frozen program's commands run confined.
        Frozen::Program(p) => Box::new(Stock::with_program(name.to_string(), p.confined().0)),
    })
}

#[cfg(test)]
mod tests {
    use super::super::fixture;
    use super::*;

    #[test]
    fn the_level_says_how_far_the_target_suite_is_from_the_source_suite() {
        let dir = tempfile::tempdir().unwrap();
        let tiny = fixture::tiny_suite(dir.path());
        let variant = |name: &str, from: &str, to: &str| {
            let text = std::fs::read_to_string(dir.path().join("tiny.toml")).unwrap();
            assert!(text.contains(from), "{text}");
            let path = dir.path().join(name);
            std::fs::write(&path, text.replace(from, to)).unwrap();
            Suite::load(&path).unwrap()
        };
        let reseeded = variant("reseeded.toml", "seeds = [1, 2]", "seeds = [5]");
        let first = variant(
            "first.toml",
            "third-autocorrelation-inequality",
            "first-autocorrelation-inequality",
        );
        let default = Suite::load(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/problems/suites/default.toml"
        )))
        .unwrap();
        assert_eq!(level(&tiny, &tiny), TransferLevel::SameSuite);
        assert_eq!(level(&tiny, &reseeded), TransferLevel::SharedStart);
        assert_eq!(level(&tiny, &default), TransferLevel::SameProblem);
        assert_eq!(level(&tiny, &first), TransferLevel::AnotherProblem);
    }
}
