//! The GMP verifier (`milo::exact::gmp`, behind the `gmp` feature) against the arena formulas taken
//! literally in O(n²) rational arithmetic, on every kind of float64 input: positive, with zeros,
//! subnormal, 1e-300 … 1e300, signed, clipped, scaled and repeated. (Its agreement with the
//! default verifier is in tests/arena.rs and tests/properties.rs.) `.ci/run` runs it:
//! `cargo test --release --features gmp --test gmp`.
#![cfg(feature = "gmp")]

mod common;

use common::strategies::{unit_values, wide_value};
use common::{arena_dir, arena_entries};
use num_bigint::BigInt;
use num_rational::BigRational;
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rug::Rational;
use std::cmp::Ordering;

/// The GMP score of the problem `slug` (`None` for an unknown slug).
fn exact_score(slug: &str, values: &[f64]) -> Option<BigRational> {
    milo::problems::by_slug(slug).ok()?.score_exact_gmp(values)
}

/// `r` as a `BigRational`, through its decimal text (a route independent of the verifier's own
/// conversion from GMP's limbs).
fn to_big_rational(r: &Rational) -> BigRational {
    r.to_string().parse().expect("rug writes n/d")
}

const SLUGS: [&str; 4] = [
    "erdos-min-overlap",
    "first-autocorrelation-inequality",
    "second-autocorrelation-inequality",
    "third-autocorrelation-inequality",
];

fn q(x: f64) -> Rational {
    Rational::from_f64(x).expect("finite")
}

fn naive_conv(f: &[Rational]) -> Vec<Rational> {
    let n = f.len();
    let mut c = vec![Rational::new(); 2 * n - 1];
    for i in 0..n {
        for j in 0..n {
            c[i + j] += Rational::from(&f[i] * &f[j]);
        }
    }
    c
}

fn max_of(xs: Vec<Rational>) -> Rational {
    xs.into_iter().max().expect("non-empty")
}

/// The arena formulas, literally, in O(n²) rational arithmetic.
fn naive_score(slug: &str, values: &[f64]) -> BigRational {
    let n = values.len();
    let f: Vec<Rational> = values.iter().map(|&v| q(v)).collect();
    let dx = Rational::from((1, 2 * n));
    let sum: Rational = f.iter().sum();
    let score = match slug {
        "erdos-min-overlap" => {
            let lambda = Rational::from((n, 2)) / &sum;
            let h: Vec<Rational> = f.iter().map(|x| Rational::from(x * &lambda)).collect();
            let mut corr = Vec::new();
            for lag in -(n as i64 - 1)..=(n as i64 - 1) {
                let mut s = Rational::new();
                for i in 0..n as i64 {
                    let j = i + lag;
                    if (0..n as i64).contains(&j) {
                        let one_minus = Rational::from(1) - &h[i as usize];
                        s += Rational::from(&h[j as usize] * &one_minus);
                    }
                }
                corr.push(s);
            }
            max_of(corr) * Rational::from((2, n))
        }
        "first-autocorrelation-inequality" | "third-autocorrelation-inequality" => {
            let c = naive_conv(&f);
            let m = max_of(c.into_iter().map(|x| x * &dx).collect());
            let m = if slug.starts_with("third") {
                m.abs()
            } else {
                m
            };
            m / Rational::from(&sum * &dx).square()
        }
        "second-autocorrelation-inequality" => {
            let g: Vec<Rational> = f
                .iter()
                .map(|x| {
                    if x.cmp0() == Ordering::Less {
                        Rational::new()
                    } else {
                        x.clone()
                    }
                })
                .collect();
            let c = naive_conv(&g);
            let m = c.len();
            let mut y = vec![Rational::new()];
            y.extend(c.iter().cloned());
            y.push(Rational::new());
            let h = Rational::from((1, m + 1));
            let mut l2 = Rational::new();
            for j in 0..=m {
                let (a, b) = (&y[j], &y[j + 1]);
                let t = Rational::from(a * a) + Rational::from(a * b) + Rational::from(b * b);
                l2 += Rational::from(&h / 3u32) * t;
            }
            let l1: Rational =
                c.iter().map(|x| x.clone().abs()).sum::<Rational>() / Rational::from(m + 1);
            let linf = max_of(c.iter().map(|x| x.clone().abs()).collect());
            l2 / (l1 * linf)
        }
        _ => unreachable!(),
    };
    to_big_rational(&score)
}

fn check(slug: &str, values: &[f64]) {
    let fast = exact_score(slug, values).expect("known slug");
    let slow = naive_score(slug, values);
    assert_eq!(fast, slow, "{slug} on {values:?}");
}

fn sizes() -> impl Iterator<Item = usize> {
    (1..=12).chain([17, 31, 40, 59, 60])
}

#[test]
fn every_kind_of_float_is_read_exactly() {
    // Each value beside 0.75 in a third-problem construction, scored against the literal formula
    // (the third takes signed values): the verifier's exact reading of a float's bits shows in
    // the score.
    let mut rng = StdRng::seed_from_u64(1);
    let mut xs = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        3.0,
        f64::MAX,
        -f64::MAX,
        f64::MIN_POSITIVE,
        f64::MIN_POSITIVE / 2.0,
        5e-324,
        -5e-324,
        1e300,
        1e-300,
    ];
    xs.extend(
        (0..2000)
            .map(|_| f64::from_bits(rng.gen::<u64>()))
            .filter(|x| x.is_finite()),
    );
    for x in xs {
        if x != -0.75 {
            check("third-autocorrelation-inequality", &[x, 0.75]);
        }
    }
}

#[test]
fn unknown_slug_is_none() {
    assert!(exact_score("kissing-number", &[1.0]).is_none());
}

#[test]
fn positive_values_match_naive() {
    let mut rng = StdRng::seed_from_u64(2);
    for slug in SLUGS {
        for n in sizes() {
            let v: Vec<f64> = (0..n).map(|_| rng.gen::<f64>()).collect();
            if v.iter().sum::<f64>() > 0.0 {
                check(slug, &v);
            }
        }
    }
}

#[test]
fn values_with_zeros_match_naive() {
    let mut rng = StdRng::seed_from_u64(3);
    for slug in SLUGS {
        for n in sizes() {
            let mut v: Vec<f64> = (0..n)
                .map(|_| if rng.gen_bool(0.4) { 0.0 } else { rng.gen() })
                .collect();
            if v.iter().all(|&x| x == 0.0) {
                v[n / 2] = 0.25;
            }
            check(slug, &v);
        }
    }
}

#[test]
fn erdos_values_in_unit_interval_match_naive() {
    // Arena-like inputs: values in [0, 1] including exact 0 and 1, various magnitudes.
    let mut rng = StdRng::seed_from_u64(4);
    for n in sizes() {
        let v: Vec<f64> = (0..n)
            .map(|_| match rng.gen_range(0..4) {
                0 => 0.0,
                1 => 1.0,
                2 => rng.gen::<f64>() * 10f64.powi(-rng.gen_range(0..20)),
                _ => rng.gen(),
            })
            .collect();
        if v.iter().any(|&x| x > 0.0) {
            check("erdos-min-overlap", &v);
        }
    }
}

#[test]
fn mixed_magnitudes_match_naive() {
    let mut rng = StdRng::seed_from_u64(5);
    for n in sizes() {
        // Positive, 1e-300 … 1e300, for every problem.
        let v: Vec<f64> = (0..n)
            .map(|_| 10f64.powf(rng.gen_range(-300.0..300.0)))
            .collect();
        for slug in SLUGS {
            check(slug, &v);
        }
        // Signed, 1e-300 … 1e300, for the third problem.
        let w: Vec<f64> = (0..n)
            .map(|_| {
                let x = 10f64.powf(rng.gen_range(-300.0..300.0));
                if rng.gen_bool(0.5) {
                    -x
                } else {
                    x
                }
            })
            .collect();
        if w.iter().sum::<f64>() != 0.0 {
            check("third-autocorrelation-inequality", &w);
        }
    }
}

#[test]
fn subnormals_match_naive() {
    let mut rng = StdRng::seed_from_u64(6);
    for slug in SLUGS {
        for n in sizes() {
            let v: Vec<f64> = (0..n)
                .map(|_| match rng.gen_range(0..3) {
                    0 => f64::from_bits(rng.gen_range(1..1u64 << 52)),
                    1 => f64::from_bits(rng.gen_range(1..64)),
                    _ => rng.gen::<f64>(),
                })
                .collect();
            check(slug, &v);
            // Subnormals only.
            let s: Vec<f64> = (0..n)
                .map(|_| f64::from_bits(rng.gen_range(1..1u64 << 52)))
                .collect();
            check(slug, &s);
        }
    }
}

#[test]
fn signed_third_matches_naive() {
    let mut rng = StdRng::seed_from_u64(7);
    for n in sizes() {
        for _ in 0..3 {
            let v: Vec<f64> = (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect();
            if v.iter().sum::<f64>() != 0.0 {
                check("third-autocorrelation-inequality", &v);
            }
            // Mostly negative, so that the maximum of the convolution is the interesting bit.
            let w: Vec<f64> = (0..n)
                .map(|_| {
                    if rng.gen_bool(0.8) {
                        -rng.gen::<f64>()
                    } else {
                        rng.gen()
                    }
                })
                .collect();
            if w.iter().sum::<f64>() != 0.0 {
                check("third-autocorrelation-inequality", &w);
            }
        }
    }
    check("third-autocorrelation-inequality", &[-1.0]);
    check(
        "third-autocorrelation-inequality",
        &[-3.0, 1.0, -0.0, 2.5, -7.25],
    );
}

#[test]
fn clipped_second_matches_naive() {
    let mut rng = StdRng::seed_from_u64(8);
    for n in sizes() {
        let mut v: Vec<f64> = (0..n)
            .map(|_| match rng.gen_range(0..4) {
                0 => -rng.gen::<f64>() * 1e-6,
                1 => -0.0,
                _ => rng.gen(),
            })
            .collect();
        if v.iter().all(|&x| x <= 0.0) {
            v[0] = 0.75;
        }
        check("second-autocorrelation-inequality", &v);
    }
}

#[test]
fn scaling_by_two_leaves_scores_unchanged() {
    let mut rng = StdRng::seed_from_u64(9);
    for slug in SLUGS {
        for n in [1, 5, 64, 333, 1000] {
            let v: Vec<f64> = (0..n).map(|_| rng.gen::<f64>() + 1e-3).collect();
            let doubled: Vec<f64> = v.iter().map(|x| 2.0 * x).collect();
            assert_eq!(
                exact_score(slug, &v),
                exact_score(slug, &doubled),
                "{slug} n={n}"
            );
        }
    }
    let w: Vec<f64> = (0..500).map(|_| rng.gen_range(-1.0..1.0)).collect();
    let doubled: Vec<f64> = w.iter().map(|x| 2.0 * x).collect();
    let slug = "third-autocorrelation-inequality";
    assert_eq!(exact_score(slug, &w), exact_score(slug, &doubled));
}

#[test]
fn block_repetition_leaves_first_and_third_unchanged() {
    let mut rng = StdRng::seed_from_u64(10);
    for n in [1, 4, 50, 400] {
        let pos: Vec<f64> = (0..n).map(|_| rng.gen::<f64>()).collect();
        let signed: Vec<f64> = (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect();
        for k in [2, 3, 7] {
            let repeat = |v: &[f64]| -> Vec<f64> {
                v.iter().flat_map(|&x| std::iter::repeat_n(x, k)).collect()
            };
            for (slug, v) in [
                ("first-autocorrelation-inequality", &pos),
                ("third-autocorrelation-inequality", &pos),
                ("third-autocorrelation-inequality", &signed),
            ] {
                assert_eq!(
                    exact_score(slug, v),
                    exact_score(slug, &repeat(v)),
                    "{slug} n={n} k={k}"
                );
            }
        }
    }
}

#[test]
fn known_small_values() {
    // f = [1]: conv = [1], dx = 1/2: (1/2) / (1/2)² = 2.
    let two = BigRational::from_integer(BigInt::from(2));
    assert_eq!(
        exact_score("first-autocorrelation-inequality", &[1.0]),
        Some(two)
    );
    // f = [1, 1]: conv = [1, 2, 1], dx = 1/4: (2/4) / (2/4)² = 2.
    let two = BigRational::from_integer(BigInt::from(2));
    assert_eq!(
        exact_score("first-autocorrelation-inequality", &[1.0, 1.0]),
        Some(two)
    );
    // h = [1, 1]: λ = 1/2, h' = [1/2, 1/2]; lag 0 gives 2·(1/2)(1/2) = 1/2, times 2/n = 1/2.
    assert_eq!(
        exact_score("erdos-min-overlap", &[1.0, 1.0]),
        Some(BigRational::new(BigInt::from(1), BigInt::from(2)))
    );
    // f = [1]: c = [1], y = [0, 1, 0], h = 1/2: L2² = 2·(1/6)·1 = 1/3, L1 = 1/2, L∞ = 1 → 2/3.
    assert_eq!(
        exact_score("second-autocorrelation-inequality", &[1.0]),
        Some(BigRational::new(BigInt::from(2), BigInt::from(3)))
    );
}

/// Timings: `cargo test --release --features gmp --test gmp -- --ignored --nocapture`.
#[test]
#[ignore]
fn timing_large_inputs() {
    let mut rng = StdRng::seed_from_u64(11);
    for (slug, n) in [
        ("erdos-min-overlap", 100_000),
        ("first-autocorrelation-inequality", 100_000),
        ("third-autocorrelation-inequality", 100_000),
        ("second-autocorrelation-inequality", 100_000),
        ("second-autocorrelation-inequality", 2_000_000),
    ] {
        let v: Vec<f64> = (0..n).map(|_| rng.gen::<f64>()).collect();
        let start = std::time::Instant::now();
        let score = exact_score(slug, &v).expect("known slug");
        let bits = score.numer().bits() + score.denom().bits();
        println!("{slug} n={n}: {:.3?} ({bits} bits)", start.elapsed());
    }
    // Wider integers: 1% of the samples around 1e-30 stretch every slot to 6 words.
    let n = 2_000_000;
    let v: Vec<f64> = (0..n)
        .map(|_| rng.gen::<f64>() * if rng.gen_bool(0.01) { 1e-30 } else { 1.0 })
        .collect();
    let start = std::time::Instant::now();
    let slug = "second-autocorrelation-inequality";
    let score = exact_score(slug, &v).expect("known slug");
    let bits = score.numer().bits() + score.denom().bits();
    println!(
        "{slug} n={n}, 1% ~1e-30: {:.3?} ({bits} bits)",
        start.elapsed()
    );
}

#[test]
fn default_and_gmp_exact_values_agree_digit_for_digit() {
    use milo::exact::rational::{decimal_string, SCORE_DIGITS};
    let Some(arena) = arena_dir("default_and_gmp_exact_values_agree") else {
        return;
    };
    for entry in arena_entries(&arena) {
        let values = milo::construction::read_values(&entry.path).unwrap();
        let problem = milo::problems::by_slug(&entry.problem).unwrap();
        let default = problem.score_exact(&values);
        let gmp = problem.score_exact_gmp(&values).unwrap();
        assert_eq!(
            decimal_string(&default, SCORE_DIGITS),
            decimal_string(&gmp, SCORE_DIGITS),
            "{}",
            entry.path.display()
        );
        assert_eq!(
            default,
            gmp,
            "{}: the rationals differ",
            entry.path.display()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The default (NTT) and GMP exact verifiers are independent routes to the same rational.
    #[test]
    fn default_and_gmp_exact_scores_agree(
        wide in prop::collection::vec(wide_value(true), 1..150),
        unit in unit_values(1..400),
    ) {
        let wide_positive: Vec<f64> = wide.iter().map(|x| x.abs()).collect();
        let cases = [
            ("first-autocorrelation-inequality", wide_positive.clone()),
            ("second-autocorrelation-inequality", wide_positive),
            ("second-autocorrelation-inequality", unit.iter().enumerate().map(|(i, x)| if i % 5 == 0 { -x * 1e-6 } else { *x }).collect()),
            ("third-autocorrelation-inequality", wide),
            ("erdos-min-overlap", unit.clone()),
            ("first-autocorrelation-inequality", unit),
        ];
        for (slug, values) in cases {
            let p = milo::problems::by_slug(slug).unwrap();
            if p.check(&values).is_err() {
                continue;
            }
            let gmp = p.score_exact_gmp(&values).unwrap();
            prop_assert_eq!(p.score_exact(&values), gmp, "{}", slug);
        }
    }
}
