//! L-BFGS with a strong-Wolfe line search under a [`Budget`], keeping the best point seen.
//!
//! Written for this project's sizes (n up to 2,000,000): the two-loop recursion and the line
//! search work in place on preallocated vectors. (argmin's L-BFGS, used at first, allocates a
//! new vector for every vector operation; at n = 50,000 that cost 5–20 ms per iteration against
//! a 2.5 ms objective.) The line search is Nocedal & Wright's Algorithm 3.5 with the zoom of
//! Algorithm 3.6 and safeguarded cubic interpolation.

use super::budget::{Budget, Exhaustion};

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

/// Sufficient-decrease constant of the Wolfe conditions.
const C1: f64 = 1e-4;
/// Curvature constant of the strong Wolfe conditions.
const C2: f64 = 0.9;
/// Line-search trials before giving up.
const MAX_TRIALS: usize = 30;

/// The objective with budget accounting and the best point seen.
struct Counted<'b, F> {
    objective: F,
    budget: &'b Budget,
    evaluations: u64,
    exhausted: Option<Exhaustion>,
    best_v: Vec<f64>,
    best_value: f64,
}

impl<F: FnMut(&[f64], &mut [f64]) -> f64> Counted<'_, F> {
    /// Value at `v` with its gradient in `grad`, or `None` when the budget refuses.
    fn eval(&mut self, v: &[f64], grad: &mut [f64]) -> Option<f64> {
        if let Err(why) = self.budget.try_spend() {
            self.exhausted = Some(why);
            return None;
        }
        self.evaluations += 1;
        grad.iter_mut().for_each(|g| *g = 0.0);
        let value = (self.objective)(v, grad);
        if value.is_finite() && (self.best_value.is_nan() || value < self.best_value) {
            self.best_value = value;
            self.best_v.copy_from_slice(v);
        }
        Some(value)
    }
}

/// Dot product with four independent partial sums, so that the compiler can vectorise it (the
/// order is fixed, so results are reproducible).
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut partial = [0.0f64; 4];
    let (a4, b4) = (a.chunks_exact(4), b.chunks_exact(4));
    let tail: f64 = a4
        .remainder()
        .iter()
        .zip(b4.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a4.zip(b4) {
        for k in 0..4 {
            partial[k] += x[k] * y[k];
        }
    }
    (partial[0] + partial[1]) + (partial[2] + partial[3]) + tail
}

/// `d_i = update(d_i, x_i)` for all `i`, then `next·d` of the updated `d` — in one pass over `d`
/// instead of two. The dot product keeps [`dot`]'s summation order exactly, so the result is
/// bit-identical to an update pass followed by `dot(next, d)`.
#[inline(always)]
fn update_then_dot(
    d: &mut [f64],
    x: &[f64],
    next: &[f64],
    update: impl Fn(f64, f64) -> f64,
) -> f64 {
    assert!(d.len() == x.len() && d.len() == next.len());
    let mut partial = [0.0f64; 4];
    let split = d.len() - d.len() % 4;
    let (d4, d_tail) = d.split_at_mut(split);
    let (x4, x_tail) = x.split_at(split);
    let (n4, n_tail) = next.split_at(split);
    for ((dc, xc), nc) in d4
        .chunks_exact_mut(4)
        .zip(x4.chunks_exact(4))
        .zip(n4.chunks_exact(4))
    {
        for k in 0..4 {
            dc[k] = update(dc[k], xc[k]);
            partial[k] += nc[k] * dc[k];
        }
    }
    d_tail
        .iter_mut()
        .zip(x_tail)
        .for_each(|(di, &xi)| *di = update(*di, xi));
    let tail: f64 = n_tail.iter().zip(d_tail.iter()).map(|(x, y)| x * y).sum();
    (partial[0] + partial[1]) + (partial[2] + partial[3]) + tail
}

/// The correction pairs `s = Δv`, `y = Δgrad` of the last iterations, oldest first, reusing
/// their storage.
struct History {
    s: Vec<Vec<f64>>,
    y: Vec<Vec<f64>>,
    rho: Vec<f64>,
    /// `y·y` of each stored pair (for the initial scaling γ, computed once at push).
    yy: Vec<f64>,
    len: usize,
    head: usize,
    alpha: Vec<f64>,
}

impl History {
    fn new(capacity: usize) -> Self {
        History {
            s: Vec::with_capacity(capacity),
            y: Vec::with_capacity(capacity),
            rho: vec![0.0; capacity],
            yy: vec![0.0; capacity],
            len: 0,
            head: 0,
            alpha: vec![0.0; capacity],
        }
    }

    fn clear(&mut self) {
        self.len = 0;
        self.head = 0;
    }

    /// Stores `s = new_v − v`, `y = new_g − g` if the curvature `s·y` is positive.
    fn push(&mut self, v: &[f64], new_v: &[f64], g: &[f64], new_g: &[f64]) {
        let capacity = self.rho.len();
        let slot = (self.head + self.len) % capacity;
        if self.s.len() <= slot {
            self.s.push(vec![0.0; v.len()]);
            self.y.push(vec![0.0; v.len()]);
        }
        // s, y and their three dot products in one pass (each sum in [`dot`]'s exact order).
        let (s, y) = (&mut self.s[slot], &mut self.y[slot]);
        let (mut sy4, mut yy4, mut ss4) = ([0.0f64; 4], [0.0f64; 4], [0.0f64; 4]);
        let split = s.len() - s.len() % 4;
        for (((sc, yc), (nv, ov)), (ng, og)) in s[..split]
            .chunks_exact_mut(4)
            .zip(y[..split].chunks_exact_mut(4))
            .zip(new_v.chunks_exact(4).zip(v.chunks_exact(4)))
            .zip(new_g.chunks_exact(4).zip(g.chunks_exact(4)))
        {
            for k in 0..4 {
                sc[k] = nv[k] - ov[k];
                yc[k] = ng[k] - og[k];
                sy4[k] += sc[k] * yc[k];
                yy4[k] += yc[k] * yc[k];
                ss4[k] += sc[k] * sc[k];
            }
        }
        for i in split..s.len() {
            s[i] = new_v[i] - v[i];
            y[i] = new_g[i] - g[i];
        }
        let finish = |p: [f64; 4], a: &[f64], b: &[f64]| -> f64 {
            let tail: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
            (p[0] + p[1]) + (p[2] + p[3]) + tail
        };
        let sy = finish(sy4, &s[split..], &y[split..]);
        let yy = finish(yy4, &y[split..], &y[split..]);
        let threshold = 1e-12 * yy.sqrt() * finish(ss4, &s[split..], &s[split..]).sqrt();
        // Kept even for a rejected pair, whose s, y overwrite the slot all the same.
        self.yy[slot] = yy;
        // NaN curvature fails this test too: such a pair is never stored.
        if sy.partial_cmp(&threshold) != Some(std::cmp::Ordering::Greater) {
            return;
        }
        self.rho[slot] = 1.0 / sy;
        if self.len < capacity {
            self.len += 1;
        } else {
            self.head = (self.head + 1) % capacity;
        }
    }

    /// `direction = −H·g` by the two-loop recursion; returns `g·direction`.
    ///
    /// Each dot product is fused with the preceding vector update ([`update_then_dot`]), halving
    /// the passes over `direction` (`2·len + 1` instead of `4·len + 2`) with bit-identical results:
    /// the first loop's `s_(k−1)·d` rides on `d −= α_k·y_k`, the second loop's `y_(k+1)·d` on
    /// `d += (α_k − β_k)·s_k`, and the last update also yields the slope `g·d`.
    fn direction(&mut self, g: &[f64], direction: &mut [f64]) -> f64 {
        let capacity = self.rho.len();
        let (head, len) = (self.head, self.len);
        let slot = |k: usize| (head + k) % capacity;
        if len == 0 {
            direction.iter_mut().zip(g).for_each(|(d, x)| *d = -x);
            return dot(g, direction);
        }
        // d = −g, with s_newest·d.
        let mut s_dot_d = update_then_dot(direction, g, &self.s[slot(len - 1)], |_, x| -x);
        // The initial scaling γ = s·y / y·y of the newest pair.
        let newest = slot(len - 1);
        let gamma = 1.0 / (self.rho[newest] * self.yy[newest]);
        let mut y_dot_d = 0.0;
        for k in (0..len).rev() {
            let j = slot(k);
            let a = self.rho[j] * s_dot_d;
            self.alpha[j] = a;
            if k > 0 {
                s_dot_d = update_then_dot(direction, &self.y[j], &self.s[slot(k - 1)], |d, y| {
                    d - a * y
                });
            } else {
                // Last update, then ×γ (same bits as two passes), with y_oldest·d for the
                // second loop.
                y_dot_d = update_then_dot(direction, &self.y[j], &self.y[slot(0)], |d, y| {
                    (d - a * y) * gamma
                });
            }
        }
        for k in 0..len {
            let j = slot(k);
            let b = self.rho[j] * y_dot_d;
            let c = self.alpha[j] - b;
            let next = if k + 1 < len { &self.y[slot(k + 1)] } else { g };
            y_dot_d = update_then_dot(direction, &self.s[j], next, |d, s| d + c * s);
        }
        y_dot_d
    }
}

/// A point of the line search: step, value, directional derivative.
#[derive(Clone, Copy)]
struct Trial {
    t: f64,
    value: f64,
    slope: f64,
}

/// Minimiser of the cubic through two trials, safeguarded into the interval between them.
fn interpolate(lo: Trial, hi: Trial) -> f64 {
    let d1 = lo.slope + hi.slope - 3.0 * (lo.value - hi.value) / (lo.t - hi.t);
    let d2_sq = d1 * d1 - lo.slope * hi.slope;
    let (a, b) = (lo.t.min(hi.t), lo.t.max(hi.t));
    if d2_sq >= 0.0 {
        let d2 = d2_sq.sqrt().copysign(hi.t - lo.t);
        let t = hi.t - (hi.t - lo.t) * (hi.slope + d2 - d1) / (hi.slope - lo.slope + 2.0 * d2);
        let margin = 0.1 * (b - a);
        if t.is_finite() && t > a + margin && t < b - margin {
            return t;
        }
    }
    0.5 * (a + b)
}

/// Outcome of a line search: the accepted step, or why none was.
enum Search {
    Accepted(Trial),
    Failed,
    Exhausted,
}

/// Strong-Wolfe line search from `v` along `direction`; on success `trial_v`/`trial_g` hold the
/// accepted point and its gradient.
#[allow(clippy::too_many_arguments)]
fn line_search<F: FnMut(&[f64], &mut [f64]) -> f64>(
    counted: &mut Counted<'_, F>,
    v: &[f64],
    value: f64,
    slope0: f64,
    direction: &[f64],
    first_step: f64,
    trial_v: &mut [f64],
    trial_g: &mut [f64],
) -> Search {
    let origin = Trial {
        t: 0.0,
        value,
        slope: slope0,
    };
    let mut probe = |t: f64, trial_v: &mut [f64], trial_g: &mut [f64]| -> Option<Trial> {
        trial_v
            .iter_mut()
            .zip(v.iter().zip(direction))
            .for_each(|(x, (vi, di))| *x = vi + t * di);
        let value = counted.eval(trial_v, trial_g)?;
        Some(Trial {
            t,
            value,
            slope: dot(trial_g, direction),
        })
    };
    let mut previous = origin;
    let mut t = first_step;
    let (mut lo, mut hi);
    let mut trials = 0;
    loop {
        trials += 1;
        let Some(current) = probe(t, trial_v, trial_g) else {
            return Search::Exhausted;
        };
        if !current.value.is_finite()
            || current.value > value + C1 * t * slope0
            || (trials > 1 && current.value >= previous.value)
        {
            (lo, hi) = (previous, current);
            break;
        }
        if current.slope.abs() <= -C2 * slope0 {
            return Search::Accepted(current);
        }
        if current.slope >= 0.0 {
            (lo, hi) = (current, previous);
            break;
        }
        if trials >= MAX_TRIALS {
            return Search::Failed;
        }
        previous = current;
        t *= 2.0;
    }
    // Zoom between lo (satisfies sufficient decrease, lowest so far) and hi.
    while trials < MAX_TRIALS {
        trials += 1;
        let t = if hi.value.is_finite() {
            interpolate(lo, hi)
        } else {
            0.5 * (lo.t + hi.t)
        };
        let Some(current) = probe(t, trial_v, trial_g) else {
            return Search::Exhausted;
        };
        if !current.value.is_finite()
            || current.value > value + C1 * t * slope0
            || current.value >= lo.value
        {
            hi = current;
        } else {
            if current.slope.abs() <= -C2 * slope0 {
                return Search::Accepted(current);
            }
            if current.slope * (hi.t - lo.t) >= 0.0 {
                hi = lo;
            }
            lo = current;
        }
        if (hi.t - lo.t).abs() <= f64::EPSILON * lo.t.abs().max(1e-300) {
            break;
        }
    }
    Search::Failed
}

/// Minimise `objective: (v, grad) ↦ value` from `v0` with L-BFGS.
///
/// The objective must write the full gradient into `grad` (it is zeroed before each call). It is
/// called only while `budget` allows (each call is counted in it). The returned point is the best
/// one evaluated, so its value never exceeds the start's. The run is deterministic: same input and
/// an evaluation budget give a bit-identical outcome.
pub fn minimise<F>(
    objective: F,
    v0: Vec<f64>,
    settings: &LbfgsSettings,
    budget: &Budget,
) -> LbfgsOutcome
where
    F: FnMut(&[f64], &mut [f64]) -> f64,
{
    let n = v0.len();
    let mut counted = Counted {
        objective,
        budget,
        evaluations: 0,
        exhausted: None,
        best_v: v0.clone(),
        best_value: f64::NAN,
    };
    let mut v = v0;
    let mut g = vec![0.0; n];
    let mut trial_v = vec![0.0; n];
    let mut trial_g = vec![0.0; n];
    let mut direction = vec![0.0; n];
    let mut history = History::new(settings.history.max(1));
    let (mut iterations, mut restarts) = (0u64, 0u32);
    let finish = |counted: Counted<'_, F>, iterations, stopped: String| LbfgsOutcome {
        v: counted.best_v,
        value: counted.best_value,
        iterations,
        evaluations: counted.evaluations,
        stopped,
    };
    let Some(mut value) = counted.eval(&v, &mut g) else {
        let why = counted.exhausted.map(|e| e.to_string()).unwrap_or_default();
        return finish(counted, 0, why);
    };
    if !value.is_finite() {
        return finish(counted, 0, "objective is not finite at the start".into());
    }
    let stopped = loop {
        if iterations >= settings.max_iterations {
            break "maximum iterations reached".to_string();
        }
        if dot(&g, &g).sqrt() <= settings.tolerance_grad {
            break "gradient norm below tolerance".to_string();
        }
        let mut slope = history.direction(&g, &mut direction);
        if slope.is_nan() || slope >= 0.0 {
            history.clear();
            direction.iter_mut().zip(&g).for_each(|(d, x)| *d = -x);
            slope = -dot(&g, &g);
        }
        let first_step = if history.len == 0 {
            let largest = g.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            (1.0 / largest).min(1.0)
        } else {
            1.0
        };
        let search = line_search(
            &mut counted,
            &v,
            value,
            slope,
            &direction,
            first_step,
            &mut trial_v,
            &mut trial_g,
        );
        iterations += 1;
        match search {
            Search::Exhausted => {
                break counted.exhausted.map(|e| e.to_string()).unwrap_or_default();
            }
            Search::Failed => {
                if history.len == 0 || restarts >= settings.max_restarts {
                    break "line search failed".to_string();
                }
                // Restart from the best point with an empty history.
                restarts += 1;
                history.clear();
                if counted.best_value < value {
                    v.copy_from_slice(&counted.best_v);
                    match counted.eval(&v.clone(), &mut g) {
                        Some(x) => value = x,
                        None => break counted.exhausted.map(|e| e.to_string()).unwrap_or_default(),
                    }
                }
            }
            Search::Accepted(trial) => {
                history.push(&v, &trial_v, &g, &trial_g);
                let change = value - trial.value;
                std::mem::swap(&mut v, &mut trial_v);
                std::mem::swap(&mut g, &mut trial_g);
                value = trial.value;
                if change.abs() < settings.tolerance_cost {
                    break "cost change below tolerance".to_string();
                }
            }
        }
    };
    finish(counted, iterations, stopped)
}
