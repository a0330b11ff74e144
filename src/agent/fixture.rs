//! A small task the writers' tests share: a start on a problem, its exact score and a parent
//! program.

use super::Assignment;
use crate::problems::{by_slug, Problem};
use crate::program::Program;
use num_rational::BigRational;

/// A start, its exact score and a parent program on one problem.
pub(super) struct TaskFixture {
    pub problem: Box<dyn Problem>,
    pub start: Vec<f64>,
    pub start_exact: BigRational,
    pub parent: Program,
}

/// A smooth, positive, unoptimized start of `n` values.
pub(super) fn smooth_start(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let x = (i as f64 + 0.5) / n as f64;
            1.0 + 0.3 * (7.0 * x).sin() - 0.2 * x
        })
        .collect()
}

impl TaskFixture {
    /// The problem `slug` from `start`, with `parent` (program TOML) as the parent.
    pub fn new(slug: &str, start: Vec<f64>, parent: &str) -> TaskFixture {
        let problem = by_slug(slug).unwrap();
        let start_exact = problem.score_exact(&start);
        let parent = Program::parse(parent, std::path::Path::new("p.toml")).unwrap();
        TaskFixture {
            problem,
            start,
            start_exact,
            parent,
        }
    }

    /// The third problem from a smooth 120-value start, with `parent` (program TOML).
    pub fn with_parent(parent: &str) -> TaskFixture {
        TaskFixture::new(
            "third-autocorrelation-inequality",
            smooth_start(120),
            parent,
        )
    }

    /// The third problem from a smooth 120-value start, with the `lbfgs-cascade` seed program
    /// (raw values) as the parent.
    pub fn cascade() -> TaskFixture {
        TaskFixture::with_parent(
            &include_str!("../../problems/optimizers/lbfgs-cascade.toml").replace("square", "raw"),
        )
    }

    /// The task on `evaluations` with `seed`.
    pub fn assignment(&self, evaluations: u64, seed: u64) -> Assignment<'_> {
        Assignment {
            problem: self.problem.as_ref(),
            start: &self.start,
            start_exact: &self.start_exact,
            parent: &self.parent,
            seconds: None,
            evaluations: Some(evaluations),
            seed,
            library: &[],
            cancel: Default::default(),
        }
    }
}
