//! The linear programs of [`super::sequential_lp`], and the two pure-Rust solvers that can solve
//! them: `microlp` (dual simplex) and `clarabel` (interior point). A program is built once as
//! data ([`LinearProgram`]) and handed to the solver its stage names (`solver = "…"`), by
//! default the one its size calls for ([`LpSolver::Auto`]); the comparison that chose the rule
//! is in docs/bench.md ("Sequential LP: which solver").

use crate::cancel::CancelToken;
use clarabel::algebra::CscMatrix;
use clarabel::solver::{
    DefaultSettingsBuilder, DefaultSolver, IPSolver, SolverStatus, SupportedConeT,
};
use microlp::{ComparisonOp, OptimizationDirection, Problem as Microlp};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Which solver solves a stage's linear programs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LpSolver {
    /// By size, as measured in docs/bench.md: `microlp` below [`CLARABEL_FROM_VARIABLES`]
    /// variables, `clarabel` from there up.
    #[default]
    Auto,
    /// `microlp`'s dual simplex: exact vertices, robust near the optimum on small programs;
    /// dense rows cost it dearly.
    Microlp,
    /// `clarabel`'s interior-point method: 1.6–4.6× faster per solve from 600 variables up.
    Clarabel,
}

/// Size from which [`LpSolver::Auto`] picks `clarabel`: the smallest measured size where it
/// solved faster without failing more (Erdős and first problem, n = 600; at n = 95 `microlp`
/// made 828 steps where `clarabel` failed 15 of 49 solves).
pub const CLARABEL_FROM_VARIABLES: usize = 600;

impl LpSolver {
    /// Whether this is the default solver (so a program's TOML omits it).
    pub fn is_default(&self) -> bool {
        *self == LpSolver::default()
    }

    /// The solver that solves a program of `variables` variables: `Auto` decided by size.
    pub fn for_size(self, variables: usize) -> LpSolver {
        match self {
            LpSolver::Auto if variables >= CLARABEL_FROM_VARIABLES => LpSolver::Clarabel,
            LpSolver::Auto => LpSolver::Microlp,
            chosen => chosen,
        }
    }
}

/// `minimise c·x  s.t.  lower ≤ x ≤ upper,  eq·x = eq_rhs (rows),  le·x ≤ le_rhs (rows)`, with
/// sparse rows of `(variable, coefficient)`.
#[derive(Clone, Debug, Default)]
pub struct LinearProgram {
    /// Objective coefficients, one per variable.
    pub objective: Vec<f64>,
    /// Bounds per variable (either may be infinite).
    pub bounds: Vec<(f64, f64)>,
    /// Equality rows and their right-hand sides.
    pub equalities: Vec<(Vec<(usize, f64)>, f64)>,
    /// `≤` rows and their right-hand sides.
    pub inequalities: Vec<(Vec<(usize, f64)>, f64)>,
}

impl LinearProgram {
    /// Adds a variable with objective coefficient `cost` and bounds; returns its index.
    pub fn add_variable(&mut self, cost: f64, bounds: (f64, f64)) -> usize {
        self.objective.push(cost);
        self.bounds.push(bounds);
        self.objective.len() - 1
    }

    /// Solves with `solver` within `time_limit`: an optimal point, or `None` (infeasible,
    /// unbounded, out of time, cancelled, or the solver gave up). Clarabel, which takes the
    /// large programs (seconds each at a thousand variables), stops at its next iteration once
    /// `cancel` is cancelled, so a cut or a Ctrl-C is not held up by a solve in flight; microlp's
    /// programs are small.
    pub fn solve(
        &self,
        solver: LpSolver,
        time_limit: Option<Duration>,
        cancel: &CancelToken,
    ) -> Option<Vec<f64>> {
        match solver.for_size(self.objective.len()) {
            LpSolver::Clarabel => self.solve_clarabel(time_limit, cancel),
            _ => self.solve_microlp(time_limit),
        }
    }

    fn solve_microlp(&self, time_limit: Option<Duration>) -> Option<Vec<f64>> {
        let mut lp = Microlp::new(OptimizationDirection::Minimize);
        if let Some(limit) = time_limit {
            lp.set_time_limit(limit);
        }
        let vars: Vec<_> = self
            .objective
            .iter()
            .zip(&self.bounds)
            .map(|(&c, &b)| lp.add_var(c, b))
            .collect();
        let row = |r: &[(usize, f64)]| r.iter().map(|&(j, a)| (vars[j], a)).collect::<Vec<_>>();
        for (r, rhs) in &self.equalities {
            lp.add_constraint(row(r).as_slice(), ComparisonOp::Eq, *rhs);
        }
        for (r, rhs) in &self.inequalities {
            lp.add_constraint(row(r).as_slice(), ComparisonOp::Le, *rhs);
        }
        let solution = lp.solve().ok()?.into_solution().ok()?;
        Some(vars.iter().map(|&v| solution.var_value(v)).collect())
    }

    /// Clarabel's form: `Ax + s = b`, `s` in zero cones (equalities) then non-negative cones
    /// (inequalities, then the finite bounds as `x ≤ u` and `−x ≤ −l`).
    fn solve_clarabel(
        &self,
        time_limit: Option<Duration>,
        cancel: &CancelToken,
    ) -> Option<Vec<f64>> {
        let n = self.objective.len();
        // Rows are numbered in order, so every column's entries come out sorted by row.
        let mut columns: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
        let mut b: Vec<f64> = Vec::new();
        for (row, rhs) in self.equalities.iter().chain(&self.inequalities) {
            for &(j, a) in row {
                columns[j].push((b.len(), a));
            }
            b.push(*rhs);
        }
        for (j, &(lo, hi)) in self.bounds.iter().enumerate() {
            if hi.is_finite() {
                columns[j].push((b.len(), 1.0));
                b.push(hi);
            }
            if lo.is_finite() {
                columns[j].push((b.len(), -1.0));
                b.push(-lo);
            }
        }
        let mut colptr = vec![0];
        let (mut rowval, mut nzval) = (Vec::new(), Vec::new());
        for column in &columns {
            for &(i, a) in column {
                rowval.push(i);
                nzval.push(a);
            }
            colptr.push(rowval.len());
        }
        let a = CscMatrix::new(b.len(), n, colptr, rowval, nzval);
        let p = CscMatrix::zeros((n, n));
        let cones = [
            SupportedConeT::ZeroConeT(self.equalities.len()),
            SupportedConeT::NonnegativeConeT(b.len() - self.equalities.len()),
        ];
        let settings = DefaultSettingsBuilder::default()
            .verbose(false)
            .time_limit(time_limit.map_or(f64::INFINITY, |t| t.as_secs_f64()))
            .build()
            .ok()?;
        let mut solver = DefaultSolver::new(&p, &self.objective, &a, &b, &cones, settings).ok()?;
        let cancel = cancel.clone();
        solver.set_termination_callback(move |_| cancel.is_cancelled());
        solver.solve();
        matches!(
            solver.solution.status,
            SolverStatus::Solved | SolverStatus::AlmostSolved
        )
        .then(|| solver.solution.x.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `min −x − 2y  s.t.  x + y ≤ 4,  x − y = 1,  0 ≤ x, y ≤ 3`: optimum (2.5, 1.5).
    fn small() -> LinearProgram {
        let mut lp = LinearProgram::default();
        let x = lp.add_variable(-1.0, (0.0, 3.0));
        let y = lp.add_variable(-2.0, (0.0, 3.0));
        lp.inequalities.push((vec![(x, 1.0), (y, 1.0)], 4.0));
        lp.equalities.push((vec![(x, 1.0), (y, -1.0)], 1.0));
        lp
    }

    #[test]
    fn both_solvers_find_the_optimum() {
        for solver in [LpSolver::Microlp, LpSolver::Clarabel] {
            let x = small().solve(solver, None, &CancelToken::new()).unwrap();
            assert!((x[0] - 2.5).abs() < 1e-6, "{solver:?} {x:?}");
            assert!((x[1] - 1.5).abs() < 1e-6, "{solver:?} {x:?}");
        }
    }

    #[test]
    fn auto_picks_by_size_and_a_named_solver_stays() {
        assert_eq!(LpSolver::Auto.for_size(95), LpSolver::Microlp);
        assert_eq!(LpSolver::Auto.for_size(599), LpSolver::Microlp);
        assert_eq!(LpSolver::Auto.for_size(600), LpSolver::Clarabel);
        assert_eq!(LpSolver::Microlp.for_size(2500), LpSolver::Microlp);
        assert_eq!(LpSolver::Clarabel.for_size(2), LpSolver::Clarabel);
        let x = small()
            .solve(LpSolver::Auto, None, &CancelToken::new())
            .unwrap();
        assert!(
            (x[0] - 2.5).abs() < 1e-6 && (x[1] - 1.5).abs() < 1e-6,
            "{x:?}"
        );
    }

    #[test]
    fn a_cancelled_clarabel_solve_stops_with_no_point() {
        let cancel = CancelToken::new();
        cancel.cancel();
        assert_eq!(small().solve(LpSolver::Clarabel, None, &cancel), None);
        assert!(small()
            .solve(LpSolver::Clarabel, None, &CancelToken::new())
            .is_some());
    }

    #[test]
    fn an_infeasible_program_is_none_for_both() {
        let mut lp = small();
        lp.inequalities.push((vec![(0, 1.0)], -1.0));
        for solver in [LpSolver::Microlp, LpSolver::Clarabel] {
            assert_eq!(
                lp.solve(solver, None, &CancelToken::new()),
                None,
                "{solver:?}"
            );
        }
    }
}
