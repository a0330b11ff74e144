//! Resolution changes: block-repeat (score-preserving), linear upsampling, pooled downsampling.
//!
//! DOMAIN.md: resampling an optimum without re-optimising destroys it, so a program follows these
//! with a polish; block-repeat keeps the first and third scores exactly and is the safe default.

use crate::program::ResampleMethod;

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

/// `values` without the zero cells at both ends (unchanged if every cell is zero).
///
/// The second problem's score depends only on the sequence `f∗f`, not on the grid width (its
/// `1/(m+1)` factors cancel), so trimming keeps that score exactly; a block repeat afterwards
/// then refines the support alone (on the AlphaEvolve start, the last 18,246 of 50,000 cells are
/// zero). The other problems' scores depend on `n`: there it is a different construction.
pub fn trim(values: &[f64]) -> Vec<f64> {
    match (
        values.iter().position(|&x| x != 0.0),
        values.iter().rposition(|&x| x != 0.0),
    ) {
        (Some(first), Some(last)) => values[first..=last].to_vec(),
        _ => values.to_vec(),
    }
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
    fn trim_drops_end_zeros_and_keeps_the_second_score_exactly() {
        assert_eq!(trim(&[0.0, 0.0, 1.5, 0.0, 2.0, 0.0]), vec![1.5, 0.0, 2.0]);
        assert_eq!(trim(&[0.0, 0.0]), vec![0.0, 0.0]);
        assert_eq!(trim(&[3.0]), vec![3.0]);
        let p = by_slug("second-autocorrelation-inequality").unwrap();
        let mut values = vec![0.0; 7];
        values.extend((0..60).map(|i| ((i * 37) % 11) as f64 / 7.0));
        values.extend([0.0; 30]);
        let trimmed = trim(&values);
        assert_eq!(trimmed.len(), 59, "the first of the 60 is 0 too");
        assert_eq!(p.score_exact(&values), p.score_exact(&trimmed));
        assert_eq!(
            p.score_exact(&values),
            p.score_exact(&block_repeat(&trimmed, 3))
        );
    }

    #[test]
    fn pool_inverts_block_repeat() {
        let values = vec![0.25, 1.0, 0.5, 0.0, 3.0];
        assert_eq!(pool(&block_repeat(&values, 4), 4), values);
        assert_eq!(pool(&[1.0, 2.0, 3.0], 2), vec![1.5, 3.0]);
    }
}
