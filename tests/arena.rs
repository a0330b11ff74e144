//! Every frozen leaderboard construction in `../shared/arena` verifies; the fast value agrees with
//! the numpy reference within its error bound; the exact value agrees with the Python exact
//! reference (small files); with the GMP verifier it agrees digit for digit in tests/gmp.rs.
//! Each test prints a skip note and passes when `../shared/arena` is absent.

mod common;
use common::{arena_dir, arena_entries, milo, python_ready, python_reference};

#[test]
fn every_arena_construction_verifies_with_bounded_fast_error() {
    let Some(arena) = arena_dir("every_arena_construction_verifies") else {
        return;
    };
    for entry in arena_entries(&arena) {
        let path = entry.path.to_str().unwrap();
        let run = milo(&["verify", &entry.problem, path, "--json"]);
        assert_eq!(run.code, 0, "{path}: {}", run.stderr);
        let report = run.json();
        assert_eq!(report["valid"], true);
        assert_eq!(report["n"].as_u64().unwrap() as usize, entry.n);
        let exact = report["score_exact"].as_str().unwrap();
        assert!(exact.len() >= 32, "≥ 30 significant digits: {exact}");
        let diff = report["abs_diff"].as_f64().unwrap();
        let bound = report["error_bound"].as_f64().unwrap();
        assert!(
            diff <= bound,
            "{path}: |fast − exact| = {diff:e} > bound {bound:e}"
        );
        // The manifest's numpy score is the arena's own float64 evaluation.
        let fast = report["score_f64"].as_f64().unwrap();
        let tolerance = bound.max(4e-16 * fast.abs());
        assert!(
            (fast - entry.arena_score_numpy).abs() <= tolerance,
            "{path}: fast {fast} vs manifest {} (tolerance {tolerance:e})",
            entry.arena_score_numpy
        );
    }
}

#[test]
fn fast_value_agrees_with_numpy_reference_within_bound() {
    let Some(arena) = arena_dir("fast_value_agrees_with_numpy_reference") else {
        return;
    };
    if !python_ready("fast_value_agrees_with_numpy_reference") {
        return;
    }
    for entry in arena_entries(&arena) {
        let path = entry.path.to_str().unwrap();
        let reference = python_reference("arena_reference.py", &[&entry.problem, path]);
        let numpy = reference["score"].as_f64().unwrap();
        let report = milo(&["verify", &entry.problem, path, "--json", "--mode", "fast"]).json();
        let fast = report["score_f64"].as_f64().unwrap();
        let bound = report["error_bound"].as_f64().unwrap();
        let tolerance = bound.max(4e-16 * numpy.abs());
        println!(
            "{path}: numpy {numpy:?} fast {fast:?} diff {:e} bound {bound:e}",
            (fast - numpy).abs()
        );
        assert!((fast - numpy).abs() <= tolerance, "{path}");
    }
}

#[test]
fn exact_value_agrees_with_python_fractions_on_small_files() {
    let Some(arena) = arena_dir("exact_value_agrees_with_python_fractions") else {
        return;
    };
    if !python_ready("exact_value_agrees_with_python_fractions") {
        return;
    }
    for entry in arena_entries(&arena).into_iter().filter(|e| e.n <= 2_000) {
        let path = entry.path.to_str().unwrap();
        let reference = python_reference("exact_reference.py", &[&entry.problem, path]);
        let report = milo(&["verify", &entry.problem, path, "--json", "--mode", "exact"]).json();
        assert_eq!(report["score_exact"], reference["score_exact"], "{path}");
    }
}
