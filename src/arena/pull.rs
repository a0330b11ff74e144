//! Pulling a leaderboard: every entry saved as a construction file with its provenance, each
//! re-verified exactly from the saved file, and the directory installed only once complete.
//!
//! Layout of a pull into `DIR` (`rank-NN` has two digits, three when 100 entries are pulled):
//! - `rank-NN-<agent>.json`: the values, `{"values": [...]}` in shortest round-trip form;
//! - `rank-NN-<agent>.provenance.json`: a [`Provenance`];
//! - `PULL.json`: a [`PullSummary`] listing every entry.
//!
//! Each entry's values are written as they arrive (memory holds one entry, never the whole
//! answer), then named and verified, inside a hidden sibling `.DIR.pull-XXXXXX` that is renamed
//! to `DIR` only when every file is in place (and removed on any failure), so a `DIR` that
//! exists is a complete pull.

use crate::arena::client::{ArenaClient, ArenaId, ArenaProblem, ArenaSolution};
use crate::bounded_read::{
    read_bytes_capped, read_json_file_capped, CONSTRUCTION_CAP, SETTINGS_JSON,
};
use crate::construction::{parse_values, write_values};
use crate::error::{write_error, MiloError, Result, EXIT_INVALID, EXIT_MISMATCH, EXIT_OK};
use crate::exact::rational::{decimal_of_f64, decimal_string, from_f64, to_f64, SCORE_DIGITS};
use crate::problems::{by_slug, Problem};
use crate::verify::{verify, Mode, Options};
use num_traits::{Signed, Zero};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Largest relative difference between the arena's score and our exact score not flagged.
pub const RELATIVE_TOLERANCE: f64 = 1e-12;
/// Name of the summary file of a pull.
pub const SUMMARY_FILE: &str = "PULL.json";
/// Longest agent part of a file name.
const AGENT_CHARS: usize = 40;

/// What to pull and where to put it.
#[derive(Clone, Debug)]
pub struct PullRequest {
    /// The problem's slug (on the server and in `milo problems`).
    pub slug: String,
    /// How many of the best entries to pull (1…100).
    pub limit: usize,
    /// The directory to create.
    pub into: PathBuf,
    /// Replace `into` when it exists and is not empty.
    pub force: bool,
}

/// Why an entry deserves a second look.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Flag {
    /// The construction breaks a rule of the problem (it is saved anyway, for inspection).
    Invalid,
    /// The arena's score differs from our exact score by more than [`RELATIVE_TOLERANCE`].
    ScoreMismatch,
}

/// Where one pulled construction came from and what milo makes of it (`rank-NN-*.provenance.json`).
#[derive(Clone, Debug, Serialize)]
pub struct Provenance {
    /// Position on the leaderboard, 1 = best.
    pub rank: usize,
    /// The construction file's name, in the same directory.
    pub file: String,
    /// SHA-256 of the construction file's bytes, lowercase hex.
    pub sha256: String,
    /// Number of values.
    pub n: usize,
    /// The problem's slug.
    pub problem: String,
    /// The server's identifier of the problem.
    pub problem_id: ArenaId,
    /// The server the entry was pulled from.
    pub base_url: String,
    /// The server's identifier of the submission.
    pub arena_solution_id: ArenaId,
    /// Who submitted it.
    pub agent: String,
    /// The score the arena published.
    pub arena_score: f64,
    /// When it was submitted, as the server wrote it.
    pub created_at: String,
    /// When it was pulled (RFC 3339, UTC).
    pub pulled_at: String,
    /// Whether the construction passes the problem's rules.
    pub valid: bool,
    /// The broken rule, for an invalid construction.
    pub violation: Option<String>,
    /// Our exact score to 40 significant digits, as `milo verify --json` prints it.
    pub score_exact: Option<String>,
    /// Our float64 score.
    pub score_f64: Option<f64>,
    /// A-priori bound on `|score_f64 − exact|`.
    pub error_bound: Option<f64>,
    /// `|arena_score − exact| / |exact|` (absent for invalid entries or a zero exact score).
    pub relative_difference: Option<f64>,
    /// What deserves a second look (empty when the entry is valid and its score agrees).
    pub flags: Vec<Flag>,
    /// The milo version that verified it.
    pub milo_version: String,
}

/// One line of `PULL.json`: a provenance and the name of its file.
#[derive(Clone, Debug, Serialize)]
pub struct PulledEntry {
    /// The provenance file's name.
    pub provenance_file: String,
    /// The entry.
    #[serde(flatten)]
    pub provenance: Provenance,
}

/// How many entries were pulled, and how many were flagged.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Counts {
    /// Entries saved.
    pub entries: usize,
    /// Entries that break a rule of the problem.
    pub invalid: usize,
    /// Entries whose arena score disagrees with ours.
    pub score_mismatch: usize,
}

/// A whole pull (`PULL.json`).
#[derive(Clone, Debug, Serialize)]
pub struct PullSummary {
    /// The problem as the server described it.
    pub problem: ArenaProblem,
    /// The server.
    pub base_url: String,
    /// When the pull happened (RFC 3339, UTC).
    pub pulled_at: String,
    /// How many entries were asked for.
    pub limit: usize,
    /// The relative tolerance of the score check.
    pub relative_tolerance: f64,
    /// The milo version that verified the entries.
    pub milo_version: String,
    /// Totals.
    pub counts: Counts,
    /// Every entry, best first.
    pub entries: Vec<PulledEntry>,
}

impl PullSummary {
    /// The exit code a pull reports: [`EXIT_INVALID`] when some entry is invalid, else
    /// [`EXIT_MISMATCH`] when some arena score disagrees with ours, else [`EXIT_OK`].
    pub fn exit_code(&self) -> i32 {
        if self.counts.invalid > 0 {
            EXIT_INVALID
        } else if self.counts.score_mismatch > 0 {
            EXIT_MISMATCH
        } else {
            EXIT_OK
        }
    }
}

/// Pulls `request.limit` best entries of a problem into `request.into`, re-verifying each one.
///
/// Fails before touching the file system when the target exists and is not empty (without
/// `force`; with it, when it is not wholly an earlier pull, see [`check_target`]), when the server is unreachable or its answer unusable, or when the slug is unknown
/// to the server or to milo. Invalid entries and disagreeing scores are not failures: they are
/// saved, flagged, and counted in the summary.
pub fn pull(client: &ArenaClient, request: &PullRequest) -> Result<PullSummary> {
    // Without a trailing `/`, which would make the checks follow a symbolic link.
    let into: PathBuf = request.into.components().collect();
    let name = target_name(&into)?;
    check_target(&into, request.force)?;
    let served = client.problem(&request.slug)?;
    let problem = by_slug(&request.slug)?;
    let parent = match into.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(write_error(&parent))?;
    let staging = tempfile::Builder::new()
        .prefix(&format!(".{name}.pull-"))
        .tempdir_in(&parent)
        .map_err(write_error(&parent))?;
    // Each entry's values go to the staging folder as the answer arrives, so memory holds one
    // entry at a time, never the whole answer.
    let dir = staging.path().to_path_buf();
    let solutions = client.best_solutions(
        &served.id,
        request.limit,
        problem.spec().max_len,
        move |rank, solution| Arrived::save(&dir, rank, solution),
    )?;
    let pulled_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();

    let width = solutions.len().to_string().len().max(2);
    let context = EntryContext {
        dir: staging.path(),
        problem: problem.as_ref(),
        problem_id: &served.id,
        base_url: client.base_url(),
        pulled_at: &pulled_at,
        width,
    };
    let entries: Vec<PulledEntry> = solutions
        .par_iter()
        .enumerate()
        .map(|(i, solution)| save_entry(&context, i + 1, solution))
        .collect::<Result<_>>()?;

    let mut counts = Counts {
        entries: entries.len(),
        ..Counts::default()
    };
    for entry in &entries {
        let flags = &entry.provenance.flags;
        counts.invalid += usize::from(flags.contains(&Flag::Invalid));
        counts.score_mismatch += usize::from(flags.contains(&Flag::ScoreMismatch));
    }
    let summary = PullSummary {
        problem: served,
        base_url: client.base_url().to_string(),
        pulled_at,
        limit: request.limit,
        relative_tolerance: RELATIVE_TOLERANCE,
        milo_version: env!("CARGO_PKG_VERSION").to_string(),
        counts,
        entries,
    };
    write_json(&staging.path().join(SUMMARY_FILE), &summary)?;
    install(staging, &into, request.force)?;
    Ok(summary)
}

/// What every entry of one pull shares.
struct EntryContext<'a> {
    dir: &'a Path,
    problem: &'a dyn Problem,
    problem_id: &'a ArenaId,
    base_url: &'a str,
    pulled_at: &'a str,
    width: usize,
}

/// A served entry as it arrived: its values saved under a provisional name (the final one
/// needs the number of entries), the rest kept.
struct Arrived {
    id: ArenaId,
    agent_name: String,
    score: f64,
    created_at: String,
    saved: PathBuf,
}

impl Arrived {
    /// Saves the values of the entry of rank `rank` in `dir`, keeping the rest.
    fn save(dir: &Path, rank: usize, solution: ArenaSolution) -> Result<Arrived> {
        let saved = dir.join(format!(".arrived-{rank}.json"));
        write_values(&saved, &solution.values)?;
        Ok(Arrived {
            id: solution.id,
            agent_name: solution.agent_name,
            score: solution.score,
            created_at: solution.created_at,
            saved,
        })
    }
}

/// Names one arrived entry's construction, re-reads and verifies the saved file, writes its
/// provenance.
fn save_entry(cx: &EntryContext, rank: usize, solution: &Arrived) -> Result<PulledEntry> {
    let stem = format!(
        "rank-{rank:0width$}-{}",
        agent_slug(&solution.agent_name),
        width = cx.width
    );
    let file = format!("{stem}.json");
    let path = cx.dir.join(&file);
    std::fs::rename(&solution.saved, &path).map_err(write_error(&path))?;
    let bytes = read_bytes_capped(&path, CONSTRUCTION_CAP, "construction")?;
    let sha256: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let saved = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|text| parse_values(text).ok())
        .ok_or_else(|| MiloError::Malformed {
            path: path.clone(),
            message: "the construction just written does not read back".into(),
        })?;
    let options = Options {
        mode: Mode::Both,
        allow_oversize: false,
    };
    let mut provenance = Provenance {
        rank,
        file,
        sha256,
        n: saved.len(),
        problem: cx.problem.slug().to_string(),
        problem_id: cx.problem_id.clone(),
        base_url: cx.base_url.to_string(),
        arena_solution_id: solution.id.clone(),
        agent: solution.agent_name.clone(),
        arena_score: solution.score,
        created_at: solution.created_at.clone(),
        pulled_at: cx.pulled_at.to_string(),
        valid: true,
        violation: None,
        score_exact: None,
        score_f64: None,
        error_bound: None,
        relative_difference: None,
        flags: Vec::new(),
        milo_version: env!("CARGO_PKG_VERSION").to_string(),
    };
    match verify(cx.problem, &saved, options) {
        Err(violation) => {
            provenance.valid = false;
            provenance.violation = Some(violation.to_string());
            provenance.flags.push(Flag::Invalid);
        }
        Ok(verification) => {
            let exact = verification
                .exact
                .expect("mode both computes the exact score");
            let fast = verification
                .fast
                .expect("mode both computes the fast score");
            let gap = (from_f64(solution.score) - &exact).abs();
            let allowed = decimal_of_f64(RELATIVE_TOLERANCE) * exact.abs();
            if gap > allowed {
                provenance.flags.push(Flag::ScoreMismatch);
            }
            provenance.relative_difference =
                (!exact.is_zero()).then(|| to_f64(&(gap / exact.abs())));
            provenance.score_exact = Some(decimal_string(&exact, SCORE_DIGITS));
            provenance.score_f64 = Some(fast.value);
            provenance.error_bound = Some(fast.error_bound);
        }
    }
    let provenance_file = format!("{stem}.provenance.json");
    write_json(&cx.dir.join(&provenance_file), &provenance)?;
    Ok(PulledEntry {
        provenance_file,
        provenance,
    })
}

/// The agent's name as a file-name part: lowercase ASCII letters and digits, other runs as `-`.
fn agent_slug(agent: &str) -> String {
    let mut out = String::new();
    for c in agent.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.truncate(AGENT_CHARS);
    let out = out.trim_end_matches('-');
    if out.is_empty() {
        "agent".into()
    } else {
        out.into()
    }
}

/// Pretty JSON with a final newline.
fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value).expect("pull records serialize");
    text.push('\n');
    crate::atomic_file::write(path, text.as_bytes())
}

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> MiloError + '_ {
    move |source| MiloError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The last component of the target, which names the staging directory.
fn target_name(into: &Path) -> Result<String> {
    match into.file_name() {
        Some(name) => Ok(name.to_string_lossy().into_owned()),
        None => Err(MiloError::Usage(format!(
            "--into {}: expected a directory path ending in a name",
            into.display()
        ))),
    }
}

/// What stands at a pull's target.
#[derive(Debug)]
enum Target {
    /// Nothing: the pull is renamed into place.
    Missing,
    /// An empty directory, removed before the pull is renamed into place.
    Empty,
    /// An earlier pull (with `--force`), held open: these files of it, every one listed by its
    /// own `PULL.json` (which is among them), are deleted from it once the new pull is in place.
    Pull(PullDir, Vec<String>),
}

/// A directory held open without following a symbolic link (`O_DIRECTORY | O_NOFOLLOW`):
/// what is listed, checked, read and deleted in it is relative to the open directory
/// (`fstatat`, `openat`, `unlinkat`, none following a link), so it stays in that directory
/// whatever its path names meanwhile (the directory renamed, a symbolic link put in its place).
#[derive(Debug)]
struct PullDir {
    fd: std::os::fd::OwnedFd,
    path: PathBuf,
}

impl PullDir {
    /// Opens the directory `path`; a symbolic link or anything but a directory is an error.
    fn open(path: &Path) -> Result<PullDir> {
        use nix::fcntl::OFlag;
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let fd = nix::fcntl::open(path, flags, nix::sys::stat::Mode::empty())
            .map_err(|e| io_error(path)(e.into()))?;
        Ok(PullDir {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// The names in the directory, sorted.
    fn names(&self) -> Result<Vec<String>> {
        use nix::fcntl::OFlag;
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let failed = |e: nix::errno::Errno| io_error(&self.path)(e.into());
        let mut dir = nix::dir::Dir::openat(&self.fd, ".", flags, nix::sys::stat::Mode::empty())
            .map_err(failed)?;
        let mut names = Vec::new();
        for entry in dir.iter() {
            let entry = entry.map_err(failed)?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                names.push(String::from_utf8_lossy(name).into_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    /// Whether `name` in the directory is a regular file (a link is not followed; a missing
    /// name is not one).
    fn is_regular_file(&self, name: &str) -> Result<bool> {
        use nix::sys::stat::SFlag;
        match nix::sys::stat::fstatat(&self.fd, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(stat) => {
                Ok(SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT == SFlag::S_IFREG)
            }
            Err(nix::errno::Errno::ENOENT) => Ok(false),
            Err(e) => Err(io_error(&self.path.join(name))(e.into())),
        }
    }

    /// The file `name` in the directory, opened for reading without following a link or
    /// blocking on a FIFO.
    fn open_file(&self, name: &str) -> Result<std::fs::File> {
        use nix::fcntl::OFlag;
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
        nix::fcntl::openat(&self.fd, name, flags, nix::sys::stat::Mode::empty())
            .map(std::fs::File::from)
            .map_err(|e| io_error(&self.path.join(name))(e.into()))
    }

    /// Deletes the entry `name` of the directory (a link itself, never what it points to); one
    /// already gone is no error.
    fn unlink(&self, name: &str) -> Result<()> {
        match nix::unistd::unlinkat(&self.fd, name, nix::unistd::UnlinkatFlags::NoRemoveDir) {
            Ok(()) | Err(nix::errno::Errno::ENOENT) => Ok(()),
            Err(e) => Err(io_error(&self.path)(e.into())),
        }
    }
}

/// The names an earlier pull's `PULL.json` lists, as much of it as `--force` reads.
#[derive(Deserialize)]
struct Listing {
    entries: Vec<ListedEntry>,
}

/// One entry of an earlier pull: its construction and provenance files.
#[derive(Deserialize)]
struct ListedEntry {
    file: String,
    provenance_file: String,
}

/// What stands at `into`. Refused: a symbolic link (never followed), anything but a directory,
/// a non-empty directory without `force`, and with `force` one that is not wholly an earlier
/// pull (see [`check_pull`]). Nothing else is ever replaced.
fn check_target(into: &Path, force: bool) -> Result<Target> {
    let meta = match std::fs::symlink_metadata(into) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Target::Missing),
        Err(source) => {
            return Err(MiloError::Io {
                path: into.to_path_buf(),
                source,
            })
        }
    };
    if meta.is_symlink() {
        return Err(MiloError::Usage(format!(
            "{} is a symbolic link: milo never replaces a pull through one; give the directory itself as --into",
            into.display()
        )));
    }
    if !meta.is_dir() {
        return Err(MiloError::Usage(format!(
            "{} exists and is not a directory; choose another --into",
            into.display()
        )));
    }
    check_pull(PullDir::open(into)?, force)
}

/// What the open directory `dir` is: empty, or with `force` wholly an earlier pull. Refused: a
/// non-empty directory without `force`, and with it no regular `PULL.json`, a `PULL.json`
/// naming a path outside the directory, or any entry that its `PULL.json` does not list or
/// that is not a regular file.
fn check_pull(dir: PullDir, force: bool) -> Result<Target> {
    let into = dir.path.clone();
    let names = dir.names()?;
    if names.is_empty() {
        return Ok(Target::Empty);
    }
    if !force {
        return Err(MiloError::Usage(format!(
            "{} exists and is not empty; pass --force to replace an earlier pull, or choose another --into",
            into.display()
        )));
    }
    if !dir.is_regular_file(SUMMARY_FILE)? {
        return Err(MiloError::Usage(format!(
            "{} is not an earlier pull (it has no {SUMMARY_FILE} file): --force replaces only milo's own pulls; \
             choose another --into",
            into.display()
        )));
    }
    let listed = listed_names(&dir)?;
    for name in &names {
        if !listed.contains(name) {
            return Err(MiloError::Usage(format!(
                "{} holds {name:?}, which its {SUMMARY_FILE} does not list: --force deletes only the files of \
                 milo's own pull; move it away or choose another --into",
                into.display()
            )));
        }
        if !dir.is_regular_file(name)? {
            return Err(MiloError::Usage(format!(
                "{} holds {name:?}, which is not a regular file (a link or a directory): --force deletes \
                 only the files of milo's own pull; move it away or choose another --into",
                into.display()
            )));
        }
    }
    Ok(Target::Pull(dir, names))
}

/// Every file name the `PULL.json` of the earlier pull `dir` lists, itself included; a name
/// that is not a plain name inside the directory (`..`, a path with `/`, an absolute path) is
/// refused.
fn listed_names(dir: &PullDir) -> Result<Vec<String>> {
    let summary = dir.path.join(SUMMARY_FILE);
    let file = dir.open_file(SUMMARY_FILE)?;
    let listing: Listing = read_json_file_capped(file, &summary, SETTINGS_JSON, "pull summary")?;
    let mut names = vec![SUMMARY_FILE.to_string()];
    for entry in listing.entries {
        for name in [entry.file, entry.provenance_file] {
            let mut parts = Path::new(&name).components();
            let plain = matches!(
                (parts.next(), parts.next()),
                (Some(std::path::Component::Normal(part)), None) if part == name.as_str()
            );
            if !plain {
                return Err(MiloError::Malformed {
                    path: summary,
                    message: format!(
                        "lists {name:?}, which is not a file name inside the pull; --force deletes nothing"
                    ),
                });
            }
            names.push(name);
        }
    }
    Ok(names)
}

/// Renames the complete staging directory to `into`, replacing an empty directory or, with
/// `force`, an earlier pull: that one is moved aside, checked again there, and only the files
/// its `PULL.json` lists are deleted once the new pull is in place, then its directory if empty.
fn install(staging: tempfile::TempDir, into: &Path, force: bool) -> Result<()> {
    let mut old = None;
    match check_target(into, force)? {
        Target::Missing => {}
        Target::Empty => std::fs::remove_dir(into).map_err(io_error(into))?,
        Target::Pull(..) => {
            let mut aside = staging.path().as_os_str().to_owned();
            aside.push("-replaced");
            let aside = PathBuf::from(aside);
            std::fs::rename(into, &aside).map_err(io_error(into))?;
            // What was renamed is what gets deleted from: opened where it now is (never through
            // a link), checked again, and held open until its files are deleted.
            match PullDir::open(&aside).and_then(|dir| check_pull(dir, true)) {
                Ok(Target::Pull(dir, names)) => old = Some((dir, names)),
                other => {
                    let _ = std::fs::rename(&aside, into);
                    other?;
                    return Err(MiloError::Usage(format!(
                        "{} changed while it was being replaced; nothing was replaced",
                        into.display()
                    )));
                }
            }
        }
    }
    let staged = staging.keep();
    if let Err(source) = std::fs::rename(&staged, into) {
        // Leave things as they were: the old directory back, the staging one gone.
        if let Some((old, _)) = &old {
            let _ = std::fs::rename(&old.path, into);
        }
        let _ = std::fs::remove_dir_all(&staged);
        return Err(MiloError::Io {
            path: into.to_path_buf(),
            source,
        });
    }
    if let Some((old, names)) = old {
        for name in names {
            old.unlink(&name)?;
        }
        // `rmdir` of a path never follows a link: a link put in its place is left alone.
        if std::fs::remove_dir(&old.path).is_err() {
            return Err(MiloError::Usage(format!(
                "the new pull is in {}; the earlier one's directory, kept as {}, holds files that appeared \
                 while it was replaced: look at them and remove it",
                into.display(),
                old.path.display()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_slugs_are_file_name_safe() {
        assert_eq!(agent_slug("Together AI"), "together-ai");
        assert_eq!(agent_slug("  TTT/Discover v2!! "), "ttt-discover-v2");
        assert_eq!(agent_slug("Zoë"), "zo");
        assert_eq!(agent_slug("../.."), "agent");
        assert_eq!(agent_slug(&"x".repeat(100)).len(), AGENT_CHARS);
    }

    #[test]
    fn targets_that_are_files_or_full_directories_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("new");
        assert!(matches!(
            check_target(&missing, false).unwrap(),
            Target::Missing
        ));
        std::fs::create_dir(&missing).unwrap();
        assert!(matches!(
            check_target(&missing, false).unwrap(),
            Target::Empty
        ));
        std::fs::write(missing.join("x"), "x").unwrap();
        let err = check_target(&missing, false).unwrap_err().to_string();
        assert!(err.contains("--force"), "{err}");
        let err = check_target(&missing, true).unwrap_err().to_string();
        assert!(err.contains("not an earlier pull"), "{err}");
        let summary = r#"{"entries": [{"file": "x", "provenance_file": "x.provenance.json"}]}"#;
        std::fs::write(missing.join(SUMMARY_FILE), summary).unwrap();
        assert!(matches!(
            check_target(&missing, true).unwrap(),
            Target::Pull(_, names) if names == [SUMMARY_FILE, "x"]
        ));
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        assert!(check_target(&file, true).is_err());
        assert!(target_name(Path::new("..")).is_err());
    }

    #[test]
    fn a_summary_listing_a_path_outside_the_pull_deletes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let pull = dir.path().join("pull");
        std::fs::create_dir(&pull).unwrap();
        for name in ["../victim", "/etc/passwd", "a/b", ".", ""] {
            let summary = serde_json::json!({"entries": [{"file": name, "provenance_file": "p"}]});
            std::fs::write(pull.join(SUMMARY_FILE), summary.to_string()).unwrap();
            let err = check_target(&pull, true).unwrap_err();
            assert!(matches!(err, MiloError::Malformed { .. }), "{name}: {err}");
            assert!(
                err.to_string().contains("not a file name inside the pull"),
                "{err}"
            );
        }
        std::fs::write(pull.join(SUMMARY_FILE), "{}").unwrap();
        let err = check_target(&pull, true).unwrap_err().to_string();
        assert!(err.contains("not a readable pull summary"), "{err}");
    }

    #[test]
    fn force_deletes_in_the_held_pull_never_through_a_link_swapped_in() {
        let dir = tempfile::tempdir().unwrap();
        let pull = dir.path().join("pull");
        let outside = dir.path().join("outside");
        std::fs::create_dir(&pull).unwrap();
        std::fs::create_dir(&outside).unwrap();
        let summary = r#"{"entries": [{"file": "x", "provenance_file": "p"}]}"#;
        std::fs::write(pull.join(SUMMARY_FILE), summary).unwrap();
        std::fs::write(pull.join("x"), "x").unwrap();
        std::fs::write(pull.join("p"), "p").unwrap();
        std::fs::write(outside.join("p"), "keep").unwrap();
        std::fs::write(outside.join("secret"), "keep").unwrap();
        let Target::Pull(held, names) = check_target(&pull, true).unwrap() else {
            panic!("an earlier pull")
        };
        // After the check: a listed file replaced by a link to a file outside, and the pull's
        // directory moved away with a link to another directory put in its place.
        std::fs::remove_file(pull.join("x")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), pull.join("x")).unwrap();
        let moved = dir.path().join("moved");
        std::fs::rename(&pull, &moved).unwrap();
        std::os::unix::fs::symlink(&outside, &pull).unwrap();
        for name in &names {
            held.unlink(name).unwrap();
        }
        assert_eq!(
            std::fs::read_to_string(outside.join("secret")).unwrap(),
            "keep"
        );
        assert_eq!(std::fs::read_to_string(outside.join("p")).unwrap(), "keep");
        assert_eq!(std::fs::read_dir(&moved).unwrap().count(), 0);
        // The directory itself a link: refused, as the path and as the handle.
        let err = check_target(&pull, true).unwrap_err().to_string();
        assert!(err.contains("is a symbolic link"), "{err}");
        let err = PullDir::open(&pull).unwrap_err();
        assert!(matches!(err, MiloError::Io { .. }), "{err}");
    }
}
