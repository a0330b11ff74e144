//! L-BFGS with a strong-Wolfe (Moré–Thuente) line search, through argmin, under a [`Budget`].

use super::budget::Budget;
use super::tracked::{Tracked, Tracker};
use argmin::core::{Executor, State, TerminationReason};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use argmin::solver::quasinewton::LBFGS;
use std::cell::RefCell;

/// Settings of [`minimise`].
#[derive(Clone, Debug, PartialEq)]
pub struct LbfgsSettings {
    /// Number of stored correction pairs (DOMAIN.md: 200–300 for polishing).
    pub history: usize,
    /// Maximum number of L-BFGS iterations, over all restarts.
    pub max_iterations: u64,
    /// Stop when the gradient's L2 norm falls below this.
    pub tolerance_grad: f64,
    /// Stop when one iteration changes the value by less than this (absolute).
    pub tolerance_cost: f64,
    /// When a line search fails after progress was made, restart from the best point with an
    /// empty history, at most this many times.
    pub max_restarts: u32,
}

impl Default for LbfgsSettings {
    fn default() -> Self {
        Self {
            history: 200,
            max_iterations: 10_000,
            tolerance_grad: 1e-10,
            tolerance_cost: 1e-15,
            max_restarts: 5,
        }
    }
}

/// What [`minimise`] found.
#[derive(Clone, Debug, PartialEq)]
pub struct LbfgsOutcome {
    /// The best point seen (the start if nothing better was found).
    pub v: Vec<f64>,
    /// The objective at `v`; NaN only if the budget allowed no evaluation at all.
    pub value: f64,
    /// L-BFGS iterations made, over all restarts.
    pub iterations: u64,
    /// Objective calls made by this run.
    pub evaluations: u64,
    /// Why the run stopped.
    pub stopped: String,
}

/// Minimise `objective: (v, grad) ↦ value` from `v0` with L-BFGS.
///
/// The objective must write the full gradient into `grad` (it is zeroed before each call). It is
/// called only while `budget` allows (each call is counted in it), and once per distinct point.
/// The returned point is the best one evaluated, so its value never exceeds the start's. The run
/// is deterministic: same input and an evaluation budget give a bit-identical outcome.
pub fn minimise<F>(
    objective: F,
    v0: Vec<f64>,
    settings: &LbfgsSettings,
    budget: &Budget,
) -> LbfgsOutcome
where
    F: FnMut(&[f64], &mut [f64]) -> f64,
{
    let tracker = RefCell::new(Tracker::new(objective, budget, &v0));
    let mut iterations = 0_u64;
    let mut restarts = 0_u32;
    let mut stopped;
    loop {
        let (start, known) = {
            let t = tracker.borrow();
            let known = t.has_best().then(|| (t.best_value, t.best_grad.clone()));
            (t.best_v.clone(), known)
        };
        let before = known.as_ref().map_or(f64::NAN, |k| k.0);
        let solver = LBFGS::new(MoreThuenteLineSearch::new(), settings.history.max(1))
            .with_tolerance_grad(settings.tolerance_grad.max(0.0))
            .and_then(|s| s.with_tolerance_cost(settings.tolerance_cost.max(0.0)));
        let solver = match solver {
            Ok(s) => s,
            Err(e) => {
                stopped = format!("invalid settings: {e}");
                break;
            }
        };
        let remaining = settings.max_iterations.saturating_sub(iterations);
        let result = Executor::new(Tracked { tracker: &tracker }, solver)
            .configure(|state| {
                let state = state.param(start).max_iters(remaining);
                match known {
                    Some((value, grad)) => state.cost(value).gradient(grad),
                    None => state,
                }
            })
            .ctrlc(false)
            .timer(false)
            .run();
        let mut line_search_failed = false;
        match result {
            Ok(res) => {
                let state = res.state();
                iterations += state.get_iter();
                let reason = state.get_termination_reason();
                line_search_failed = matches!(reason,
                    Some(TerminationReason::SolverExit(s)) if s.starts_with("Line search"));
                stopped = reason.map_or_else(|| "unknown".to_string(), |r| r.to_string());
            }
            Err(e) => stopped = format!("error: {e}"),
        }
        let t = tracker.borrow();
        if let Some(why) = t.exhausted {
            stopped = why.to_string();
            break;
        }
        let progressed = t.has_best() && (before.is_nan() || t.best_value < before);
        if !line_search_failed
            || !progressed
            || restarts >= settings.max_restarts
            || iterations >= settings.max_iterations
        {
            break;
        }
        restarts += 1;
    }
    let t = tracker.into_inner();
    LbfgsOutcome {
        v: t.best_v,
        value: t.best_value,
        iterations,
        evaluations: t.evaluations,
        stopped,
    }
}
