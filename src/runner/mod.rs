//! The runner: executes an optimizer program on a construction under a budget and a seed.
//!
//! It keeps the best valid construction seen after any stage (by the float64 score), records a
//! [`Trace`], and at the end verifies the best exactly: an improvement over the start is reported
//! only when the exact scores confirm it, and the returned construction is always valid. Given a
//! seed and an evaluation budget the result is the same bits on every run (independent restarts
//! get their budgets up front, so `jobs` does not change the result); a wall-clock budget makes
//! the amount of work depend on the machine. The evidence the optimizer-writing agent reads off a
//! run's trace lives beside it ([`evidence`]).
//!
//! A start over the problem's length limit is accepted as a start only: it is never a result.
//! Only constructions within the limit compete for the best (so a program over such a start
//! begins by bringing it under the limit, e.g. with a `resample` by `pool`); a run that makes
//! none ends in an error, and nothing over the limit is returned.

pub mod evidence;
pub mod trace;
pub mod trace_file;

use crate::cancel::CancelToken;
use crate::error::{MiloError, Result};
use crate::optimize::budget::MAX_SECONDS;
use crate::optimize::{Budget, Exhaustion};
use crate::problems::{Direction, Problem};
use crate::program::{Action, KeepBest, Program, Repeat, Restarts, Step, UntilStall};
use crate::stages::{Stage, StageOutcome};
use crate::tally::Tally;
use crate::threads::map_on_threads;
use num_rational::BigRational;
use std::time::Instant;
pub use trace::{StageRecord, StopReason, Trace, TracePoint};

/// Budget, seed, parallelism and cancellation of a run.
#[derive(Clone, Debug)]
pub struct RunSettings {
    /// Seed from which every stage's seed is derived.
    pub seed: u64,
    /// Wall-clock limit in seconds.
    pub seconds: Option<f64>,
    /// Limit on objective evaluations.
    pub evaluations: Option<u64>,
    /// Threads for independent restarts (1 = sequential).
    pub jobs: usize,
    /// Cancelling it stops the run early (the best so far is still verified and returned).
    pub cancel: CancelToken,
    /// Counts every objective evaluation as it is spent (for a live display).
    pub spent: Tally,
}

/// Hooks for watching a run (a progress bar, a log); every method has an empty default.
pub trait Observer {
    /// A stage begins on a construction of `n` values.
    fn stage_started(&mut self, _path: &str, _kind: &str, _n: usize) {}
    /// A stage ended.
    fn stage_finished(&mut self, _record: &StageRecord) {}
    /// The best score improved; `best` is the new best construction (valid by the problem's
    /// checks, better by the float64 score; the exact verification comes at the run's end).
    fn improved(&mut self, _point: &TracePoint, _best: &[f64]) {}
}

/// An observer that ignores everything.
pub struct Silent;
impl Observer for Silent {}

/// What a run returns.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    /// The best construction: valid, and strictly better than the start by the exact scores
    /// when `improved`, otherwise the start itself (unless `start_over_limit`).
    pub best: Vec<f64>,
    /// Exact score of the start.
    pub start_exact: BigRational,
    /// Exact score of `best`.
    pub best_exact: BigRational,
    /// Whether the exact scores confirm an improvement.
    pub improved: bool,
    /// The run's history.
    pub trace: Trace,
    /// Objective evaluations used.
    pub evaluations: u64,
    /// Wall seconds.
    pub seconds: f64,
    /// Whether the run was cancelled (e.g. Ctrl-C) through its settings' token.
    pub interrupted: bool,
    /// Whether the start was over the problem's length limit: then `best` is the best
    /// construction within the limit the run made, better than the start or not.
    pub start_over_limit: bool,
}

/// Values below this fraction of the largest magnitude are set to zero before the exact
/// verification of a result (2⁻¹⁰⁰ ≈ 7.9e-31: far below any score's resolution).
pub const NEGLIGIBLE: f64 = 7.888609052210118e-31;

/// `values` with every value below [`NEGLIGIBLE`] × the largest magnitude set to zero, when that
/// keeps them valid (otherwise unchanged). An optimizer can leave values like 1e-300 (f = exp(v)
/// with v → −700); they change no score, but exact arithmetic spans their whole exponent range,
/// which can cost minutes and gigabytes.
fn without_negligible_values(problem: &dyn Problem, values: Vec<f64>) -> Vec<f64> {
    let largest = values.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let floor = largest * NEGLIGIBLE;
    if !values.iter().any(|x| *x != 0.0 && x.abs() < floor) {
        return values;
    }
    let flushed: Vec<f64> = values
        .iter()
        .map(|&x| if x.abs() < floor { 0.0 } else { x })
        .collect();
    match problem.check(&flushed) {
        Ok(()) => flushed,
        Err(_) => values,
    }
}

/// Runs `program` on `start` (which must be valid for `problem`).
pub fn run_program(
    problem: &dyn Problem,
    start: &[f64],
    program: &Program,
    settings: &RunSettings,
    observer: &mut dyn Observer,
) -> Result<RunOutcome> {
    problem.check(start).map_err(MiloError::Invalid)?;
    let start_exact = problem.score_exact(start);
    run_program_scored(problem, start, &start_exact, program, settings, observer)
}

/// Runs `program` on `start` whose exact score the caller already knows (`start_exact`, which
/// must be `problem.score_exact(start)`), so the start is not scored exactly again.
pub fn run_program_scored(
    problem: &dyn Problem,
    start: &[f64],
    start_exact: &BigRational,
    program: &Program,
    settings: &RunSettings,
    observer: &mut dyn Observer,
) -> Result<RunOutcome> {
    problem.check(start).map_err(MiloError::Invalid)?;
    let started = Instant::now();
    let mut budget = Budget::unlimited()
        .with_cancel(settings.cancel.clone())
        .with_tally(settings.spent.clone());
    if let Some(s) = settings.seconds {
        // Callers check budgets (see `check_seconds`); NaN or a negative value means no time.
        let limit =
            std::time::Duration::try_from_secs_f64(s.clamp(0.0, MAX_SECONDS)).unwrap_or_default();
        budget = budget.with_time_limit(limit);
    }
    if let Some(e) = settings.evaluations {
        budget = budget.with_max_evaluations(e);
    }
    let mut runner = Runner::new(problem, start, settings.clone(), started, observer);
    runner.run_steps(
        &program.steps,
        "steps",
        start.to_vec(),
        &budget,
        settings.seed,
    );
    runner.trace.stopped = Some(match budget.exhausted() {
        None => StopReason::Converged,
        Some(Exhaustion::Evaluations) => StopReason::Evaluations,
        Some(Exhaustion::Deadline) => StopReason::Deadline,
        Some(Exhaustion::Interrupted) => StopReason::Interrupted,
    });
    let max_len = problem.spec().max_len;
    let start_over_limit = start.len() > max_len;
    if runner.best.len() > max_len {
        return Err(MiloError::Usage(format!(
            "the start holds {} values, over the limit of {max_len} for {}, and the program \
             made no construction within it (begin it with a step that brings the start under \
             the limit, e.g. kind = \"resample\" with method = \"pool\"); nothing is a result",
            start.len(),
            problem.slug()
        )));
    }
    let best = without_negligible_values(problem, runner.best);
    let best_exact = problem.score_exact(&best);
    let improved = strictly_better(problem.spec().direction, &best_exact, start_exact);
    let (best, best_exact) = if improved || start_over_limit {
        (best, best_exact)
    } else {
        (start.to_vec(), start_exact.clone())
    };
    Ok(RunOutcome {
        best,
        start_exact: start_exact.clone(),
        best_exact,
        improved,
        trace: runner.trace,
        evaluations: runner.evaluations,
        seconds: started.elapsed().as_secs_f64(),
        interrupted: settings.cancel.is_cancelled(),
        start_over_limit,
    })
}

fn strictly_better<T: PartialOrd>(direction: Direction, a: &T, b: &T) -> bool {
    direction.better(a, b)
}

/// A seed derived from a parent seed and a child index (SplitMix64 of both).
pub fn derive_seed(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

struct Runner<'a> {
    problem: &'a dyn Problem,
    settings: RunSettings,
    started: Instant,
    observer: &'a mut dyn Observer,
    best: Vec<f64>,
    best_score: f64,
    evaluations: u64,
    trace: Trace,
}

impl<'a> Runner<'a> {
    fn new(
        problem: &'a dyn Problem,
        start: &[f64],
        settings: RunSettings,
        started: Instant,
        observer: &'a mut dyn Observer,
    ) -> Self {
        let mut runner = Runner {
            problem,
            settings,
            started,
            observer,
            best: start.to_vec(),
            best_score: 0.0,
            evaluations: 0,
            trace: Trace::default(),
        };
        runner.best_score = runner.rank(start);
        runner
    }

    fn direction(&self) -> Direction {
        self.problem.spec().direction
    }

    /// Float64 score of a valid construction; the worst possible value for an invalid one.
    fn score(&self, values: &[f64]) -> f64 {
        if values.is_empty() || self.problem.check(values).is_err() {
            return match self.direction() {
                Direction::Minimize => f64::INFINITY,
                Direction::Maximize => f64::NEG_INFINITY,
            };
        }
        self.problem.score_fast(values).value
    }

    /// The score by which `values` competes for the best: its float64 score, or the worst
    /// possible value when it is over the length limit (never a result) or invalid.
    fn rank(&self, values: &[f64]) -> f64 {
        if values.len() > self.problem.spec().max_len {
            return self.score(&[]);
        }
        self.score(values)
    }

    /// Takes `values` as the new best if it is better (and within the length limit).
    fn consider(&mut self, values: &[f64], score: f64) {
        if score.is_finite()
            && values.len() <= self.problem.spec().max_len
            && self.direction().better(&score, &self.best_score)
        {
            self.best = values.to_vec();
            self.best_score = score;
            let point = TracePoint {
                seconds: self.started.elapsed().as_secs_f64(),
                evaluations: self.evaluations,
                score,
                n: Some(values.len()),
            };
            self.observer.improved(&point, values);
            self.trace.points.push(point);
        }
    }

    fn run_steps(
        &mut self,
        steps: &[Step],
        path: &str,
        mut current: Vec<f64>,
        budget: &Budget,
        seed: u64,
    ) -> Vec<f64> {
        let weights = step_weights(steps);
        for (i, step) in steps.iter().enumerate() {
            if budget.cancel.is_cancelled() {
                break;
            }
            let rest: f64 = weights[i..].iter().sum();
            let fraction = if rest > 0.0 { weights[i] / rest } else { 0.0 };
            let child = budget.share(fraction);
            let here = format!("{path}[{i}]");
            current = self.run_step(step, &here, current, &child, derive_seed(seed, i as u64));
            budget.charge(child.used());
        }
        current
    }

    fn run_step(
        &mut self,
        step: &Step,
        path: &str,
        current: Vec<f64>,
        budget: &Budget,
        seed: u64,
    ) -> Vec<f64> {
        let body_path = format!("{path}.body");
        match &step.action {
            Action::Repeat(Repeat { times, body }) => {
                let mut current = current;
                for t in 0..*times {
                    // The deadline and Ctrl-C are checked between passes; a pass costs at
                    // least one evaluation (the runner scores what it made), so a body that
                    // spends none still ends under an evaluation budget.
                    if budget.exhausted().is_some() {
                        break;
                    }
                    let pass = budget.share(1.0 / (times - t) as f64);
                    current = self.run_steps(
                        body,
                        &body_path,
                        current,
                        &pass,
                        derive_seed(seed, t as u64),
                    );
                    budget.charge(pass.used().max(1));
                }
                current
            }
            Action::UntilStall(UntilStall {
                patience,
                min_gain,
                body,
            }) => {
                let mut current = current;
                let mut stalled = 0;
                let mut pass = 0u64;
                let mut last_pass = self.trace.stages.len();
                while stalled < *patience && budget.exhausted().is_none() {
                    let before = self.best_score;
                    last_pass = self.trace.stages.len();
                    let share = budget.share(1.0);
                    current =
                        self.run_steps(body, &body_path, current, &share, derive_seed(seed, pass));
                    budget.charge(share.used().max(1));
                    stalled = if self.direction().gain(self.best_score, before) > *min_gain {
                        0
                    } else {
                        stalled + 1
                    };
                    pass += 1;
                }
                if stalled >= *patience {
                    self.trace.converged_because =
                        Some(self.stall_reason(path, *patience, *min_gain, last_pass));
                }
                current
            }
            Action::Restarts(Restarts { count, body }) => {
                self.restarts(*count, body, &body_path, current, budget, seed)
            }
            Action::KeepBest(KeepBest { body }) => {
                let before = self.rank(&current);
                let tried = self.run_steps(body, &body_path, current.clone(), budget, seed);
                if self.direction().better(&self.rank(&tried), &before) {
                    tried
                } else {
                    current
                }
            }
            action => {
                let stage = action.stage().expect("every other action is a stage");
                self.run_stage(stage, path, current, budget, seed)
            }
        }
    }

    /// Why the `until_stall` loop at `path` ended by its own test: its passes without gain, and
    /// the notes of the stages of its last pass (from `trace.stages[last_pass..]`).
    fn stall_reason(&self, path: &str, patience: usize, min_gain: f64, last_pass: usize) -> String {
        let passes = if patience == 1 { "pass" } else { "passes" };
        let mut reason = format!(
            "{path} (until_stall): {patience} {passes} in a row gained at most {min_gain:e}"
        );
        for stage in &self.trace.stages[last_pass..] {
            if let Some(note) = &stage.note {
                reason.push_str(&format!("; {} {}: {note}", stage.kind, stage.path));
            }
        }
        reason
    }

    /// Independent runs of `body` from the same start with derived seeds; the best becomes current.
    /// Budgets are split up front so that the result does not depend on `jobs`.
    fn restarts(
        &mut self,
        count: usize,
        body: &[Step],
        path: &str,
        current: Vec<f64>,
        budget: &Budget,
        seed: u64,
    ) -> Vec<f64> {
        // Under an evaluation budget each restart gets at least one evaluation and costs at
        // least one (the runner scores what it made): no more restarts run than evaluations
        // remain, so nested blocks of evaluation-free steps end too.
        let count = match budget.remaining_evaluations() {
            Some(left) => count.min(usize::try_from(left).unwrap_or(usize::MAX)),
            None => count,
        };
        if count == 0 {
            return current;
        }
        let per_run_evaluations = budget.remaining_evaluations().map(|r| r / count as u64);
        let deadline = budget.deadline;
        let tally = budget.tally.clone();
        let problem = self.problem;
        let settings = self.settings.clone();
        let started = self.started;
        let run_one = |r: usize| {
            let mut sub_budget = Budget::unlimited()
                .with_cancel(settings.cancel.clone())
                .with_tally(tally.clone());
            if let Some(d) = deadline {
                sub_budget = sub_budget.with_deadline(d);
            }
            if let Some(e) = per_run_evaluations {
                sub_budget = sub_budget.with_max_evaluations(e);
            }
            let mut silent = Silent;
            let mut sub = Runner::new(problem, &current, settings.clone(), started, &mut silent);
            let here = format!("{path}<restart {r}>");
            let end = sub.run_steps(
                body,
                &here,
                current.clone(),
                &sub_budget,
                derive_seed(seed, r as u64),
            );
            (
                sub.best,
                sub.best_score,
                end,
                sub.evaluations,
                sub.trace.stages,
            )
        };
        let runs: Vec<usize> = (0..count).collect();
        let results = map_on_threads(self.settings.jobs, &runs, |&r| run_one(r));
        let mut chosen: Option<(Vec<f64>, f64)> = None;
        for (best, best_score, _end, evaluations, stages) in results {
            self.evaluations += evaluations;
            budget.charge(evaluations.max(1));
            self.trace.stages.extend(stages);
            self.consider(&best, best_score);
            let replace = match &chosen {
                None => true,
                Some((_, s)) => self.direction().better(&best_score, s),
            };
            if replace {
                chosen = Some((best, best_score));
            }
        }
        chosen.map(|(v, _)| v).unwrap_or(current)
    }

    fn run_stage(
        &mut self,
        stage: &dyn Stage,
        path: &str,
        current: Vec<f64>,
        budget: &Budget,
        seed: u64,
    ) -> Vec<f64> {
        let kind = stage.kind();
        self.observer.stage_started(path, kind, current.len());
        let score_before = self.score(&current);
        let (wall, cpu) = (Instant::now(), trace::cpu_seconds());
        let StageOutcome {
            mut values,
            beta,
            note,
        } = stage.run(self.problem, &current, budget, seed);
        let repaired = self.problem.repair(&mut values);
        if self.problem.check(&values).is_err() {
            // A stage that cannot produce a valid construction leaves its input unchanged.
            values = current;
        }
        self.evaluations += budget.used();
        let score_after = self.score(&values);
        let gain = self.direction().gain(score_after, score_before);
        let record = StageRecord {
            path: path.to_string(),
            kind: kind.to_string(),
            score_before,
            score_after,
            gain,
            evaluations: budget.used(),
            seconds: wall.elapsed().as_secs_f64(),
            cpu_seconds: trace::cpu_seconds() - cpu,
            beta,
            n: values.len(),
            active_set: trace::active_set(&self.problem.lags(&values), 1e-9),
            dead_cells: values.iter().filter(|&&x| x == 0.0).count(),
            repaired,
            note,
        };
        self.observer.stage_finished(&record);
        self.trace.stages.push(record);
        self.consider(&values, score_after);
        values
    }
}

/// Budget weights of a step list: a stated share, or an even split of the unstated rest among
/// the optimizing steps; transforming steps (resample, perturb, …) need no budget.
fn step_weights(steps: &[Step]) -> Vec<f64> {
    let stated: f64 = steps.iter().filter_map(|s| s.share).sum();
    let unstated = steps
        .iter()
        .filter(|s| s.share.is_none() && s.spends_evaluations())
        .count();
    let each = if unstated > 0 {
        (1.0 - stated).max(0.0) / unstated as f64
    } else {
        0.0
    };
    steps
        .iter()
        .map(|s| match s.share {
            Some(share) => share,
            None if s.spends_evaluations() => each,
            None => 0.0,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact::rational::to_f64;
    use crate::problems::by_slug;

    #[test]
    fn negligible_values_are_flushed_without_changing_the_score_measurably() {
        let problem = by_slug("second-autocorrelation-inequality").unwrap();
        let values = vec![1.0, 1e-300, 0.5, 2e-40, 0.75, 0.0, 1e-20];
        let flushed = without_negligible_values(problem.as_ref(), values.clone());
        assert_eq!(flushed, vec![1.0, 0.0, 0.5, 0.0, 0.75, 0.0, 1e-20]);
        let (before, after) = (problem.score_exact(&values), problem.score_exact(&flushed));
        let relative = to_f64(&((&before - &after) / &before)).abs();
        assert!(relative < 1e-30, "{relative}");
        // Nothing negligible: the same vector back.
        let plain = vec![1.0, 0.5, 0.25];
        assert_eq!(
            without_negligible_values(problem.as_ref(), plain.clone()),
            plain
        );
    }

    #[test]
    fn a_repeated_upsample_stops_at_the_problems_length_limit() {
        let problem = by_slug("third-autocorrelation-inequality").unwrap();
        let max_len = problem.spec().max_len;
        let program = Program::parse(
            "name = \"grow\"\n\n[[steps]]\nkind = \"repeat\"\ntimes = 12\n\n\
             [[steps.body]]\nkind = \"resample\"\nmethod = \"block_repeat\"\nfactor = 2\n",
            std::path::Path::new("grow.toml"),
        )
        .unwrap();
        let start: Vec<f64> = (0..80).map(|i| 1.0 + (i as f64 * 0.1).sin()).collect();
        let settings = RunSettings {
            seed: 1,
            seconds: None,
            evaluations: Some(100),
            jobs: 1,
            cancel: CancelToken::new(),
            spent: Tally::default(),
        };
        let outcome =
            run_program(problem.as_ref(), &start, &program, &settings, &mut Silent).unwrap();
        let lengths: Vec<usize> = outcome.trace.stages.iter().map(|s| s.n).collect();
        assert_eq!(lengths.len(), 12);
        assert!(lengths.iter().all(|&n| n <= max_len), "{lengths:?}");
        // 80 · 2^10 = 81,920 fits under 100,000; the next doubling would not.
        assert_eq!(*lengths.iter().max().unwrap(), 80 << 10);
    }

    #[test]
    fn blocks_of_evaluation_free_steps_end_under_an_evaluation_budget() {
        let problem = by_slug("third-autocorrelation-inequality").unwrap();
        let perturb = "kind = \"perturb\"\nfraction = 0.1\nscale = 0.01\n";
        let nested = |block: &str, key: &str, count: u64| {
            format!(
                "name = \"loop\"\n\n[[steps]]\nkind = \"{block}\"\n{key} = {count}\n\n\
                 [[steps.body]]\nkind = \"{block}\"\n{key} = {count}\n\n\
                 [[steps.body.body]]\n{perturb}"
            )
        };
        for text in [
            nested("repeat", "times", 10_000),
            nested("restarts", "count", 256),
            format!(
                "name = \"stall\"\n\n[[steps]]\nkind = \"until_stall\"\npatience = 1000\n\
                 min_gain = 0.0\n\n[[steps.body]]\n{perturb}"
            ),
        ] {
            let program = Program::parse(&text, std::path::Path::new("loop.toml")).unwrap();
            let start: Vec<f64> = (0..40).map(|i| 1.0 + (i as f64 * 0.3).sin()).collect();
            let outcome = run_program(
                problem.as_ref(),
                &start,
                &program,
                &settings(50),
                &mut Silent,
            )
            .unwrap();
            // Each pass of a block costs at least one of the 50 evaluations.
            let stages = outcome.trace.stages.len();
            assert!(stages <= 50, "{stages} stage runs: {text}");
        }
    }

    fn settings(evaluations: u64) -> RunSettings {
        RunSettings {
            seed: 3,
            seconds: None,
            evaluations: Some(evaluations),
            jobs: 1,
            cancel: CancelToken::new(),
            spent: Tally::default(),
        }
    }

    /// Basin hops on the toy problem until `patience` passes gain at most `min_gain`.
    fn hops(patience: usize, min_gain: f64) -> Program {
        let text = format!(
            "name = \"hops\"\n\n[[steps]]\nkind = \"until_stall\"\npatience = {patience}\n\
             min_gain = {min_gain:e}\n\n[[steps.body]]\nkind = \"keep_best\"\n\n\
             [[steps.body.body]]\nkind = \"perturb\"\nfraction = 0.2\nscale = 0.05\n\n\
             [[steps.body.body]]\nkind = \"lbfgs\"\nparameterisation = \"square\"\n\
             betas = [1e3, 1e5]\nhistory = 10\niterations = 30\n"
        );
        Program::parse(&text, std::path::Path::new("hops.toml")).unwrap()
    }

    fn toy_start() -> Vec<f64> {
        (0..40)
            .map(|i| 1.0 + 0.5 * (i as f64 * 0.37).sin())
            .collect()
    }

    #[test]
    fn a_run_stops_at_its_budget_or_its_convergence_test_and_says_which() {
        let toy = by_slug("toy-autoconvolution-peak").unwrap();
        let run = |program: &Program, settings: &RunSettings| {
            run_program(toy.as_ref(), &toy_start(), program, settings, &mut Silent).unwrap()
        };
        // A huge min_gain: no pass counts, so the loop stops after `patience` passes, and says so.
        let converged = run(&hops(2, 1.0), &settings(1_000_000));
        assert_eq!(converged.trace.stopped, Some(StopReason::Converged));
        assert!(converged.evaluations < 1_000_000);
        assert_eq!(
            converged.trace.converged_because.as_deref(),
            Some("steps[0] (until_stall): 2 passes in a row gained at most 1e0")
        );
        // Never converges (patience beyond reach): only the budget stops it, and all of it is used.
        let spent = run(
            &hops(crate::program::step::MAX_PATIENCE as usize, 0.0),
            &settings(2_000),
        );
        assert_eq!(spent.trace.stopped, Some(StopReason::Evaluations));
        assert_eq!(spent.evaluations, 2_000);
        assert_eq!(spent.trace.converged_because, None);
        let cancel = CancelToken::new();
        cancel.cancel();
        let stopped = run(
            &hops(3, 0.0),
            &RunSettings {
                cancel,
                ..settings(2_000)
            },
        );
        assert_eq!(stopped.trace.stopped, Some(StopReason::Interrupted));
    }

    #[test]
    fn min_gain_ends_the_loop_sooner_than_any_gain() {
        let toy = by_slug("toy-autoconvolution-peak").unwrap();
        let passes = |min_gain: f64| {
            let outcome = run_program(
                toy.as_ref(),
                &toy_start(),
                &hops(2, min_gain),
                &settings(1_000_000),
                &mut Silent,
            )
            .unwrap();
            assert_eq!(outcome.trace.stopped, Some(StopReason::Converged));
            outcome
                .trace
                .stages
                .iter()
                .filter(|s| s.kind == "lbfgs")
                .count()
        };
        // With min_gain = 1 no pass counts as a gain: exactly `patience` passes.
        assert_eq!(passes(1.0), 2);
        assert!(passes(0.0) >= 2);
    }

    #[test]
    fn a_run_given_its_starts_exact_score_returns_what_a_run_scoring_it_does() {
        let toy = by_slug("toy-autoconvolution-peak").unwrap();
        let (start, program) = (toy_start(), hops(3, 0.0));
        let scored = run_program(toy.as_ref(), &start, &program, &settings(600), &mut Silent);
        let start_exact = toy.score_exact(&start);
        let given = run_program_scored(
            toy.as_ref(),
            &start,
            &start_exact,
            &program,
            &settings(600),
            &mut Silent,
        );
        let (scored, given) = (scored.unwrap(), given.unwrap());
        assert!(given.improved);
        assert_eq!(given.start_exact, start_exact);
        assert_eq!(
            (&given.best, &given.best_exact, given.evaluations),
            (&scored.best, &scored.best_exact, scored.evaluations)
        );
    }

    #[test]
    fn a_start_over_the_length_limit_is_never_a_result() {
        let toy = by_slug("toy-autoconvolution-peak").unwrap();
        let limit = toy.spec().max_len;
        // A good start over the limit: block repeat of a polished one keeps its score.
        let start = crate::stages::resample::block_repeat(&toy_start(), limit / 40 + 1);
        assert!(start.len() > limit);
        let program = |text: &str| Program::parse(text, std::path::Path::new("p.toml")).unwrap();
        let pooled = program(
            "name = \"p\"\n[[steps]]\nkind = \"resample\"\nmethod = \"pool\"\nfactor = 2\n\
             noise = 0.0\n[[steps]]\nkind = \"lbfgs\"\nparameterisation = \"square\"\n\
             betas = [1e3]\niterations = 5\n",
        );
        let outcome =
            run_program(toy.as_ref(), &start, &pooled, &settings(50), &mut Silent).unwrap();
        assert!(outcome.start_over_limit);
        assert!(outcome.best.len() <= limit);
        assert_eq!(outcome.best_exact, toy.score_exact(&outcome.best));
        let stays = program(
            "name = \"p\"\n[[steps]]\nkind = \"lbfgs\"\nparameterisation = \"square\"\n\
             betas = [1e3]\niterations = 5\n",
        );
        let err = run_program(toy.as_ref(), &start, &stays, &settings(50), &mut Silent)
            .unwrap_err()
            .to_string();
        assert!(err.contains("over the limit of 1000"), "{err}");
    }
}
