//! Property tests of the verifiers on constructions the tests make themselves.

mod common;

use common::strategies::{unit_values, wide_value};
use milo::exact::rational::to_f64;
use milo::problems::{by_slug, Problem};
use proptest::prelude::*;

const FIRST: &str = "first-autocorrelation-inequality";
const SECOND: &str = "second-autocorrelation-inequality";
const THIRD: &str = "third-autocorrelation-inequality";
const ERDOS: &str = "erdos-min-overlap";

fn problem(slug: &str) -> Box<dyn Problem> {
    by_slug(slug).unwrap()
}

/// Values for `slug` that pass its rules.
fn valid_for(slug: &'static str, values: Vec<f64>) -> Option<Vec<f64>> {
    problem(slug).check(&values).ok().map(|_| values)
}

fn scaled(values: &[f64], power: i32) -> Vec<f64> {
    values.iter().map(|x| x * 2f64.powi(power)).collect()
}

fn block_repeated(values: &[f64], k: usize) -> Vec<f64> {
    values
        .iter()
        .flat_map(|&x| std::iter::repeat_n(x, k))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn exact_score_is_invariant_under_power_of_two_scaling(
        values in unit_values(1..120),
        power in -40i32..40,
    ) {
        for slug in [FIRST, SECOND, THIRD] {
            let p = problem(slug);
            prop_assume!(p.check(&values).is_ok() && p.check(&scaled(&values, power)).is_ok());
            prop_assert_eq!(p.score_exact(&values), p.score_exact(&scaled(&values, power)), "{}", slug);
        }
        // Erdős: scaling down keeps values in [0, 1]; the rescale to sum n/2 undoes it.
        let erdos = problem(ERDOS);
        let down = scaled(&values, -power.abs());
        if erdos.check(&values).is_ok() && erdos.check(&down).is_ok() {
            prop_assert_eq!(erdos.score_exact(&values), erdos.score_exact(&down));
        }
    }

    #[test]
    fn block_repeat_leaves_first_and_third_scores_unchanged(
        values in prop::collection::vec(-1.0f64..1.0, 1..80),
        k in 2usize..5,
    ) {
        let positive: Vec<f64> = values.iter().map(|x| x.abs()).collect();
        if let Some(v) = valid_for(FIRST, positive) {
            let p = problem(FIRST);
            prop_assert_eq!(p.score_exact(&v), p.score_exact(&block_repeated(&v, k)));
        }
        if let Some(v) = valid_for(THIRD, values) {
            let p = problem(THIRD);
            prop_assert_eq!(p.score_exact(&v), p.score_exact(&block_repeated(&v, k)));
        }
    }

    #[test]
    fn fast_score_is_within_its_bound_of_the_exact_score(
        wide in prop::collection::vec(wide_value(true), 1..200),
        unit in unit_values(1..300),
    ) {
        let wide_positive: Vec<f64> = wide.iter().map(|x| x.abs()).collect();
        let cases = [
            (FIRST, wide_positive.clone()),
            (FIRST, unit.clone()),
            (SECOND, wide_positive),
            (SECOND, unit.clone()),
            (THIRD, wide),
            (THIRD, unit.iter().enumerate().map(|(i, x)| if i % 3 == 0 { -x } else { *x }).collect()),
            (ERDOS, unit),
        ];
        for (slug, values) in cases {
            let p = problem(slug);
            if p.check(&values).is_err() {
                continue;
            }
            let fast = p.score_fast(&values);
            let exact = to_f64(&p.score_exact(&values));
            let diff = (fast.value - exact).abs();
            prop_assert!(
                diff <= fast.error_bound.max(exact.abs() * 4.0 * f64::EPSILON),
                "{}: fast {} exact {} diff {:e} bound {:e}", slug, fast.value, exact, diff, fast.error_bound
            );
        }
    }
}

#[test]
fn exact_scores_of_hand_computed_cases() {
    // f = [1, 1]: conv [1, 2, 1]; first = 2n·2/S² = 2.
    assert_eq!(to_f64(&problem(FIRST).score_exact(&[1.0, 1.0])), 2.0);
    // f = [1, -1, 1]: conv [1, -2, 3, -2, 1], max 3, S = 1: third = 2·3·3/1 = 18.
    assert_eq!(to_f64(&problem(THIRD).score_exact(&[1.0, -1.0, 1.0])), 18.0);
    // f = [1]: c = [1], y = [0, 1, 0]: (2·1 + 0)/(3·1·1) = 2/3.
    assert_eq!(to_f64(&problem(SECOND).score_exact(&[1.0])), 2.0 / 3.0);
    // h = [0.5, 0.5]: already sum n/2 = 1; correlate(h, 1−h) = [0.25, 0.5, 0.25]; ·2/2 → 0.5.
    assert_eq!(to_f64(&problem(ERDOS).score_exact(&[0.5, 0.5])), 0.5);
}
