//! The L-BFGS stage: a β cascade of L-BFGS runs on the problem's smooth surrogate, in the chosen
//! parameterisation, warm-started from stage to stage (DOMAIN.md: "L-BFGS … does the polishing").

use super::{at_least_one, betas, Stage, StageOutcome, Tunable, TuneRange};
use crate::objective::SmoothMaxName;
use crate::optimize::{cascade, Budget, CascadeSplit, LbfgsSettings, Mask, Parameterisation};
use crate::problems::Problem;
use serde::{Deserialize, Serialize};

/// L-BFGS on the smooth surrogate, one run per β of the cascade, warm-started.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lbfgs {
    /// Parameterisation of the values.
    pub parameterisation: Parameterisation,
    /// Smooth max used in the surrogate.
    #[serde(default = "default_smooth_max")]
    pub smooth_max: SmoothMaxName,
    /// The β cascade (raised from low to high).
    #[serde(default = "default_betas")]
    pub betas: Vec<f64>,
    /// L-BFGS history length.
    #[serde(default = "default_history")]
    pub history: usize,
    /// Iterations per β.
    #[serde(default = "default_iterations")]
    pub iterations: u64,
}

fn default_smooth_max() -> SmoothMaxName {
    SmoothMaxName::LogSumExp
}
fn default_betas() -> Vec<f64> {
    vec![1e2, 1e3, 1e4, 1e5, 1e6]
}
fn default_history() -> usize {
    200
}
/// Iterations of an optimizer stage when the program does not say (L-BFGS per β, Adam).
pub(crate) fn default_iterations() -> u64 {
    2_000
}

/// The tunable parameters of an L-BFGS block.
const TUNABLE: &[Tunable] = &[
    Tunable::new("betas", TuneRange::Positive),
    Tunable::new("history", TuneRange::Count(500)),
    Tunable::new("iterations", TuneRange::Count(10_000_000)),
];

impl Lbfgs {
    /// The polish a stage runs between its own moves (prune–regrow between levels): a short
    /// high-β cascade in the problem's default parameterisation.
    pub fn polish(problem: &dyn Problem) -> Lbfgs {
        Lbfgs {
            parameterisation: problem.default_parameterisation(),
            smooth_max: SmoothMaxName::LogSumExp,
            betas: vec![1e4, 1e6],
            history: 50,
            iterations: 300,
        }
    }

    /// A log-sum-exp cascade over `betas` in `parameterisation`, or the problem's default one.
    pub fn log_sum_exp(
        problem: &dyn Problem,
        parameterisation: Option<Parameterisation>,
        betas: Vec<f64>,
        history: usize,
        iterations: u64,
    ) -> Lbfgs {
        Lbfgs {
            parameterisation: parameterisation
                .unwrap_or_else(|| problem.default_parameterisation()),
            smooth_max: SmoothMaxName::LogSumExp,
            betas,
            history,
            iterations,
        }
    }

    /// The L-BFGS settings of one run of the cascade.
    pub(crate) fn settings(&self) -> LbfgsSettings {
        LbfgsSettings {
            history: self.history,
            max_iterations: self.iterations,
            ..LbfgsSettings::default()
        }
    }
}

impl Stage for Lbfgs {
    fn kind(&self) -> &'static str {
        "lbfgs"
    }

    fn spends_evaluations(&self) -> bool {
        true
    }

    fn check(&self, path: &str) -> Result<(), String> {
        betas(path, "betas", &self.betas)?;
        at_least_one(path, "history", self.history)?;
        at_least_one(path, "iterations", self.iterations as usize)
    }

    fn tunable(&self) -> &'static [Tunable] {
        TUNABLE
    }

    /// Runs the cascade from `start`; returns the last stage's best point and its β (the method
    /// is deterministic: the seed is unused).
    fn run(
        &self,
        problem: &dyn Problem,
        start: &[f64],
        budget: &Budget,
        _seed: u64,
    ) -> StageOutcome {
        self.run_masked(problem, start, budget, &Mask::none(start.len()))
    }
}

impl Lbfgs {
    /// The cascade from `start` with the variables `frozen` marks held where they start (their
    /// gradient is zeroed, so L-BFGS never moves them).
    pub fn run_masked(
        &self,
        problem: &dyn Problem,
        start: &[f64],
        budget: &Budget,
        frozen: &Mask,
    ) -> StageOutcome {
        let n = start.len();
        let param = self.parameterisation;
        let outcome =
            cascade(
                &self.betas,
                |beta| {
                    let mut objective = problem.objective(n, self.smooth_max.build(beta));
                    frozen.wrap(param.compose(move |f: &[f64], g: &mut [f64]| {
                        objective.value_and_gradient(f, g)
                    }))
                },
                param.inverse(start),
                &self.settings(),
                budget,
                &CascadeSplit::Even,
            );
        let mut values = vec![0.0; n];
        param.forward(&outcome.v, &mut values);
        StageOutcome {
            values,
            beta: self.betas.last().copied(),
            note: None,
        }
    }
}

/// The tunable parameters of an L-BFGS block nested under `inner` (Dinkelbach's inner run).
pub(crate) const INNER_TUNABLE: &[Tunable] = &[
    Tunable::new("inner.betas", TuneRange::Positive),
    Tunable::new("inner.history", TuneRange::Count(500)),
    Tunable::new("inner.iterations", TuneRange::Count(10_000_000)),
];
