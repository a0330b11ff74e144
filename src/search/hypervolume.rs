//! Exact hypervolume of harness fitness vectors in three objectives.
//!
//! A harness's [`Fitness`] has a quality (maximised), a cost and a latency (both minimised). Every
//! point is mapped to the minimisation frame `(−quality, cost, latency)`, and the reference point
//! the same way. The hypervolume of a set is the volume of the union of the boxes `[p, reference]`
//! over its points `p`. A point that is not strictly better than the reference in all three
//! objectives spans an empty box and contributes 0; a point with a non-finite coordinate is
//! ignored. Duplicates and dominated points change nothing.
//!
//! The algorithm sweeps the points by increasing latency and keeps the 2-D staircase of the
//! non-dominated `(−quality, cost)` pairs seen so far; each slab between two consecutive latencies
//! adds its height times the staircase's area. Insertion and area are O(n) each: O(n²) in all,
//! ample for island fronts of hundreds of members.

use serde::{Deserialize, Serialize};

/// The fitness vector of a harness: quality up, cost and latency down.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fitness {
    /// Gain in units of the problem's `min_improvement` (maximised; 0 = never improves).
    pub quality: f64,
    /// Summed over tasks, in the run's cost measure: CPU seconds, or
    /// millions of cell-evaluations (minimised).
    pub cost: f64,
    /// Wall seconds of the evaluation, or the largest task's millions of cell-evaluations
    /// (minimised).
    pub latency: f64,
}

impl Fitness {
    /// Whether `self` ranks above `other` as a best: a higher quality, or an equal quality at a
    /// lower cost. The one ranking of candidates (an island's best, a run's best candidate, the
    /// breeder's other parent); [`Fitness::rank_order`] is its total order for sorting.
    pub fn outranks(&self, other: &Fitness) -> bool {
        self.quality > other.quality || (self.quality == other.quality && self.cost < other.cost)
    }

    /// The ranking of [`Fitness::outranks`] as a total order (best first; NaN and signed zeros
    /// ordered by [`f64::total_cmp`]), for sorting a population.
    pub fn rank_order(&self, other: &Fitness) -> std::cmp::Ordering {
        other
            .quality
            .total_cmp(&self.quality)
            .then(self.cost.total_cmp(&other.cost))
    }

    /// Whether all three objectives are finite numbers.
    pub fn is_finite(&self) -> bool {
        self.quality.is_finite() && self.cost.is_finite() && self.latency.is_finite()
    }

    /// Whether `self` is at least as good as `other` in every objective.
    pub fn weakly_dominates(&self, other: &Fitness) -> bool {
        self.quality >= other.quality && self.cost <= other.cost && self.latency <= other.latency
    }

    /// Whether `self` is at least as good as `other` everywhere and strictly better somewhere.
    pub fn dominates(&self, other: &Fitness) -> bool {
        self.weakly_dominates(other) && self != other
    }

    /// The point in the minimisation frame `(−quality, cost, latency)`.
    fn minimised(&self) -> [f64; 3] {
        [-self.quality, self.cost, self.latency]
    }
}

/// How far beyond the worst cost and latency seen the reference point lies (see [`reference_for`]).
pub const REFERENCE_SLACK: f64 = 2.0;

/// The reference point of the points compared (adaptive: it moves with them).
///
/// Quality 0: a harness that never improves a task contributes nothing. Cost and latency:
/// [`REFERENCE_SLACK`] times the largest finite value among the points, so every point compared
/// spans a box. When no positive finite value is seen (no points, all zero) the bound is 1.
pub fn reference_for(points: &[Fitness]) -> Fitness {
    let bound = |value: fn(&Fitness) -> f64| {
        let max = points
            .iter()
            .map(value)
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        if max > 0.0 {
            REFERENCE_SLACK * max
        } else {
            1.0
        }
    };
    Fitness {
        quality: 0.0,
        cost: bound(|f| f.cost),
        latency: bound(|f| f.latency),
    }
}

/// The hypervolume of `points` with respect to `reference` (see the module documentation).
pub fn hypervolume(points: &[Fitness], reference: Fitness) -> f64 {
    let r = reference.minimised();
    let mut inside: Vec<[f64; 3]> = points
        .iter()
        .filter(|p| p.is_finite())
        .map(Fitness::minimised)
        .filter(|p| (0..3).all(|i| p[i] < r[i]))
        .collect();
    inside.sort_by(|a, b| a[2].total_cmp(&b[2]));
    let mut staircase = Vec::with_capacity(inside.len());
    let mut volume = 0.0;
    for (i, p) in inside.iter().enumerate() {
        insert(&mut staircase, [p[0], p[1]]);
        let next = inside.get(i + 1).map_or(r[2], |q| q[2]);
        if next > p[2] {
            volume += (next - p[2]) * area(&staircase, [r[0], r[1]]);
        }
    }
    volume
}

/// What `candidate` adds to the hypervolume of `front`: HV(front ∪ {candidate}) − HV(front).
///
/// Computed directly as the volume of the candidate's box minus the part of it the front already
/// covers (the front clipped to the box), so a small gain is not lost to cancellation between two
/// large volumes. Exactly 0 when a front member weakly dominates the candidate; never negative.
pub fn contribution(front: &[Fitness], candidate: Fitness, reference: Fitness) -> f64 {
    let (c, r) = (candidate.minimised(), reference.minimised());
    let covered = front
        .iter()
        .any(|f| f.is_finite() && f.weakly_dominates(&candidate));
    if covered || !candidate.is_finite() || (0..3).any(|i| c[i] >= r[i]) {
        return 0.0;
    }
    let clipped: Vec<Fitness> = front
        .iter()
        .filter(|f| f.is_finite())
        .map(|f| Fitness {
            quality: f.quality.min(candidate.quality),
            cost: f.cost.max(candidate.cost),
            latency: f.latency.max(candidate.latency),
        })
        .collect();
    let own = (r[0] - c[0]) * (r[1] - c[1]) * (r[2] - c[2]);
    (own - hypervolume(&clipped, reference)).max(0.0)
}

/// Inserts `p` into a 2-D staircase (x increasing, y strictly decreasing, mutually
/// non-dominated), unless a point already there weakly dominates it; drops the points it dominates.
fn insert(staircase: &mut Vec<[f64; 2]>, p: [f64; 2]) {
    let upto = staircase.partition_point(|q| q[0] <= p[0]);
    if upto > 0 && staircase[upto - 1][1] <= p[1] {
        return;
    }
    let from = staircase.partition_point(|q| q[0] < p[0]);
    let to = from + staircase[from..].partition_point(|q| q[1] >= p[1]);
    staircase.splice(from..to, [p]);
}

/// The area a 2-D staircase dominates up to the reference `r`.
fn area(staircase: &[[f64; 2]], r: [f64; 2]) -> f64 {
    staircase
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let next_x = staircase.get(i + 1).map_or(r[0], |q| q[0]);
            (next_x - p[0]) * (r[1] - p[1])
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fit(quality: f64, cost: f64, latency: f64) -> Fitness {
        Fitness {
            quality,
            cost,
            latency,
        }
    }

    /// Counts the unit cells `[a, a+1]³` (integer corners, minimisation frame) that lie inside
    /// some box `[p, r]`: exact for integer coordinates.
    fn brute_force_cells(points: &[Fitness], reference: Fitness) -> f64 {
        let r = reference.minimised();
        let pts: Vec<[f64; 3]> = points.iter().map(Fitness::minimised).collect();
        let lo = |i: usize| pts.iter().map(|p| p[i]).fold(r[i], f64::min) as i64;
        let mut cells = 0u64;
        for x in lo(0)..r[0] as i64 {
            for y in lo(1)..r[1] as i64 {
                for z in lo(2)..r[2] as i64 {
                    let a = [x as f64, y as f64, z as f64];
                    if pts.iter().any(|p| (0..3).all(|i| p[i] <= a[i])) {
                        cells += 1;
                    }
                }
            }
        }
        cells as f64
    }

    /// Inclusion–exclusion over all non-empty subsets: the intersection of the boxes of a subset
    /// is the box of their coordinate-wise maximum (minimisation frame).
    fn inclusion_exclusion(points: &[Fitness], reference: Fitness) -> f64 {
        let r = reference.minimised();
        let pts: Vec<[f64; 3]> = points.iter().map(Fitness::minimised).collect();
        let mut total = 0.0;
        for mask in 1u32..(1 << pts.len()) {
            let mut corner = [f64::NEG_INFINITY; 3];
            for (j, p) in pts.iter().enumerate() {
                if mask & (1 << j) != 0 {
                    (0..3).for_each(|i| corner[i] = corner[i].max(p[i]));
                }
            }
            let volume: f64 = (0..3).map(|i| (r[i] - corner[i]).max(0.0)).product();
            let sign = if mask.count_ones() % 2 == 1 {
                1.0
            } else {
                -1.0
            };
            total += sign * volume;
        }
        total
    }

    fn integer_point() -> impl Strategy<Value = Fitness> {
        // Quality −1..=6 and cost, latency 0..=7 around the reference (0, 6, 6): some points lie
        // outside it and must contribute nothing.
        (-1i32..=6, 0i32..=7, 0i32..=7).prop_map(|(q, c, l)| fit(q as f64, c as f64, l as f64))
    }

    fn real_point() -> impl Strategy<Value = Fitness> {
        (0.0..5.0f64, 0.0..3.0f64, 0.0..3.0f64).prop_map(|(q, c, l)| fit(q, c, l))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn equals_cell_count_on_integer_fronts(points in prop::collection::vec(integer_point(), 0..=8)) {
            let reference = fit(0.0, 6.0, 6.0);
            prop_assert_eq!(hypervolume(&points, reference), brute_force_cells(&points, reference));
        }

        #[test]
        fn equals_inclusion_exclusion_on_real_fronts(points in prop::collection::vec(real_point(), 1..=8)) {
            let reference = fit(0.0, 3.0, 3.0);
            let (fast, brute) = (hypervolume(&points, reference), inclusion_exclusion(&points, reference));
            prop_assert!((fast - brute).abs() <= 1e-9 * brute.max(1.0), "{} vs {}", fast, brute);
        }

        #[test]
        fn contribution_is_the_difference_of_volumes(
            points in prop::collection::vec(integer_point(), 0..=7),
            candidate in integer_point(),
        ) {
            let reference = fit(0.0, 6.0, 6.0);
            let mut with = points.clone();
            with.push(candidate);
            let expected = brute_force_cells(&with, reference) - brute_force_cells(&points, reference);
            prop_assert_eq!(contribution(&points, candidate, reference), expected);
        }

        #[test]
        fn invariant_under_permutation_and_dominated_points(
            points in prop::collection::vec(real_point(), 1..=8),
            rotation in 0usize..8,
            worse in (0.0..1.0f64, 0.0..1.0f64, 0.0..1.0f64),
        ) {
            let reference = fit(0.0, 3.0, 3.0);
            let base = hypervolume(&points, reference);
            let mut permuted = points.clone();
            permuted.reverse();
            permuted.rotate_left(rotation % points.len());
            let tolerance = 1e-12 * base.max(1.0);
            prop_assert!((hypervolume(&permuted, reference) - base).abs() <= tolerance);
            // A copy of a point made worse in every objective, and an exact duplicate.
            let p = points[rotation % points.len()];
            permuted.push(fit(p.quality - worse.0, p.cost + worse.1, p.latency + worse.2));
            permuted.push(p);
            prop_assert!((hypervolume(&permuted, reference) - base).abs() <= tolerance);
        }
    }

    #[test]
    fn single_point_is_a_box() {
        // Quality 2 above reference 0, cost 1 below 4, latency 3 below 8: a 2 × 3 × 5 box.
        assert_eq!(hypervolume(&[fit(2.0, 1.0, 3.0)], fit(0.0, 4.0, 8.0)), 30.0);
    }

    #[test]
    fn two_overlapping_boxes() {
        // Boxes 2×2×2 (from quality 2, cost 0, latency 0) and 1×4×2 (quality 1, cost −2,
        // latency 0) w.r.t. (0, 2, 2): 8 + 8 − their intersection 1×2×2 = 12.
        let points = [fit(2.0, 0.0, 0.0), fit(1.0, -2.0, 0.0)];
        assert_eq!(hypervolume(&points, fit(0.0, 2.0, 2.0)), 12.0);
    }

    #[test]
    fn three_axis_staircase() {
        // Reference (0, 2, 2); each point is 2 in one objective's direction and 1 in the others:
        // three 2×1×1 boxes around the common unit cube (q 0..1, cost 1..2, latency 1..2).
        // Union = 3 boxes of volume 2 − 3 pairwise overlaps of 1 + the triple overlap of 1 = 4.
        let points = [fit(2.0, 1.0, 1.0), fit(1.0, 0.0, 1.0), fit(1.0, 1.0, 0.0)];
        assert_eq!(hypervolume(&points, fit(0.0, 2.0, 2.0)), 4.0);
    }

    #[test]
    fn points_not_better_than_the_reference_contribute_nothing() {
        let reference = fit(0.0, 2.0, 2.0);
        // Quality equal to the reference's 0, cost equal to 2, latency beyond 2, NaN.
        let outside = [
            fit(0.0, 1.0, 1.0),
            fit(1.0, 2.0, 1.0),
            fit(1.0, 1.0, 3.0),
            fit(f64::NAN, 1.0, 1.0),
            fit(f64::INFINITY, 1.0, 1.0),
        ];
        assert_eq!(hypervolume(&outside, reference), 0.0);
        for p in outside {
            assert_eq!(contribution(&[fit(1.0, 1.0, 1.0)], p, reference), 0.0);
        }
    }

    #[test]
    fn dominated_candidate_adds_exactly_zero() {
        let front = [fit(3.0, 0.5, 0.25), fit(1.0, 0.1, 0.1)];
        let reference = fit(0.0, 1.0, 1.0);
        assert_eq!(contribution(&front, fit(2.0, 0.5, 0.3), reference), 0.0);
        assert_eq!(contribution(&front, front[1], reference), 0.0);
        assert!(contribution(&front, fit(2.0, 0.2, 0.2), reference) > 0.0);
    }

    #[test]
    fn reference_doubles_the_worst_cost_and_latency() {
        let seeds = [
            fit(0.0, 3.0, 1.0),
            fit(0.5, 1.0, 4.0),
            fit(0.0, f64::NAN, 2.0),
        ];
        assert_eq!(reference_for(&seeds), fit(0.0, 6.0, 8.0));
        assert_eq!(reference_for(&[]), fit(0.0, 1.0, 1.0));
    }
}
