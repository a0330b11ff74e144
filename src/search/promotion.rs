//! Promoted starts (`--promote-discoveries`): the constructions of compounding.
//!
//! During a round, an evaluation's improvement of a start (over every program run on it) that
//! beats every construction saved for that start earlier in the round is saved content-addressed
//! as `starts/<hash>.json` in the run directory (the task result names the hash). At the round's
//! end, each start's best saved construction of the round that beats its current construction
//! exactly is promoted: a `promote` move in the lineage, after which every slot on that start
//! (every program) starts from it. The decisions read only recorded results, so a resumed run
//! makes the same ones.
//!
//! The bench's baselines (`bench/methods/promotion.rs`) promote with the same rule
//! ([`supersede`]) at the grain of a task rather than a start: each seed's run keeps its own
//! trajectory, as a baseline's steps do.

use super::round_tasks::{better_as_f64, start_of};
use super::state::SearchState;
use crate::bounded_read::{read_regular_text_capped, CONSTRUCTION_CAP};
use crate::construction::{decode, to_json};
use crate::error::{write_error, MiloError, Result};
use crate::problems::Problem;
use crate::suite::{sha256_hex, Split, Start};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The folder of promoted starts in a run directory.
pub const STARTS_DIR: &str = "starts";

/// Hex digits of the sha256 that make a construction's content address.
const ADDRESS_DIGITS: usize = 16;

/// The content address of a construction whose JSON text has this sha256.
pub fn address(sha256: &str) -> &str {
    &sha256[..ADDRESS_DIGITS]
}

/// The file of the construction with content address `hash`.
pub fn start_path(run: &Path, hash: &str) -> PathBuf {
    run.join(STARTS_DIR).join(format!("{hash}.json"))
}

/// Saves `values` under their content address (see [`address`]) in `run`'s `starts/`, through a
/// temporary name; an existing file is kept. Returns the sha256 of the JSON text.
pub fn save(run: &Path, values: &[f64]) -> Result<String> {
    let text = to_json(values).map_err(MiloError::Invalid)?;
    let sha256 = sha256_hex(text.as_bytes());
    let path = start_path(run, address(&sha256));
    if !path.exists() {
        let dir = run.join(STARTS_DIR);
        std::fs::create_dir_all(&dir).map_err(write_error(&dir))?;
        crate::atomic_file::write(&path, text.as_bytes())?;
    }
    Ok(sha256)
}

/// Loads the construction with content address `hash` as a start for `id` (a start label, slot
/// or task id; the new label is the start label plus `@hash`): its content checked against the
/// address, its validity checked, its score computed exactly.
pub fn load(run: &Path, hash: &str, id: &str, problem: &dyn Problem) -> Result<Start> {
    let path = start_path(run, hash);
    let text = read_regular_text_capped(&path, CONSTRUCTION_CAP, "promoted start")?;
    let actual = sha256_hex(text.as_bytes());
    if address(&actual) != hash {
        return Err(MiloError::Malformed {
            path,
            message: format!(
                "its sha256 {actual} does not match its name {hash}: the file changed"
            ),
        });
    }
    let values = decode(&path, text.into_bytes())?;
    problem.check(&values).map_err(|v| MiloError::Malformed {
        path: path.clone(),
        message: format!("promoted start: {v}"),
    })?;
    let exact = problem.score_exact(&values);
    Ok(Start {
        label: format!("{}@{hash}", start_of(id)),
        path,
        sha256: actual,
        split: Split::Search,
        values: Arc::new(values),
        exact,
    })
}

/// The promotion rule, one for the search and the bench's baselines: the construction saved as
/// `hash` replaces `current` (the start of `id`, a start label or task id) when it beats it
/// exactly in the problem's direction. Returns the new start (loaded as [`load`] does, with
/// `current`'s split), or `None` when it does not beat `current`.
pub fn supersede(
    run: &Path,
    hash: &str,
    id: &str,
    current: &Start,
    problem: &dyn Problem,
) -> Result<Option<Start>> {
    let mut start = load(run, hash, id, problem)?;
    if !problem
        .spec()
        .direction
        .better(&start.exact, &current.exact)
    {
        return Ok(None);
    }
    start.split = current.split;
    Ok(Some(start))
}

/// A start's best saved construction of a round.
#[derive(Clone, Debug, PartialEq)]
pub struct RoundBest {
    /// The start's label.
    pub start: String,
    /// Content address of the construction.
    pub hash: String,
    /// Its exact score (40 significant digits).
    pub exact: String,
    /// The node whose evaluation found it.
    pub node: String,
}

/// Per start (in first-seen order), the best construction saved in `round` (ties: the first).
pub fn round_bests(state: &SearchState, problem: &dyn Problem, round: usize) -> Vec<RoundBest> {
    let mut bests: Vec<RoundBest> = Vec::new();
    for node in state.nodes.iter().filter(|n| n.round == round) {
        for evaluation in node.search_evaluations() {
            for task in &evaluation.tasks {
                let Some(hash) = &task.construction else {
                    continue;
                };
                let start = start_of(&task.task);
                let candidate = RoundBest {
                    start: start.to_string(),
                    hash: hash.clone(),
                    exact: task.end_exact.clone(),
                    node: node.id.clone(),
                };
                match bests.iter_mut().find(|b| b.start == start) {
                    Some(b) if better_as_f64(problem, &task.end_exact, &b.exact) => *b = candidate,
                    Some(_) => {}
                    None => bests.push(candidate),
                }
            }
        }
    }
    bests
}

/// The best score saved for the start labelled `start` in `round` so far (what a new
/// construction must beat to be saved).
pub fn saved_best(
    state: &SearchState,
    problem: &dyn Problem,
    round: usize,
    start: &str,
) -> Option<String> {
    round_bests(state, problem, round)
        .into_iter()
        .find(|b| b.start == start)
        .map(|b| b.exact)
}
