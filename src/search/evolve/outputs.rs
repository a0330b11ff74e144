//! The run's outputs beside its lineage: `best.json`, the best construction so far (any task),
//! and `discoveries/`, every construction of a task beyond the suite's record — each with its
//! provenance, its exact score computed again from its values, and the problem's records it
//! passes.

use super::Search;
use crate::construction::read_record_values;
use crate::error::{write_error, MiloError, Result, Violation};
use crate::exact::rational::{decimal_of_f64, decimal_string};
use crate::problems::Problem;
use crate::search::evaluation::Improvement;
use crate::verify::compare;
use num_rational::BigRational;
use std::path::{Path, PathBuf};

/// The run's best construction so far (any task), beside `best.provenance.json`.
pub const BEST_FILE: &str = "best.json";

/// Reads a run's `best.json` (at `path`) and checks it against `problem`'s rules: a file damaged
/// or edited since it was written (all zeros, a negative value…) is a malformed input naming it.
pub fn read_best(path: &Path, problem: &dyn Problem) -> Result<Vec<f64>> {
    let values = read_record_values(path).map_err(|e| match e {
        MiloError::Invalid(v) => malformed_best(path, &v),
        other => other,
    })?;
    problem
        .check(&values)
        .map_err(|v| malformed_best(path, &v))?;
    Ok(values)
}

fn malformed_best(path: &Path, violation: &Violation) -> MiloError {
    MiloError::Malformed {
        path: path.to_path_buf(),
        message: format!(
            "not a valid construction of this run ({violation}); restore or delete it"
        ),
    }
}

/// The problem's known records (`problems/<slug>.toml`: the arena's #1, published marks) that
/// `score` beats by the problem's minimum improvement, decided exactly: holder, value, date and
/// the exact improvement of each.
pub fn bars_passed(problem: &dyn Problem, score: &BigRational) -> Vec<serde_json::Value> {
    problem
        .spec()
        .records
        .iter()
        .filter_map(|record| {
            let label = format!("{} ({})", record.holder, record.date);
            let comparison = compare(problem, score, &decimal_of_f64(record.value), &label);
            comparison.beats.then(|| {
                serde_json::json!({
                    "holder": record.holder,
                    "value": record.value,
                    "date": record.date,
                    "improvement": comparison.improvement,
                })
            })
        })
        .collect()
}

impl Search {
    /// Saves `d` to `discoveries/` (named by its score, task and harness), its exact score
    /// computed again from its values; returns the path.
    pub(super) fn save_discovery(
        &self,
        d: &Improvement,
        harness: &str,
        node: &str,
    ) -> Result<PathBuf> {
        let dir = self.dir().join("discoveries");
        std::fs::create_dir_all(&dir).map_err(write_error(&dir))?;
        let score = decimal_string(&d.exact, 20);
        let task: String = d
            .task
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = dir.join(format!("{score}-{task}-{harness}.json"));
        // Scored again here, from the values written, not taken from the task's report (a
        // 40-digit decimal, compared at that precision).
        let verified = decimal_string(&self.suite.problem.score_exact(&d.values), 40);
        if verified != decimal_string(&d.exact, 40) {
            say!(
                "milo: discovery {}: its exact score is {verified}, not the {} its task reported",
                path.display(),
                decimal_string(&d.exact, 40)
            );
        }
        self.write_construction(&path, d, (harness, node), Some(verified))?;
        Ok(path)
    }

    /// Replaces `best.json` (and its provenance) with `d`, the run's new best construction.
    pub(super) fn save_best(&mut self, d: &Improvement, harness: &str, node: &str) -> Result<()> {
        self.write_construction(&self.dir().join(BEST_FILE), d, (harness, node), None)?;
        self.best = Some(d.exact.clone());
        Ok(())
    }

    /// Writes `d`'s values to `path` and its provenance beside it (`<stem>.provenance.json`),
    /// with the exact score computed again from the values when `verified` holds it.
    fn write_construction(
        &self,
        path: &Path,
        d: &Improvement,
        (harness, node): (&str, &str),
        verified: Option<String>,
    ) -> Result<()> {
        crate::construction::write_values(path, &d.values)?;
        let provenance = serde_json::json!({
            "problem": self.suite.problem.slug(),
            "score_exact": decimal_string(&d.exact, 40),
            "verified_exact": verified,
            "record": decimal_string(&self.suite.record, 40),
            "beats_record": self.suite.problem.spec().direction.better(&d.exact, &self.suite.record),
            "bars_passed": bars_passed(self.suite.problem.as_ref(), &d.exact),
            "task": d.task,
            "start": d.start,
            "seed": d.seed,
            "node": node,
            "harness": harness,
            "program": d.program,
            "suite": self.suite.path,
            "found_at": humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        });
        let provenance_path = path.with_extension("provenance.json");
        let text = serde_json::to_string_pretty(&provenance).expect("JSON");
        crate::atomic_file::write(&provenance_path, text.as_bytes())
    }
}
