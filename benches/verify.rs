//! Criterion benches of fast and exact verification on seeded random constructions:
//! n = 600, 30,000, 100,000 (first problem) and 2,000,000 (second problem).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use milo::problems::by_slug;
use rand::{Rng, SeedableRng};
use std::time::Duration;

fn random_values(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.gen::<f64>()).collect()
}

fn bench_verify(c: &mut Criterion) {
    let cases = [
        ("first-autocorrelation-inequality", 600),
        ("first-autocorrelation-inequality", 30_000),
        ("first-autocorrelation-inequality", 100_000),
        ("second-autocorrelation-inequality", 2_000_000),
    ];
    let mut group = c.benchmark_group("verify");
    group.sample_size(10);
    for (slug, n) in cases {
        let problem = by_slug(slug).unwrap();
        let values = random_values(n, 7);
        let label = format!("{slug}/{n}");
        group.measurement_time(Duration::from_secs(if n > 500_000 { 60 } else { 5 }));
        group.bench_with_input(BenchmarkId::new("fast", &label), &values, |b, v| {
            b.iter(|| problem.score_fast(v))
        });
        group.bench_with_input(BenchmarkId::new("exact", &label), &values, |b, v| {
            b.iter(|| problem.score_exact(v))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_verify);
criterion_main!(benches);
