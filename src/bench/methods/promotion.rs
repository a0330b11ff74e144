//! Promoted discoveries (`--promote-discoveries`, and always for `stock`): each search task keeps
//! a current start; after a step, a task whose best discovery beats its current start exactly
//! starts from that construction in every later step.
//!
//! A promoted construction is saved content-addressed in the run's directory as
//! `starts/<first 16 hex digits of the sha256 of its JSON text>.json`, and the step's record
//! names the file per task, so a resumed run rebuilds the same current starts from its records
//! (each file's hash checked, its score recomputed exactly).

use super::RunContext;
use crate::error::{MiloError, Result};
use crate::problems::Problem;
use crate::search::evaluation::Improvement;
use crate::search::promotion::{address, load, save, supersede, STARTS_DIR};
use crate::suite::Task;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// `tasks` with `promotions` (a run's recorded promotions) applied in order: the run's
    /// current starts after them; each file is read from the run's directory, its hash checked
    /// against its name and its construction re-scored exactly.
    pub fn rebuild<'p>(
        ctx: &RunContext<'a>,
        tasks: Vec<Task>,
        promotions: impl IntoIterator<Item = &'p Promotion>,
    ) -> Result<CurrentStarts<'a>> {
        let mut current = CurrentStarts {
            problem: ctx.suite.problem.as_ref(),
            dir: ctx.dir.to_path_buf(),
            tasks,
        };
        for promotion in promotions {
            let path = current.dir.join(&promotion.file);
            let hash = Path::new(&promotion.file)
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default();
            let task = current
                .tasks
                .iter_mut()
                .find(|t| t.id == promotion.task)
                .ok_or_else(|| MiloError::Malformed {
                    path: path.clone(),
                    message: format!("promoted to unknown task '{}'", promotion.task),
                })?;
            let mut start = load(&current.dir, hash, &task.id, current.problem)?;
            start.split = task.start.split;
            task.start = Arc::new(start);
        }
        Ok(current)
    }

    /// The tasks with their current starts.
    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// Makes each discovery that beats its task's current start exactly (in the problem's
    /// direction, [`supersede`]) that task's start, saving its construction; returns the
    /// promotions, which the step's record must hold.
    pub fn promote(&mut self, discoveries: &[Improvement]) -> Result<Vec<Promotion>> {
        let mut promoted = Vec::new();
        for discovery in discoveries {
            let Some(task) = self.tasks.iter_mut().find(|t| t.id == discovery.task) else {
                continue;
            };
            let hash = address(&save(&self.dir, &discovery.values)?).to_string();
            let Some(start) = supersede(&self.dir, &hash, &task.id, &task.start, self.problem)?
            else {
                continue;
            };
            task.start = Arc::new(start);
            promoted.push(Promotion {
                task: discovery.task.clone(),
                file: format!("{STARTS_DIR}/{hash}.json"),
            });
        }
        Ok(promoted)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture;
    use super::super::log::StepRecord;
    use super::*;
    use crate::search::evaluation::Evaluation;
    use crate::search::hypervolume::Fitness;

    fn promotions(records: &[StepRecord]) -> impl Iterator<Item = &Promotion> {
        records.iter().flat_map(|s| &s.promoted)
    }

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
                reused: false,
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
        let offer: Vec<Improvement> = tasks
            .iter()
            .map(|t| Improvement {
                task: t.id.clone(),
                start: t.start.path.clone(),
                seed: t.seed,
                program: String::new(),
                values: best.values.to_vec(),
                exact: best.exact.clone(),
            })
            .collect();
        let mut current = CurrentStarts::rebuild(&ctx, tasks.clone(), []).unwrap();
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
        let rebuilt = CurrentStarts::rebuild(&ctx, tasks.clone(), promotions(&records)).unwrap();
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
        assert!(CurrentStarts::rebuild(&ctx, tasks, promotions(&records)).is_err());
    }
}
