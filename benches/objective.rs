//! Criterion benches of the smooth objectives' value and gradient on seeded random inputs
//! (log-sum-exp, β = 1e6):
//!
//! - the first problem at n = 600, 3,000 and 2,000,000, the second at 2,000,000;
//! - the four arena problems at n = 30,000, 100,000 and 400,000, beside one forward real FFT of
//!   the workspace's size `N = fft_len(2n − 1)` (realfft, planned once).
//!
//! After criterion (under `cargo bench` only), a summary times the same calls with
//! `std::time::Instant` (medians of 7 interleaved rounds) and prints a markdown table of
//! `t(value_and_gradient) / (k × t(FFT))`, `k` the real FFTs one call performs
//! ([`FFTS_PER_VALUE_AND_GRADIENT`], asserted by the objectives' unit tests).

use criterion::{BatchSize, BenchmarkId, Criterion, SamplingMode};
use milo::fast::fft_len;
use milo::objective::{Objective, SmoothMax, FFTS_PER_VALUE_AND_GRADIENT};
use milo::problems::by_slug;
use rand::{Rng, SeedableRng};
use realfft::num_complex::Complex;
use realfft::{RealFftPlanner, RealToComplex};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The four arena problems of the speed table.
const PROBLEMS: [&str; 4] = [
    "first-autocorrelation-inequality",
    "second-autocorrelation-inequality",
    "third-autocorrelation-inequality",
    "erdos-min-overlap",
];

/// The sizes of the speed table.
const SIZES: [usize; 3] = [30_000, 100_000, 400_000];

fn random_values(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.gen::<f64>()).collect()
}

fn objective(slug: &str, n: usize) -> Box<dyn Objective> {
    by_slug(slug)
        .unwrap()
        .objective(n, SmoothMax::LogSumExp { beta: 1e6 })
}

/// One forward real FFT of size `N`, planned once, with its buffers.
struct ForwardFft {
    plan: Arc<dyn RealToComplex<f64>>,
    /// The input to copy in before each transform (realfft uses its input as scratch).
    input: Vec<f64>,
    buffer: Vec<f64>,
    spectrum: Vec<Complex<f64>>,
    scratch: Vec<Complex<f64>>,
}

impl ForwardFft {
    fn new(size: usize) -> Self {
        let plan = RealFftPlanner::<f64>::new().plan_fft_forward(size);
        ForwardFft {
            input: random_values(size, 11),
            buffer: vec![0.0; size],
            spectrum: plan.make_output_vec(),
            scratch: plan.make_scratch_vec(),
            plan,
        }
    }

    fn run(&mut self, buffer: &mut [f64]) {
        self.plan
            .process_with_scratch(buffer, &mut self.spectrum, &mut self.scratch)
            .unwrap();
    }
}

fn bench_objective(c: &mut Criterion) {
    let cases = [
        ("first-autocorrelation-inequality", 600),
        ("first-autocorrelation-inequality", 3_000),
        ("first-autocorrelation-inequality", 2_000_000),
        ("second-autocorrelation-inequality", 2_000_000),
    ];
    let mut group = c.benchmark_group("value_and_gradient");
    group.warm_up_time(Duration::from_secs(1));
    for (slug, n) in cases {
        let mut objective = objective(slug, n);
        let values = random_values(n, 7);
        let mut grad = vec![0.0; n];
        if n > 500_000 {
            group.sample_size(10);
            group.sampling_mode(SamplingMode::Flat);
        } else {
            group.sample_size(50);
            group.sampling_mode(SamplingMode::Auto);
        }
        group.measurement_time(Duration::from_secs(3));
        group.bench_with_input(BenchmarkId::new(slug, n), &values, |b, v| {
            b.iter(|| objective.value_and_gradient(v, &mut grad))
        });
    }
    group.finish();
}

fn bench_speed_table(c: &mut Criterion) {
    let mut group = c.benchmark_group("speed");
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    for n in SIZES {
        for slug in PROBLEMS {
            let mut objective = objective(slug, n);
            let values = random_values(n, 7);
            let mut grad = vec![0.0; n];
            group.bench_with_input(BenchmarkId::new(slug, n), &values, |b, v| {
                b.iter(|| objective.value_and_gradient(v, &mut grad))
            });
        }
        let size = fft_len(2 * n - 1);
        let mut fft = ForwardFft::new(size);
        let input = fft.input.clone();
        group.bench_function(
            BenchmarkId::new(format!("real-fft-forward-N{size}"), n),
            |b| b.iter_batched_ref(|| input.clone(), |buf| fft.run(buf), BatchSize::LargeInput),
        );
    }
    group.finish();
}

/// Mean time of one call over a batch of `reps` calls of `once`, the measured time of one call
/// (which may prepare its input outside the timed region).
fn batch(reps: u32, once: &mut dyn FnMut() -> Duration) -> Duration {
    (0..reps).map(|_| once()).sum::<Duration>() / reps
}

/// Calls of `once` in a batch of about 50 ms.
fn calibrate(once: &mut dyn FnMut() -> Duration) -> u32 {
    once(); // warm-up
    let single = once().max(Duration::from_nanos(1)).as_secs_f64();
    ((0.05 / single).ceil() as u32).clamp(1, 10_000)
}

/// The time of one call of `run`.
fn timed(run: impl FnOnce()) -> Duration {
    let start = Instant::now();
    run();
    start.elapsed()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The speed table: per (problem, n), `t(value_and_gradient)`, `k`, `t(FFT)` and the ratio.
///
/// The machine may be shared, so the FFT and the four objectives are measured in 7 interleaved
/// rounds (one batch of each per round); times are medians over the rounds, and the ratio is the
/// median over rounds of the same-round ratio.
fn summary() {
    const ROUNDS: usize = 7;
    let k = FFTS_PER_VALUE_AND_GRADIENT;
    println!();
    println!(
        "Speed (log-sum-exp, β = 1e6; medians over {ROUNDS} interleaved rounds of ~50 ms batches; \
         FFT = one forward real FFT of size N)"
    );
    println!();
    println!("| problem | n | N | t(value_and_gradient) | k | t(FFT) | t / (k·t(FFT)) |");
    println!("|---|---|---|---|---|---|---|");
    for n in SIZES {
        let size = fft_len(2 * n - 1);
        let mut fft = ForwardFft::new(size);
        let mut buffer = std::mem::take(&mut fft.buffer);
        let input = fft.input.clone();
        let mut run_fft = || {
            buffer.copy_from_slice(&input);
            timed(|| fft.run(&mut buffer))
        };
        let values = random_values(n, 7);
        let mut objectives: Vec<(Box<dyn Objective>, Vec<f64>)> = PROBLEMS
            .iter()
            .map(|slug| (objective(slug, n), vec![0.0; n]))
            .collect();
        let mut runs: Vec<Box<dyn FnMut() -> Duration + '_>> = vec![Box::new(&mut run_fft)];
        for (objective, grad) in objectives.iter_mut() {
            let values = &values;
            runs.push(Box::new(move || {
                timed(|| {
                    std::hint::black_box(objective.value_and_gradient(values, grad));
                })
            }));
        }
        let reps: Vec<u32> = runs.iter_mut().map(|run| calibrate(run.as_mut())).collect();
        // times[i][round], i = 0 the FFT, then the problems.
        let mut times = vec![Vec::new(); runs.len()];
        for _ in 0..ROUNDS {
            for (i, run) in runs.iter_mut().enumerate() {
                times[i].push(batch(reps[i], run.as_mut()).as_secs_f64());
            }
        }
        let t_fft = median(times[0].clone());
        for (i, slug) in PROBLEMS.iter().enumerate() {
            let t = median(times[i + 1].clone());
            let ratio = median(
                times[i + 1]
                    .iter()
                    .zip(&times[0])
                    .map(|(t, f)| t / (k as f64 * f))
                    .collect(),
            );
            println!(
                "| {slug} | {n} | {size} | {:.3} ms | {k} | {:.3} ms | {ratio:.2} |",
                t * 1e3,
                t_fft * 1e3
            );
        }
    }
}

criterion::criterion_group!(benches, bench_objective, bench_speed_table);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    // Only under `cargo bench` (criterion's `--bench`), not when `cargo test` runs the target nor
    // under `--profile-time`.
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--profile-time") {
        summary();
    }
}
