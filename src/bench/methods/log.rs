//! The record file of a baseline run (`steps.jsonl`): every evaluation it made, and the
//! validation of its best candidate; a killed run resumes from it.

use super::super::trajectory::{best_candidate, within_budget, Trajectory, TrajectoryStep};
use super::promotion::Promotion;
use crate::error::Result;
use crate::records::{unix_seconds, AppendLog};
use crate::search::evaluation::Evaluation;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Name of the record file in a baseline run's directory.
pub const STEPS_FILE: &str = "steps.jsonl";

/// One evaluation of a baseline's candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// Position in the run, from 0.
    pub index: usize,
    /// The island (0 for methods without islands).
    pub island: usize,
    /// The parent step, if the candidate was made from one.
    pub parent: Option<usize>,
    /// What the candidate is (a harness name, or a program's content hash).
    pub candidate: String,
    /// The candidate program as TOML (program-evolving methods).
    pub program: Option<String>,
    /// What made it (`seed`, an edit, a sample number).
    pub origin: String,
    /// Its evaluation on the search tasks.
    pub evaluation: Evaluation,
    /// When it was recorded (seconds since the Unix epoch).
    pub at: f64,
    /// The tasks whose start this step's discoveries replaced (with `promote` on).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub promoted: Vec<Promotion>,
}

/// A line of `steps.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum BaselineRecord {
    /// An evaluation.
    Step(Box<StepRecord>),
    /// The validation of the best candidate (after the budget is spent).
    Validation {
        /// The validated step.
        step: usize,
        /// Its evaluation on the validation tasks.
        evaluation: Evaluation,
    },
}

/// A baseline run's records, open for appending.
pub struct BaselineLog {
    log: AppendLog<BaselineRecord>,
    /// The steps so far.
    pub steps: Vec<StepRecord>,
    /// The validation, once made.
    pub validation: Option<(usize, Evaluation)>,
}

impl BaselineLog {
    /// Every promotion its steps recorded, in order.
    pub fn promotions(&self) -> impl Iterator<Item = &Promotion> {
        self.steps.iter().flat_map(|s| &s.promoted)
    }

    /// Opens the run's records in `dir`, creating them if new.
    pub fn open(dir: &Path) -> Result<BaselineLog> {
        let path = dir.join(STEPS_FILE);
        let (log, records) = match AppendLog::create(&path)? {
            Some(log) => (log, Vec::new()),
            None => AppendLog::open(&path)?,
        };
        let mut opened = BaselineLog {
            log,
            steps: Vec::new(),
            validation: None,
        };
        for record in records {
            opened.apply(record);
        }
        Ok(opened)
    }

    fn apply(&mut self, record: BaselineRecord) {
        match record {
            BaselineRecord::Step(step) => self.steps.push(*step),
            BaselineRecord::Validation { step, evaluation } => {
                self.validation = Some((step, evaluation))
            }
        }
    }

    /// Records a step (its index and time are filled in here).
    pub fn step(&mut self, mut step: StepRecord) -> Result<()> {
        step.index = self.steps.len();
        step.at = unix_seconds();
        let record = BaselineRecord::Step(Box::new(step));
        self.log.append(&record)?;
        self.apply(record);
        Ok(())
    }

    /// Records the validation of step `step`.
    pub fn validation(&mut self, step: usize, evaluation: Evaluation) -> Result<()> {
        let record = BaselineRecord::Validation { step, evaluation };
        self.log.append(&record)?;
        self.apply(record);
        Ok(())
    }

    /// Validates the best step within `budget` CPU seconds once (not again on resume):
    /// `evaluate` runs that step's candidate on the validation tasks. `false` when it was
    /// cancelled (`None`: nothing is recorded; running it again resumes).
    pub fn validate_best(
        &mut self,
        budget: f64,
        evaluate: impl FnOnce(&StepRecord) -> Result<Option<Evaluation>>,
    ) -> Result<bool> {
        if self.validation.is_some() {
            return Ok(true);
        }
        if let Some(best) = self.best(budget) {
            let Some(evaluation) = evaluate(&self.steps[best])? else {
                return Ok(false);
            };
            self.validation(best, evaluation)?;
        }
        Ok(true)
    }

    /// CPU seconds the search tasks took so far.
    pub fn cpu_seconds(&self) -> f64 {
        self.steps
            .iter()
            .map(|s| s.evaluation.spent_cpu_seconds())
            .sum()
    }

    /// CPU seconds validating the best step's candidate within `budget` will take, estimated from
    /// its CPU per search task times `validation_tasks`: the validation tasks' cost in search
    /// tasks (0 before any step).
    pub fn validation_estimate(&self, budget: f64, validation_tasks: f64) -> f64 {
        self.best(budget).map_or(0.0, |best| {
            let evaluation = &self.steps[best].evaluation;
            let per_task = evaluation.cpu_seconds() / evaluation.tasks.len().max(1) as f64;
            per_task * validation_tasks
        })
    }

    /// The step whose candidate is validated: the best by quality, then cost, of the steps
    /// that ended within `budget` CPU seconds (as the benchmark reads the run).
    pub fn best(&self, budget: f64) -> Option<usize> {
        let counted = within_budget(self.steps.iter().map(|s| &s.evaluation), budget);
        best_candidate(self.steps[..counted].iter().map(|s| &s.evaluation))
    }

    /// The run as the benchmark sees it (its start time is the benchmark's to fill in).
    pub fn trajectory(&self) -> Trajectory {
        let steps = self
            .steps
            .iter()
            .map(|s| TrajectoryStep {
                evaluation: s.evaluation.clone(),
                validation: self
                    .validation
                    .as_ref()
                    .filter(|(i, _)| *i == s.index)
                    .map(|(_, v)| v.clone()),
                at: Some(s.at),
            })
            .collect();
        Trajectory {
            started_at: 0.0,
            steps,
        }
    }
}
