//! Admission of a child harness into an island: only if it grows the island's 3-objective Pareto
//! hypervolume, with a verdict that says why in words.

use super::hypervolume::{contribution, hypervolume, Fitness};
use serde::{Deserialize, Serialize};

/// A child is admitted only if its hypervolume gain exceeds this fraction of the new hypervolume.
pub const RELATIVE_EPSILON: f64 = 1e-12;

/// The outcome of [`admit`], recorded in the lineage with the child.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Whether the child joins the island's admitted set.
    pub admitted: bool,
    /// Hypervolume of the island's admitted set before the child.
    pub hypervolume_before: f64,
    /// `hypervolume_before` plus the child's exclusive contribution (equal to it when there is none).
    pub hypervolume_after: f64,
    /// Why, naming the dominating or equal node, the objective outside the reference, or the gain.
    pub reason: String,
}

/// Decides whether `child` joins an island whose admitted members are `front` (node id, fitness),
/// with the island's fixed `reference` point (see [`super::hypervolume::reference_for`]).
pub fn admit(front: &[(String, Fitness)], child: Fitness, reference: Fitness) -> Verdict {
    let points: Vec<Fitness> = front.iter().map(|(_, f)| *f).collect();
    let before = hypervolume(&points, reference);
    let gain = contribution(&points, child, reference);
    let after = before + gain;
    let verdict = |admitted, reason: String| Verdict {
        admitted,
        hypervolume_before: before,
        hypervolume_after: after,
        reason,
    };
    if !reference.is_finite() {
        return verdict(
            false,
            format!("reference point {reference:?} is not finite"),
        );
    }
    if !child.is_finite() {
        return verdict(false, format!("fitness {child:?} is not finite"));
    }
    if let Some((id, _)) = front.iter().find(|(_, f)| *f == child) {
        return verdict(false, format!("no hypervolume gain (equal to node {id})"));
    }
    if let Some((id, _)) = front.iter().find(|(_, f)| f.dominates(&child)) {
        return verdict(false, format!("dominated by node {id}"));
    }
    if let Some(outside) = outside_reference(child, reference) {
        return verdict(false, format!("no hypervolume gain: {outside}"));
    }
    if gain <= RELATIVE_EPSILON * after {
        return verdict(
            false,
            format!("hypervolume gain {gain:.4e} is below {RELATIVE_EPSILON:e} of {after:.4e}"),
        );
    }
    let reason = if before > 0.0 {
        format!(
            "grows hypervolume by {gain:.4e} ({:.3}%)",
            100.0 * gain / before
        )
    } else {
        format!("grows hypervolume from 0 to {after:.4e}")
    };
    verdict(true, reason)
}

/// Names the first objective in which `child` is not strictly better than `reference`.
fn outside_reference(child: Fitness, reference: Fitness) -> Option<String> {
    if child.quality <= reference.quality {
        Some(format!(
            "quality {} is not above the reference {}",
            child.quality, reference.quality
        ))
    } else if child.cost >= reference.cost {
        Some(format!(
            "cost {} s is not below the reference {} s",
            child.cost, reference.cost
        ))
    } else if child.latency >= reference.latency {
        Some(format!(
            "latency {} s is not below the reference {} s",
            child.latency, reference.latency
        ))
    } else {
        None
    }
}

/// The ids of the non-dominated points with finite fitness, in input order (equal points are
/// all kept: neither dominates the other).
pub fn pareto_front(points: &[(String, Fitness)]) -> Vec<String> {
    points
        .iter()
        .filter(|(_, f)| f.is_finite())
        .filter(|(_, f)| !points.iter().any(|(_, g)| g.is_finite() && g.dominates(f)))
        .map(|(id, _)| id.clone())
        .collect()
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

    fn named(points: &[(&str, Fitness)]) -> Vec<(String, Fitness)> {
        points.iter().map(|(id, f)| (id.to_string(), *f)).collect()
    }

    const REFERENCE: Fitness = Fitness {
        quality: 0.0,
        cost: 10.0,
        latency: 10.0,
    };

    #[test]
    fn first_improving_child_is_admitted_from_zero() {
        // The seed never improves (quality 0): the island's hypervolume is 0.
        let front = named(&[("seed", fit(0.0, 5.0, 5.0))]);
        let v = admit(&front, fit(1.0, 5.0, 5.0), REFERENCE);
        assert!(v.admitted, "{v:?}");
        assert_eq!((v.hypervolume_before, v.hypervolume_after), (0.0, 25.0));
        assert!(v.reason.contains("from 0"), "{}", v.reason);
    }

    #[test]
    fn equal_and_dominated_children_name_the_node() {
        let front = named(&[("a", fit(2.0, 5.0, 5.0)), ("b", fit(1.0, 2.0, 2.0))]);
        let equal = admit(&front, fit(1.0, 2.0, 2.0), REFERENCE);
        assert!(!equal.admitted);
        assert_eq!(equal.reason, "no hypervolume gain (equal to node b)");
        assert_eq!(equal.hypervolume_after, equal.hypervolume_before);
        let dominated = admit(&front, fit(1.5, 6.0, 5.0), REFERENCE);
        assert!(!dominated.admitted);
        assert_eq!(dominated.reason, "dominated by node a");
    }

    #[test]
    fn trade_off_child_is_admitted_with_its_gain() {
        // Front box 2×5×5 = 50; the child adds quality 3 at cost 8: its box 3×2×5 = 30 overlaps
        // the front's in 2×2×5 = 20, so the gain is 10 (20%).
        let front = named(&[("a", fit(2.0, 5.0, 5.0))]);
        let v = admit(&front, fit(3.0, 8.0, 5.0), REFERENCE);
        assert!(v.admitted, "{v:?}");
        assert_eq!((v.hypervolume_before, v.hypervolume_after), (50.0, 60.0));
        assert_eq!(v.reason, "grows hypervolume by 1.0000e1 (20.000%)");
    }

    #[test]
    fn child_outside_the_reference_names_the_objective() {
        let front = named(&[("a", fit(2.0, 5.0, 5.0))]);
        let v = admit(&front, fit(9.0, 10.0, 1.0), REFERENCE);
        assert!(!v.admitted);
        assert!(v.reason.contains("cost 10 s is not below"), "{}", v.reason);
        let nan = admit(&front, fit(f64::NAN, 1.0, 1.0), REFERENCE);
        assert!(
            !nan.admitted && nan.reason.contains("not finite"),
            "{nan:?}"
        );
    }

    #[test]
    fn gain_threshold_is_relative() {
        // Front box 1×0.5×0.5 w.r.t. (0, 1, 1) = 0.25. A child of quality 1 + δ at the same cost
        // and latency adds δ × 0.25: 2.5e-14 is below 1e-12 × 0.25, 1e-11 is above.
        let reference = fit(0.0, 1.0, 1.0);
        let front = named(&[("a", fit(1.0, 0.5, 0.5))]);
        let tiny = admit(&front, fit(1.0 + 1e-13, 0.5, 0.5), reference);
        assert!(!tiny.admitted && tiny.reason.contains("below"), "{tiny:?}");
        let small = admit(&front, fit(1.0 + 4e-11, 0.5, 0.5), reference);
        assert!(small.admitted, "{small:?}");
    }

    #[test]
    fn pareto_front_keeps_non_dominated_ids_in_order() {
        let points = named(&[
            ("a", fit(1.0, 1.0, 1.0)),
            ("b", fit(2.0, 2.0, 1.0)),
            ("c", fit(1.0, 2.0, 1.0)),
            ("d", fit(1.0, 1.0, 1.0)),
            ("e", fit(f64::NAN, 0.0, 0.0)),
        ]);
        // c is dominated by a (same quality and latency, cheaper); a and d are equal.
        assert_eq!(pareto_front(&points), ["a", "b", "d"]);
    }

    fn integer_point() -> impl Strategy<Value = Fitness> {
        (0i32..=4, 0i32..=5, 0i32..=5).prop_map(|(q, c, l)| fit(q as f64, c as f64, l as f64))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// On integer points every gain is at least one unit cell, so admission is exactly
        /// "inside the reference and not weakly dominated by a member".
        #[test]
        fn admitted_iff_not_weakly_dominated(
            members in prop::collection::vec(integer_point(), 0..=6),
            child in integer_point(),
        ) {
            let reference = fit(0.0, 5.0, 5.0);
            let front: Vec<(String, Fitness)> =
                members.iter().enumerate().map(|(i, f)| (format!("n{i}"), *f)).collect();
            let v = admit(&front, child, reference);
            let inside = child.quality > 0.0 && child.cost < 5.0 && child.latency < 5.0;
            let covered = members.iter().any(|m| m.weakly_dominates(&child));
            prop_assert_eq!(v.admitted, inside && !covered, "{:?}", v);
            let mut with = members.clone();
            with.push(child);
            prop_assert_eq!(v.hypervolume_after, hypervolume(&with, reference));
        }
    }
}
