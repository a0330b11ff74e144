//! Prune–regrow of the support (DOMAIN.md): zero the smallest cells on a schedule, re-optimise
//! each level, then revive a random part of the dead cells and re-optimise again.
//!
//! The re-optimisation is a `polish` closure (as a stage: a short L-BFGS β cascade,
//! [`Lbfgs::polish`]); this stage only edits the support, splits the budget, and keeps the best
//! valid construction by the problem's true float64 score (`Problem::score_fast`, in the
//! problem's direction).

use super::lbfgs::Lbfgs;
use super::{at_least_one, fraction, Stage, StageOutcome, Tunable, TuneRange};
use crate::optimize::Budget;
use crate::problems::Problem;
use rand::seq::index::sample;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

/// Prune–regrow: zero the smallest cells, re-optimise, regrow.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PruneRegrow {
    /// Fraction of the support zeroed per level.
    #[serde(default = "default_fraction")]
    pub fraction: f64,
    /// Number of levels.
    #[serde(default = "default_levels")]
    pub levels: usize,
}

fn default_fraction() -> f64 {
    0.01
}
fn default_levels() -> usize {
    3
}

/// The tunable parameters of prune–regrow.
const TUNABLE: &[Tunable] = &[
    Tunable::new("fraction", TuneRange::Fraction),
    Tunable::new("levels", TuneRange::Count(64)),
];

impl Stage for PruneRegrow {
    fn kind(&self) -> &'static str {
        "prune_regrow"
    }

    fn spends_evaluations(&self) -> bool {
        true
    }

    fn check(&self, path: &str) -> Result<(), String> {
        fraction(path, "fraction", self.fraction)?;
        at_least_one(path, "levels", self.levels)
    }

    fn tunable(&self) -> &'static [Tunable] {
        TUNABLE
    }

    /// [`prune_regrow`] with the polish [`Lbfgs::polish`] of the problem.
    fn run(
        &self,
        problem: &dyn Problem,
        start: &[f64],
        budget: &Budget,
        seed: u64,
    ) -> StageOutcome {
        let polish = Lbfgs::polish(problem);
        let mut polish_fn = |v: &[f64], b: &Budget| polish.run(problem, v, b, seed).values;
        prune_regrow(problem, start, self, budget, seed, &mut polish_fn)
    }
}

/// Revived cells start at this fraction of the mean magnitude of the support.
pub const REGROW_RELATIVE: f64 = 1e-3;

/// `values` with the smallest `fraction` of the non-zero cells (by `|f|`, ties by index) set to
/// zero: `round(fraction·nnz)` of them, at least one when `fraction > 0`, never the whole
/// support (one non-zero cell always survives).
pub fn prune(values: &[f64], fraction: f64) -> Vec<f64> {
    let mut alive: Vec<usize> = (0..values.len()).filter(|&i| values[i] != 0.0).collect();
    let count = if fraction > 0.0 {
        ((fraction * alive.len() as f64).round() as usize).max(1)
    } else {
        0
    }
    .min(alive.len().saturating_sub(1));
    alive.sort_by(|&a, &b| values[a].abs().total_cmp(&values[b].abs()).then(a.cmp(&b)));
    let mut out = values.to_vec();
    for &i in &alive[..count] {
        out[i] = 0.0;
    }
    out
}

/// `values` with a random `fraction` of the zero cells (`round(fraction·dead)`, at least one when
/// there is any and `fraction > 0`) set to [`REGROW_RELATIVE`] × the mean `|f|` of the support.
pub fn regrow(values: &[f64], fraction: f64, rng: &mut rand::rngs::StdRng) -> Vec<f64> {
    let dead: Vec<usize> = (0..values.len()).filter(|&i| values[i] == 0.0).collect();
    let support: Vec<f64> = values
        .iter()
        .filter(|v| **v != 0.0)
        .map(|v| v.abs())
        .collect();
    let mut out = values.to_vec();
    if dead.is_empty() || support.is_empty() || fraction.is_nan() || fraction <= 0.0 {
        return out;
    }
    let level = REGROW_RELATIVE * support.iter().sum::<f64>() / support.len() as f64;
    let count = ((fraction * dead.len() as f64).round() as usize).clamp(1, dead.len());
    for k in sample(rng, dead.len(), count) {
        out[dead[k]] = level;
    }
    out
}

/// The true score of `values` if they pass the problem's rules (one budget evaluation), `None`
/// if invalid or the budget refuses.
fn valid_score(problem: &dyn Problem, values: &[f64], budget: &Budget) -> Option<f64> {
    if values.is_empty() || problem.check(values).is_err() {
        return None;
    }
    budget.try_spend().ok()?;
    let s = problem.score_fast(values).value;
    s.is_finite().then_some(s)
}

/// Prune–regrow from `start` for `params.levels` levels: each level prunes the current
/// construction ([`prune`] with `params.fraction`) and polishes it, then regrows
/// ([`regrow`], cells drawn from a `StdRng` seeded by `seed`) and polishes again. Every polish
/// gets an equal [`Budget::share`] of what remains (charged back to `budget`); each result's
/// true score costs one evaluation. The next level continues from the last valid polished
/// construction.
///
/// Returns the best valid construction by true score in the problem's direction — the start
/// itself unless something strictly better was found (an invalid start is replaced by the first
/// valid result, if any).
pub fn prune_regrow(
    problem: &dyn Problem,
    start: &[f64],
    params: &PruneRegrow,
    budget: &Budget,
    seed: u64,
    polish: &mut dyn FnMut(&[f64], &Budget) -> Vec<f64>,
) -> StageOutcome {
    let direction = problem.spec().direction;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut best = start.to_vec();
    let mut best_score = valid_score(problem, start, budget);
    let mut current = start.to_vec();
    let total = 2 * params.levels;
    let mut done = 0;
    let mut step = |edited: Vec<f64>,
                    current: &mut Vec<f64>,
                    best: &mut Vec<f64>,
                    best_score: &mut Option<f64>,
                    done: &mut usize| {
        let share = budget.share(1.0 / (total - *done) as f64);
        *done += 1;
        let polished = polish(&edited, &share);
        budget.charge(share.used());
        // Judge the polished construction, and the edited one in case polishing failed.
        for candidate in [polished, edited] {
            if let Some(s) = valid_score(problem, &candidate, budget) {
                if best_score.is_none_or(|b| direction.better(&s, &b)) {
                    *best_score = Some(s);
                    *best = candidate.clone();
                }
                *current = candidate;
                return;
            }
        }
    };
    for _ in 0..params.levels {
        if budget.exhausted().is_some() {
            break;
        }
        let pruned = prune(&current, params.fraction);
        step(pruned, &mut current, &mut best, &mut best_score, &mut done);
        if budget.exhausted().is_some() {
            break;
        }
        let grown = regrow(&current, params.fraction, &mut rng);
        step(grown, &mut current, &mut best, &mut best_score, &mut done);
    }
    StageOutcome::plain(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objective::SmoothMax;
    use crate::optimize::{cascade, CascadeSplit, LbfgsSettings, Parameterisation};
    use crate::problems::by_slug;

    const FIRST: &str = "first-autocorrelation-inequality";

    fn run(
        slug: &str,
        start: &[f64],
        params: &PruneRegrow,
        budget: &Budget,
        seed: u64,
        polish: &mut dyn FnMut(&[f64], &Budget) -> Vec<f64>,
    ) -> StageOutcome {
        let problem = by_slug(slug).unwrap();
        prune_regrow(problem.as_ref(), start, params, budget, seed, polish)
    }

    fn start(n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| 1.0 + 0.5 * ((i as f64) * 0.41).sin() + 0.02 * (i % 7) as f64)
            .collect()
    }

    fn score(v: &[f64]) -> f64 {
        let p = by_slug(FIRST).unwrap();
        p.check(v).unwrap();
        p.score_fast(v).value
    }

    /// An L-BFGS β cascade on f = v².
    fn lbfgs_polish(values: &[f64], budget: &Budget) -> Vec<f64> {
        let n = values.len();
        let problem = by_slug(FIRST).unwrap();
        let param = Parameterisation::Square;
        let settings = LbfgsSettings {
            max_iterations: 200,
            ..LbfgsSettings::default()
        };
        let out = cascade(
            &[1e2, 1e3],
            |beta| {
                let mut objective = problem.objective(n, SmoothMax::LogSumExp { beta });
                param.compose(move |f: &[f64], g: &mut [f64]| objective.value_and_gradient(f, g))
            },
            param.inverse(values),
            &settings,
            budget,
            &CascadeSplit::Even,
        );
        let mut f = vec![0.0; n];
        param.forward(&out.v, &mut f);
        f
    }

    #[test]
    fn prune_and_regrow_edit_the_support() {
        let v = vec![0.0, 3.0, 1.0, -0.5, 2.0, 0.0];
        assert_eq!(prune(&v, 0.5), vec![0.0, 3.0, 0.0, 0.0, 2.0, 0.0]);
        assert_eq!(prune(&[1.0], 1.0), vec![1.0]);
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let g = regrow(&v, 0.5, &mut rng);
        assert_eq!(g.iter().filter(|x| **x == 0.0).count(), 1);
        let level = REGROW_RELATIVE * 6.5 / 4.0;
        assert!(g.contains(&level));
    }

    #[test]
    fn identity_polish_never_makes_it_worse() {
        let s = start(64);
        let params = PruneRegrow {
            fraction: 0.1,
            levels: 3,
        };
        let budget = Budget::evaluations(100);
        let out = run(FIRST, &s, &params, &budget, 7, &mut |v, _| v.to_vec());
        assert!(score(&out.values) <= score(&s));
        assert!(budget.used() <= 100);
    }

    #[test]
    fn lbfgs_polish_improves_deterministically() {
        let s = start(60);
        let params = PruneRegrow {
            fraction: 0.05,
            levels: 2,
        };
        let go = |seed| {
            let budget = Budget::evaluations(3_000);
            let out = run(FIRST, &s, &params, &budget, seed, &mut lbfgs_polish);
            assert!(budget.used() <= 3_000);
            out.values
        };
        let a = go(11);
        assert!(score(&a) < score(&s));
        assert_eq!(a, go(11));
    }
}
