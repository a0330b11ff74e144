//! From runs to conclusions: the mean and 95% interval per method, the null band (how far apart
//! runs identical but for the seed land), the verdict per pair of methods, and the ladder.
//!
//! A difference between two methods counts only when it is larger than both methods' null bands
//! (and than the problem's minimum improvement, the arena's threshold) in the first batch *and*,
//! with the same sign, in the independent re-run with fresh seeds.

use super::results::{
    Batch, BenchResults, Interval, LadderRung, MethodSummary, PairVerdict, RunSummary,
};
use crate::problems::Direction;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Mean and 95% Student-t interval of `sample` (the interval is the mean when n < 2).
pub fn interval(sample: &[f64]) -> Interval {
    let n = sample.len();
    let mean = sample.iter().sum::<f64>() / n.max(1) as f64;
    if n < 2 {
        return Interval {
            n,
            mean,
            low: mean,
            high: mean,
        };
    }
    let variance = sample.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
        .expect("n ≥ 2 gives positive degrees of freedom")
        .inverse_cdf(0.975);
    let half = t * (variance / n as f64).sqrt();
    Interval {
        n,
        mean,
        low: mean - half,
        high: mean + half,
    }
}

/// The spread (max − min) of a sample: the null band of identical-configuration runs.
pub fn spread(sample: &[f64]) -> f64 {
    let max = sample.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = sample.iter().copied().fold(f64::INFINITY, f64::min);
    if sample.is_empty() {
        0.0
    } else {
        max - min
    }
}

fn select<'a>(
    runs: &'a [RunSummary],
    method: &'a str,
    batch: Batch,
) -> impl Iterator<Item = &'a RunSummary> + 'a {
    runs.iter()
        .filter(move |r| r.method == method && r.batch == batch)
}

fn nonempty(interval: Interval) -> Option<Interval> {
    (interval.n > 0).then_some(interval)
}

/// One method's summary over its runs.
pub fn summarise_method(runs: &[RunSummary], method: &str) -> MethodSummary {
    let bests = |batch| -> Vec<f64> { select(runs, method, batch).map(|r| r.best).collect() };
    let (first, rerun) = (bests(Batch::First), bests(Batch::Rerun));
    let mine = || runs.iter().filter(|r| r.method == method);
    let validation_best: Vec<f64> = mine().filter_map(|r| r.validation_best).collect();
    let validation_quality: Vec<f64> = mine().filter_map(|r| r.validation_quality).collect();
    let quality: Vec<f64> = select(runs, method, Batch::First)
        .map(|r| r.quality)
        .collect();
    MethodSummary {
        method: method.to_string(),
        best: interval(&first),
        quality: interval(&quality),
        rerun_best: nonempty(interval(&rerun)),
        validation_best: nonempty(interval(&validation_best)),
        validation_quality: nonempty(interval(&validation_quality)),
        null_band: spread(&first),
        rerun_null_band: (!rerun.is_empty()).then(|| spread(&rerun)),
    }
}

/// The verdict on methods `a` and `b`; a difference of at most `threshold` (the problem's
/// minimum improvement) never counts, whatever the bands.
pub fn verdict(
    direction: Direction,
    threshold: f64,
    a: &MethodSummary,
    b: &MethodSummary,
) -> PairVerdict {
    let first = direction.gain(a.best.mean, b.best.mean);
    let band = a.null_band.max(b.null_band).max(threshold);
    let rerun = a
        .rerun_best
        .zip(b.rerun_best)
        .map(|(x, y)| direction.gain(x.mean, y.mean));
    let rerun_band = a
        .rerun_null_band
        .zip(b.rerun_null_band)
        .map(|(x, y)| x.max(y).max(threshold));
    let winner = if first > 0.0 { &a.method } else { &b.method };
    let verdict = if first.abs() <= band {
        "within the null band".to_string()
    } else {
        match rerun.zip(rerun_band) {
            Some((again, again_band))
                if again.signum() == first.signum() && again.abs() > again_band =>
            {
                format!("{winner} better")
            }
            Some(_) => "not confirmed on the re-run".to_string(),
            None => format!("{winner} better in one batch (not re-run)"),
        }
    };
    PairVerdict {
        a: a.method.clone(),
        b: b.method.clone(),
        advantage: first,
        null_band: band,
        rerun_advantage: rerun,
        rerun_null_band: rerun_band,
        verdict,
    }
}

/// The ladder: `known` values and each method's mean best, best first in `direction`.
pub fn ladder(
    direction: Direction,
    known: &[(String, f64)],
    methods: &[MethodSummary],
) -> Vec<LadderRung> {
    let mut rungs: Vec<LadderRung> = known
        .iter()
        .map(|(label, value)| LadderRung {
            label: label.clone(),
            method: false,
            value: *value,
        })
        .chain(methods.iter().map(|m| LadderRung {
            label: format!("{} (mean best)", m.method),
            method: true,
            value: m.best.mean,
        }))
        .collect();
    rungs.sort_by(|x, y| direction.best_first(&x.value, &y.value));
    rungs
}

/// Everything the benchmark concludes from its runs.
pub struct Context<'a> {
    /// The problem's slug.
    pub problem: &'a str,
    /// Its direction.
    pub direction: Direction,
    /// Its minimum improvement (the arena's threshold): smaller differences never count.
    pub min_improvement: f64,
    /// The suite file.
    pub suite: String,
    /// Each run's CPU budget.
    pub cpu_seconds: f64,
    /// The arena's #1, if known.
    pub arena_first: Option<f64>,
    /// Known values for the ladder.
    pub known: Vec<(String, f64)>,
    /// The methods, in order.
    pub methods: &'a [String],
}

/// The results of a benchmark from its finished runs.
pub fn analyse(context: &Context, runs: Vec<RunSummary>) -> BenchResults {
    let methods: Vec<MethodSummary> = context
        .methods
        .iter()
        .map(|m| summarise_method(&runs, m))
        .collect();
    let mut verdicts = Vec::new();
    for (i, a) in methods.iter().enumerate() {
        for b in &methods[i + 1..] {
            verdicts.push(verdict(context.direction, context.min_improvement, a, b));
        }
    }
    BenchResults {
        problem: context.problem.to_string(),
        direction: match context.direction {
            Direction::Minimize => "minimize".into(),
            Direction::Maximize => "maximize".into(),
        },
        suite: context.suite.clone(),
        cpu_seconds: context.cpu_seconds,
        arena_first: context.arena_first,
        ladder: ladder(context.direction, &context.known, &methods),
        methods,
        runs,
        verdicts,
        transfers: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_matches_the_t_table_and_holds_the_mean() {
        // n = 3: t(0.975, 2) = 4.302653 (standard tables); sample sd of {1, 2, 3} is 1.
        let i = interval(&[1.0, 2.0, 3.0]);
        assert_eq!(i.mean, 2.0);
        let half = 4.302653 / 3f64.sqrt();
        assert!((i.high - 2.0 - half).abs() < 1e-5, "{i:?}");
        assert!((2.0 - i.low - half).abs() < 1e-5, "{i:?}");
        let single = interval(&[5.0]);
        assert_eq!((single.low, single.high), (5.0, 5.0));
    }

    fn method(name: &str, first: f64, band: f64, rerun: Option<(f64, f64)>) -> MethodSummary {
        let at = |mean| Interval {
            n: 3,
            mean,
            low: mean,
            high: mean,
        };
        MethodSummary {
            method: name.into(),
            best: at(first),
            quality: at(0.0),
            rerun_best: rerun.map(|r| at(r.0)),
            validation_best: None,
            validation_quality: None,
            null_band: band,
            rerun_null_band: rerun.map(|r| r.1),
        }
    }

    #[test]
    fn a_difference_counts_only_beyond_the_null_band_and_on_the_re_run() {
        let min = Direction::Minimize;
        let a = method("a", 1.0, 0.1, Some((1.0, 0.1)));
        let b = method("b", 1.5, 0.1, Some((1.4, 0.1)));
        assert_eq!(verdict(min, 0.0, &a, &b).verdict, "a better");
        assert_eq!(verdict(min, 0.0, &b, &a).verdict, "a better");
        assert!(verdict(min, 0.0, &a, &b).advantage > 0.0);
        let wide = method("b", 1.05, 0.2, Some((1.4, 0.1)));
        assert_eq!(verdict(min, 0.0, &a, &wide).verdict, "within the null band");
        let flips = method("b", 1.5, 0.1, Some((0.8, 0.1)));
        assert_eq!(
            verdict(min, 0.0, &a, &flips).verdict,
            "not confirmed on the re-run"
        );
        let max = Direction::Maximize;
        assert_eq!(verdict(max, 0.0, &a, &b).verdict, "b better");
        // Seeds that all agree (null bands 0) and a difference under the problem's threshold.
        let still = method("s", 1.0, 0.0, Some((1.0, 0.0)));
        let hair = method("h", 1.0 + 2.5e-12, 0.0, Some((1.0 + 2.5e-12, 0.0)));
        assert_eq!(verdict(min, 0.0, &still, &hair).verdict, "s better");
        assert_eq!(
            verdict(min, 1e-8, &still, &hair).verdict,
            "within the null band"
        );
    }

    #[test]
    fn the_ladder_is_sorted_best_first() {
        let known = vec![("x".to_string(), 2.0), ("y".to_string(), 0.5)];
        let methods = [method("m", 1.0, 0.0, None)];
        let rungs = ladder(Direction::Minimize, &known, &methods);
        let values: Vec<f64> = rungs.iter().map(|r| r.value).collect();
        assert_eq!(values, vec![0.5, 1.0, 2.0]);
        assert!(rungs[1].method);
    }
}
