//! The optimizer pieces fit together: a smooth objective, a parameterisation and an L-BFGS β
//! cascade improve one of the project's own starts, verified exactly, reproducibly.

mod common;
use milo::construction::read_values;
use milo::objective::SmoothMax;
use milo::optimize::{cascade, Budget, CascadeSplit, LbfgsSettings, Parameterisation};
use milo::problems::by_slug;

const FIRST: &str = "first-autocorrelation-inequality";

fn optimise(start: &[f64], evaluations: u64) -> Vec<f64> {
    let param = Parameterisation::Square;
    let v0 = param.inverse(start);
    let n = start.len();
    let budget = Budget::evaluations(evaluations);
    let problem = by_slug(FIRST).unwrap();
    let outcome = cascade(
        &[1e2, 1e3, 1e4, 1e5],
        |beta| {
            let mut objective = problem.objective(n, SmoothMax::LogSumExp { beta });
            param.compose(move |f: &[f64], g: &mut [f64]| objective.value_and_gradient(f, g))
        },
        v0,
        &LbfgsSettings::default(),
        &budget,
        &CascadeSplit::Even,
    );
    let mut f = vec![0.0; n];
    param.forward(&outcome.v, &mut f);
    f
}

#[test]
fn lbfgs_cascade_improves_a_project_start_by_the_threshold() {
    let path = common::root()
        .join("constructions/first-autocorrelation-inequality/capped-arcsine-600.json");
    let start = read_values(&path).unwrap();
    let problem = by_slug(FIRST).unwrap();
    let before = problem.score_exact(&start);
    let improved = optimise(&start, 2_000);
    problem.check(&improved).expect("the optimizer keeps f ≥ 0");
    let after = problem.score_exact(&improved);
    let gain = &before - &after;
    println!(
        "first problem, n = 600: {} → {}",
        milo::exact::rational::to_f64(&before),
        milo::exact::rational::to_f64(&after)
    );
    assert!(
        gain >= problem.spec().min_improvement_exact(),
        "gain {gain}"
    );
    // Same input and budget: the same bits.
    let again = optimise(&start, 2_000);
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&improved), bits(&again));
}
