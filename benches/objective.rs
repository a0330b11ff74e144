//! Criterion benches of the smooth objectives' value and gradient on seeded random inputs:
//! the first problem (log-sum-exp) at n = 600 … 2,000,000, and the second problem at 2,000,000.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use milo::objective::SmoothMax;
use milo::problems::by_slug;
use rand::{Rng, SeedableRng};
use std::time::Duration;

fn random_values(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.gen::<f64>()).collect()
}

fn bench_objective(c: &mut Criterion) {
    let cases = [
        ("first-autocorrelation-inequality", 600),
        ("first-autocorrelation-inequality", 3_000),
        ("first-autocorrelation-inequality", 30_000),
        ("first-autocorrelation-inequality", 100_000),
        ("first-autocorrelation-inequality", 400_000),
        ("first-autocorrelation-inequality", 2_000_000),
        ("second-autocorrelation-inequality", 2_000_000),
    ];
    let mut group = c.benchmark_group("value_and_gradient");
    for (slug, n) in cases {
        let problem = by_slug(slug).unwrap();
        let mut objective = problem.objective(n, SmoothMax::LogSumExp { beta: 1e6 });
        let values = random_values(n, 7);
        let mut grad = vec![0.0; n];
        group.sample_size(if n >= 30_000 { 10 } else { 50 });
        group.measurement_time(Duration::from_secs(if n > 500_000 { 20 } else { 5 }));
        group.bench_with_input(BenchmarkId::new(slug, n), &values, |b, v| {
            b.iter(|| objective.value_and_gradient(v, &mut grad))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_objective);
criterion_main!(benches);
