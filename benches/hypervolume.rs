//! Criterion benches of the exact 3-D hypervolume and of one point's exclusive contribution on
//! seeded random fronts of n = 10, 100 and 1,000 mutually non-dominated points.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use milo::search::hypervolume::{contribution, hypervolume, Fitness};
use rand::{Rng, SeedableRng};

/// n points on the surface quality² + (1 − cost)² + (1 − latency)² = 1 (cost, latency in [0, 1]):
/// a front where no point dominates another, the worst case for the sweep.
fn sphere_front(n: usize, seed: u64) -> Vec<Fitness> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let (a, b) = (rng.gen::<f64>(), rng.gen::<f64>());
            let (u, v) = (
                a * std::f64::consts::FRAC_PI_2,
                b * std::f64::consts::FRAC_PI_2,
            );
            Fitness {
                quality: u.sin() * v.cos(),
                cost: 1.0 - u.sin() * v.sin(),
                latency: 1.0 - u.cos(),
            }
        })
        .collect()
}

fn bench_hypervolume(c: &mut Criterion) {
    let reference = Fitness {
        quality: 0.0,
        cost: 2.0,
        latency: 2.0,
    };
    let mut group = c.benchmark_group("hypervolume");
    for n in [10, 100, 1000] {
        let front = sphere_front(n, 11);
        group.bench_with_input(BenchmarkId::new("volume", n), &front, |b, f| {
            b.iter(|| hypervolume(f, reference))
        });
        let child = sphere_front(1, 12)[0];
        group.bench_with_input(BenchmarkId::new("contribution", n), &front, |b, f| {
            b.iter(|| contribution(f, child, reference))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_hypervolume);
criterion_main!(benches);
