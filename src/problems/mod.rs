//! The arena problems. Each owns its pieces in one folder here (`<name>/mod.rs`: its rules and
//! scores; `<name>/objective.rs`: its smooth surrogate; optionally the models the problem-specific
//! stages use) and names its data file (`problems/<slug>.toml`) and its default optimizer program
//! (`problems/optimizers/<slug>.default.toml`). A fifth problem is one new folder (with its data
//! files) and one line in [`all`]: nothing outside this module matches on a problem's slug.

mod erdos_min_overlap;
mod first_autocorrelation;
pub mod lag_model;
mod peak_ratio;
mod second_autocorrelation;
pub mod spec;
mod third_autocorrelation;
#[cfg(test)]
pub(crate) mod toy;

use crate::error::{MiloError, Result, Violation};
use crate::objective::{Objective, RatioObjective, SmoothMax};
use crate::optimize::Parameterisation;
pub use lag_model::LagModel;
use num_rational::BigRational;
pub use spec::{Direction, KnownRecord, ProblemSpec};
use std::path::Path;

/// A float64 score with a bound on its distance from the exact score of the same array.
#[derive(Clone, Copy, Debug)]
pub struct FastScore {
    /// The score computed in float64 following the arena's formula.
    pub value: f64,
    /// Bound on `|value − exact score|`.
    pub error_bound: f64,
}

/// One arena problem: its rules and its score, fast (float64) and exact (rational), and what the
/// optimizers need of it (its surrogate, parameterisations, default program, and the models of
/// the problem-specific stages).
///
/// Scoring methods assume `check` passed and every value is finite.
pub trait Problem: Send + Sync {
    /// The problem's data file.
    fn spec(&self) -> &ProblemSpec;

    /// The arena's validity rules for the values; the first broken rule with its index and value.
    fn check(&self, values: &[f64]) -> std::result::Result<(), Violation>;

    /// The score in float64 through a real FFT, with an a-priori error bound.
    fn score_fast(&self, values: &[f64]) -> FastScore;

    /// The exact rational value of the arena's formula for these float64 values.
    fn score_exact(&self, values: &[f64]) -> BigRational;

    /// The per-lag quantity whose maximum the score takes (f∗f, or the Erdős correlation), in
    /// float64: for diagnostics (active set, plots).
    fn lags(&self, values: &[f64]) -> Vec<f64>;

    /// Moves finite values onto the nearest valid construction where a simple projection exists
    /// (clip forbidden negatives, the Erdős box and rescale rule); returns how many cells changed.
    fn repair(&self, values: &mut [f64]) -> usize;

    /// The smooth surrogate of the score with its gradient (always to be minimised), with
    /// workspaces for arrays of length `n ≥ 1`.
    fn objective(&self, n: usize, smooth: SmoothMax) -> Box<dyn Objective>;

    /// The parameterisations that keep the problem's constraints by construction (edits choose
    /// among them); the first is the default (prune–regrow's polish, the basin hopping an edit
    /// appends).
    fn parameterisations(&self) -> &'static [Parameterisation];

    /// The TOML text of the problem's default optimizer program (the arena problems embed
    /// `problems/optimizers/<slug>.default.toml`).
    fn default_program(&self) -> &'static str;

    /// The first β of the cascade that follows a resolution change (the `refine` stage's
    /// default floor): low enough to explore the room a finer grid opens (DOMAIN.md, "β floor
    /// after a resolution change"). 1e3 unless the problem measured otherwise.
    fn beta_floor_after_resample(&self) -> f64 {
        1e3
    }

    /// The lag model sequential LP linearises, for a score that is the max over lags of a
    /// quadratic function at a fixed sum; `None` (the default) where the stage does not apply.
    fn lag_model(&self) -> Option<&dyn LagModel> {
        None
    }

    /// The parts `N` and `D̃` of a ratio score `N/D` that Dinkelbach's method iterates on, with
    /// workspaces for arrays of length `n ≥ 1`; `None` (the default) for a score that is not a
    /// ratio (Dinkelbach then runs its plain inner cascade).
    fn ratio_terms(&self, _n: usize, _smooth: SmoothMax) -> Option<Box<dyn RatioObjective>> {
        None
    }

    /// The exact score by the independent GMP scorer ([`crate::exact::gmp`]); `None` if its
    /// denominator is zero (validated inputs never give that).
    #[cfg(feature = "gmp")]
    fn score_exact_gmp(&self, values: &[f64]) -> Option<BigRational>;

    /// The default parameterisation (the first of [`Problem::parameterisations`]).
    fn default_parameterisation(&self) -> Parameterisation {
        self.parameterisations()[0]
    }

    /// The slug (shorthand for `spec().slug`).
    fn slug(&self) -> &str {
        &self.spec().slug
    }
}

/// Parses one of the embedded data files; they are part of the binary and tested.
fn embedded_spec(slug: &str, text: &str) -> ProblemSpec {
    let origin = Path::new("problems").join(format!("{slug}.toml"));
    match ProblemSpec::parse(text, &origin) {
        Ok(spec) => spec,
        Err(e) => panic!("embedded problem file is broken: {e}"),
    }
}

/// Every problem, in the arena's order.
pub fn all() -> Vec<Box<dyn Problem>> {
    vec![
        Box::new(erdos_min_overlap::ErdosMinOverlap::new()),
        Box::new(first_autocorrelation::FirstAutocorrelation::new()),
        Box::new(second_autocorrelation::SecondAutocorrelation::new()),
        Box::new(third_autocorrelation::ThirdAutocorrelation::new()),
        #[cfg(test)]
        Box::new(toy::Toy::new()),
    ]
}

/// The short name a problem also answers to: the first word of its slug (`erdos`, `first`,
/// `second`, `third`).
pub fn alias(slug: &str) -> &str {
    slug.split('-').next().unwrap_or(slug)
}

/// The problem with this slug or alias, or a usage error listing the known slugs.
pub fn by_slug(name: &str) -> Result<Box<dyn Problem>> {
    let problems = all();
    let known: Vec<String> = problems.iter().map(|p| p.slug().to_string()).collect();
    problems
        .into_iter()
        .find(|p| p.slug() == name || alias(p.slug()) == name)
        .ok_or_else(|| {
            let names = known.iter().flat_map(|s| [s.as_str(), alias(s)]);
            let nearest = names
                .map(|n| (strsim::jaro_winkler(name, n), n))
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .filter(|(similarity, _)| *similarity > 0.8);
            let hint = nearest.map_or(String::new(), |(_, n)| format!(" (did you mean '{n}'?)"));
            MiloError::Usage(format!(
                "unknown problem '{name}'{hint}; known problems: {} (or the first word of one)",
                known.join(", ")
            ))
        })
}

/// First index whose value is NaN or infinite, as a violation (shared by every problem).
pub fn check_finite(problem: &str, values: &[f64]) -> std::result::Result<(), Violation> {
    match values.iter().position(|x| !x.is_finite()) {
        Some(i) => Err(Violation::at(
            problem,
            "every value must be a finite number (no NaN or infinity)",
            i,
            values[i],
        )),
        None => Ok(()),
    }
}

/// A whole-array violation of `rule` unless some value is positive (for problems whose sum must
/// be positive and whose values are already known to be ≥ 0, or clipped at 0).
pub fn check_some_positive(
    problem: &str,
    values: &[f64],
    rule: &str,
) -> std::result::Result<(), Violation> {
    if values.iter().any(|&x| x > 0.0) {
        Ok(())
    } else {
        Err(Violation::whole(problem, rule, None))
    }
}

/// Sets negative values to zero; returns how many changed.
pub fn clip_negatives(values: &mut [f64]) -> usize {
    let mut changed = 0;
    for x in values.iter_mut().filter(|x| **x < 0.0) {
        *x = 0.0;
        changed += 1;
    }
    changed
}

/// The arena's length limit, unless oversize arrays are allowed.
pub fn check_length(spec: &ProblemSpec, n: usize) -> std::result::Result<(), Violation> {
    if n > spec.max_len {
        return Err(Violation::whole(
            &spec.slug,
            format!(
                "at most {} values are accepted by the arena (use --allow-oversize to score it anyway)",
                spec.max_len
            ),
            Some(format!("{n} values")),
        ));
    }
    if n == 0 {
        return Err(Violation::whole(
            &spec.slug,
            "the construction has no values",
            None,
        ));
    }
    Ok(())
}

/// The exact rational `num / den` (`den ≠ 0`), reduced; the problems' exact scores end here.
pub(crate) fn exact_ratio(num: num_bigint::BigInt, den: num_bigint::BigInt) -> BigRational {
    crate::exact::rational::ratio(num, den)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_construction_cap_holds_the_longest_construction_of_every_problem() {
        // The cap of construction reads is derived from the largest length a problem allows.
        let largest = all().iter().map(|p| p.spec().max_len as u64).max().unwrap();
        assert_eq!(largest, crate::bounded_read::LARGEST_MAX_LEN);
    }

    #[test]
    fn every_data_file_parses_and_matches_its_slug() {
        for p in all() {
            let spec = p.spec();
            assert!(!spec.records.is_empty(), "{}", spec.slug);
            assert!(spec.min_improvement > 0.0);
            assert!(by_slug(&spec.slug).is_ok());
        }
        assert_eq!(
            all().len(),
            5,
            "the four arena problems and the test-only toy"
        );
        assert!(by_slug("nope").is_err());
    }

    #[test]
    fn repair_makes_constructions_valid() {
        let cases: [(&str, Vec<f64>); 3] = [
            ("first-autocorrelation-inequality", vec![1.0, -0.5, 2.0]),
            ("second-autocorrelation-inequality", vec![1.0, -0.5, 2.0]),
            ("erdos-min-overlap", vec![1.0, 0.0, 0.0, 1.4, -0.1, 0.2]),
        ];
        for (slug, mut values) in cases {
            let p = by_slug(slug).unwrap();
            assert!(p.check(&values).is_err());
            assert!(p.repair(&mut values) > 0);
            p.check(&values).unwrap_or_else(|e| panic!("{slug}: {e}"));
        }
        let p = by_slug("erdos-min-overlap").unwrap();
        let mut valid = vec![0.5, 0.5, 0.25];
        assert_eq!(p.repair(&mut valid), 0);
    }

    #[test]
    fn lags_peak_matches_the_fast_score() {
        let values = vec![0.3, 0.9, 0.5, 0.7, 0.1];
        for p in all() {
            let lags = p.lags(&values);
            assert_eq!(lags.len(), 2 * values.len() - 1);
            let peak = lags.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x));
            assert!(peak.is_finite() && peak > 0.0, "{}", p.slug());
        }
    }

    #[test]
    fn every_problem_gives_its_surrogate_and_default_program() {
        for problem in all() {
            let mut objective = problem.objective(7, SmoothMax::PNorm { p: 3.0 });
            let f = [0.3, 0.9, 0.5, 0.7, 0.1, 0.4, 0.2];
            let mut grad = [0.0; 7];
            assert!(objective.value_and_gradient(&f, &mut grad).is_finite());
            assert!(!problem.parameterisations().is_empty());
            let program = crate::program::Program::parse(
                problem.default_program(),
                Path::new("default.toml"),
            );
            assert!(program.is_ok(), "{}: {program:?}", problem.slug());
        }
    }

    #[test]
    fn unknown_keys_in_a_problem_file_are_errors() {
        let err = ProblemSpec::parse("slug = \"x\"\ncolour = 1\n", Path::new("x.toml"));
        assert!(err.unwrap_err().to_string().contains("colour"));
    }
}
