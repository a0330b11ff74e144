//! Adam with gradient noise and elitist restarts: the exploration stage (DOMAIN.md, "Methods that
//! produced records").
//!
//! Adam runs on the problem's log-sum-exp surrogate at temperature `beta`, in the chosen
//! parameterisation `f = φ(v)`. Before each step the gradient (with respect to `v`) gets Gaussian
//! noise of standard deviation `gradient_noise × RMS(gradient)`, drawn from a [`StdRng`] seeded by
//! the stage's seed. Every evaluated point is also scored with the arena's true float64 score;
//! the best valid point (by the problem's direction and validity rules) is kept, and after
//! `patience` iterations without a new best, Adam restarts from it with fresh moments.
//!
//! Step sizes: for the `square` and `raw` parameterisations the scores are scale-invariant (except
//! the Erdős problem, whose values live in \[0, 1\] anyway), so the step is
//! `learning_rate × RMS(v₀)` (`v₀` the start's variables), a relative step; for `exp` and
//! `sigmoid` the variables are already logarithmic and the step is `learning_rate` itself.
//!
//! One objective evaluation (surrogate value and gradient plus the true score of the same point)
//! is charged to the [`Budget`] per iteration; the run stops at `iterations` or when the budget
//! refuses. With an evaluation budget (no deadline) a run is bit-for-bit deterministic per seed.

use super::lbfgs::default_iterations;
use super::{non_negative, positive, Stage, StageOutcome, Tunable, TuneRange};
use crate::objective::SmoothMax;
use crate::optimize::{Budget, Parameterisation};
use crate::problems::Problem;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

/// Adam's first-moment decay.
const BETA1: f64 = 0.9;
/// Adam's second-moment decay.
const BETA2: f64 = 0.999;
/// Adam's ε, relative to the RMS of the first gradient (the gradients' scale depends on the
/// problem and on `n`).
const EPSILON_RELATIVE: f64 = 1e-8;

/// Adam with gradient noise and elitist restarts (exploration).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Adam {
    /// Parameterisation of the values.
    pub parameterisation: Parameterisation,
    /// Temperature of the log-sum-exp surrogate.
    #[serde(default = "default_beta")]
    pub beta: f64,
    /// Learning rate.
    #[serde(default = "default_learning_rate")]
    pub learning_rate: f64,
    /// Standard deviation of the gradient noise, relative to the gradient's RMS.
    #[serde(default = "default_gradient_noise")]
    pub gradient_noise: f64,
    /// Iterations.
    #[serde(default = "default_iterations")]
    pub iterations: u64,
    /// Iterations without a new best true score after which Adam restarts (fresh moments) from
    /// the best point.
    #[serde(default = "default_patience")]
    pub patience: u64,
}

fn default_beta() -> f64 {
    1e3
}
fn default_learning_rate() -> f64 {
    1e-2
}
fn default_gradient_noise() -> f64 {
    1e-3
}
fn default_patience() -> u64 {
    200
}

/// The tunable parameters of Adam.
const TUNABLE: &[Tunable] = &[
    Tunable::new("beta", TuneRange::Positive),
    Tunable::new("learning_rate", TuneRange::Positive),
    Tunable::new("gradient_noise", TuneRange::Positive),
    Tunable::new("iterations", TuneRange::Count(100_000_000)),
    Tunable::new("patience", TuneRange::Count(10_000_000)),
];

impl Stage for Adam {
    fn kind(&self) -> &'static str {
        "adam"
    }

    fn spends_evaluations(&self) -> bool {
        true
    }

    fn check(&self, path: &str) -> Result<(), String> {
        positive(path, "beta", self.beta)?;
        positive(path, "learning_rate", self.learning_rate)?;
        non_negative(path, "gradient_noise", self.gradient_noise)
    }

    fn tunable(&self) -> &'static [Tunable] {
        TUNABLE
    }

    /// Runs Adam from `start` (see the module docs) and returns the best construction found by
    /// the true score — `start` itself if nothing valid beat it, or for an empty start.
    fn run(
        &self,
        problem: &dyn Problem,
        start: &[f64],
        budget: &Budget,
        seed: u64,
    ) -> StageOutcome {
        run(problem, start, self, budget, seed)
    }
}

fn run(
    problem: &dyn Problem,
    start: &[f64],
    params: &Adam,
    budget: &Budget,
    seed: u64,
) -> StageOutcome {
    let unchanged = StageOutcome {
        values: start.to_vec(),
        beta: Some(params.beta),
        note: None,
    };
    let n = start.len();
    if n == 0 {
        return unchanged;
    }
    let mut objective = problem.objective(n, SmoothMax::LogSumExp { beta: params.beta });
    let direction = problem.spec().direction;
    let better = |a: f64, b: f64| a.is_finite() && (b.is_nan() || direction.better(&a, &b));
    let param = params.parameterisation;

    let mut best_f = start.to_vec();
    let mut best_score = if problem.check(start).is_ok() {
        objective.score(start)
    } else {
        f64::NAN
    };

    let mut v = param.inverse(start);
    let mut best_v = v.clone();
    let step = params.learning_rate
        * match param {
            Parameterisation::Square | Parameterisation::Raw => {
                let rms = rms(&v);
                if rms > 0.0 {
                    rms
                } else {
                    1.0
                }
            }
            Parameterisation::Exp | Parameterisation::Sigmoid => 1.0,
        };
    let mut rng = StdRng::seed_from_u64(seed);
    let mut f = vec![0.0; n];
    let mut grad_f = vec![0.0; n];
    let mut grad = vec![0.0; n];
    let mut first = vec![0.0; n];
    let mut second = vec![0.0; n];
    let mut t = 0_i32;
    let mut epsilon = f64::NAN;
    let mut since_best = 0_u64;

    for _ in 0..params.iterations {
        if budget.try_spend().is_err() {
            break;
        }
        param.forward(&v, &mut f);
        let value = objective.value_and_gradient(&f, &mut grad_f);
        let score = objective.score(&f);
        if better(score, best_score) && problem.check(&f).is_ok() {
            best_score = score;
            best_f.copy_from_slice(&f);
            best_v.copy_from_slice(&v);
            since_best = 0;
        } else {
            since_best += 1;
        }
        param.backward(&v, &grad_f, &mut grad);
        let scale = rms(&grad);
        if !value.is_finite() || !scale.is_finite() || since_best >= params.patience.max(1) {
            // Elitist restart: back to the best point, fresh moments.
            v.copy_from_slice(&best_v);
            first.iter_mut().for_each(|x| *x = 0.0);
            second.iter_mut().for_each(|x| *x = 0.0);
            t = 0;
            since_best = 0;
            continue;
        }
        if epsilon.is_nan() && scale > 0.0 {
            epsilon = EPSILON_RELATIVE * scale;
        }
        let eps = if epsilon.is_nan() { 1e-300 } else { epsilon };
        let sigma = params.gradient_noise * scale;
        t = t.saturating_add(1);
        let correct1 = 1.0 - BETA1.powi(t);
        let correct2 = 1.0 - BETA2.powi(t);
        for i in 0..n {
            let mut g = grad[i];
            if sigma > 0.0 {
                let z: f64 = rng.sample(StandardNormal);
                g += sigma * z;
            }
            first[i] = BETA1 * first[i] + (1.0 - BETA1) * g;
            second[i] = BETA2 * second[i] + (1.0 - BETA2) * g * g;
            let m_hat = first[i] / correct1;
            let s_hat = second[i] / correct2;
            v[i] -= step * m_hat / (s_hat.sqrt() + eps);
        }
    }
    StageOutcome {
        values: best_f,
        beta: Some(params.beta),
        note: None,
    }
}

/// Root mean square of `x` (0 for an empty slice).
fn rms(x: &[f64]) -> f64 {
    if x.is_empty() {
        return 0.0;
    }
    (x.iter().map(|a| a * a).sum::<f64>() / x.len() as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problems::Direction;

    fn run(slug: &str, start: &[f64], params: &Adam, budget: &Budget, seed: u64) -> StageOutcome {
        let problem = crate::problems::by_slug(slug).unwrap();
        params.run(problem.as_ref(), start, budget, seed)
    }

    fn maximises(slug: &str) -> bool {
        crate::problems::by_slug(slug).unwrap().spec().direction == Direction::Maximize
    }

    const FIRST: &str = "first-autocorrelation-inequality";

    fn ripple_start(n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| 1.0 + 0.1 * ((i * 7 % 13) as f64 / 13.0 - 0.5))
            .collect()
    }

    fn params(iterations: u64) -> Adam {
        Adam {
            parameterisation: Parameterisation::Square,
            beta: 1e3,
            learning_rate: 1e-2,
            gradient_noise: 1e-2,
            iterations,
            patience: 50,
        }
    }

    fn score(slug: &str, f: &[f64]) -> f64 {
        crate::problems::by_slug(slug).unwrap().score_fast(f).value
    }

    fn bits(f: &[f64]) -> Vec<u64> {
        f.iter().map(|x| x.to_bits()).collect()
    }

    #[test]
    fn decreases_the_first_problem_score() {
        assert!(!maximises(FIRST));
        let start = ripple_start(64);
        let budget = Budget::evaluations(5_000);
        let out = run(FIRST, &start, &params(1_000), &budget, 1);
        let (before, after) = (score(FIRST, &start), score(FIRST, &out.values));
        println!("adam n=64: {before} → {after}");
        assert!(after < before - 0.05, "{before} → {after}");
        assert!(crate::problems::by_slug(FIRST)
            .unwrap()
            .check(&out.values)
            .is_ok());
        assert_eq!(out.beta, Some(1e3));
    }

    #[test]
    fn same_seed_same_bits_other_seed_other_bits() {
        let start = ripple_start(64);
        let p = params(10_000);
        let a = run(FIRST, &start, &p, &Budget::evaluations(300), 7);
        let b = run(FIRST, &start, &p, &Budget::evaluations(300), 7);
        let c = run(FIRST, &start, &p, &Budget::evaluations(300), 8);
        assert_eq!(bits(&a.values), bits(&b.values));
        assert_ne!(bits(&a.values), bits(&c.values));
    }

    #[test]
    fn never_exceeds_an_evaluation_budget() {
        let start = ripple_start(64);
        for limit in [0u64, 1, 17, 250] {
            let budget = Budget::evaluations(limit);
            let out = run(FIRST, &start, &params(10_000), &budget, 3);
            assert!(budget.used() <= limit, "{} > {limit}", budget.used());
            assert_eq!(budget.used(), limit);
            assert!(score(FIRST, &out.values) <= score(FIRST, &start));
        }
        // The iteration limit stops it first.
        let budget = Budget::evaluations(1_000);
        run(FIRST, &start, &params(40), &budget, 3);
        assert_eq!(budget.used(), 40);
    }

    #[test]
    fn never_worse_than_the_start_on_the_second_problem() {
        let slug = "second-autocorrelation-inequality";
        assert!(maximises(slug));
        let n = 64;
        let start: Vec<f64> = (0..n)
            .map(|i| {
                let x = -0.25 + 0.5 * (i as f64 + 0.5) / n as f64;
                (2.0 * std::f64::consts::PI * x).cos().powi(2)
            })
            .collect();
        let mut p = params(400);
        p.beta = 1e2; // a biased surrogate: the true score decides what is kept
        let out = run(slug, &start, &p, &Budget::evaluations(400), 5);
        assert!(score(slug, &out.values) >= score(slug, &start));
    }

    #[test]
    fn an_empty_start_returns_the_start() {
        let out = run(FIRST, &[], &params(10), &Budget::unlimited(), 0);
        assert!(out.values.is_empty());
    }
}
