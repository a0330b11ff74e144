//! An objective wrapped for argmin: counted against a [`Budget`], cached at the last point, and
//! keeping the best point seen.

use super::budget::{Budget, Exhaustion};
use argmin::core::{CostFunction, Error, Gradient};
use std::cell::RefCell;

/// The state behind a [`Tracked`] objective.
pub(crate) struct Tracker<'b, F> {
    objective: F,
    budget: &'b Budget,
    /// Objective calls made through this tracker.
    pub evaluations: u64,
    /// Why the budget refused an evaluation, if it did.
    pub exhausted: Option<Exhaustion>,
    last_v: Vec<f64>,
    last_value: f64,
    last_grad: Vec<f64>,
    has_last: bool,
    /// Best (lowest finite value) point seen, its value (NaN before any evaluation) and gradient.
    pub best_v: Vec<f64>,
    /// Value at `best_v`; NaN while nothing has been evaluated.
    pub best_value: f64,
    /// Gradient at `best_v`.
    pub best_grad: Vec<f64>,
}

impl<'b, F: FnMut(&[f64], &mut [f64]) -> f64> Tracker<'b, F> {
    /// A tracker whose best point starts as `v0` (not yet evaluated).
    pub fn new(objective: F, budget: &'b Budget, v0: &[f64]) -> Self {
        Self {
            objective,
            budget,
            evaluations: 0,
            exhausted: None,
            last_v: Vec::new(),
            last_value: f64::NAN,
            last_grad: Vec::new(),
            has_last: false,
            best_v: v0.to_vec(),
            best_value: f64::NAN,
            best_grad: vec![0.0; v0.len()],
        }
    }

    /// Whether `best_value` holds an evaluated value.
    pub fn has_best(&self) -> bool {
        !self.best_value.is_nan()
    }

    /// Make the cache hold `v`'s value and gradient, evaluating if needed.
    fn evaluate(&mut self, v: &[f64]) -> Result<(), Exhaustion> {
        if self.has_last && self.last_v == v {
            return Ok(());
        }
        if let Err(why) = self.budget.try_spend() {
            self.exhausted = Some(why);
            return Err(why);
        }
        self.evaluations += 1;
        self.last_v.clear();
        self.last_v.extend_from_slice(v);
        self.last_grad.clear();
        self.last_grad.resize(v.len(), 0.0);
        self.last_value = (self.objective)(v, &mut self.last_grad);
        self.has_last = true;
        let better = !self.has_best() || self.last_value < self.best_value;
        if !self.last_value.is_nan() && better {
            self.best_value = self.last_value;
            self.best_v.clone_from(&self.last_v);
            self.best_grad.clone_from(&self.last_grad);
        }
        Ok(())
    }
}

/// The argmin problem: borrows a [`Tracker`].
pub(crate) struct Tracked<'a, 'b, F> {
    /// The tracker, shared with the caller so it survives an argmin error.
    pub tracker: &'a RefCell<Tracker<'b, F>>,
}

impl<F: FnMut(&[f64], &mut [f64]) -> f64> CostFunction for Tracked<'_, '_, F> {
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, v: &Vec<f64>) -> Result<f64, Error> {
        let mut t = self.tracker.borrow_mut();
        t.evaluate(v).map_err(Error::msg)?;
        Ok(t.last_value)
    }
}

impl<F: FnMut(&[f64], &mut [f64]) -> f64> Gradient for Tracked<'_, '_, F> {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;

    fn gradient(&self, v: &Vec<f64>) -> Result<Vec<f64>, Error> {
        let mut t = self.tracker.borrow_mut();
        t.evaluate(v).map_err(Error::msg)?;
        Ok(t.last_grad.clone())
    }
}
