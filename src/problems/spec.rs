//! A problem's data file (`problems/<slug>.toml`): what the arena says about it and its records.

use crate::error::{MiloError, Result};
use crate::exact::rational::decimal_of_f64;
use num_rational::BigRational;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Whether lower or higher scores are better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Lower is better.
    Minimize,
    /// Higher is better.
    Maximize,
}

impl Direction {
    /// Whether `a` is strictly better than `b` in this direction.
    pub fn better<T: PartialOrd>(self, a: &T, b: &T) -> bool {
        match self {
            Direction::Minimize => a < b,
            Direction::Maximize => a > b,
        }
    }

    /// The order that puts the better of `a` and `b` first (equal when neither is better).
    pub fn best_first<T: PartialOrd>(self, a: &T, b: &T) -> std::cmp::Ordering {
        if self.better(a, b) {
            std::cmp::Ordering::Less
        } else if self.better(b, a) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    }

    /// How much `a` improves on `b` in this direction (negative when it is worse).
    pub fn gain(self, a: f64, b: f64) -> f64 {
        match self {
            Direction::Minimize => b - a,
            Direction::Maximize => a - b,
        }
    }
}

/// One known record value.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnownRecord {
    /// The score.
    pub value: f64,
    /// Who set it.
    pub holder: String,
    /// When (year, or year-month).
    pub date: String,
    /// Number of samples, when known.
    pub length: Option<usize>,
}

/// Everything `problems/<slug>.toml` states about a problem.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProblemSpec {
    /// The arena's identifier, e.g. `first-autocorrelation-inequality`.
    pub slug: String,
    /// Human title.
    pub title: String,
    /// Whether lower or higher scores are better.
    pub direction: Direction,
    /// What a construction samples.
    pub domain: String,
    /// The scoring formula in words.
    pub score: String,
    /// The arena's validity rules in words.
    pub constraints: Vec<String>,
    /// The arena's threshold: a new #1 must beat the old one by at least this much.
    pub min_improvement: f64,
    /// The arena's maximum number of values.
    pub max_len: usize,
    /// Where the problem and its records come from.
    pub references: Vec<String>,
    /// Best proven lower bound on the constant, when known.
    pub lower_bound: Option<f64>,
    /// Best proven upper bound on the constant, when known.
    pub upper_bound: Option<f64>,
    /// Known record values.
    pub records: Vec<KnownRecord>,
}

impl ProblemSpec {
    /// The arena's current #1 as the problem file records it (a record whose holder starts
    /// with `arena #1`), if it has one.
    pub fn arena_first(&self) -> Option<&KnownRecord> {
        self.records
            .iter()
            .find(|r| r.holder.starts_with("arena #1"))
    }

    /// Parses a problem data file's text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &Path) -> Result<ProblemSpec> {
        toml::from_str(text).map_err(|e| MiloError::malformed_toml(origin, text, &e))
    }

    /// The threshold as the exact decimal written in the data file.
    pub fn min_improvement_exact(&self) -> BigRational {
        decimal_of_f64(self.min_improvement)
    }

    /// The best of the known records in the problem's direction.
    pub fn best_record(&self) -> Option<&KnownRecord> {
        self.records.iter().reduce(|best, r| {
            if self.direction.better(&r.value, &best.value) {
                r
            } else {
                best
            }
        })
    }
}
