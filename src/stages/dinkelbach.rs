//! Dinkelbach's method for the second problem's ratio score (DOMAIN.md: "Ratio objectives").
//!
//! The score is `N/D` with `N = L2²` (the arena's piecewise-linear quadrature of `c = f∗f`) and
//! `D = L1·L∞`. With `L∞` replaced by the smooth `D̃ = L1²·SM(c/L1)` (the surrogate of
//! second problem, `problems/second_autocorrelation/objective.rs`), each round fixes `λ` = the current true score
//! and maximises `N − λ·D̃` with the inner L-BFGS β cascade, then sets `λ ← N/D` (true score) at
//! the round's result. `N − λD̃` is homogeneous of degree 4 in `f`, so it is unbounded along the
//! scale direction once positive; each round therefore maximises it on the slice `Σf = S₀` (the
//! round's starting sum), written as the scale-free function
//!
//! `Φ(f) = −(S₀/Σf)⁴·(N(f) − λ·D̃(f))/D₀`,
//!
//! minimised over the free variables `v` (`f = φ(v)`), with `D₀ = L1·L∞` at the round's start, so
//! that `Φ` is unit-sized (`Φ ≈ λ − N/D̃` near the start). Gradient:
//! `∂Φ/∂f_i = −(S₀/Σf)⁴·(∂G/∂f_i − 4G/Σf)/D₀`, `G = N − λD̃`.
//!
//! The budget is split evenly over the rounds (what a round leaves passes on); every evaluation of
//! `Φ` is charged. The stage returns the best construction by the true score among the start and
//! the end of every β stage of every round, so it is never worse than the start.
//!
//! The ratio's parts come from the problem ([`Problem::ratio_terms`]); for a problem whose score
//! is not a ratio the stage runs the inner cascade once on the problem's plain surrogate (same
//! best-by-true-score rule). The method is deterministic; the seed is unused.

use super::lbfgs::{Lbfgs, INNER_TUNABLE};
use super::{at_least_one, Stage, StageOutcome, Tunable, TuneRange};
use crate::objective::{Objective, RatioObjective, SmoothMax, SmoothMaxName};
use crate::optimize::{cascade, Budget, CascadeSplit, LbfgsSettings, Parameterisation};
use crate::problems::{Direction, Problem};
use serde::{Deserialize, Serialize};

/// Dinkelbach's method for a ratio score: maximise N − λD, λ ← N/D.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dinkelbach {
    /// Outer λ updates.
    #[serde(default = "default_rounds")]
    pub rounds: usize,
    /// The inner L-BFGS run.
    pub inner: Lbfgs,
}

fn default_rounds() -> usize {
    5
}

/// The tunable parameters of Dinkelbach's method: its rounds and its inner L-BFGS run's.
const TUNABLE: &[Tunable] = &[
    Tunable::new("rounds", TuneRange::Count(10_000)),
    INNER_TUNABLE[0],
    INNER_TUNABLE[1],
    INNER_TUNABLE[2],
];

/// Whether Dinkelbach's iteration applies to `problem` (its score is a ratio).
pub fn applies_to(problem: &dyn Problem) -> bool {
    problem
        .ratio_terms(1, SmoothMax::PNorm { p: 2.0 })
        .is_some()
}

impl Stage for Dinkelbach {
    fn kind(&self) -> &'static str {
        "dinkelbach"
    }

    fn spends_evaluations(&self) -> bool {
        true
    }

    fn check(&self, path: &str) -> Result<(), String> {
        at_least_one(path, "rounds", self.rounds)?;
        self.inner.check(&format!("{path}.inner"))
    }

    fn tunable(&self) -> &'static [Tunable] {
        TUNABLE
    }

    /// Runs Dinkelbach's method from `start` (the plain inner cascade for a problem whose score is
    /// not a ratio; see the module docs) and returns the best construction by the true score —
    /// `start` itself if nothing valid beat it, or for an empty start.
    fn run(
        &self,
        problem: &dyn Problem,
        start: &[f64],
        budget: &Budget,
        _seed: u64,
    ) -> StageOutcome {
        run(problem, start, self, budget)
    }
}

/// One Dinkelbach round's objective `Φ(f) = −(S₀/Σf)⁴·(N − λD̃)/D₀` (see the module docs), to
/// minimise.
pub struct DinkelbachObjective {
    terms: Box<dyn RatioObjective>,
    lambda: f64,
    sum0: f64,
    d0: f64,
}

impl DinkelbachObjective {
    /// `Φ` on the ratio's parts `terms` with `λ = lambda`, the slice `Σf = sum0` and the scale
    /// `d0 > 0`.
    pub fn new(terms: Box<dyn RatioObjective>, lambda: f64, sum0: f64, d0: f64) -> Self {
        DinkelbachObjective {
            terms,
            lambda,
            sum0,
            d0,
        }
    }

    /// `Φ(f)`, writing `∂Φ/∂f` into `grad`.
    pub fn value_and_gradient(&mut self, f: &[f64], grad: &mut [f64]) -> f64 {
        let (numerator, denominator) = self.terms.evaluate(f, 1.0, -self.lambda, grad);
        let gap = numerator - self.lambda * denominator;
        let sum: f64 = f.iter().sum();
        let ratio = self.sum0 / sum;
        let factor = -(ratio * ratio) * (ratio * ratio) / self.d0;
        let shift = 4.0 * gap / sum;
        grad.iter_mut().for_each(|g| *g = factor * (*g - shift));
        factor * gap
    }
}

/// The best valid construction seen, by the true score in the problem's direction.
struct Best {
    direction: Direction,
    values: Vec<f64>,
    score: f64,
}

impl Best {
    /// Starts from `start` (its score NaN when it is invalid, so that any valid point beats it).
    fn new(problem: &dyn Problem, scorer: &mut dyn Objective, start: &[f64]) -> Self {
        let score = if problem.check(start).is_ok() {
            scorer.score(start)
        } else {
            f64::NAN
        };
        Best {
            direction: problem.spec().direction,
            values: start.to_vec(),
            score,
        }
    }

    /// Keeps `f` if it is valid and strictly better; returns its true score (NaN if invalid).
    fn offer(&mut self, problem: &dyn Problem, scorer: &mut dyn Objective, f: &[f64]) -> f64 {
        if problem.check(f).is_err() {
            return f64::NAN;
        }
        let score = scorer.score(f);
        if score.is_finite() && (self.score.is_nan() || self.direction.better(&score, &self.score))
        {
            self.score = score;
            self.values.clear();
            self.values.extend_from_slice(f);
        }
        score
    }
}

fn run(problem: &dyn Problem, start: &[f64], params: &Dinkelbach, budget: &Budget) -> StageOutcome {
    let inner = &params.inner;
    let last_beta = inner.betas.last().copied();
    let n = start.len();
    if n == 0 {
        return StageOutcome {
            values: start.to_vec(),
            beta: last_beta,
            note: None,
        };
    }
    // Only `score` of this objective is used (its smooth max is irrelevant).
    let mut scorer = problem.objective(n, SmoothMax::PNorm { p: 2.0 });
    let mut best = Best::new(problem, scorer.as_mut(), start);
    let param = inner.parameterisation;
    let settings = LbfgsSettings {
        // The gradient's scale depends on n and on the values' scale: stop on the budget, the
        // iteration limit or a stalled line search instead.
        tolerance_grad: 0.0,
        ..inner.settings()
    };
    let mut f = vec![0.0; n];
    let mut offer_stages = |stages: &[crate::optimize::CascadeStage], best: &mut Best| {
        for stage in stages {
            param.forward(&stage.outcome.v, &mut f);
            best.offer(problem, scorer.as_mut(), &f);
        }
    };

    let Some(mut terms) = problem.ratio_terms(n, SmoothMax::PNorm { p: 2.0 }) else {
        let outcome = cascade(
            &inner.betas,
            |beta| {
                let mut objective = problem.objective(n, inner.smooth_max.build(beta));
                param.compose(move |f: &[f64], g: &mut [f64]| objective.value_and_gradient(f, g))
            },
            param.inverse(start),
            &settings,
            budget,
            &CascadeSplit::Even,
        );
        offer_stages(&outcome.stages, &mut best);
        return StageOutcome {
            values: best.values,
            beta: last_beta,
            note: None,
        };
    };

    let mut v = param.inverse(start);
    let mut current = vec![0.0; n];
    for round in 0..params.rounds {
        if budget.exhausted().is_some() {
            break;
        }
        param.forward(&v, &mut current);
        let (numerator, denominator) = terms.true_parts(&current);
        let lambda = numerator / denominator;
        let sum0: f64 = current.iter().sum();
        if !(lambda.is_finite() && denominator > 0.0 && sum0 > 0.0) {
            break;
        }
        let share = budget.share(1.0 / (params.rounds - round) as f64);
        let outcome = round_cascade(
            problem,
            n,
            inner.smooth_max,
            &inner.betas,
            param,
            (lambda, sum0, denominator),
            v.clone(),
            &settings,
            &share,
        );
        budget.charge(share.used());
        offer_stages(&outcome.stages, &mut best);
        if outcome.stages.is_empty() {
            break;
        }
        v = outcome.v;
    }
    StageOutcome {
        values: best.values,
        beta: last_beta,
        note: None,
    }
}

/// One round: the β cascade of L-BFGS runs on `Φ` with `(λ, S₀, D₀) = round`, from `v0`.
#[allow(clippy::too_many_arguments)]
fn round_cascade(
    problem: &dyn Problem,
    n: usize,
    smooth: SmoothMaxName,
    betas: &[f64],
    param: Parameterisation,
    round: (f64, f64, f64),
    v0: Vec<f64>,
    settings: &LbfgsSettings,
    budget: &Budget,
) -> crate::optimize::CascadeOutcome {
    let (lambda, sum0, d0) = round;
    cascade(
        betas,
        |beta| {
            let terms = problem
                .ratio_terms(n, smooth.build(beta))
                .expect("the round's problem has ratio terms");
            let mut objective = DinkelbachObjective::new(terms, lambda, sum0, d0);
            param.compose(move |f: &[f64], g: &mut [f64]| objective.value_and_gradient(f, g))
        },
        v0,
        settings,
        budget,
        &CascadeSplit::Even,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: &str = "second-autocorrelation-inequality";

    fn run(
        slug: &str,
        start: &[f64],
        params: &Dinkelbach,
        budget: &Budget,
        seed: u64,
    ) -> StageOutcome {
        let problem = crate::problems::by_slug(slug).unwrap();
        params.run(problem.as_ref(), start, budget, seed)
    }

    /// The second problem's ratio terms.
    fn ratio_terms(n: usize, smooth: SmoothMax) -> Box<dyn RatioObjective> {
        crate::problems::by_slug(SECOND)
            .unwrap()
            .ratio_terms(n, smooth)
            .unwrap()
    }

    fn cosine_bump(n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| {
                let x = -0.25 + 0.5 * (i as f64 + 0.5) / n as f64;
                (2.0 * std::f64::consts::PI * x).cos().powi(2)
            })
            .collect()
    }

    fn score(slug: &str, f: &[f64]) -> f64 {
        crate::problems::by_slug(slug).unwrap().score_fast(f).value
    }

    fn params(betas: Vec<f64>, rounds: usize) -> Dinkelbach {
        Dinkelbach {
            rounds,
            inner: Lbfgs {
                parameterisation: Parameterisation::Square,
                smooth_max: SmoothMaxName::LogSumExp,
                betas,
                history: 50,
                iterations: 300,
            },
        }
    }

    /// Central differences of `value(f)` against `grad`, coordinate by coordinate.
    fn check(f: &[f64], grad: &[f64], mut value: impl FnMut(&[f64]) -> f64, what: &str) {
        let scale = grad.iter().fold(0.0f64, |m, g| m.max(g.abs()));
        let mut x = f.to_vec();
        for i in 0..f.len() {
            let step = 1e-5 * f[i].abs().max(1e-2);
            x[i] = f[i] + step;
            let up = value(&x);
            x[i] = f[i] - step;
            let down = value(&x);
            x[i] = f[i];
            let fd = (up - down) / (2.0 * step);
            assert!(
                (fd - grad[i]).abs() <= 1e-6 * scale,
                "{what} i={i}: fd {fd:e} vs {:e} (‖g‖∞ {scale:e})",
                grad[i]
            );
        }
    }

    #[test]
    fn numerator_and_denominator_gradients_match_central_differences() {
        let smooths = [
            SmoothMax::LogSumExp { beta: 5.0 },
            SmoothMax::LogSumExp { beta: 200.0 },
            SmoothMax::PNorm { p: 6.0 },
        ];
        for (n, seed) in [(5usize, 1u64), (33, 2), (128, 3)] {
            let f = crate::objective::testing::random(n, seed, 0.05, 1.0);
            for smooth in smooths {
                let mut terms = ratio_terms(n, smooth);
                let mut grad = vec![0.0; n];
                let mut scratch = vec![0.0; n];
                terms.evaluate(&f, 1.0, 0.0, &mut grad);
                check(
                    &f,
                    &grad,
                    |x| terms.evaluate(x, 0.0, 0.0, &mut scratch).0,
                    "N",
                );
                terms.evaluate(&f, 0.0, 1.0, &mut grad);
                check(
                    &f,
                    &grad,
                    |x| terms.evaluate(x, 0.0, 0.0, &mut scratch).1,
                    &format!("D̃ {smooth:?}"),
                );
                // Φ, on a slice other than f's own sum.
                let sum0 = 0.7 * f.iter().sum::<f64>();
                let mut phi = DinkelbachObjective::new(ratio_terms(n, smooth), 0.8, sum0, 0.3);
                phi.value_and_gradient(&f, &mut grad);
                check(&f, &grad, |x| phi.value_and_gradient(x, &mut scratch), "Φ");
            }
        }
    }

    #[test]
    fn parts_agree_with_the_true_score_and_the_surrogate() {
        let n = 200;
        let f = crate::objective::testing::random(n, 9, 0.0, 1.0);
        let mut terms = ratio_terms(n, SmoothMax::LogSumExp { beta: 1e12 });
        let (num, den) = terms.true_parts(&f);
        let truth = score(SECOND, &f);
        assert!((num / den - truth).abs() <= 1e-12 * truth);
        let mut grad = vec![0.0; n];
        let (num2, den2) = terms.evaluate(&f, 1.0, 0.0, &mut grad);
        assert_eq!(num, num2);
        assert!((den2 / den - 1.0).abs() < 1e-9, "{den2} vs {den}");
    }

    #[test]
    fn raises_the_cosine_bump_score_within_the_budget() {
        for n in [64usize, 128] {
            let start = cosine_bump(n);
            let budget = Budget::evaluations(1_500);
            let out = run(SECOND, &start, &params(vec![1e2, 1e3], 3), &budget, 0);
            let (before, after) = (score(SECOND, &start), score(SECOND, &out.values));
            println!("dinkelbach n={n}: {before} → {after}");
            assert!(after > before + 1e-3, "n={n}: {before} → {after}");
            assert!(budget.used() <= 1_500);
            assert_eq!(out.beta, Some(1e3));
            assert!(crate::problems::by_slug(SECOND)
                .unwrap()
                .check(&out.values)
                .is_ok());
        }
    }

    #[test]
    fn never_worse_than_the_start_and_never_over_budget() {
        // A very low β biases the surrogate: whatever the inner runs find, the true score decides.
        let start = cosine_bump(64);
        for limit in [0u64, 1, 7, 60, 400] {
            let budget = Budget::evaluations(limit);
            let out = run(SECOND, &start, &params(vec![1.0, 3.0], 4), &budget, 0);
            assert!(budget.used() <= limit, "{} > {limit}", budget.used());
            assert!(score(SECOND, &out.values) >= score(SECOND, &start));
        }
        // Another problem: the plain cascade, same rules.
        let first = "first-autocorrelation-inequality";
        for limit in [0u64, 5, 300] {
            let budget = Budget::evaluations(limit);
            let out = run(first, &start, &params(vec![1e1, 1e3], 2), &budget, 0);
            assert!(budget.used() <= limit);
            assert!(score(first, &out.values) <= score(first, &start));
        }
        let budget = Budget::evaluations(300);
        let out = run(first, &start, &params(vec![1e2, 1e3], 2), &budget, 0);
        assert!(score(first, &out.values) < score(first, &start) - 1e-2);
    }

    #[test]
    fn deterministic_under_an_evaluation_budget() {
        let start = cosine_bump(64);
        let p = params(vec![1e2, 1e3], 2);
        let a = run(SECOND, &start, &p, &Budget::evaluations(300), 0);
        let b = run(SECOND, &start, &p, &Budget::evaluations(300), 5);
        let bits = |f: &[f64]| f.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a.values), bits(&b.values));
    }

    /// The arena's AlphaEvolve start (n = 50,000) under 30 s of wall budget, with the cascade
    /// that worked best in the experiments (`cargo test --release -- --ignored --nocapture
    /// arena_start`); skipped when the frozen leaderboard is absent.
    #[test]
    #[ignore]
    fn arena_start_30s() {
        let path = std::path::Path::new(
            "../shared/arena/second-autocorrelation-inequality/alphaevolve.json",
        );
        let Ok(start) = crate::construction::read_values(path) else {
            println!("SKIP: {} is absent", path.display());
            return;
        };
        let mut p = params(vec![1e7, 1e8, 1e9], 1);
        p.inner.history = 10;
        p.inner.iterations = 1_000_000;
        let budget = Budget::unlimited().with_time_limit(std::time::Duration::from_secs(30));
        let out = run(SECOND, &start, &p, &budget, 0);
        let (before, after) = (score(SECOND, &start), score(SECOND, &out.values));
        println!(
            "start {before:.12} end {after:.12} gain {:.3e} evaluations {}",
            after - before,
            budget.used()
        );
        assert!(after >= before);
    }
}
