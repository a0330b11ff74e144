//! The L-BFGS stage: a β cascade of L-BFGS runs on the problem's smooth surrogate, in the chosen
//! parameterisation, warm-started from stage to stage (DOMAIN.md: "L-BFGS … does the polishing").

use super::StageOutcome;
use crate::objective::objective_for;
use crate::optimize::{cascade, Budget, CascadeSplit, LbfgsSettings};
use crate::program::LbfgsParams;

/// Runs the cascade from `start`; returns the last stage's best point and its β.
pub fn run(slug: &str, start: &[f64], params: &LbfgsParams, budget: &Budget) -> StageOutcome {
    let n = start.len();
    let param = params.parameterisation.build();
    let settings = LbfgsSettings {
        history: params.history,
        max_iterations: params.iterations,
        ..LbfgsSettings::default()
    };
    let outcome = cascade(
        &params.betas,
        |beta| {
            let mut objective = objective_for(slug, n, params.smooth_max.build(beta))
                .expect("the runner only runs known problems");
            param.compose(move |f: &[f64], g: &mut [f64]| objective.value_and_gradient(f, g))
        },
        param.inverse(start),
        &settings,
        budget,
        &CascadeSplit::Even,
    );
    let mut values = vec![0.0; n];
    param.forward(&outcome.v, &mut values);
    StageOutcome {
        values,
        beta: params.betas.last().copied(),
    }
}
