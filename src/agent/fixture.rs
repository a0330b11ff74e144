//! A small third-problem task the writers' tests share: a smooth 120-value start and a parent
//! program.

use super::Assignment;
use crate::problems::{by_slug, Problem};
use crate::program::Program;
use num_rational::BigRational;

/// A start, its exact score and a parent program on the third autocorrelation problem.
pub(super) struct TaskFixture {
    pub problem: Box<dyn Problem>,
    pub values: Vec<f64>,
    pub start_exact: BigRational,
    pub parent: Program,
}

impl TaskFixture {
    /// The smooth start with `parent` (program TOML) as the parent.
    pub fn with_parent(parent: &str) -> TaskFixture {
        let problem = by_slug("third-autocorrelation-inequality").unwrap();
        let values: Vec<f64> = (0..120)
            .map(|i| {
                let x = (i as f64 + 0.5) / 120.0;
                1.0 + 0.3 * (7.0 * x).sin() - 0.2 * x
            })
            .collect();
        let start_exact = problem.score_exact(&values);
        let parent = Program::parse(parent, std::path::Path::new("p.toml")).unwrap();
        TaskFixture {
            problem,
            values,
            start_exact,
            parent,
        }
    }

    /// The smooth start with the `lbfgs-cascade` seed program (raw values) as the parent.
    pub fn cascade() -> TaskFixture {
        TaskFixture::with_parent(
            &include_str!("../../problems/optimizers/lbfgs-cascade.toml").replace("square", "raw"),
        )
    }

    /// The task on `evaluations` with `seed`.
    pub fn assignment(&self, evaluations: u64, seed: u64) -> Assignment<'_> {
        Assignment {
            problem: self.problem.as_ref(),
            start: &self.values,
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
