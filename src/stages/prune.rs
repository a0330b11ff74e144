//! Monotone self-pruning (DOMAIN.md, first problem: "zero the smallest active cells, about 4% a
//! level, never regrow, a full cascade at each level"; support 89,910 → 74,489 set a record).
//!
//! Each level zeroes the smallest `fraction` of the live cells and re-optimises with those cells
//! frozen at zero (their gradient is masked, and the result is projected back onto them), so a
//! pruned cell never revives. Levels continue from the pruned and polished construction, so the
//! support only shrinks; the stage returns the best valid construction by the true score.

use super::lbfgs::Lbfgs;
use super::prune_regrow::prune;
use super::refine::{beta_ladder, default_beta_step};
use super::{at_least_one, fraction, positive, Stage, StageOutcome, Tunable, TuneRange};
use crate::optimize::{Budget, Mask, Parameterisation};
use crate::problems::Problem;
use serde::{Deserialize, Serialize};

/// Zero the smallest cells level by level, never regrowing, with a cascade at each level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prune {
    /// Fraction of the live cells zeroed per level.
    #[serde(default = "default_fraction")]
    pub fraction: f64,
    /// The most levels (the budget may end them sooner).
    #[serde(default = "default_levels")]
    pub levels: usize,
    /// Parameterisation of the cascades; absent: the problem's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameterisation: Option<Parameterisation>,
    /// First β of each level's cascade.
    #[serde(default = "default_beta_floor")]
    pub beta_floor: f64,
    /// Last β of each level's cascade.
    #[serde(default = "default_beta_ceiling")]
    pub beta_ceiling: f64,
    /// L-BFGS iterations per β level.
    #[serde(default = "default_iterations")]
    pub iterations: u64,
    /// L-BFGS history length.
    #[serde(default = "default_history")]
    pub history: usize,
}

fn default_fraction() -> f64 {
    0.04
}
fn default_levels() -> usize {
    10
}
fn default_beta_floor() -> f64 {
    1e6
}
fn default_beta_ceiling() -> f64 {
    1e10
}
fn default_iterations() -> u64 {
    300
}
fn default_history() -> usize {
    50
}

/// The tunable parameters of pruning.
const TUNABLE: &[Tunable] = &[
    Tunable::new("fraction", TuneRange::Fraction),
    Tunable::new("levels", TuneRange::Count(64)),
    Tunable::new("beta_floor", TuneRange::Positive),
    Tunable::new("beta_ceiling", TuneRange::Positive),
    Tunable::new("iterations", TuneRange::Count(10_000_000)),
    Tunable::new("history", TuneRange::Count(500)),
];

impl Prune {
    /// The cascade run at each level.
    fn cascade(&self, problem: &dyn Problem) -> Lbfgs {
        Lbfgs::log_sum_exp(
            problem,
            self.parameterisation,
            beta_ladder(self.beta_floor, self.beta_ceiling, default_beta_step()),
            self.history,
            self.iterations,
        )
    }

    /// One level: zero the smallest `fraction` of the live cells of `current`, then polish with
    /// `cascade` under `budget` while every zero cell stays zero.
    fn level(
        &self,
        problem: &dyn Problem,
        cascade: &Lbfgs,
        current: &[f64],
        budget: &Budget,
    ) -> Vec<f64> {
        let pruned = prune(current, self.fraction);
        let dead = Mask::where_values(&pruned, |x| x == 0.0);
        let mut polished = cascade.run_masked(problem, &pruned, budget, &dead).values;
        for (i, x) in polished.iter_mut().enumerate() {
            if dead.is_frozen(i) {
                *x = 0.0;
            }
        }
        polished
    }
}

/// The float64 score of `values` if they are valid.
fn valid_score(problem: &dyn Problem, values: &[f64]) -> Option<f64> {
    problem
        .check(values)
        .is_ok()
        .then(|| problem.score_fast(values).value)
}

impl Stage for Prune {
    fn kind(&self) -> &'static str {
        "prune"
    }

    fn spends_evaluations(&self) -> bool {
        true
    }

    fn check(&self, path: &str) -> Result<(), String> {
        fraction(path, "fraction", self.fraction)?;
        at_least_one(path, "levels", self.levels)?;
        positive(path, "beta_floor", self.beta_floor)?;
        positive(path, "beta_ceiling", self.beta_ceiling)?;
        at_least_one(path, "iterations", self.iterations as usize)?;
        at_least_one(path, "history", self.history)
    }

    fn tunable(&self) -> &'static [Tunable] {
        TUNABLE
    }

    fn run(
        &self,
        problem: &dyn Problem,
        start: &[f64],
        budget: &Budget,
        _seed: u64,
    ) -> StageOutcome {
        let direction = problem.spec().direction;
        let cascade = self.cascade(problem);
        let mut best = start.to_vec();
        let mut best_score = valid_score(problem, start);
        let mut current = start.to_vec();
        for level in 0..self.levels {
            if budget.exhausted().is_some() {
                break;
            }
            let share = budget.share(1.0 / (self.levels - level) as f64);
            let pruned = self.level(problem, &cascade, &current, &share);
            budget.charge(share.used());
            let Some(score) = valid_score(problem, &pruned) else {
                break;
            };
            if best_score.is_none_or(|b| direction.better(&score, &b)) {
                best_score = Some(score);
                best.clone_from(&pruned);
            }
            current = pruned;
        }
        StageOutcome {
            values: best,
            beta: Some(self.beta_ceiling),
            note: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problems::by_slug;

    fn start(n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| 1.0 + 0.5 * ((i as f64) * 0.41).sin() + 0.02 * (i % 7) as f64)
            .collect()
    }

    #[test]
    fn a_pruned_cell_never_revives() {
        for slug in [
            "first-autocorrelation-inequality",
            "third-autocorrelation-inequality",
        ] {
            let problem = by_slug(slug).unwrap();
            let params = Prune {
                fraction: 0.1,
                ..toml::from_str("").unwrap()
            };
            let cascade = params.cascade(problem.as_ref());
            let mut current = start(120);
            let mut dead_before: Vec<usize> = vec![];
            for level in 0..4 {
                current = params.level(
                    problem.as_ref(),
                    &cascade,
                    &current,
                    &Budget::evaluations(1_000),
                );
                let dead: Vec<usize> = (0..current.len()).filter(|&i| current[i] == 0.0).collect();
                assert!(
                    dead_before.iter().all(|i| dead.contains(i)),
                    "{slug} level {level}: a pruned cell came back"
                );
                assert!(dead.len() > dead_before.len(), "{slug} level {level}");
                dead_before = dead;
            }
        }
    }

    #[test]
    fn pruning_levels_keep_the_best_valid_construction() {
        let problem = by_slug("first-autocorrelation-inequality").unwrap();
        let s = start(200);
        let before = problem.score_fast(&s).value;
        let out = Prune {
            fraction: 0.05,
            levels: 3,
            ..toml::from_str("").unwrap()
        }
        .run(problem.as_ref(), &s, &Budget::evaluations(6_000), 1);
        problem.check(&out.values).unwrap();
        assert!(problem.score_fast(&out.values).value <= before);
        let zeros = out.values.iter().filter(|x| **x == 0.0).count();
        assert!(
            zeros > 0,
            "pruning at first-problem scale leaves dead cells"
        );
    }
}
