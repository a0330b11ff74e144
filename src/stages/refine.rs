//! A resolution change with its re-optimisation: block-repeat the construction to a finer grid,
//! then run an L-BFGS β cascade that restarts from a low β floor.
//!
//! DOMAIN.md ("β floor after a resolution change"): after block repeat the finer grid has room
//! that only a low β explores (third problem: floor 1e4 → 1.4537598, floor 1e1 → 1.4526843 from
//! the same ×4 start); at a construction's own resolution a low floor only loses. So the floor
//! belongs to the resample, and this stage joins them: every resample it makes is followed by a
//! cascade from the floor, `floor, floor·step, …` up to the ceiling. The floor defaults to the
//! problem's ([`Problem::beta_floor_after_resample`]). The factor shrinks to respect `max_n` and
//! the problem's length limit; when no factor of at least 2 fits, the stage leaves the values
//! unchanged and says why in its note (so a schedule of refinements ends at its target).

use super::lbfgs::Lbfgs;
use super::resample::{block_repeat, finest_n, with_noise};
use super::{at_least_one, non_negative, positive, Stage, StageOutcome, Tunable, TuneRange};
use crate::optimize::{Budget, Parameterisation};
use crate::problems::Problem;
use serde::{Deserialize, Serialize};

/// Block repeat to a finer grid, then a β cascade from a low floor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Refine {
    /// The largest block-repeat factor (reduced to fit `max_n`).
    #[serde(default = "default_factor")]
    pub factor: usize,
    /// The finest resolution this stage refines to (also capped by the problem's length limit);
    /// absent: the length limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_n: Option<usize>,
    /// Noise added after the repeat, relative to the values' spread (breaks the ties).
    #[serde(default = "default_noise")]
    pub noise: f64,
    /// Parameterisation of the cascade; absent: the problem's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameterisation: Option<Parameterisation>,
    /// The cascade's first β; absent: the problem's floor after a resample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beta_floor: Option<f64>,
    /// The cascade's last β.
    #[serde(default = "default_beta_ceiling")]
    pub beta_ceiling: f64,
    /// The ratio of consecutive β (√10: half-decades).
    #[serde(default = "default_beta_step")]
    pub beta_step: f64,
    /// L-BFGS iterations per β level.
    #[serde(default = "default_iterations")]
    pub iterations: u64,
    /// L-BFGS history length.
    #[serde(default = "default_history")]
    pub history: usize,
}

fn default_factor() -> usize {
    2
}
fn default_noise() -> f64 {
    1e-6
}
fn default_beta_ceiling() -> f64 {
    1e9
}
pub(crate) fn default_beta_step() -> f64 {
    10f64.sqrt()
}
fn default_iterations() -> u64 {
    400
}
fn default_history() -> usize {
    50
}

/// The tunable parameters of a refinement.
const TUNABLE: &[Tunable] = &[
    Tunable::new("factor", TuneRange::Count(64)),
    Tunable::new("max_n", TuneRange::Count(1 << 26)),
    Tunable::new("noise", TuneRange::Positive),
    Tunable::new("beta_floor", TuneRange::Positive),
    Tunable::new("beta_ceiling", TuneRange::Positive),
    Tunable::new("beta_step", TuneRange::Positive),
    Tunable::new("iterations", TuneRange::Count(10_000_000)),
    Tunable::new("history", TuneRange::Count(500)),
];

/// `floor, floor·step, floor·step², …` while at most `ceiling` (with a relative slack of 1e-9,
/// so that `1e1 … 1e9` by `√10` ends at 1e9), and the ceiling itself if the steps miss it.
pub fn beta_ladder(floor: f64, ceiling: f64, step: f64) -> Vec<f64> {
    let mut betas = Vec::new();
    let mut beta = floor;
    while beta <= ceiling * (1.0 + 1e-9) {
        betas.push(beta);
        beta *= step;
    }
    match betas.last() {
        Some(&last) if last < ceiling * (1.0 - 1e-9) => betas.push(ceiling),
        None => betas.push(ceiling),
        _ => {}
    }
    betas
}

impl Refine {
    /// The block-repeat factor used from length `n`: the largest `k ≤ factor` with `k·n` within
    /// `max_n` and the problem's length limit; `None` if that is below 2.
    pub fn factor_from(&self, problem: &dyn Problem, n: usize) -> Option<usize> {
        let (limit, _) = finest_n(problem, self.max_n);
        let k = self.factor.min(limit / n.max(1));
        (k >= 2).then_some(k)
    }

    /// Why no factor fits from length `n`, in words (the note of a refinement that did nothing).
    pub fn why_no_factor(&self, problem: &dyn Problem, n: usize) -> String {
        let (_, target) = finest_n(problem, self.max_n);
        format!("no block repeat ×2 or more fits: n = {n}, {target}; values unchanged")
    }

    /// The cascade run after the resample.
    pub fn cascade(&self, problem: &dyn Problem) -> Lbfgs {
        let floor = self
            .beta_floor
            .unwrap_or_else(|| problem.beta_floor_after_resample());
        Lbfgs::log_sum_exp(
            problem,
            self.parameterisation,
            beta_ladder(floor, self.beta_ceiling, self.beta_step),
            self.history,
            self.iterations,
        )
    }
}

impl Stage for Refine {
    fn kind(&self) -> &'static str {
        "refine"
    }

    fn spends_evaluations(&self) -> bool {
        true
    }

    fn check(&self, path: &str) -> Result<(), String> {
        if self.factor < 2 {
            return Err(format!(
                "{path}.factor: must be at least 2, got {}",
                self.factor
            ));
        }
        if let Some(m) = self.max_n {
            at_least_one(path, "max_n", m)?;
        }
        non_negative(path, "noise", self.noise)?;
        if let Some(floor) = self.beta_floor {
            positive(path, "beta_floor", floor)?;
        }
        positive(path, "beta_ceiling", self.beta_ceiling)?;
        if !(self.beta_step > 1.0 && self.beta_step.is_finite()) {
            return Err(format!(
                "{path}.beta_step: must be a number above 1, got {}",
                self.beta_step
            ));
        }
        at_least_one(path, "iterations", self.iterations as usize)?;
        at_least_one(path, "history", self.history)
    }

    fn tunable(&self) -> &'static [Tunable] {
        TUNABLE
    }

    /// Block repeat by [`Refine::factor_from`] with seeded noise, then [`Refine::cascade`];
    /// the values unchanged when no factor fits.
    fn run(
        &self,
        problem: &dyn Problem,
        start: &[f64],
        budget: &Budget,
        seed: u64,
    ) -> StageOutcome {
        let Some(factor) = self.factor_from(problem, start.len()) else {
            return StageOutcome {
                note: Some(self.why_no_factor(problem, start.len())),
                ..StageOutcome::plain(start.to_vec())
            };
        };
        let mut fine = with_noise(block_repeat(start, factor), self.noise, seed);
        if problem.check(&fine).is_err() {
            problem.repair(&mut fine);
        }
        self.cascade(problem).run(problem, &fine, budget, seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problems::by_slug;

    fn refine() -> Refine {
        toml::from_str("").unwrap()
    }

    #[test]
    fn the_ladder_runs_from_the_floor_to_the_ceiling_in_steps() {
        let l = beta_ladder(1e1, 1e9, default_beta_step());
        assert_eq!(l.len(), 17);
        assert_eq!(l[0], 1e1);
        assert!((l[16] / 1e9 - 1.0).abs() < 1e-12);
        assert_eq!(beta_ladder(1e2, 5e2, 10.0), vec![1e2, 5e2]);
        assert_eq!(beta_ladder(1e3, 1e2, 10.0), vec![1e2]);
    }

    #[test]
    fn the_cascade_after_the_resample_starts_at_the_problems_floor() {
        for problem in crate::problems::all() {
            let cascade = refine().cascade(problem.as_ref());
            assert_eq!(cascade.betas[0], problem.beta_floor_after_resample());
            assert_eq!(cascade.parameterisation, problem.default_parameterisation());
        }
        let third = by_slug("third-autocorrelation-inequality").unwrap();
        let own = Refine {
            beta_floor: Some(3.0),
            ..refine()
        };
        assert_eq!(own.cascade(third.as_ref()).betas[0], 3.0);
    }

    #[test]
    fn a_schedule_of_refinements_never_passes_the_length_limit() {
        let third = by_slug("third-autocorrelation-inequality").unwrap();
        let limit = third.spec().max_len;
        let wide = Refine {
            factor: 4,
            ..refine()
        };
        let capped = Refine {
            max_n: Some(12_800),
            ..wide.clone()
        };
        for (stage, ceiling) in [(&wide, limit), (&capped, 12_800)] {
            let mut n = 400;
            let mut lengths = vec![n];
            while let Some(k) = stage.factor_from(third.as_ref(), n) {
                n *= k;
                lengths.push(n);
            }
            assert!(n <= ceiling, "{lengths:?}");
            assert!(
                n * 2 > ceiling,
                "stops only when no doubling fits: {lengths:?}"
            );
        }
        assert_eq!(wide.factor_from(third.as_ref(), 30_000), Some(3));
        assert_eq!(wide.factor_from(third.as_ref(), 60_000), None);
    }

    #[test]
    fn at_the_target_the_values_are_left_alone() {
        let third = by_slug("third-autocorrelation-inequality").unwrap();
        let start: Vec<f64> = (0..50).map(|i| 1.0 + (i % 3) as f64).collect();
        let stage = Refine {
            max_n: Some(99),
            ..refine()
        };
        let out = stage.run(third.as_ref(), &start, &Budget::evaluations(100), 1);
        assert_eq!(out.values, start);
        assert_eq!(
            out.note.as_deref(),
            Some("no block repeat ×2 or more fits: n = 50, max_n 99; values unchanged")
        );
    }

    #[test]
    fn refining_improves_a_small_third_construction() {
        let third = by_slug("third-autocorrelation-inequality").unwrap();
        let start: Vec<f64> = (0..40)
            .map(|i| 1.0 + 0.3 * ((i as f64) * 0.7).sin())
            .collect();
        let before = third.score_fast(&start).value;
        let out = refine().run(third.as_ref(), &start, &Budget::evaluations(3_000), 1);
        assert_eq!(out.values.len(), 80);
        assert!(third.score_fast(&out.values).value < before);
    }
}
