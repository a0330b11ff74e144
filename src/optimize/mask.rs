//! Frozen cells: a mask that keeps chosen variables fixed by zeroing their gradient.

/// A set of frozen variables. Applied to a gradient, it zeroes the frozen entries, so a
/// gradient-based solver never moves them (e.g. frozen zeros of a support, or cells whose sign is
/// to be kept while others move).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mask {
    frozen: Vec<bool>,
}

impl Mask {
    /// A mask over `n` variables with none frozen.
    pub fn none(n: usize) -> Self {
        Self {
            frozen: vec![false; n],
        }
    }

    /// A mask from flags (`true`: frozen).
    pub fn from_frozen(frozen: Vec<bool>) -> Self {
        Self { frozen }
    }

    /// Freeze the cells of `values` for which `predicate` holds (e.g. `|x| x == 0.0` for frozen zeros).
    pub fn where_values(values: &[f64], predicate: impl Fn(f64) -> bool) -> Self {
        Self::from_frozen(values.iter().map(|&x| predicate(x)).collect())
    }

    /// Freeze variable `i`.
    pub fn freeze(&mut self, i: usize) {
        self.frozen[i] = true;
    }

    /// Release variable `i`.
    pub fn release(&mut self, i: usize) {
        self.frozen[i] = false;
    }

    /// Whether variable `i` is frozen.
    pub fn is_frozen(&self, i: usize) -> bool {
        self.frozen[i]
    }

    /// Number of variables the mask covers.
    pub fn len(&self) -> usize {
        self.frozen.len()
    }

    /// Whether the mask covers no variables.
    pub fn is_empty(&self) -> bool {
        self.frozen.is_empty()
    }

    /// Number of frozen variables.
    pub fn count_frozen(&self) -> usize {
        self.frozen.iter().filter(|&&b| b).count()
    }

    /// Zero the gradient's frozen entries. Panics if the lengths differ.
    pub fn apply(&self, grad: &mut [f64]) {
        assert_eq!(
            grad.len(),
            self.frozen.len(),
            "mask and gradient lengths differ"
        );
        for (g, &frozen) in grad.iter_mut().zip(&self.frozen) {
            if frozen {
                *g = 0.0;
            }
        }
    }

    /// Wrap an objective `v ↦ (value, gradient)` so that its gradient is masked.
    pub fn wrap<'a, F>(&'a self, mut objective: F) -> impl FnMut(&[f64], &mut [f64]) -> f64 + 'a
    where
        F: FnMut(&[f64], &mut [f64]) -> f64 + 'a,
    {
        move |v, grad| {
            let value = objective(v, grad);
            self.apply(grad);
            value
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroes_frozen_entries_only() {
        let mask = Mask::where_values(&[0.0, 1.0, 0.0, 2.0], |x| x == 0.0);
        assert_eq!(mask.count_frozen(), 2);
        let mut g = vec![1.0, 2.0, 3.0, 4.0];
        mask.apply(&mut g);
        assert_eq!(g, vec![0.0, 2.0, 0.0, 4.0]);
    }

    #[test]
    fn wrapped_objective_keeps_frozen_cells_fixed_under_lbfgs() {
        use crate::optimize::{minimise, Budget, LbfgsSettings};
        let mut mask = Mask::none(3);
        mask.freeze(1);
        let quad = |v: &[f64], g: &mut [f64]| {
            let mut s = 0.0;
            for i in 0..v.len() {
                s += (v[i] - 1.0) * (v[i] - 1.0);
                g[i] = 2.0 * (v[i] - 1.0);
            }
            s
        };
        let out = minimise(
            mask.wrap(quad),
            vec![0.0, 5.0, 0.0],
            &LbfgsSettings::default(),
            &Budget::unlimited(),
        );
        assert_eq!(out.v[1], 5.0);
        assert!((out.v[0] - 1.0).abs() < 1e-8 && (out.v[2] - 1.0).abs() < 1e-8);
    }
}
