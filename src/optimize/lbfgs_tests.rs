//! Tests of [`super::minimise`] on standard functions, budgets and determinism.

use super::{minimise, Budget, LbfgsSettings};
use std::cell::Cell;

/// The n-dimensional Rosenbrock function and its gradient.
fn rosenbrock(v: &[f64], g: &mut [f64]) -> f64 {
    let n = v.len();
    g.iter_mut().for_each(|x| *x = 0.0);
    let mut s = 0.0;
    for i in 0..n - 1 {
        let a = v[i + 1] - v[i] * v[i];
        let b = 1.0 - v[i];
        s += 100.0 * a * a + b * b;
        g[i] += -400.0 * v[i] * a - 2.0 * b;
        g[i + 1] += 200.0 * a;
    }
    s
}

/// A convex quadratic ½ Σ d_i (v_i − c_i)² + Σ_i (v_i − c_i)(v_{i+1} − c_{i+1}) / 4 with a known
/// minimiser c.
fn quadratic(c: &[f64]) -> impl Fn(&[f64], &mut [f64]) -> f64 + '_ {
    move |v, g| {
        let n = v.len();
        let r: Vec<f64> = v.iter().zip(c).map(|(a, b)| a - b).collect();
        let mut s = 0.0;
        for i in 0..n {
            let d = 1.0 + i as f64;
            s += 0.5 * d * r[i] * r[i];
            g[i] = d * r[i];
        }
        for i in 0..n - 1 {
            s += 0.25 * r[i] * r[i + 1];
            g[i] += 0.25 * r[i + 1];
            g[i + 1] += 0.25 * r[i];
        }
        s
    }
}

#[test]
fn rosenbrock_2_converges() {
    let out = minimise(
        rosenbrock,
        vec![-1.2, 1.0],
        &LbfgsSettings::default(),
        &Budget::unlimited(),
    );
    assert!(out.value < 1e-16, "{out:?}");
    assert!(out.v.iter().all(|x| (x - 1.0).abs() < 1e-7), "{out:?}");
}

#[test]
fn rosenbrock_50_converges() {
    let v0: Vec<f64> = (0..50)
        .map(|i| if i % 2 == 0 { -1.2 } else { 1.0 })
        .collect();
    let out = minimise(
        rosenbrock,
        v0,
        &LbfgsSettings::default(),
        &Budget::unlimited(),
    );
    assert!(out.value < 1e-14, "{out:?}");
    assert!(
        out.v.iter().all(|x| (x - 1.0).abs() < 1e-6),
        "{:?}",
        out.stopped
    );
}

#[test]
fn quadratic_converges_to_its_minimiser() {
    let c: Vec<f64> = (0..20).map(|i| (i as f64).sin() * 3.0).collect();
    let out = minimise(
        quadratic(&c),
        vec![0.0; 20],
        &LbfgsSettings::default(),
        &Budget::unlimited(),
    );
    for (a, b) in out.v.iter().zip(&c) {
        assert!((a - b).abs() < 1e-8, "{a} vs {b}: {}", out.stopped);
    }
    assert!(out.value < 1e-16);
}

#[test]
fn evaluation_budget_is_respected() {
    for max in [0_u64, 1, 2, 7, 30] {
        let calls = Cell::new(0_u64);
        let obj = |v: &[f64], g: &mut [f64]| {
            calls.set(calls.get() + 1);
            rosenbrock(v, g)
        };
        let budget = Budget::evaluations(max);
        let out = minimise(obj, vec![-1.2, 1.0], &LbfgsSettings::default(), &budget);
        assert_eq!(calls.get(), max, "max {max}");
        assert_eq!(out.evaluations, max);
        assert_eq!(budget.used(), max);
        assert_eq!(out.stopped, "budget exhausted: evaluations");
        if max == 0 {
            assert!(out.value.is_nan());
            assert_eq!(out.v, vec![-1.2, 1.0]);
        }
    }
}

#[test]
fn deadline_stops_the_run() {
    let budget = Budget::unlimited().with_time_limit(std::time::Duration::from_millis(20));
    let slow = |v: &[f64], g: &mut [f64]| {
        std::thread::sleep(std::time::Duration::from_millis(2));
        rosenbrock(v, g)
    };
    let out = minimise(slow, vec![-1.2, 1.0], &LbfgsSettings::default(), &budget);
    assert_eq!(out.stopped, "budget exhausted: deadline");
    assert!(out.evaluations < 30);
}

#[test]
fn never_worse_than_the_start() {
    // Starting at the minimum, and starting anywhere under tiny budgets.
    let mut g = vec![0.0; 2];
    for (v0, max) in [
        (vec![1.0, 1.0], 100),
        (vec![-1.2, 1.0], 3),
        (vec![0.3, -2.0], 5),
    ] {
        let start = rosenbrock(&v0, &mut g);
        let out = minimise(
            rosenbrock,
            v0,
            &LbfgsSettings::default(),
            &Budget::evaluations(max),
        );
        assert!(out.value <= start, "{} > {start}", out.value);
        assert_eq!(out.value, rosenbrock(&out.v, &mut g));
    }
}

#[test]
fn iteration_limit_is_respected() {
    let settings = LbfgsSettings {
        max_iterations: 5,
        ..LbfgsSettings::default()
    };
    let out = minimise(rosenbrock, vec![-1.2, 1.0], &settings, &Budget::unlimited());
    assert!(out.iterations <= 5);
    assert!(out.value > 1e-6);
}

#[test]
fn same_input_gives_bit_identical_output() {
    let v0: Vec<f64> = (0..50).map(|i| ((i * 7) % 5) as f64 * 0.3 - 0.6).collect();
    let run = || {
        minimise(
            rosenbrock,
            v0.clone(),
            &LbfgsSettings::default(),
            &Budget::evaluations(400),
        )
    };
    let (a, b) = (run(), run());
    assert_eq!(a.value.to_bits(), b.value.to_bits());
    assert!(a
        .v
        .iter()
        .zip(&b.v)
        .all(|(x, y)| x.to_bits() == y.to_bits()));
    assert_eq!(
        (a.iterations, a.evaluations, &a.stopped),
        (b.iterations, b.evaluations, &b.stopped)
    );
}

#[test]
fn nan_region_is_survived() {
    // NaN for v < 0: the best finite point is kept.
    let obj = |v: &[f64], g: &mut [f64]| {
        if v[0] < 0.0 {
            return f64::NAN;
        }
        g[0] = 2.0 * (v[0] - 0.5);
        (v[0] - 0.5).powi(2)
    };
    let out = minimise(
        obj,
        vec![3.0],
        &LbfgsSettings::default(),
        &Budget::evaluations(200),
    );
    assert!(out.value.is_finite() && out.value <= 6.25, "{out:?}");
}
