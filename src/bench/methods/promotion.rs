//! Promoted discoveries (`--promote-discoveries`, and always for `stock`): each search task keeps
//! a current start; after a step, a task whose best discovery beats its current start exactly
//! starts from that construction in every later step.
//!
//! A promoted construction is saved content-addressed in the run's directory as
//! `starts/<first 16 hex digits of the sha256 of its JSON text>.json`, and the step's record
//! names the file per task, so a resumed run rebuilds the same current starts from its records
//! (each file's hash checked, its score recomputed exactly).

use super::log::StepRecord;
use super::RunContext;
use crate::construction::{parse_values, to_json};
use crate::error::{MiloError, Result};
use crate::problems::Problem;
use crate::records::io_error as io;
use crate::search::evaluation::Discovery;
use crate::suite::{sha256_hex, Start, Task};
use num_rational::BigRational;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Folder of the promoted constructions in a run's directory.
pub const STARTS_DIR: &str = "starts";

/// Hex digits of the sha256 that name a promoted construction's file.
const NAME_DIGITS: usize = 16;

/// A task's start replaced by a step's discovery.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Promotion {
    /// The task's id.
    pub task: String,
    /// The construction's file, relative to the run's directory (`starts/<hash>.json`).
    pub file: String,
}

/// The search tasks of a run, each with its current start.
pub struct CurrentStarts<'a> {
    problem: &'a dyn Problem,
    dir: PathBuf,
    tasks: Vec<Task>,
}

impl<'a> CurrentStarts<'a> {
    /// `tasks` with every promotion recorded in `steps` applied in order (the run's current
    /// starts after those steps); each file is read from the run's directory, its hash checked
    /// against its name and its construction re-scored exactly.
    pub fn rebuild(
        ctx: &RunContext<'a>,
        tasks: Vec<Task>,
        steps: &[StepRecord],
    ) -> Result<CurrentStarts<'a>> {
        let mut current = CurrentStarts {
            problem: ctx.suite.problem.as_ref(),
            dir: ctx.dir.to_path_buf(),
            tasks,
        };
        for promotion in steps.iter().flat_map(|s| &s.promoted) {
            let path = current.dir.join(&promotion.file);
            let (values, hash) = read_promoted(&path)?;
            current.problem.check(&values).map_err(|violation| {
                malformed(&path, format!("not a valid construction: {violation}"))
            })?;
            let exact = current.problem.score_exact(&values);
            let task = current
                .tasks
                .iter_mut()
                .find(|t| t.id == promotion.task)
                .ok_or_else(|| {
                    malformed(
                        &path,
                        format!("promoted to unknown task '{}'", promotion.task),
                    )
                })?;
            task.start = promoted_start(&task.start, path, hash, values, exact);
        }
        Ok(current)
    }

    /// The tasks with their current starts.
    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// Makes each discovery that beats its task's current start exactly (in the problem's
    /// direction) that task's start, saving its construction; returns the promotions, which
    /// the step's record must hold.
    pub fn promote(&mut self, discoveries: &[Discovery]) -> Result<Vec<Promotion>> {
        let direction = self.problem.spec().direction;
        let mut promoted = Vec::new();
        for discovery in discoveries {
            let Some(task) = self.tasks.iter_mut().find(|t| t.id == discovery.task) else {
                continue;
            };
            if !direction.better(&discovery.exact, &task.start.exact) {
                continue;
            }
            let (file, hash) = save(&self.dir, &discovery.values)?;
            task.start = promoted_start(
                &task.start,
                self.dir.join(&file),
                hash,
                discovery.values.clone(),
                discovery.exact.clone(),
            );
            promoted.push(Promotion {
                task: discovery.task.clone(),
                file,
            });
        }
        Ok(promoted)
    }
}

/// The start that replaces `old`: its label is the old label plus the construction's name.
fn promoted_start(
    old: &Start,
    path: PathBuf,
    sha256: String,
    values: Vec<f64>,
    exact: BigRational,
) -> Arc<Start> {
    Arc::new(Start {
        label: format!("{}+{}", old.label, &sha256[..NAME_DIGITS]),
        path,
        sha256,
        split: old.split,
        values: Arc::new(values),
        exact,
    })
}

/// Saves `values` as `starts/<hash>.json` in `dir` (through a temporary name) unless that file
/// exists; returns its path relative to `dir` and the full sha256 of its text.
fn save(dir: &Path, values: &[f64]) -> Result<(String, String)> {
    let text = to_json(values).map_err(MiloError::Invalid)?;
    let hash = sha256_hex(text.as_bytes());
    let file = format!("{STARTS_DIR}/{}.json", &hash[..NAME_DIGITS]);
    let path = dir.join(&file);
    if !path.exists() {
        let folder = dir.join(STARTS_DIR);
        std::fs::create_dir_all(&folder).map_err(io(&folder))?;
        let partial = path.with_extension("json.partial");
        std::fs::write(&partial, &text).map_err(io(&partial))?;
        std::fs::rename(&partial, &path).map_err(io(&path))?;
    }
    Ok((file, hash))
}

/// A promoted construction's values and the sha256 of its text, checked against its name.
fn read_promoted(path: &Path) -> Result<(Vec<f64>, String)> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    let hash = sha256_hex(&bytes);
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    if name != &hash[..NAME_DIGITS] {
        return Err(malformed(
            path,
            format!("its sha256 {hash} does not match its name: the file changed"),
        ));
    }
    let text = String::from_utf8(bytes).map_err(|e| malformed(path, e.to_string()))?;
    let values = parse_values(&text).map_err(|e| malformed(path, format!("{e:?}")))?;
    Ok((values, hash))
}

fn malformed(path: &Path, message: String) -> MiloError {
    MiloError::Malformed {
        path: path.to_path_buf(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture;
    use super::*;
    use crate::search::evaluation::Evaluation;
    use crate::search::hypervolume::Fitness;

    fn record(promoted: Vec<Promotion>) -> StepRecord {
        StepRecord {
            index: 0,
            island: 0,
            parent: None,
            candidate: String::new(),
            program: None,
            origin: String::new(),
            evaluation: Evaluation {
                tasks: vec![],
                fitness: Fitness {
                    quality: 0.0,
                    cost: 0.0,
                    latency: 0.0,
                },
                gains: vec![],
            },
            at: 0.0,
            promoted,
        }
    }

    #[test]
    fn a_resumed_run_rebuilds_the_same_current_starts_from_its_records() {
        let dir = tempfile::tempdir().unwrap();
        let suite = fixture::tiny_suite(dir.path());
        let run = dir.path().join("run");
        std::fs::create_dir_all(&run).unwrap();
        let ctx = fixture::context(&suite, &run, 1.0);
        let tasks = ctx.search_tasks();
        let direction = suite.problem.spec().direction;
        let best = tasks
            .iter()
            .map(|t| t.start.clone())
            .reduce(|a, b| {
                if direction.better(&b.exact, &a.exact) {
                    b
                } else {
                    a
                }
            })
            .unwrap();
        // Every task is offered the best search start: the tasks on the other start take it.
        let offer: Vec<Discovery> = tasks
            .iter()
            .map(|t| Discovery {
                task: t.id.clone(),
                seed: t.seed,
                program: String::new(),
                values: best.values.to_vec(),
                exact: best.exact.clone(),
            })
            .collect();
        let mut current = CurrentStarts::rebuild(&ctx, tasks.clone(), &[]).unwrap();
        let promoted = current.promote(&offer).unwrap();
        let moved: Vec<&str> = promoted.iter().map(|p| p.task.as_str()).collect();
        let worse: Vec<&str> = tasks
            .iter()
            .filter(|t| t.start.label != best.label)
            .map(|t| t.id.as_str())
            .collect();
        assert_eq!(moved, worse);
        assert!(!worse.is_empty());
        // The same construction again does not beat the new starts exactly.
        assert!(current.promote(&offer).unwrap().is_empty());

        let records = [record(promoted.clone())];
        let rebuilt = CurrentStarts::rebuild(&ctx, tasks.clone(), &records).unwrap();
        for (a, b) in current.tasks().iter().zip(rebuilt.tasks()) {
            assert_eq!(a.id, b.id);
            assert_eq!(a.start.label, b.start.label);
            assert_eq!(a.start.sha256, b.start.sha256);
            assert_eq!(a.start.values, b.start.values);
            assert_eq!(a.start.exact, b.start.exact);
            assert_eq!(b.start.exact, best.exact);
        }

        // A promoted file that changed is an error, not a silent new start.
        std::fs::write(run.join(&promoted[0].file), r#"{"values": [1.0, 2.0]}"#).unwrap();
        assert!(CurrentStarts::rebuild(&ctx, tasks, &records).is_err());
    }
}
