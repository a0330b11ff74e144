//! Parent selection: a softmax over an island's admitted set that trades dominance against
//! behavioural crowding.
//!
//! Among n candidates, candidate i scores `dominance_i − λ · crowding_i`, where
//! - `dominance_i` = (number of others it dominates − number of others dominating it) / (n − 1),
//!   in [−1, 1]: members of the current front score ≥ 0, superseded ancestors < 0;
//! - `crowding_i` = mean [`similarity`] of its per-task gains to the others', in [0, 1]: a harness
//!   that improves the same tasks as many others is crowded, one with a behaviour of its own is not;
//! - λ is [`SelectionParams::diversity_weight`].
//!
//! It is picked with probability ∝ `exp(score_i / temperature)`. A single candidate scores 0.

use super::hypervolume::Fitness;
use super::similarity::similarity;
use crate::error::{MiloError, Result};
use rand::distributions::{Distribution, WeightedIndex};
use serde::{Deserialize, Serialize};

/// A member of an island's admitted set, as parent selection sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemberScores {
    /// Its fitness vector.
    pub fitness: Fitness,
    /// Its gain on each search task (same task order for every candidate).
    pub gains: Vec<f64>,
}

/// Knobs of parent selection.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SelectionParams {
    /// Softmax temperature (> 0): lower is greedier.
    pub temperature: f64,
    /// Weight λ ≥ 0 of behavioural crowding against dominance.
    pub diversity_weight: f64,
}

impl Default for SelectionParams {
    /// Temperature 0.25 (a full point of score is e⁴ ≈ 55 times the odds) and λ = 0.5 (a
    /// near-copy of every other member loses half a point).
    fn default() -> Self {
        SelectionParams {
            temperature: 0.25,
            diversity_weight: 0.5,
        }
    }
}

/// The probability of picking each candidate as parent (see the module documentation). Errors on
/// no candidates, gain vectors of different lengths or bad gains, and bad parameters.
pub fn selection_probabilities(
    candidates: &[MemberScores],
    params: &SelectionParams,
) -> Result<Vec<f64>> {
    check(candidates, params)?;
    let n = candidates.len();
    let others = (n.max(2) - 1) as f64;
    let mut scores = Vec::with_capacity(n);
    for (i, c) in candidates.iter().enumerate() {
        let (mut net, mut crowding) = (0.0, 0.0);
        for (j, d) in candidates.iter().enumerate().filter(|(j, _)| *j != i) {
            net += f64::from(u8::from(c.fitness.dominates(&d.fitness)));
            net -= f64::from(u8::from(d.fitness.dominates(&c.fitness)));
            crowding += similarity(&c.gains, &d.gains)
                .map_err(|e| MiloError::Usage(format!("candidates {i} and {j}: {e}")))?;
        }
        scores.push((net - params.diversity_weight * crowding) / others);
    }
    let best = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = scores
        .iter()
        .map(|s| ((s - best) / params.temperature).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    Ok(weights.iter().map(|w| w / total).collect())
}

/// Picks a parent index with [`selection_probabilities`], drawing from `rng` (deterministic for a
/// seeded rng).
pub fn select_parent(
    candidates: &[MemberScores],
    params: &SelectionParams,
    rng: &mut impl rand::Rng,
) -> Result<usize> {
    let probabilities = selection_probabilities(candidates, params)?;
    let index = WeightedIndex::new(&probabilities)
        .map_err(|e| MiloError::Usage(format!("selection probabilities {probabilities:?}: {e}")))?;
    Ok(index.sample(rng))
}

/// Rejects an empty candidate set and parameters outside their ranges.
fn check(candidates: &[MemberScores], params: &SelectionParams) -> Result<()> {
    if candidates.is_empty() {
        return Err(MiloError::Usage(
            "no candidates to select a parent from".into(),
        ));
    }
    if !(params.temperature.is_finite() && params.temperature > 0.0) {
        return Err(MiloError::Usage(format!(
            "selection temperature is {}, expected a finite value > 0",
            params.temperature
        )));
    }
    if !(params.diversity_weight.is_finite() && params.diversity_weight >= 0.0) {
        return Err(MiloError::Usage(format!(
            "selection diversity_weight is {}, expected a finite value ≥ 0",
            params.diversity_weight
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    fn candidate(quality: f64, cost: f64, latency: f64, gains: &[f64]) -> MemberScores {
        MemberScores {
            fitness: Fitness {
                quality,
                cost,
                latency,
            },
            gains: gains.to_vec(),
        }
    }

    #[test]
    fn dominating_candidate_is_preferred_by_the_expected_factor() {
        // Same gains, so equal crowding; a dominates b: dominance +1 against −1, a score gap of
        // 2 and an odds ratio of exp(2 / T).
        let params = SelectionParams::default();
        let pair = [
            candidate(2.0, 1.0, 1.0, &[1.0, 0.0]),
            candidate(1.0, 1.0, 1.0, &[1.0, 0.0]),
        ];
        let p = selection_probabilities(&pair, &params).unwrap();
        let expected = (2.0 / params.temperature).exp();
        assert!((p[0] / p[1] - expected).abs() < 1e-9 * expected, "{p:?}");
    }

    #[test]
    fn unique_behaviour_beats_a_near_duplicate() {
        // Equal fitness (no dominance); a and b improve the same task, c another one.
        let group = [
            candidate(1.0, 1.0, 1.0, &[1.0, 0.0, 0.0]),
            candidate(1.0, 1.0, 1.0, &[1.0, 0.01, 0.0]),
            candidate(1.0, 1.0, 1.0, &[0.0, 0.0, 1.0]),
        ];
        let p = selection_probabilities(&group, &SelectionParams::default()).unwrap();
        assert!(p[2] > p[0] && p[2] > p[1], "{p:?}");
        let blind = SelectionParams {
            diversity_weight: 0.0,
            ..SelectionParams::default()
        };
        let p = selection_probabilities(&group, &blind).unwrap();
        assert!(p.iter().all(|x| (x - 1.0 / 3.0).abs() < 1e-15), "{p:?}");
    }

    #[test]
    fn frequencies_match_probabilities() {
        let island = [
            candidate(0.0, 1.0, 1.0, &[0.0, 0.0, 0.0]),
            candidate(1.0, 0.8, 1.0, &[1.0, 0.0, 0.0]),
            candidate(2.0, 1.5, 0.9, &[2.0, 0.5, 0.0]),
            candidate(2.0, 0.7, 0.9, &[0.0, 0.0, 3.0]),
            candidate(0.5, 0.5, 0.5, &[0.2, 0.0, 0.1]),
        ];
        let params = SelectionParams {
            temperature: 0.5,
            diversity_weight: 0.5,
        };
        let p = selection_probabilities(&island, &params).unwrap();
        let draws = 20_000;
        let mut counts = [0usize; 5];
        let mut rng = StdRng::seed_from_u64(20_260_501);
        for _ in 0..draws {
            counts[select_parent(&island, &params, &mut rng).unwrap()] += 1;
        }
        for (i, (&count, &pi)) in counts.iter().zip(&p).enumerate() {
            let frequency = count as f64 / draws as f64;
            let standard_error = (pi * (1.0 - pi) / draws as f64).sqrt();
            assert!(
                (frequency - pi).abs() <= 4.0 * standard_error,
                "candidate {i}: frequency {frequency} against probability {pi} (p = {p:?})"
            );
        }
    }

    #[test]
    fn same_seed_same_parents() {
        let island = [
            candidate(1.0, 1.0, 1.0, &[1.0]),
            candidate(2.0, 2.0, 1.0, &[0.5]),
        ];
        let params = SelectionParams::default();
        let run = |seed| {
            let mut rng = StdRng::seed_from_u64(seed);
            (0..64)
                .map(|_| select_parent(&island, &params, &mut rng).unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(run(3), run(3));
    }

    #[test]
    fn bad_input_is_an_error() {
        let params = SelectionParams::default();
        let mut rng = StdRng::seed_from_u64(1);
        let e = select_parent(&[], &params, &mut rng).unwrap_err();
        assert!(e.to_string().contains("no candidates"), "{e}");
        let mismatched = [
            candidate(1.0, 1.0, 1.0, &[1.0]),
            candidate(1.0, 1.0, 1.0, &[1.0, 2.0]),
        ];
        let e = selection_probabilities(&mismatched, &params).unwrap_err();
        assert!(e.to_string().contains("candidates 0 and 1"), "{e}");
        let cold = SelectionParams {
            temperature: 0.0,
            ..params
        };
        let e = selection_probabilities(&mismatched[..1], &cold).unwrap_err();
        assert!(e.to_string().contains("temperature is 0"), "{e}");
    }

    fn any_candidate() -> impl Strategy<Value = MemberScores> {
        (
            0.0..3.0f64,
            0.1..2.0f64,
            0.1..2.0f64,
            prop::collection::vec(0.0..5.0f64, 4),
        )
            .prop_map(|(q, c, l, gains)| candidate(q, c, l, &gains))
    }

    proptest! {
        #[test]
        fn probabilities_are_a_distribution(
            candidates in prop::collection::vec(any_candidate(), 1..10),
            temperature in 0.01..10.0f64,
            diversity_weight in 0.0..5.0f64,
        ) {
            let params = SelectionParams { temperature, diversity_weight };
            let p = selection_probabilities(&candidates, &params).unwrap();
            prop_assert_eq!(p.len(), candidates.len());
            prop_assert!(p.iter().all(|x| (0.0..=1.0).contains(x)), "{:?}", p);
            prop_assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }
    }
}
