//! Reviving dead cells: the move a `f = v²` polish cannot make. A cell at zero has `v = 0`, where
//! the chain rule zeroes its gradient, so L-BFGS on `v` never lifts it even when raising it would
//! lower the score (a KKT violation of the problem with `f ≥ 0`; CodexProLong's gain on the
//! first problem's 65,536-sample basin came from polishing the values directly, where such cells
//! can grow). This stage reads the surrogate's gradient with respect to the values at a high β,
//! lifts the dead cells whose gradient says the score falls as they rise (the steepest first) to
//! a small value, re-polishes with L-BFGS on `v²` (where the lifted cells now have a gradient
//! and can grow or die again), and keeps the result only if the true score is better than the
//! start's ([`super::truly_better`]); else it returns the start.
//!
//! For problems whose values are not `f ≥ 0` under a square parameterisation (Erdős, third) it
//! has no dead cells to lift, and returns the start with a note saying so.

use super::lbfgs::Lbfgs;
use super::{at_least_one, betas, fraction, positive, truly_better, Stage, StageOutcome};
use super::{Tunable, TuneRange};
use crate::objective::SmoothMaxName;
use crate::optimize::{Budget, Parameterisation};
use crate::problems::Problem;
use serde::{Deserialize, Serialize};

/// Lift the dead cells that the gradient says should live, re-polish, keep it only if better.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Revive {
    /// The polish after the lift: its β cascade (the first β also reads the gradient).
    #[serde(default = "default_betas")]
    pub betas: Vec<f64>,
    /// The lifted value, relative to the largest value.
    #[serde(default = "default_size")]
    pub size: f64,
    /// The fraction of the dead cells with a descent gradient that are lifted, steepest first.
    #[serde(default = "default_fraction")]
    pub fraction: f64,
    /// L-BFGS iterations per β of the polish.
    #[serde(default = "default_iterations")]
    pub iterations: u64,
    /// L-BFGS history of the polish.
    #[serde(default = "default_history")]
    pub history: usize,
}

fn default_betas() -> Vec<f64> {
    vec![1e10, 3.162e10, 1e11]
}
fn default_size() -> f64 {
    1e-4
}
fn default_fraction() -> f64 {
    1.0
}
fn default_iterations() -> u64 {
    2_000
}
fn default_history() -> usize {
    200
}

/// The tunable parameters of a revival.
const TUNABLE: &[Tunable] = &[
    Tunable::new("betas", TuneRange::Positive),
    Tunable::new("size", TuneRange::Fraction),
    Tunable::new("fraction", TuneRange::Fraction),
    Tunable::new("iterations", TuneRange::Count(10_000_000)),
    Tunable::new("history", TuneRange::Count(500)),
];

impl Stage for Revive {
    fn kind(&self) -> &'static str {
        "revive"
    }

    fn spends_evaluations(&self) -> bool {
        true
    }

    fn check(&self, path: &str) -> Result<(), String> {
        betas(path, "betas", &self.betas)?;
        positive(path, "size", self.size)?;
        fraction(path, "size", self.size)?;
        fraction(path, "fraction", self.fraction)?;
        at_least_one(path, "iterations", self.iterations as usize)?;
        at_least_one(path, "history", self.history)
    }

    fn tunable(&self) -> &'static [Tunable] {
        TUNABLE
    }

    /// Lifts, polishes and keeps the result only if truly better (see the module documentation);
    /// one evaluation for the gradient, then the polish's. Deterministic: the seed is unused.
    fn run(
        &self,
        problem: &dyn Problem,
        start: &[f64],
        budget: &Budget,
        _seed: u64,
    ) -> StageOutcome {
        let unchanged = |note: String| StageOutcome {
            note: Some(note),
            ..StageOutcome::plain(start.to_vec())
        };
        if problem.default_parameterisation() != Parameterisation::Square {
            return unchanged("revive: this problem's values have no dead cells to lift".into());
        }
        let Some(lifted) = self.lift(problem, start, budget) else {
            return unchanged("revive: no dead cell has a descent gradient".into());
        };
        let (count, lifted) = lifted;
        let polish = Lbfgs::log_sum_exp(
            problem,
            Some(Parameterisation::Square),
            self.betas.clone(),
            self.history,
            self.iterations,
        );
        let polished = polish.run(problem, &lifted, budget, 0).values;
        if truly_better(problem, &polished, start) {
            StageOutcome {
                values: polished,
                beta: self.betas.last().copied(),
                note: Some(format!("revive: lifted {count} dead cells; kept")),
            }
        } else {
            unchanged(format!(
                "revive: lifted {count} dead cells; the polish was not better: start kept"
            ))
        }
    }
}

impl Revive {
    /// The start with its dead cells of steepest descent lifted to `size · max`, and how many,
    /// or `None` when none has a descent gradient (or the budget refuses the gradient).
    fn lift(
        &self,
        problem: &dyn Problem,
        start: &[f64],
        budget: &Budget,
    ) -> Option<(usize, Vec<f64>)> {
        budget.try_spend().ok()?;
        let n = start.len();
        let mut objective = problem.objective(n, SmoothMaxName::LogSumExp.build(self.betas[0]));
        let mut gradient = vec![0.0; n];
        objective.value_and_gradient(start, &mut gradient);
        let mut descending: Vec<usize> = (0..n)
            .filter(|&j| start[j] == 0.0 && gradient[j] < 0.0)
            .collect();
        if descending.is_empty() {
            return None;
        }
        descending.sort_by(|&a, &b| gradient[a].total_cmp(&gradient[b]).then(a.cmp(&b)));
        let count = ((self.fraction * descending.len() as f64).ceil() as usize).max(1);
        let top = start.iter().fold(0.0f64, |m, &x| m.max(x));
        let mut lifted = start.to_vec();
        for &j in descending.iter().take(count) {
            lifted[j] = self.size * top;
        }
        Some((count.min(descending.len()), lifted))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problems::by_slug;

    const FIRST: &str = "first-autocorrelation-inequality";

    /// A bump with a hole in the middle: the hole's cells are dead, and raising them lowers the
    /// first problem's score (the autoconvolution's peak sits at the centre, fed by the sides).
    fn holed(n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| {
                let t = (i as f64 + 0.5) / n as f64;
                if (0.4..0.6).contains(&t) {
                    0.0
                } else {
                    1.0 + 0.3 * (7.0 * t).sin()
                }
            })
            .collect()
    }

    fn revive(betas: Vec<f64>) -> Revive {
        Revive {
            betas,
            size: 1e-2,
            fraction: 1.0,
            iterations: 200,
            history: 20,
        }
    }

    fn exact(values: &[f64]) -> num_rational::BigRational {
        by_slug(FIRST).unwrap().score_exact(values)
    }

    #[test]
    fn lifted_cells_grow_and_the_exact_score_never_gets_worse() {
        let problem = by_slug(FIRST).unwrap();
        let start = holed(200);
        let out = revive(vec![1e2, 1e3]).run(problem.as_ref(), &start, &Budget::unlimited(), 0);
        assert!(exact(&out.values) < exact(&start), "{:?}", out.note);
        let revived = (0..200).filter(|&j| start[j] == 0.0 && out.values[j] > 0.0);
        assert!(revived.count() > 0, "no dead cell came back");
    }

    #[test]
    fn a_polish_that_the_true_score_does_not_confirm_is_refused() {
        // At β = 1e-3 the surrogate is nearly the mean of the lags, not their maximum: its polish
        // lowers the surrogate but not the true score, and the start comes back unchanged.
        let problem = by_slug(FIRST).unwrap();
        let start = holed(120);
        let stage = revive(vec![1e-3]);
        let mut objective = problem.objective(120, SmoothMaxName::LogSumExp.build(1e-3));
        let mut g = vec![0.0; 120];
        let (lifted_count, lifted) = stage
            .lift(problem.as_ref(), &start, &Budget::unlimited())
            .unwrap();
        assert!(lifted_count > 0);
        let polished = Lbfgs::log_sum_exp(problem.as_ref(), None, vec![1e-3], 20, 200)
            .run(problem.as_ref(), &lifted, &Budget::unlimited(), 0)
            .values;
        let mut surrogate = |v: &[f64], g: &mut [f64]| objective.value_and_gradient(v, g);
        let (before, after) = (surrogate(&start, &mut g), surrogate(&polished, &mut g));
        assert!(after < before, "the surrogate improves: {before} → {after}");
        assert!(exact(&polished) >= exact(&start), "the true score does not");
        let out = stage.run(problem.as_ref(), &start, &Budget::unlimited(), 0);
        assert_eq!(out.values, start, "{:?}", out.note);
    }

    #[test]
    fn problems_without_dead_cells_and_bad_parameters_are_refused_by_name() {
        let third = by_slug("third-autocorrelation-inequality").unwrap();
        let start = vec![1.0, -0.5, 2.0, 0.0];
        let out = revive(vec![1e3]).run(third.as_ref(), &start, &Budget::unlimited(), 0);
        assert_eq!(out.values, start);
        for (stage, key) in [
            (
                Revive {
                    size: 0.0,
                    ..revive(vec![1e3])
                },
                "size",
            ),
            (
                Revive {
                    size: 2.0,
                    ..revive(vec![1e3])
                },
                "size",
            ),
            (
                Revive {
                    fraction: -1.0,
                    ..revive(vec![1e3])
                },
                "fraction",
            ),
            (revive(vec![]), "betas"),
            (revive(vec![1e3, -1.0]), "betas[1]"),
            (
                Revive {
                    iterations: 0,
                    ..revive(vec![1e3])
                },
                "iterations",
            ),
        ] {
            let err = stage.check("steps[1]").unwrap_err();
            assert!(err.starts_with(&format!("steps[1].{key}:")), "{err}");
        }
    }
}
