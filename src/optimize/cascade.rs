//! A β cascade: L-BFGS over a list of temperatures, each stage warm-started from the previous best.

use super::budget::Budget;
use super::lbfgs::{minimise, LbfgsOutcome, LbfgsSettings};

/// How a cascade divides its budget among stages.
#[derive(Clone, Debug, PartialEq)]
pub enum CascadeSplit {
    /// Equal weights.
    Even,
    /// One non-negative weight per stage. Each stage gets its weight's share of what remains
    /// when it starts (so what a stage leaves unused passes on to the later ones).
    Weights(Vec<f64>),
}

/// One stage of a cascade.
#[derive(Clone, Debug, PartialEq)]
pub struct CascadeStage {
    /// The stage's β.
    pub beta: f64,
    /// The stage's L-BFGS outcome (its value is the objective at this β).
    pub outcome: LbfgsOutcome,
}

/// What [`cascade`] found.
#[derive(Clone, Debug, PartialEq)]
pub struct CascadeOutcome {
    /// The last stage's best point (`v0` if there were no stages).
    pub v: Vec<f64>,
    /// The last stage's objective at `v` (NaN if there were no stages or no evaluation).
    pub value: f64,
    /// The stages in order.
    pub stages: Vec<CascadeStage>,
}

/// Run [`minimise`] for each β in `betas` in order, on the objective `build(β)`, starting the
/// first stage from `v0` and each later stage from the previous stage's best point.
///
/// Each stage gets a [`Budget::share`] of what remains of `budget` (per `split`), and its
/// evaluations are charged back to `budget`. Panics if `split` has the wrong number of weights.
pub fn cascade<B, O>(
    betas: &[f64],
    mut build: B,
    v0: Vec<f64>,
    settings: &LbfgsSettings,
    budget: &Budget,
    split: &CascadeSplit,
) -> CascadeOutcome
where
    B: FnMut(f64) -> O,
    O: FnMut(&[f64], &mut [f64]) -> f64,
{
    let weights = match split {
        CascadeSplit::Even => vec![1.0; betas.len()],
        CascadeSplit::Weights(w) => {
            assert_eq!(w.len(), betas.len(), "cascade: one weight per β");
            w.iter().map(|&x| x.max(0.0)).collect()
        }
    };
    let mut v = v0;
    let mut value = f64::NAN;
    let mut stages = Vec::with_capacity(betas.len());
    for (i, &beta) in betas.iter().enumerate() {
        let rest: f64 = weights[i..].iter().sum();
        let fraction = if i + 1 == betas.len() || rest <= 0.0 {
            1.0
        } else {
            weights[i] / rest
        };
        let stage_budget = budget.share(fraction);
        let outcome = minimise(build(beta), v.clone(), settings, &stage_budget);
        budget.charge(stage_budget.used());
        v.clone_from(&outcome.v);
        value = outcome.value;
        stages.push(CascadeStage { beta, outcome });
    }
    CascadeOutcome { v, value, stages }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// Σ (v_i − log10(β)·(i+1))²: the minimiser moves with β.
    fn moving(beta: f64) -> impl FnMut(&[f64], &mut [f64]) -> f64 {
        let target = beta.log10();
        move |v, g| {
            let mut s = 0.0;
            for i in 0..v.len() {
                let r = v[i] - target * (i as f64 + 1.0);
                s += r * r;
                g[i] = 2.0 * r;
            }
            s
        }
    }

    #[test]
    fn stages_warm_start_from_the_previous_best() {
        let starts = RefCell::new(Vec::new());
        let betas = [1e2, 1e3, 1e4];
        let out = cascade(
            &betas,
            |beta| {
                let mut inner = moving(beta);
                let starts = &starts;
                let mut first = true;
                move |v: &[f64], g: &mut [f64]| {
                    if first {
                        starts.borrow_mut().push(v.to_vec());
                        first = false;
                    }
                    inner(v, g)
                }
            },
            vec![0.0; 3],
            &LbfgsSettings::default(),
            &Budget::unlimited(),
            &CascadeSplit::Even,
        );
        let starts = starts.into_inner();
        assert_eq!(starts.len(), 3);
        assert_eq!(starts[0], vec![0.0; 3]);
        for k in 1..3 {
            assert_eq!(
                starts[k],
                out.stages[k - 1].outcome.v,
                "stage {k} starts at stage {}'s best",
                k - 1
            );
            let target = betas[k - 1].log10();
            for (i, x) in starts[k].iter().enumerate() {
                assert!((x - target * (i as f64 + 1.0)).abs() < 1e-6);
            }
        }
        for (i, x) in out.v.iter().enumerate() {
            assert!((x - 4.0 * (i as f64 + 1.0)).abs() < 1e-6);
        }
        assert!(out.value < 1e-12);
    }

    #[test]
    fn budget_is_split_and_charged() {
        let budget = Budget::evaluations(90);
        let out = cascade(
            &[1e2, 1e3, 1e4],
            |beta| {
                let mut f = moving(beta);
                move |v: &[f64], g: &mut [f64]| {
                    // a slow-converging objective so every stage uses its share
                    let x = f(v, g);
                    x.sqrt().mul_add(1e-3, x)
                }
            },
            vec![0.0; 2],
            &LbfgsSettings {
                tolerance_grad: 0.0,
                tolerance_cost: 0.0,
                ..LbfgsSettings::default()
            },
            &budget,
            &CascadeSplit::Weights(vec![1.0, 1.0, 4.0]),
        );
        let used: Vec<u64> = out.stages.iter().map(|s| s.outcome.evaluations).collect();
        assert!(used[0] <= 15 && used[1] <= (90 - used[0]) / 5, "{used:?}");
        assert_eq!(budget.used(), used.iter().sum::<u64>());
        assert!(budget.used() <= 90);
    }
}
