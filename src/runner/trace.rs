//! What a run records: the best score over time and evaluations, and one record per stage.

use serde::{Deserialize, Serialize};

/// The best score at a moment of the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TracePoint {
    /// Wall seconds since the run started.
    pub seconds: f64,
    /// Objective evaluations so far.
    pub evaluations: u64,
    /// Best float64 score so far.
    pub score: f64,
    /// Length of the best construction (absent in traces written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<usize>,
}

/// What one stage did.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StageRecord {
    /// Where the stage sits in the program, e.g. `steps[1].body[0]`.
    pub path: String,
    /// The stage's kind, e.g. `lbfgs`.
    pub kind: String,
    /// Float64 score of its input.
    pub score_before: f64,
    /// Float64 score of its output (after repair).
    pub score_after: f64,
    /// Improvement in the problem's direction (positive = better).
    pub gain: f64,
    /// Objective evaluations it used.
    pub evaluations: u64,
    /// Wall seconds it took.
    pub seconds: f64,
    /// CPU seconds of the process while it ran.
    pub cpu_seconds: f64,
    /// Last smoothing temperature, if it used one.
    pub beta: Option<f64>,
    /// Length of its output.
    pub n: usize,
    /// Lags within 1e-9 (relative) of the maximum lag after the stage.
    pub active_set: usize,
    /// Cells exactly zero after the stage.
    pub dead_cells: usize,
    /// Cells the problem's repair had to change after the stage.
    pub repaired: usize,
    /// What the stage reported for the user (e.g. why a `command` stage's output was refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Why a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The program ran to its end before the budget did: its loops' convergence tests held
    /// (or it has no loop).
    Converged,
    /// The evaluation budget ran out.
    Evaluations,
    /// The wall-clock budget ran out.
    Deadline,
    /// The run was cancelled (e.g. Ctrl-C).
    Interrupted,
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StopReason::Converged => "converged (the program's stopping tests held)",
            StopReason::Evaluations => "evaluation budget used",
            StopReason::Deadline => "time budget used",
            StopReason::Interrupted => "interrupted",
        })
    }
}

/// The run's history.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Trace {
    /// Best score after each improvement.
    pub points: Vec<TracePoint>,
    /// One record per stage executed.
    pub stages: Vec<StageRecord>,
    /// Why the run stopped (absent in traces written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<StopReason>,
    /// When the program's own tests ended it ([`StopReason::Converged`]): the last loop whose
    /// test held, and what the stages of its last pass reported, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub converged_because: Option<String>,
}

/// Number of lags within `tolerance` (relative to the peak's magnitude) of the peak.
pub fn active_set(lags: &[f64], tolerance: f64) -> usize {
    let peak = lags.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x));
    let slack = tolerance * peak.abs().max(f64::MIN_POSITIVE);
    lags.iter().filter(|&&x| x >= peak - slack).count()
}

/// CPU seconds (user + system) of the calling thread so far; 0 where unavailable.
///
/// Per thread, so that runs evaluated in parallel each count only their own work.
pub fn cpu_seconds() -> f64 {
    stat_cpu_seconds("/proc/thread-self/stat")
}

/// CPU seconds (user + system) of the whole process so far, every thread's; 0 where
/// unavailable.
pub fn process_cpu_seconds() -> f64 {
    stat_cpu_seconds("/proc/self/stat")
}

/// utime + stime of a `/proc/…/stat` file (fields 14 and 15, clock ticks at 100 Hz), in seconds.
fn stat_cpu_seconds(path: &str) -> f64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|stat| {
            let after = stat.rsplit_once(')')?.1;
            let fields: Vec<&str> = after.split_whitespace().collect();
            let ticks =
                fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
            Some(ticks / 100.0)
        })
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_set_counts_near_ties() {
        assert_eq!(active_set(&[1.0, 0.5, 1.0 - 1e-12, 1.0 - 1e-6], 1e-9), 2);
        assert_eq!(active_set(&[-1.0, -2.0], 1e-9), 1);
    }
}
