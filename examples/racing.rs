//! Racing against revisions in turn and against the parent unchanged, side by side: the
//! built-in writer under each seed harness as it is and with `[racing]` switched on
//! (`Racing::DEFAULT`), and the verbatim writer (the parent program run unchanged on the whole
//! budget), on the same tasks (a suite's search slots × fresh seeds) and evaluation budgets.
//! Prints each policy's mean gain (units of the problem's `min_improvement`) with its standard
//! error, and its paired difference against the parent unchanged.
//!
//! `cargo run --release --example racing -- [SUITE] [SEEDS] [EVALUATIONS]`
//! (defaults: `problems/suites/default.toml`, 4 seeds, the suite's budget).

use milo::agent::{Assignment, BuiltinWriter, GivenProgram, OptimizerWriter};
use milo::harness::{seed_harnesses, Harness, Racing};
use milo::search::evaluation::gain;
use milo::suite::Suite;
use std::path::Path;
use std::time::Instant;

/// Mean and standard error of `xs`.
fn mean_se(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, (var / n).sqrt())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let suite_path = args
        .first()
        .map_or("problems/suites/default.toml", String::as_str);
    let seeds: u64 = args.get(1).map_or(Ok(4), |s| s.parse())?;
    let suite = Suite::load(Path::new(suite_path))?;
    let evaluations: Option<u64> = match args.get(2) {
        Some(e) => Some(e.parse()?),
        None => suite.budget.evaluations,
    };
    let problem = suite.problem.as_ref();
    let mut slots: Vec<_> = suite.search_tasks().collect();
    slots.dedup_by(|a, b| a.start.label == b.start.label && a.program_path == b.program_path);

    let mut policies: Vec<(String, Option<Harness>)> = vec![("parent unchanged".into(), None)];
    for harness in seed_harnesses() {
        let mut racing = harness.clone();
        racing.racing = Some(Racing::DEFAULT);
        policies.push((harness.name.clone(), Some(harness.clone())));
        policies.push((format!("{} + racing", harness.name), Some(racing)));
    }
    println!(
        "suite {} ({}), {} slots × {seeds} seeds, {:?} evaluations per task",
        suite.name,
        problem.spec().slug,
        slots.len(),
        evaluations
    );
    let mut gains: Vec<Vec<f64>> = Vec::new();
    for (name, harness) in &policies {
        let started = Instant::now();
        let mut row = Vec::new();
        for slot in &slots {
            for seed in 0..seeds {
                let assignment = Assignment {
                    problem,
                    start: &slot.start.values,
                    start_exact: &slot.start.exact,
                    parent: &slot.program,
                    seconds: None,
                    evaluations,
                    seed: 1_000 + seed,
                    library: &[],
                    cancel: Default::default(),
                };
                let attempt = match harness {
                    Some(h) => BuiltinWriter.solve(h, &assignment)?,
                    None => GivenProgram.solve(&seed_harnesses()[0], &assignment)?,
                };
                row.push(gain(problem, &slot.start.exact, &attempt.best_exact));
            }
        }
        let (mean, se) = mean_se(&row);
        let paired = match gains.first() {
            Some(parent) => {
                let diff: Vec<f64> = row.iter().zip(parent).map(|(a, b)| a - b).collect();
                let (d, dse) = mean_se(&diff);
                format!("{d:+10.2} ± {dse:7.2}")
            }
            None => format!("{:>20}", "—"),
        };
        println!(
            "{name:<28} mean gain {mean:10.2} ± {se:7.2}   vs parent unchanged {paired}   ({:.1} s)",
            started.elapsed().as_secs_f64()
        );
        gains.push(row);
    }
    Ok(())
}
