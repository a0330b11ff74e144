//! What a benchmark produces, as stored in `BENCH_DIR/results.json`: every run's summary and
//! best-so-far curve, per method the mean and 95% interval of the best verified score and of the
//! quality, the null band, the pairwise verdicts, and the ladder of known values.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Which batch of seeds a run belongs to: the first, or the independent re-run with fresh seeds
/// that a verdict must hold on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Batch {
    /// The first batch of seeds.
    First,
    /// The re-run with fresh seeds.
    Rerun,
}

impl Batch {
    /// `first` or `rerun`.
    pub fn as_str(self) -> &'static str {
        match self {
            Batch::First => "first",
            Batch::Rerun => "rerun",
        }
    }
}

/// One point of a run's best-so-far curve, after one evaluation (one node or one step).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// CPU seconds spent on search tasks so far.
    pub cpu_seconds: f64,
    /// Wall seconds since the run started.
    pub wall_seconds: f64,
    /// Best verified score on any search task so far (the start's score before any gain),
    /// counting every evaluation, also one that overran the budget.
    pub best: f64,
}

/// One finished run of one method.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The method.
    pub method: String,
    /// The run's seed.
    pub seed: u64,
    /// First batch or re-run.
    pub batch: Batch,
    /// The run's directory, relative to the benchmark directory.
    pub dir: String,
    /// CPU seconds spent on search tasks (the last evaluation may overrun the budget).
    pub cpu_seconds: f64,
    /// CPU seconds the whole run took in the benchmark's process, summed over its resumed
    /// segments: search, validation, re-scoring, parents' re-runs, everything (absent in older
    /// benchmarks, and where evaluations ran in other processes: an executor other than local
    /// threads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_cpu_seconds: Option<f64>,
    /// Wall seconds of the run.
    pub wall_seconds: f64,
    /// Evaluations made (nodes or steps).
    pub steps: usize,
    /// Of those, the ones that ended within the CPU budget: only they count for the best score,
    /// the quality and the validation (an evaluation that overruns the budget is not counted).
    pub counted_steps: usize,
    /// Best verified score on the search tasks, exact (40 significant digits).
    pub best_exact: String,
    /// The same as a float.
    pub best: f64,
    /// Quality (gain in units of `min_improvement`, aggregated as the run's quality) of the
    /// run's best candidate on the search tasks.
    pub quality: f64,
    /// Best verified score of the best candidate on the validation tasks, exact.
    pub validation_best_exact: Option<String>,
    /// The same as a float.
    pub validation_best: Option<f64>,
    /// Quality of the best candidate on the validation tasks.
    pub validation_quality: Option<f64>,
    /// Best-so-far after every evaluation.
    pub curve: Vec<CurvePoint>,
}

/// Mean and 95% confidence interval (Student's t) of a sample.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Sample size.
    pub n: usize,
    /// Mean.
    pub mean: f64,
    /// Lower end of the 95% interval (the mean when n < 2).
    pub low: f64,
    /// Upper end.
    pub high: f64,
}

/// One method's results over its runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MethodSummary {
    /// The method.
    pub method: String,
    /// Best verified search score over the first batch.
    pub best: Interval,
    /// Quality over the first batch.
    pub quality: Interval,
    /// Best verified search score over the re-run batch (if run).
    pub rerun_best: Option<Interval>,
    /// Best validation score over all runs.
    pub validation_best: Option<Interval>,
    /// Validation quality over all runs.
    pub validation_quality: Option<Interval>,
    /// The null band: the spread (max − min) of the best score between the first batch's runs,
    /// identical but for the seed.
    pub null_band: f64,
    /// The null band of the re-run batch.
    pub rerun_null_band: Option<f64>,
}

/// The verdict on one pair of methods.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairVerdict {
    /// First method.
    pub a: String,
    /// Second method.
    pub b: String,
    /// How much better `a`'s mean best score is than `b`'s in the first batch (positive: `a`
    /// better, in the problem's direction).
    pub advantage: f64,
    /// The larger of the two methods' null bands.
    pub null_band: f64,
    /// The advantage in the re-run batch.
    pub rerun_advantage: Option<f64>,
    /// The larger null band of the re-run batch.
    pub rerun_null_band: Option<f64>,
    /// `a better`, `b better`, `within the null band` or `not confirmed on the re-run`.
    pub verdict: String,
}

/// One rung of the ladder of known values and benchmark results, best first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LadderRung {
    /// What it is: a method's mean best, or a known value (AlphaEvolve, TTT-Discover, the best
    /// frozen start, the arena's #1).
    pub label: String,
    /// Whether it is a benchmark method (true) or a known value (false).
    pub method: bool,
    /// Its score.
    pub value: f64,
}

/// Everything a benchmark produced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchResults {
    /// The problem's slug.
    pub problem: String,
    /// `minimize` or `maximize`.
    pub direction: String,
    /// The suite file.
    pub suite: String,
    /// Each run's CPU budget.
    pub cpu_seconds: f64,
    /// The arena's #1 score from the problem file, if it lists one.
    pub arena_first: Option<f64>,
    /// Per method, in the order given.
    pub methods: Vec<MethodSummary>,
    /// Every run.
    pub runs: Vec<RunSummary>,
    /// Every pair of methods.
    pub verdicts: Vec<PairVerdict>,
    /// Known values and methods' mean bests, best first.
    pub ladder: Vec<LadderRung>,
    /// Where each transfer method's harness or program came from (absent: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transfers: Vec<Provenance>,
}

/// Where a transfer method's frozen harness or program came from
/// (`methods/<kind>-<label>.provenance.json`; see [`super::methods::transfer`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The method's name (`harness:<label>` or `program:<label>`).
    pub method: String,
    /// The file as given.
    pub source: PathBuf,
    /// Sha256 of the frozen text.
    pub sha256: String,
    /// The run the file lies in (`RUN/harnesses/<hash>.toml`), when it does.
    pub source_run: Option<PathBuf>,
    /// That run's suite file.
    pub source_suite: Option<PathBuf>,
    /// That run's suite pin.
    pub source_suite_pin: Option<String>,
    /// How far the benchmark's suite is from that suite. Absent when the source suite is unknown
    /// or unreadable.
    #[serde(default)]
    pub level: Option<TransferLevel>,
}

/// How far a transfer goes: from the suite a harness or program was evolved on to the
/// benchmark's suite (the held-out starts of any suite are its validation tasks).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TransferLevel {
    /// The source's own suite (the same pin): its search starts with new seeds.
    SameSuite,
    /// Another suite that shares a start (by content) with the source's: in-distribution.
    SharedStart,
    /// Another suite of the same problem, no start shared.
    SameProblem,
    /// Another problem.
    AnotherProblem,
}

impl TransferLevel {
    /// The level as the tables say it.
    pub fn describe(self) -> &'static str {
        match self {
            TransferLevel::SameSuite => "new seeds (the source's suite)",
            TransferLevel::SharedStart => "in-distribution (a start shared)",
            TransferLevel::SameProblem => "same problem, other starts",
            TransferLevel::AnotherProblem => "another problem",
        }
    }
}
