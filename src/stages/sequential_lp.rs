//! Trust-region sequential LP over the most active lags (DOMAIN.md, "LP steps"), for a problem
//! with a [`LagModel`] (the problem gives it): the first autocorrelation inequality and the Erdős
//! minimum overlap problem.
//!
//! Both scores are, at a fixed sum of the values, the maximum over lags of a quadratic function
//! of the values: `(f∗f)_k` for the first problem (score `2n·max(f∗f)/(Σf)²`), and
//! `C_L = Σ_i λh_(i+L)·(1 − λh_i)` with the constant `λ = n/(2Σh)` for Erdős (score
//! `max C·2/n`). Each step linearises the `active_lags` largest lags (plus lags that broke earlier
//! steps) around the current point and solves, with the stage's [`LpSolver`] (`microlp` or `clarabel`),
//!
//! ```text
//! minimise t   s.t.  lag_k + ∇lag_k·δ ≤ t  (k active),   Σδ = 0,   |δ_i| ≤ r,   box(x + δ),
//! ```
//!
//! where the box is `f + δ ≥ 0` (first problem) or `0 ≤ h + δ ≤ min(1, 2Σh/n)` (Erdős: `[0, 1]`
//! before and after the arena's rescale). A step is accepted only if the true float64 score
//! (`Problem::score_fast`) strictly improves and the problem's verifier rules (`Problem::check`)
//! pass; then `r` doubles (up to half the largest value), otherwise it halves, and every inactive
//! lag the rejected step pushed above the current peak joins the active set for later steps
//! (equioscillation: hundreds of lags tie at the maximum).
//!
//! With `active_within = ε` every lag within `ε·peak` of the peak joins the active set too (up to
//! [`MAX_ACTIVE_LAGS`]: thousands at n = 3,584 for Erdős, where hundreds are not enough). With
//! `line_search = true` the LP's step `δ` is not taken whole: along it every lag is a quadratic
//! in the step length, and the length in `[0, 1]` with the lowest peak is taken
//! (`super::lag_line_search`, two more lag evaluations); the trust region then grows or shrinks
//! with the length taken.
//!
//! Variables are scaled (`δ = r·u`, `|u| ≤ 1`) so the LP's tolerances stay relative to the trust
//! region. For `n > MAX_LP_VARS` the LP only moves a window of `MAX_LP_VARS` consecutive cells
//! (the others stay fixed), and the window slides by half its width every step (block
//! coordinate descent); dense LPs stop scaling near a few thousand samples.

use super::lag_line_search;
use super::lp_solver::{LinearProgram, LpSolver};
use super::{at_least_one, fraction, positive, Stage, StageOutcome, Tunable, TuneRange};
use crate::optimize::Budget;
use crate::problems::{LagModel, Problem};
use serde::{Deserialize, Serialize};

/// The largest number of cells one LP moves; longer constructions use a sliding window.
pub const MAX_LP_VARS: usize = 2_500;

/// At most this many lags (beyond the `active_lags` largest) are remembered because they rose
/// above the peak in a rejected step.
const MAX_EXTRA_LAGS: usize = 200;

/// The most lags one LP constrains (the `active_lags` largest, those within `active_within` of
/// the peak, and those that broke earlier steps).
pub const MAX_ACTIVE_LAGS: usize = 10_000;

/// Coefficients below this fraction of a row's largest one are dropped (keeps each LP row within
/// the six orders of magnitude the solver is accurate for; the true score decides acceptance).
const DROP_RELATIVE: f64 = 1e-7;

/// Sequential LP over the most active lags inside a trust region (for a problem with a
/// [`LagModel`]: the first and Erdős problems).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SequentialLp {
    /// How many of the largest lags enter the LP.
    #[serde(default = "default_active_lags")]
    pub active_lags: usize,
    /// Trust-region radius (max-norm of the step).
    #[serde(default = "default_trust_radius")]
    pub trust_radius: f64,
    /// LP solves.
    #[serde(default = "default_steps")]
    pub steps: usize,
    /// The LP solver (default `auto`: by the LP's size; see the comparison in docs/bench.md).
    #[serde(default, skip_serializing_if = "LpSolver::is_default")]
    pub solver: LpSolver,
    /// Every lag within this fraction of the peak enters the LP as well (0: only the
    /// `active_lags` largest).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub active_within: f64,
    /// Take the length along the LP's step that minimises the peak exactly (the lags are
    /// quadratics along it), rather than the whole step.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub line_search: bool,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// What a sequential-LP run did: its LP solves, how many gave no step, and their time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LpStats {
    /// LPs solved (or attempted).
    pub solves: usize,
    /// LPs that gave no step (infeasible, out of time, or the solver gave up).
    pub failures: usize,
    /// Seconds spent in the solver.
    pub solve_seconds: f64,
}

fn default_active_lags() -> usize {
    100
}
fn default_trust_radius() -> f64 {
    1e-3
}
fn default_steps() -> usize {
    20
}

/// The tunable parameters of sequential LP.
const TUNABLE: &[Tunable] = &[
    Tunable::new("active_lags", TuneRange::Count(2_000)),
    Tunable::new("trust_radius", TuneRange::Positive),
    Tunable::new("steps", TuneRange::Count(100_000)),
    Tunable::new("active_within", TuneRange::Fraction),
];

impl Stage for SequentialLp {
    fn kind(&self) -> &'static str {
        "sequential_lp"
    }

    fn spends_evaluations(&self) -> bool {
        true
    }

    fn check(&self, path: &str) -> Result<(), String> {
        at_least_one(path, "active_lags", self.active_lags)?;
        positive(path, "trust_radius", self.trust_radius)?;
        fraction(path, "active_within", self.active_within)?;
        at_least_one(path, "steps", self.steps)
    }

    fn tunable(&self) -> &'static [Tunable] {
        TUNABLE
    }

    /// Trust-region sequential LP from `start` over the problem's lag model (see the module
    /// documentation); a problem without one, an invalid start, or an all-zero start returns
    /// `start` unchanged.
    ///
    /// At most `steps` LPs are solved. The budget is charged once before every LP solve and once
    /// before every trial point's true score (the score and the lag values at a point count as
    /// one evaluation); the stage stops when it refuses. The result is the best valid point by
    /// true float64 score, never worse than the start. The method is deterministic: the seed is
    /// unused.
    fn run(
        &self,
        problem: &dyn Problem,
        start: &[f64],
        budget: &Budget,
        _seed: u64,
    ) -> StageOutcome {
        run(problem, start, self, budget).0
    }
}

/// The indices of the `count` largest entries of `values`.
fn largest(values: &[f64], count: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..values.len()).collect();
    let count = count.min(idx.len());
    if count == 0 {
        return Vec::new();
    }
    if count < idx.len() {
        idx.select_nth_unstable_by(count - 1, |&a, &b| values[b].total_cmp(&values[a]));
        idx.truncate(count);
    }
    idx
}

/// One LP step: the scaled step `δ = r·u` over the cells of `window` (pairs `(j, δ_j)`), or
/// `None` if the LP failed or was interrupted.
#[allow(clippy::too_many_arguments)]
fn lp_step(
    model: &dyn LagModel,
    x: &[f64],
    lags: &[f64],
    active: &[usize],
    window: std::ops::Range<usize>,
    r: f64,
    scale: f64,
    budget: &Budget,
    solver: LpSolver,
) -> Option<Vec<(usize, f64)>> {
    let lambda = model.factor(x);
    let upper = model.upper(x);
    let peak = active
        .iter()
        .map(|&k| lags[k])
        .fold(f64::NEG_INFINITY, f64::max);
    let mut lp = LinearProgram::default();
    // t = peak + r·scale·τ; δ_j = r·u_j.
    let tau = lp.add_variable(1.0, (f64::NEG_INFINITY, f64::INFINITY));
    let vars: Vec<(usize, usize)> = window
        .clone()
        .map(|j| {
            let (lo, hi) = model.bounds(x, upper, r, j);
            (j, lp.add_variable(0.0, (lo / r, hi.max(lo) / r)))
        })
        .collect();
    lp.equalities
        .push((vars.iter().map(|&(_, v)| (v, 1.0)).collect(), 0.0));
    for &k in active {
        let coefficients: Vec<f64> = vars
            .iter()
            .map(|&(j, _)| model.gradient_entry(x, lambda, k, j) / scale)
            .collect();
        let top = coefficients.iter().fold(0.0f64, |m, c| m.max(c.abs()));
        let mut row: Vec<(usize, f64)> = vars
            .iter()
            .zip(&coefficients)
            .filter(|&(_, &c)| c.abs() > DROP_RELATIVE * top)
            .map(|(&(_, v), &c)| (v, c))
            .collect();
        row.push((tau, -1.0));
        lp.inequalities.push((row, (peak - lags[k]) / (r * scale)));
    }
    let solution = lp.solve(solver, budget.remaining_time(), &budget.cancel)?;
    Some(
        vars.iter()
            .map(|&(j, v)| (j, r * solution[v]))
            .filter(|&(_, d)| d != 0.0)
            .collect(),
    )
}

/// Runs the stage (see [`SequentialLp`]) and says what its LP solves did — the measure behind
/// the solver comparison in docs/bench.md.
pub fn run_with_stats(
    problem: &dyn Problem,
    start: &[f64],
    params: &SequentialLp,
    budget: &Budget,
) -> (StageOutcome, LpStats) {
    run(problem, start, params, budget)
}

fn run(
    problem: &dyn Problem,
    start: &[f64],
    params: &SequentialLp,
    budget: &Budget,
) -> (StageOutcome, LpStats) {
    let mut stats = LpStats::default();
    let unchanged = |stats| (StageOutcome::plain(start.to_vec()), stats);
    let Some(model) = problem.lag_model() else {
        return unchanged(stats);
    };
    if start.is_empty() || problem.check(start).is_err() || params.active_lags == 0 {
        return unchanged(stats);
    }
    let n = start.len();
    if budget.try_spend().is_err() {
        return unchanged(stats);
    }
    let mut x = start.to_vec();
    let mut best = problem.score_fast(&x).value;
    let mut lags = model.lags(&x);
    let max_of = |v: &[f64]| v.iter().fold(0.0f64, |m, &a| m.max(a));
    let mut r = params.trust_radius * max_of(&x);
    let mut extras: Vec<usize> = Vec::new();
    for step in 0..params.steps {
        let top = max_of(&x);
        if r.is_nan() || r <= 1e-14 * top {
            break;
        }
        let window = if n > MAX_LP_VARS {
            let half = MAX_LP_VARS / 2;
            let offset = (step * half) % (n - MAX_LP_VARS + half);
            let lo = offset.min(n - MAX_LP_VARS);
            lo..lo + MAX_LP_VARS
        } else {
            0..n
        };
        let mut active = largest(&lags, params.active_lags);
        // Membership by lag index: the active set can hold thousands of lags.
        let mut chosen = vec![false; lags.len()];
        for &k in &active {
            chosen[k] = true;
        }
        if params.active_within > 0.0 {
            let peak = max_of(&lags);
            let floor = peak - params.active_within * peak.abs();
            let mut near: Vec<usize> = (0..lags.len())
                .filter(|&k| lags[k] >= floor && !chosen[k])
                .collect();
            near.sort_by(|&a, &b| lags[b].total_cmp(&lags[a]));
            near.truncate(MAX_ACTIVE_LAGS.saturating_sub(active.len()));
            for &k in &near {
                chosen[k] = true;
            }
            active.extend(near);
        }
        for &k in &extras {
            if active.len() < MAX_ACTIVE_LAGS && !chosen[k] {
                chosen[k] = true;
                active.push(k);
            }
        }
        // Row scale: the lag gradient's natural size (2·max f, or λ for Erdős).
        let scale = model.row_scale(&x);
        if budget.try_spend().is_err() {
            break;
        }
        let solving = std::time::Instant::now();
        let step = lp_step(
            model,
            &x,
            &lags,
            &active,
            window,
            r,
            scale,
            budget,
            params.solver,
        );
        stats.solves += 1;
        stats.solve_seconds += solving.elapsed().as_secs_f64();
        let Some(delta) = step else {
            stats.failures += 1;
            r *= 0.5;
            continue;
        };
        if delta.is_empty() {
            // The LP sees no descent direction in this region: shrink (or, with a window,
            // the next window may still move).
            r *= 0.5;
            continue;
        }
        let length = if params.line_search {
            if budget.try_spend().is_err() || budget.try_spend().is_err() {
                break;
            }
            lag_line_search::best_length(model, &x, &lags, &delta)
        } else {
            1.0
        };
        if length == 0.0 {
            // No length along the step lowers the peak: a smaller region linearises better.
            r *= 0.5;
            continue;
        }
        let delta: Vec<(usize, f64)> = delta.into_iter().map(|(j, d)| (j, length * d)).collect();
        let candidate = model.finish(&x, &delta);
        if budget.try_spend().is_err() {
            break;
        }
        let valid = problem.check(&candidate).is_ok();
        let score = if valid {
            problem.score_fast(&candidate).value
        } else {
            f64::INFINITY
        };
        if valid && score < best {
            best = score;
            x = candidate;
            lags = model.lags(&x);
            // The whole step doubles the region; a shorter one grows it less, or shrinks it.
            r = (2.0 * length * r)
                .clamp(0.5 * r, 2.0 * r)
                .min(0.5 * max_of(&x));
        } else {
            if valid {
                // Every inactive lag the step pushed above the current peak joins the active
                // set (largest first), up to MAX_EXTRA_LAGS in all.
                let peak = lags.iter().fold(f64::NEG_INFINITY, |m, &a| m.max(a));
                let trial = model.lags(&candidate);
                let mut risen: Vec<usize> = (0..trial.len())
                    .filter(|&k| trial[k] > peak && !active.contains(&k))
                    .collect();
                risen.sort_by(|&a, &b| trial[b].total_cmp(&trial[a]));
                let room = MAX_EXTRA_LAGS.saturating_sub(extras.len());
                extras.extend(risen.into_iter().take(room));
            }
            r *= 0.5;
        }
    }
    (StageOutcome::plain(x), stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problems::by_slug;

    const FIRST: &str = "first-autocorrelation-inequality";
    const ERDOS: &str = "erdos-min-overlap";

    fn score(slug: &str, v: &[f64]) -> f64 {
        let p = by_slug(slug).unwrap();
        p.check(v).unwrap();
        p.score_fast(v).value
    }

    fn run(slug: &str, start: &[f64], params: &SequentialLp, budget: &Budget) -> StageOutcome {
        params.run(by_slug(slug).unwrap().as_ref(), start, budget, 0)
    }

    fn params(steps: usize) -> SequentialLp {
        SequentialLp {
            active_lags: 60,
            trust_radius: 0.05,
            steps,
            solver: LpSolver::default(),
            active_within: 0.0,
            line_search: false,
        }
    }

    fn ripple(n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| 1.0 + 0.3 * ((i as f64) * 0.37).sin() + 0.1 * ((i as f64) * 1.3).cos())
            .collect()
    }

    #[test]
    fn gradient_entries_match_finite_differences() {
        for (slug, x) in [
            (FIRST, ripple(23)),
            (
                ERDOS,
                (0..23).map(|i| 0.2 + 0.02 * i as f64).collect::<Vec<_>>(),
            ),
        ] {
            let problem = by_slug(slug).unwrap();
            let model = problem.lag_model().unwrap();
            let lambda = model.factor(&x);
            let base = model.lags(&x);
            for k in [0, 5, 22, 30, 44] {
                for j in [0, 3, 11, 22] {
                    let h = 1e-6;
                    // Keep the Erdős sum fixed (λ constant) by moving along e_j with λ frozen:
                    // compare against the lag values at fixed λ computed directly.
                    let mut y = x.clone();
                    y[j] += h;
                    let fd = match slug {
                        FIRST => (model.lags(&y)[k] - base[k]) / h,
                        _ => {
                            let lag_at = |v: &[f64]| {
                                let hh: Vec<f64> = v.iter().map(|a| a * lambda).collect();
                                let rest: Vec<f64> = hh.iter().map(|a| 1.0 - a).collect();
                                crate::fast::correlate_full(&hh, &rest).values[k]
                            };
                            (lag_at(&y) - lag_at(&x)) / h
                        }
                    };
                    let g = model.gradient_entry(&x, lambda, k, j);
                    assert!((fd - g).abs() < 1e-5, "{slug} k={k} j={j}: {fd} vs {g}");
                }
            }
        }
    }

    #[test]
    fn first_problem_improves_from_a_ripple_and_respects_the_budget() {
        for n in [50, 120, 200] {
            let start = ripple(n);
            let before = score(FIRST, &start);
            let budget = Budget::evaluations(41);
            let out = run(FIRST, &start, &params(30), &budget);
            let after = score(FIRST, &out.values);
            assert!(after < before - 1e-3, "n={n}: {before} → {after}");
            assert!(budget.used() <= 41);
            assert_eq!(out.values.len(), n);
        }
    }

    #[test]
    fn first_problem_never_gets_worse_at_an_lp_optimum() {
        let start = ripple(80);
        let once = run(FIRST, &start, &params(60), &Budget::unlimited()).values;
        let s1 = score(FIRST, &once);
        let again = run(FIRST, &once, &params(10), &Budget::unlimited()).values;
        assert!(score(FIRST, &again) <= s1);
        // A zero budget returns the start itself.
        let none = run(FIRST, &once, &params(10), &Budget::evaluations(0));
        assert_eq!(none.values, once);
    }

    #[test]
    fn erdos_improves_from_a_ramp_and_stays_valid() {
        for n in [60, 150] {
            // Ramp 0.1 → 0.7 → 0.1: Σh ≈ 0.4n, so n·h_i ≤ 0.7n ≤ 2Σh.
            let start: Vec<f64> = (0..n)
                .map(|i| {
                    let t = i as f64 / (n - 1) as f64;
                    0.1 + 0.6 * (1.0 - (2.0 * t - 1.0).abs())
                })
                .collect();
            let before = score(ERDOS, &start);
            let budget = Budget::evaluations(61);
            let out = run(ERDOS, &start, &params(30), &budget);
            let after = score(ERDOS, &out.values); // also checks validity
            assert!(after < before - 1e-3, "n={n}: {before} → {after}");
            assert!(budget.used() <= 61);
        }
    }

    fn erdos_ramp(n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| {
                let t = i as f64 / (n - 1) as f64;
                0.1 + 0.6 * (1.0 - (2.0 * t - 1.0).abs())
            })
            .collect()
    }

    #[test]
    fn the_line_search_takes_part_of_a_step_the_true_score_refuses_whole() {
        // A trust region far too large for the linearisation: the whole first step is worse by
        // the true score (refused), while the best length along it is better (taken).
        for slug in [ERDOS, FIRST] {
            let start = if slug == ERDOS {
                erdos_ramp(80)
            } else {
                ripple(80)
            };
            let before = score(slug, &start);
            let wide = |line_search| SequentialLp {
                trust_radius: 0.9,
                steps: 1,
                line_search,
                ..params(1)
            };
            let whole = run(slug, &start, &wide(false), &Budget::unlimited()).values;
            assert_eq!(whole, start, "{slug}: the whole step should be refused");
            let searched = run(slug, &start, &wide(true), &Budget::unlimited()).values;
            assert!(
                score(slug, &searched) < before,
                "{slug}: no gain along the step"
            );
        }
    }

    #[test]
    fn lags_near_the_peak_join_the_lp_and_the_score_never_gets_worse() {
        let start = erdos_ramp(120);
        let before = score(ERDOS, &start);
        let near = SequentialLp {
            active_lags: 5,
            active_within: 0.05,
            line_search: true,
            ..params(20)
        };
        let out = run(ERDOS, &start, &near, &Budget::unlimited()).values;
        let few = SequentialLp {
            active_lags: 5,
            ..params(20)
        };
        let fewer = run(ERDOS, &start, &few, &Budget::unlimited()).values;
        let (with_near, without) = (score(ERDOS, &out), score(ERDOS, &fewer));
        assert!(with_near < before && without <= before);
        assert!(with_near < without, "{with_near} vs {without}");
    }

    #[test]
    fn a_bad_active_within_names_its_key() {
        for bad in [-0.1, 1.5, f64::NAN] {
            let p = SequentialLp {
                active_within: bad,
                ..params(3)
            };
            let err = p.check("steps[0]").unwrap_err();
            assert!(err.starts_with("steps[0].active_within:"), "{err}");
        }
    }

    #[test]
    fn other_problems_and_invalid_starts_are_returned_unchanged() {
        let start = ripple(30);
        let out = run(
            "third-autocorrelation-inequality",
            &start,
            &params(5),
            &Budget::unlimited(),
        );
        assert_eq!(out.values, start);
        let bad = vec![2.0; 10]; // Erdős values above 1
        let out = run(ERDOS, &bad, &params(5), &Budget::unlimited());
        assert_eq!(out.values, bad);
    }
}
