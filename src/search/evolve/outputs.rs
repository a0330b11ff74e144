//! The run's outputs beside its lineage: `best.json`, the best construction so far (any task),
//! and `discoveries/`, every new best beyond the suite's record — each with its provenance.

use super::Search;
use crate::construction::read_record_values;
use crate::error::{write_error, MiloError, Result, Violation};
use crate::exact::rational::decimal_string;
use crate::problems::Problem;
use crate::search::evaluation::Improvement;
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

impl Search {
    /// Saves `d` to `discoveries/` (named by its score, task and harness); returns the path.
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
        self.write_construction(&path, d, harness, node)?;
        Ok(path)
    }

    /// Replaces `best.json` (and its provenance) with `d`, the run's new best construction.
    pub(super) fn save_best(&mut self, d: &Improvement, harness: &str, node: &str) -> Result<()> {
        self.write_construction(&self.dir().join(BEST_FILE), d, harness, node)?;
        self.best = Some(d.exact.clone());
        Ok(())
    }

    /// Writes `d`'s values to `path` and its provenance beside it (`<stem>.provenance.json`).
    fn write_construction(
        &self,
        path: &Path,
        d: &Improvement,
        harness: &str,
        node: &str,
    ) -> Result<()> {
        crate::construction::write_values(path, &d.values)?;
        let provenance = serde_json::json!({
            "problem": self.suite.problem.slug(),
            "score_exact": decimal_string(&d.exact, 40),
            "record": decimal_string(&self.suite.record, 40),
            "beats_record": self.suite.problem.spec().direction.better(&d.exact, &self.suite.record),
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
