//! The sequential-LP stage with each LP solver (`microlp`, `clarabel`) side by side, at equal
//! wall time, on the Erdős and first-autocorrelation arena starts at n from 95 to 2,500 (resized
//! by block means or repeats; Erdős by whole factors, which keep its constraints exact): LP
//! solves, failures, time per solve and the final float64 score.
//!
//! `cargo run --release --example lp_solvers -- [SECONDS_PER_RUN]` (default 10). Reads the
//! frozen starts in `../shared/arena` (a skip note when absent).

use milo::construction::read_values;
use milo::optimize::Budget;
use milo::problems::by_slug;
use milo::stages::lp_solver::LpSolver;
use milo::stages::sequential_lp::{run_with_stats, SequentialLp};
use std::path::Path;
use std::time::{Duration, Instant};

/// `values` resized to `n` samples: block means when shrinking, block repeats when growing
/// (both keep the mean, so the problems' constraints still hold).
fn resize(values: &[f64], n: usize) -> Vec<f64> {
    let m = values.len();
    if n <= m {
        (0..n)
            .map(|i| {
                let (a, b) = (i * m / n, ((i + 1) * m / n).max(i * m / n + 1));
                values[a..b].iter().sum::<f64>() / (b - a) as f64
            })
            .collect()
    } else {
        (0..n).map(|i| values[i * m / n]).collect()
    }
}

fn main() {
    let seconds: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10.0);
    let arena = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/arena");
    if !arena.exists() {
        println!("SKIP: {} is absent", arena.display());
        return;
    }
    println!("| problem | start | n | solver | LP solves | failures | ms per solve | final score | gain |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let cases = [
        ("erdos-min-overlap", "alphaevolve", 95),
        ("erdos-min-overlap", "together-ai", 600),
        ("erdos-min-overlap", "together-ai", 1_200),
        ("erdos-min-overlap", "together-ai", 2_400),
        ("first-autocorrelation-inequality", "alphaevolve", 600),
        ("first-autocorrelation-inequality", "together-ai", 1_200),
        ("first-autocorrelation-inequality", "together-ai", 2_500),
    ];
    for (slug, start, n) in cases {
        let problem = by_slug(slug).expect("a known problem");
        let path = arena.join(slug).join(format!("{start}.json"));
        let values = match read_values(&path) {
            Ok(v) => resize(&v, n),
            Err(e) => {
                println!("SKIP: {e}");
                continue;
            }
        };
        let start_score = problem.score_fast(&values).value;
        for solver in [LpSolver::Microlp, LpSolver::Clarabel] {
            let params = SequentialLp {
                active_lags: 100,
                trust_radius: 1e-3,
                steps: 100_000,
                solver,
                active_within: 0.0,
                line_search: false,
            };
            let budget = Budget::unlimited()
                .with_deadline(Instant::now() + Duration::from_secs_f64(seconds));
            let (outcome, stats) = run_with_stats(problem.as_ref(), &values, &params, &budget);
            let end = problem.score_fast(&outcome.values).value;
            println!(
                "| {slug} | {start} | {n} | {solver:?} | {} | {} | {:.1} | {end:.12} | {:.3e} |",
                stats.solves,
                stats.failures,
                1e3 * stats.solve_seconds / stats.solves.max(1) as f64,
                start_score - end
            );
        }
    }
}
