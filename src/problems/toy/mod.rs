//! A toy fifth problem, compiled only for tests: minimise the peak-to-mean ratio of the
//! autoconvolution of a nonnegative `f`, `(2n − 1)·max(f∗f)/(Σf)²` (the first problem's score
//! scaled by `(2n − 1)/(2n)`). It is one folder (rules, scores, surrogate, data file, default
//! program) plus one registration line in [`super::all`], and its test runs `verify`,
//! `optimize` and a two-round `evolve` on it through the command line's functions.

pub mod objective;

use super::{check_finite, check_some_positive, peak_ratio, FastScore, Problem, ProblemSpec};
use crate::error::Violation;
use crate::fast::UNIT_ROUNDOFF;
use crate::objective::{Objective, SmoothMax};
use crate::optimize::Parameterisation;
use num_bigint::BigInt;
use num_rational::BigRational;

/// The toy problem (`toy-autoconvolution-peak`).
pub struct Toy {
    spec: ProblemSpec,
}

impl Toy {
    /// Loads the data file beside this one.
    pub fn new() -> Self {
        Toy {
            spec: super::embedded_spec("toy-autoconvolution-peak", include_str!("toy.toml")),
        }
    }
}

/// `(2n − 1)/(2n)`: the toy's score over the first problem's.
fn scale(n: usize) -> f64 {
    (2 * n - 1) as f64 / (2 * n) as f64
}

/// `(2n − 1)/(2n)` exactly.
fn exact_scale(n: usize) -> BigRational {
    BigRational::new(BigInt::from(2 * n - 1), BigInt::from(2 * n))
}

impl Problem for Toy {
    fn spec(&self) -> &ProblemSpec {
        &self.spec
    }

    fn objective(&self, n: usize, smooth: SmoothMax) -> Box<dyn Objective> {
        Box::new(objective::ToyObjective::new(n, smooth))
    }

    fn parameterisations(&self) -> &'static [Parameterisation] {
        &[Parameterisation::Square]
    }

    fn default_program(&self) -> &'static str {
        include_str!("default.toml")
    }

    #[cfg(feature = "gmp")]
    fn score_exact_gmp(&self, values: &[f64]) -> Option<BigRational> {
        crate::exact::gmp::first_autocorrelation_score(values)
            .map(|s| s * exact_scale(values.len()))
    }

    fn check(&self, values: &[f64]) -> Result<(), Violation> {
        let slug = &self.spec.slug;
        check_finite(slug, values)?;
        if let Some(i) = values.iter().position(|&x| x < 0.0) {
            return Err(Violation::at(slug, "every value must be ≥ 0", i, values[i]));
        }
        check_some_positive(slug, values, "the sum must be > 0 (all values are zero)")
    }

    fn score_fast(&self, values: &[f64]) -> FastScore {
        let first = peak_ratio::fast(values, false);
        let value = first.value * scale(values.len());
        FastScore {
            value,
            error_bound: first.error_bound + 4.0 * UNIT_ROUNDOFF * value,
        }
    }

    fn score_exact(&self, values: &[f64]) -> BigRational {
        peak_ratio::exact(values, false) * exact_scale(values.len())
    }

    fn lags(&self, values: &[f64]) -> Vec<f64> {
        crate::fast::autoconvolve(values).values
    }

    fn repair(&self, values: &mut [f64]) -> usize {
        super::clip_negatives(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{execute, Cli};
    use crate::construction::{read_values, write_values};
    use crate::error::EXIT_OK;
    use crate::exact::rational::to_f64;
    use clap::Parser;
    use std::path::Path;

    const SLUG: &str = "toy-autoconvolution-peak";

    /// Runs `milo ARGS` in this process; its exit code.
    fn milo(args: &[&str]) -> i32 {
        let cli = Cli::try_parse_from(std::iter::once("milo").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        execute(cli)
    }

    /// A wavy nonnegative start of `n` values with the given phase.
    fn wave(n: usize, phase: f64) -> Vec<f64> {
        (0..n)
            .map(|i| {
                let x = (i as f64 + 0.5) / n as f64;
                1.0 + 0.4 * (6.0 * x + phase).sin() - 0.3 * x
            })
            .collect()
    }

    fn path(p: &Path) -> &str {
        p.to_str().unwrap()
    }

    #[test]
    fn the_registered_toy_scores_exactly_and_agrees_with_its_fast_score() {
        let problem = crate::problems::by_slug(SLUG).unwrap();
        // f = (1, 1): f∗f = (1, 2, 1), mean 4/3, peak 2: score 3/2.
        let exact = problem.score_exact(&[1.0, 1.0]);
        assert_eq!(exact, BigRational::new(3.into(), 2.into()));
        let values = wave(50, 0.3);
        let fast = problem.score_fast(&values);
        let exact = to_f64(&problem.score_exact(&values));
        assert!(
            (fast.value - exact).abs() <= fast.error_bound,
            "{fast:?} vs {exact}"
        );
        assert!(problem.check(&[1.0, -1.0]).is_err());
    }

    #[test]
    fn verify_optimize_and_a_two_round_evolve_run_on_the_toy() {
        let dir = tempfile::tempdir().unwrap();
        let start = dir.path().join("start.json");
        write_values(&start, &wave(40, 0.3)).unwrap();
        assert_eq!(milo(&["verify", SLUG, path(&start), "--json"]), EXIT_OK);

        let out = dir.path().join("best.json");
        let code = milo(&[
            "optimize",
            SLUG,
            "--start",
            path(&start),
            "--evaluations",
            "400",
            "--out",
            path(&out),
            "--json",
        ]);
        assert_eq!(code, EXIT_OK);
        let problem = crate::problems::by_slug(SLUG).unwrap();
        let (before, after) = (
            problem.score_exact(&read_values(&start).unwrap()),
            problem.score_exact(&read_values(&out).unwrap()),
        );
        assert!(after < before, "optimize did not improve the toy");

        let program = dir.path().join("program.toml");
        std::fs::write(&program, problem.default_program()).unwrap();
        let mut starts = String::new();
        for (label, phase, split) in [
            ("a", 0.3, "search"),
            ("b", 1.1, "search"),
            ("c", 2.0, "validation"),
        ] {
            let file = dir.path().join(format!("{label}.json"));
            write_values(&file, &wave(40, phase)).unwrap();
            let sha = crate::suite::sha256_hex(&std::fs::read(&file).unwrap());
            starts.push_str(&format!(
                "\n[[starts]]\nlabel = \"{label}\"\npath = \"{label}.json\"\n\
                 sha256 = \"{sha}\"\nsplit = \"{split}\"\n"
            ));
        }
        let suite = dir.path().join("toy.toml");
        std::fs::write(
            &suite,
            format!(
                "name = \"toy\"\nproblem = \"{SLUG}\"\nprograms = [\"program.toml\"]\n\
                 seeds = [1]\nvalidation_seeds = [2]\n\n[budget]\nevaluations = 150\n{starts}"
            ),
        )
        .unwrap();
        let run = dir.path().join("run");
        let code = milo(&[
            "evolve",
            "--suite",
            path(&suite),
            "--run-dir",
            path(&run),
            "--islands",
            "1",
            "--rounds",
            "2",
        ]);
        assert_eq!(code, EXIT_OK);
        let lineage = std::fs::read_to_string(run.join("lineage.jsonl")).unwrap();
        assert!(lineage.contains(SLUG) || lineage.contains("toy.toml"));
        let rounds = lineage
            .lines()
            .filter(|l| l.contains("\"record\":\"round_end\""))
            .count();
        assert_eq!(rounds, 2, "{lineage}");
    }
}
