//! Verification: validity, the float64 score with its error bound, the exact score, and whether
//! a construction beats a rival (a file or a value) by the problem's threshold, decided exactly.

use crate::error::Violation;
use crate::exact::rational::{decimal_of_f64, decimal_string, to_f64, SCORE_DIGITS};
use crate::problems::{check_length, Problem};
use num_rational::BigRational;
use num_traits::Signed;
use serde::Serialize;
use std::time::Instant;

/// Which scores to compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Float64 through the FFT only.
    Fast,
    /// Exact rational only.
    Exact,
    /// Both, and their difference.
    Both,
}

/// Options of a verification.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Which scores to compute.
    pub mode: Mode,
    /// Score arrays longer than the arena accepts instead of rejecting them.
    pub allow_oversize: bool,
}

/// Seconds spent in each part of a verification.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Timings {
    /// Reading and parsing the file (filled in by the caller that read it).
    pub parse_seconds: f64,
    /// Checking the values against the problem's rules.
    pub check_seconds: f64,
    /// The float64 score.
    pub fast_seconds: f64,
    /// The exact score.
    pub exact_seconds: f64,
}

/// The outcome of verifying one valid construction.
#[derive(Clone, Debug)]
pub struct Verification {
    /// Number of values.
    pub n: usize,
    /// Float64 score and its a-priori error bound, when computed.
    pub fast: Option<crate::problems::FastScore>,
    /// Exact score, when computed.
    pub exact: Option<BigRational>,
    /// Where the time went.
    pub timings: Timings,
}

impl Verification {
    /// `|score_f64 − exact|` when both were computed, rounded to float64.
    pub fn abs_diff(&self) -> Option<f64> {
        let (fast, exact) = (self.fast?, self.exact.as_ref()?);
        Some(to_f64(
            &(crate::exact::rational::from_f64(fast.value) - exact).abs(),
        ))
    }
}

/// Checks the values against the problem's rules, then scores them as `options` asks.
pub fn verify(
    problem: &dyn Problem,
    values: &[f64],
    options: Options,
) -> Result<Verification, Violation> {
    let start = Instant::now();
    if !options.allow_oversize || values.is_empty() {
        check_length(problem.spec(), values.len())?;
    }
    problem.check(values)?;
    let mut timings = Timings {
        check_seconds: start.elapsed().as_secs_f64(),
        ..Timings::default()
    };
    let fast = matches!(options.mode, Mode::Fast | Mode::Both).then(|| {
        let start = Instant::now();
        let score = problem.score_fast(values);
        timings.fast_seconds = start.elapsed().as_secs_f64();
        score
    });
    let exact = matches!(options.mode, Mode::Exact | Mode::Both).then(|| {
        let start = Instant::now();
        let score = problem.score_exact(values);
        timings.exact_seconds = start.elapsed().as_secs_f64();
        score
    });
    Ok(Verification {
        n: values.len(),
        fast,
        exact,
        timings,
    })
}

/// Writes a float64 threshold as the shortest decimal string that reads back as it (`1e-5`): in
/// `--json` every value a comparison decides on (scores, improvements, the threshold) is a
/// decimal string.
pub fn threshold_text<S: serde::Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&format_args!("{value:e}"))
}

/// Whether a score beats a rival score by the problem's threshold, decided on exact values.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// What the rival is (a file path, a value, or a record's holder).
    pub against: String,
    /// The rival's exact score, as a decimal.
    pub against_score: String,
    /// How much better the score is (positive = better), exact, as a decimal of 40 significant
    /// digits.
    pub improvement: String,
    /// The problem's threshold (a decimal string in JSON, see [`threshold_text`]).
    #[serde(serialize_with = "threshold_text")]
    pub min_improvement: f64,
    /// Whether `improvement ≥ min_improvement`.
    pub beats: bool,
}

/// Compares `score` with `rival` in the problem's direction against its `min_improvement`.
pub fn compare(
    problem: &dyn Problem,
    score: &BigRational,
    rival: &BigRational,
    label: &str,
) -> Comparison {
    let spec = problem.spec();
    let improvement = match spec.direction {
        crate::problems::Direction::Minimize => rival - score,
        crate::problems::Direction::Maximize => score - rival,
    };
    Comparison {
        against: label.to_string(),
        against_score: decimal_string(rival, SCORE_DIGITS),
        improvement: decimal_string(&improvement, SCORE_DIGITS),
        min_improvement: spec.min_improvement,
        beats: improvement >= spec.min_improvement_exact(),
    }
}

/// Compares with the problem file's current arena #1 record, if it has one.
pub fn compare_with_arena_leader(problem: &dyn Problem, score: &BigRational) -> Option<Comparison> {
    let leader = problem.spec().arena_first()?;
    let label = format!("{} ({}, from the problem file)", leader.holder, leader.date);
    Some(compare(
        problem,
        score,
        &decimal_of_f64(leader.value),
        &label,
    ))
}
