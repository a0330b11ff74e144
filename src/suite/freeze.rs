//! Freezing a suite: turn pulled or local construction files into a suite file whose paths are
//! relative to it and whose starts are pinned by sha256.

use super::{sha256_hex, Split, StartEntry, Suite, SuiteFile, TaskBudget};
use crate::bounded_read::{read_bytes_capped, CONSTRUCTION_CAP};
use crate::error::{MiloError, Result};
use crate::problems::by_slug;
use std::path::{Path, PathBuf};

/// What `milo suite freeze` is asked to build.
#[derive(Clone, Debug)]
pub struct FreezeRequest {
    /// The problem's slug.
    pub problem: String,
    /// Construction files, or folders whose `*.json`, `*.npy` constructions (optionally `.gz`)
    /// are taken (provenance files, `MANIFEST.json` and `PULL.json` skipped).
    pub from: Vec<PathBuf>,
    /// Parent optimizer program files.
    pub programs: Vec<PathBuf>,
    /// Seeds of the search tasks.
    pub seeds: Vec<u64>,
    /// Seeds held out for validation.
    pub validation_seeds: Vec<u64>,
    /// Labels of the starts held out for validation.
    pub validation_starts: Vec<String>,
    /// Budget of each task.
    pub budget: TaskBudget,
    /// The suite file to write (never overwritten).
    pub out: PathBuf,
    /// The suite's name; default: the output file's stem.
    pub name: Option<String>,
    /// What the suite is for.
    pub description: String,
}

/// Builds the suite file, verifies it as [`Suite::load`] would, writes it (refusing to overwrite)
/// and returns the loaded suite.
pub fn freeze(request: &FreezeRequest) -> Result<Suite> {
    let out = &request.out;
    if out.exists() {
        return Err(MiloError::Usage(format!(
            "{} exists; choose another --out (milo never overwrites a suite)",
            out.display()
        )));
    }
    by_slug(&request.problem)?;
    let base = out_folder(out)?;
    let files = construction_files(&request.from)?;
    let mut starts: Vec<StartEntry> = Vec::new();
    let mut origins: Vec<&Path> = Vec::new();
    for file in &files {
        let label = label_of(file);
        if let Some(i) = starts.iter().position(|s| s.label == label) {
            return Err(MiloError::Usage(format!(
                "--from: {} and {} both give the start label '{label}'; rename one",
                origins[i].display(),
                file.display()
            )));
        }
        let sha256 = sha256_hex(&read_bytes_capped(
            file,
            CONSTRUCTION_CAP,
            "start construction",
        )?);
        starts.push(StartEntry {
            label,
            path: relative_to(&base, file)?,
            sha256,
            split: Split::Search,
        });
        origins.push(file);
    }
    for label in &request.validation_starts {
        let start = starts.iter_mut().find(|s| &s.label == label);
        let Some(start) = start else {
            let known: Vec<&str> = starts.iter().map(|s| s.label.as_str()).collect();
            return Err(MiloError::Usage(format!(
                "--validation-starts: no start is labelled '{label}'; the starts are {}",
                known.join(", ")
            )));
        };
        start.split = Split::Validation;
    }
    let programs = request
        .programs
        .iter()
        .map(|p| relative_to(&base, p))
        .collect::<Result<Vec<_>>>()?;
    let name = request.name.clone().unwrap_or_else(|| {
        out.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "suite".into())
    });
    let file = SuiteFile {
        name,
        description: request.description.clone(),
        problem: request.problem.clone(),
        record: None,
        programs,
        seeds: request.seeds.clone(),
        validation_seeds: request.validation_seeds.clone(),
        budget: request.budget,
        starts,
    };
    let body = toml::to_string(&file).map_err(|e| MiloError::Usage(e.to_string()))?;
    let text = format!(
        "# Frozen by `milo suite freeze`: paths are relative to this file, starts pinned by sha256.\n{body}"
    );
    // The text is built from the flags: what is wrong with it is a usage error.
    let suite = Suite::parse(&text, out).map_err(|e| match e {
        MiloError::Malformed { message, .. } => MiloError::Usage(message),
        other => other,
    })?;
    crate::atomic_file::create_new(out, text.as_bytes())?;
    Ok(suite)
}

/// The output file's folder, canonical (it must exist).
fn out_folder(out: &Path) -> Result<PathBuf> {
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    parent.canonicalize().map_err(|source| MiloError::Io {
        path: parent.to_path_buf(),
        source,
    })
}

/// Expands folders into their construction files (sorted by name); keeps files as given.
fn construction_files(from: &[PathBuf]) -> Result<Vec<PathBuf>> {
    if from.is_empty() {
        return Err(MiloError::Usage(
            "--from: give at least one construction file or folder".into(),
        ));
    }
    let mut files = Vec::new();
    for item in from {
        let io = |source| MiloError::Io {
            path: item.clone(),
            source,
        };
        if !item.is_dir() {
            std::fs::metadata(item).map_err(io)?;
            files.push(item.clone());
            continue;
        }
        let mut found: Vec<PathBuf> = Vec::new();
        for entry in std::fs::read_dir(item).map_err(io)? {
            let path = entry.map_err(io)?.path();
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            if path.is_file() && name.as_deref().is_some_and(is_construction_name) {
                found.push(path);
            }
        }
        if found.is_empty() {
            return Err(MiloError::Usage(format!(
                "--from {}: the folder holds no *.json or *.npy construction files (optionally .gz)",
                item.display()
            )));
        }
        found.sort();
        files.extend(found);
    }
    Ok(files)
}

/// The endings of construction files taken from a folder, longest first.
const CONSTRUCTION_ENDINGS: [&str; 4] = [".json.gz", ".json", ".npy.gz", ".npy"];

/// Whether a file name in a folder is a construction (not provenance, a manifest or a pull record).
fn is_construction_name(name: &str) -> bool {
    CONSTRUCTION_ENDINGS.iter().any(|e| name.ends_with(e))
        && !name.ends_with(".provenance.json")
        && name != "MANIFEST.json"
        && name != "PULL.json"
}

/// The file name without its construction ending (`.json.gz`, `.json`, `.npy.gz`, `.npy`).
fn label_of(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = CONSTRUCTION_ENDINGS
        .iter()
        .find_map(|e| name.strip_suffix(e))
        .unwrap_or(&name);
    stem.replace(|c: char| c == '/' || c.is_whitespace(), "-")
}

/// `file` relative to the canonical folder `base`, with `/` separators.
fn relative_to(base: &Path, file: &Path) -> Result<String> {
    let absolute = file.canonicalize().map_err(|source| MiloError::Io {
        path: file.to_path_buf(),
        source,
    })?;
    let relative = pathdiff::diff_paths(&absolute, base).unwrap_or(absolute);
    let parts: Option<Vec<&str>> = relative.iter().map(|c| c.to_str()).collect();
    parts.map(|p| p.join("/")).ok_or_else(|| {
        MiloError::Usage(format!(
            "{}: the path is not UTF-8 and cannot be written in a suite file",
            file.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn construction_names_skip_provenance_and_manifest() {
        assert!(is_construction_name("rank-01-a.json"));
        assert!(is_construction_name("x.json.gz"));
        assert!(is_construction_name("x.npy"));
        assert!(is_construction_name("x.npy.gz"));
        assert!(!is_construction_name("notes.txt"));
        assert!(!is_construction_name("rank-01-a.provenance.json"));
        assert!(!is_construction_name("MANIFEST.json"));
        assert!(!is_construction_name("PULL.json"));
        assert!(!is_construction_name("notes.txt"));
    }

    #[test]
    fn labels_drop_the_extension() {
        assert_eq!(label_of(Path::new("a/b/rank-01-x.json.gz")), "rank-01-x");
        assert_eq!(label_of(Path::new("c d.json")), "c-d");
        assert_eq!(label_of(Path::new("run.npy.gz")), "run");
    }
}
