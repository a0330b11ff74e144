//! Resolution changes: block-repeat (score-preserving), linear upsampling, pooled downsampling.
//!
//! DOMAIN.md: resampling an optimum without re-optimising destroys it, so a program follows these
//! with a polish; block-repeat keeps the first and third scores exactly and is the safe default.

use super::{at_least_one, non_negative, Stage, StageOutcome, Tunable, TuneRange};
use crate::optimize::Budget;
use crate::problems::Problem;
use serde::{Deserialize, Serialize};

/// How a resolution change maps samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResampleMethod {
    /// Each sample repeated k times (score-preserving).
    BlockRepeat,
    /// Linear interpolation onto the finer grid.
    Linear,
    /// Averages of k consecutive samples (coarser grid).
    Pool,
}

/// A change of resolution by an integer factor, with tie-breaking noise.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resample {
    /// How samples map to the new grid.
    pub method: ResampleMethod,
    /// The integer factor (finer for block_repeat/linear, coarser for pool).
    #[serde(default = "default_factor")]
    pub factor: usize,
    /// Noise added afterwards, relative to the values' spread.
    #[serde(default = "default_noise")]
    pub noise: f64,
    /// The finest resolution this stage goes to (also capped by the problem's length limit);
    /// absent: the length limit. A finer grid than that leaves the values unchanged, so a
    /// program run again from its own output (a campaign's promoted start) stops growing there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_n: Option<usize>,
}

fn default_factor() -> usize {
    2
}
fn default_noise() -> f64 {
    1e-6
}

/// The tunable parameters of a resolution change.
const TUNABLE: &[Tunable] = &[
    Tunable::new("factor", TuneRange::Count(64)),
    Tunable::new("noise", TuneRange::Positive),
    Tunable::new("max_n", TuneRange::Count(1 << 26)),
];

impl Stage for Resample {
    fn kind(&self) -> &'static str {
        "resample"
    }

    fn spends_evaluations(&self) -> bool {
        false
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
        non_negative(path, "noise", self.noise)
    }

    fn tunable(&self) -> &'static [Tunable] {
        TUNABLE
    }

    /// The resampled values with noise; a finer grid than `max_n` or the problem allows would be
    /// invalid or unwanted (and can be huge when a loop repeats the step), so then the values are
    /// left unchanged and the note says why.
    fn run(
        &self,
        problem: &dyn Problem,
        start: &[f64],
        _budget: &Budget,
        seed: u64,
    ) -> StageOutcome {
        let (finest, target) = finest_n(problem, self.max_n);
        if self.method != ResampleMethod::Pool && start.len().saturating_mul(self.factor) > finest {
            return StageOutcome {
                note: Some(format!(
                    "×{} does not fit: n = {}, {target}; values unchanged",
                    self.factor,
                    start.len()
                )),
                ..StageOutcome::plain(start.to_vec())
            };
        }
        StageOutcome::plain(with_noise(
            resample(start, self.method, self.factor),
            self.noise,
            seed,
        ))
    }
}

/// The finest grid a resolution change may reach: `max_n` where given, within the problem's
/// length limit; and which of the two it is, in words for a note (`max_n 1024`, `the length
/// limit 100000`).
pub fn finest_n(problem: &dyn Problem, max_n: Option<usize>) -> (usize, String) {
    let length_limit = problem.spec().max_len;
    match max_n {
        Some(m) if m < length_limit => (m, format!("max_n {m}")),
        _ => (length_limit, format!("the length limit {length_limit}")),
    }
}

/// Each sample repeated `factor` times.
pub fn block_repeat(values: &[f64], factor: usize) -> Vec<f64> {
    values
        .iter()
        .flat_map(|&x| std::iter::repeat_n(x, factor))
        .collect()
}

/// Linear interpolation of the step function's cell centres onto a grid `factor` times finer
/// (the end cells are extended flat).
pub fn linear_upsample(values: &[f64], factor: usize) -> Vec<f64> {
    let n = values.len();
    let m = n * factor;
    (0..m)
        .map(|j| {
            // Centre of fine cell j in units of coarse cells, minus the first coarse centre.
            let x = (j as f64 + 0.5) / factor as f64 - 0.5;
            if x <= 0.0 {
                return values[0];
            }
            let i = x.floor() as usize;
            if i + 1 >= n {
                return values[n - 1];
            }
            let t = x - i as f64;
            values[i] * (1.0 - t) + values[i + 1] * t
        })
        .collect()
}

/// Averages of `factor` consecutive samples (a trailing partial block is averaged on its own).
pub fn pool(values: &[f64], factor: usize) -> Vec<f64> {
    values
        .chunks(factor)
        .map(|c| c.iter().sum::<f64>() / c.len() as f64)
        .collect()
}

/// Applies a resampling method with its factor.
pub fn resample(values: &[f64], method: ResampleMethod, factor: usize) -> Vec<f64> {
    match method {
        ResampleMethod::BlockRepeat => block_repeat(values, factor),
        ResampleMethod::Linear => linear_upsample(values, factor),
        ResampleMethod::Pool => pool(values, factor),
    }
}

/// `values` plus Gaussian noise of `relative` times their spread (max − min), seeded, to break
/// the ties a resampling creates; `relative = 0` returns them unchanged.
pub fn with_noise(mut values: Vec<f64>, relative: f64, seed: u64) -> Vec<f64> {
    use rand::{Rng, SeedableRng};
    if relative <= 0.0 {
        return values;
    }
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        });
    let sigma = relative * (hi - lo);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    for x in values.iter_mut() {
        let z: f64 = rng.sample(rand_distr::StandardNormal);
        *x += sigma * z;
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problems::by_slug;

    #[test]
    fn block_repeat_preserves_first_and_third_scores_exactly() {
        let values: Vec<f64> = (0..50)
            .map(|i| ((i * 37) % 11) as f64 / 7.0 + 0.1)
            .collect();
        for slug in [
            "first-autocorrelation-inequality",
            "third-autocorrelation-inequality",
        ] {
            let p = by_slug(slug).unwrap();
            let fine = block_repeat(&values, 3);
            assert_eq!(fine.len(), 150);
            assert_eq!(p.score_exact(&values), p.score_exact(&fine), "{slug}");
        }
    }

    #[test]
    fn linear_upsample_reproduces_a_linear_ramp_inside() {
        let ramp: Vec<f64> = (0..10).map(|i| i as f64).collect();
        let fine = linear_upsample(&ramp, 4);
        assert_eq!(fine.len(), 40);
        // Fine cells strictly between the first and last coarse centres lie on the line.
        for (j, y) in fine.iter().enumerate().skip(2).take(34) {
            let x = (j as f64 + 0.5) / 4.0 - 0.5;
            assert!((y - x).abs() < 1e-12, "{j}: {y} vs {x}");
        }
        assert_eq!(fine[0], 0.0);
        assert_eq!(fine[39], 9.0);
    }

    #[test]
    fn pool_inverts_block_repeat() {
        let values = vec![0.25, 1.0, 0.5, 0.0, 3.0];
        assert_eq!(pool(&block_repeat(&values, 4), 4), values);
        assert_eq!(pool(&[1.0, 2.0, 3.0], 2), vec![1.5, 3.0]);
    }

    #[test]
    fn max_n_stops_the_grid_growing_and_says_why() {
        let p = by_slug("erdos-min-overlap").unwrap();
        let start = vec![0.5; 512];
        let stage = |max_n| Resample {
            method: ResampleMethod::BlockRepeat,
            factor: 2,
            noise: 0.0,
            max_n,
        };
        let budget = Budget::evaluations(1);
        let doubled = stage(Some(1024)).run(p.as_ref(), &start, &budget, 1);
        assert_eq!(doubled.values.len(), 1024);
        assert_eq!(doubled.note, None);
        let again = stage(Some(1024)).run(p.as_ref(), &doubled.values, &budget, 1);
        assert_eq!(again.values, doubled.values);
        assert_eq!(
            again.note.as_deref(),
            Some("×2 does not fit: n = 1024, max_n 1024; values unchanged")
        );
        assert_eq!(
            stage(Some(0)).check("steps[0]"),
            Err("steps[0].max_n: must be at least 1".to_string())
        );
    }
}
