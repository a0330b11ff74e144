//! `milo._milo`: the Rust side of the Python module `milo` (see `python/milo/__init__.py`, which
//! turns arrays into contiguous float64 and these dicts into dataclasses).
//!
//! Every function takes a problem slug (or its first word) and 1-D contiguous float64 arrays,
//! borrowed without a copy. Errors are the classes of `milo._errors`, one per kind of bad input;
//! a Rust panic is caught here and raised as `milo.InternalError`, never carried across the
//! boundary.

use milo::cancel::CancelToken;
use milo::error::MiloError;
use milo::exact::rational::{decimal_of_f64, decimal_string, parse_decimal, to_f64, SCORE_DIGITS};
use milo::optimize::budget::check_run_limits;
use milo::problems::{all, by_slug, Direction, Problem};
use milo::program::Program;
use milo::runner::{run_program, RunOutcome, RunSettings, Silent};
use milo::tally::Tally;
use milo::verify::{compare as compare_scores, verify as verify_values, Comparison, Mode, Options};
use num_rational::BigRational;
use numpy::{IntoPyArray, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, OnceLock};
use std::time::Duration;

/// How often a running `optimize` looks for a signal (Ctrl-C) while the GIL is released.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// The Python exception classes raised here, by their names in `milo._errors`.
#[derive(Clone, Copy)]
enum Raise {
    /// The values break the problem's rules (`ValueError` too).
    InvalidConstruction,
    /// No problem has that name (`ValueError` too).
    UnknownProblem,
    /// A program that does not parse, check or load (`ValueError` too).
    ProgramError,
    /// A budget, seed or option out of its range (`ValueError` too).
    InvalidArgument,
    /// A bug in milo: a Rust panic caught at the boundary (`RuntimeError` too).
    InternalError,
    /// Anything else milo reports (a file milo could not write, …).
    MiloError,
}

impl Raise {
    fn name(self) -> &'static str {
        match self {
            Raise::InvalidConstruction => "InvalidConstruction",
            Raise::UnknownProblem => "UnknownProblem",
            Raise::ProgramError => "ProgramError",
            Raise::InvalidArgument => "InvalidArgument",
            Raise::InternalError => "InternalError",
            Raise::MiloError => "MiloError",
        }
    }

    /// The exception of this class with `message`.
    fn err(self, py: Python<'_>, message: impl Into<String>) -> PyErr {
        let class = py
            .import("milo._errors")
            .and_then(|module| module.getattr(self.name()))
            .and_then(|class| class.cast_into::<PyType>().map_err(PyErr::from));
        match class {
            Ok(class) => PyErr::from_type(class, message.into()),
            Err(missing) => missing,
        }
    }
}

/// A milo error as the Python exception of its kind; `usage` is the class a usage error gets.
fn raise(py: Python<'_>, error: MiloError, usage: Raise) -> PyErr {
    let class = match &error {
        MiloError::Invalid(_) => Raise::InvalidConstruction,
        MiloError::Usage(_) => usage,
        _ => Raise::MiloError,
    };
    let message = match error {
        // The rule and the value, without the CLI's "invalid construction: " prefix.
        MiloError::Invalid(violation) => violation.to_string(),
        other => other.to_string(),
    };
    class.err(py, message)
}

/// Runs `body`, turning a panic into `milo.InternalError` naming the panic's message.
fn guarded<T>(py: Python<'_>, body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| Err(internal(py, payload)))
}

/// The `milo.InternalError` for a caught panic's payload.
fn internal(py: Python<'_>, payload: Box<dyn std::any::Any + Send>) -> PyErr {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into());
    Raise::InternalError.err(
        py,
        format!("internal error in milo (please report it): {message}"),
    )
}

/// The problems, built once (each parses its embedded TOML: 80 µs a call).
static PROBLEMS: OnceLock<Vec<Box<dyn Problem>>> = OnceLock::new();

/// The problem named `name` (a slug or its first word).
fn problem_named(py: Python<'_>, name: &str) -> PyResult<&'static dyn Problem> {
    let problems = PROBLEMS.get_or_init(all);
    let named = |slug: &str| {
        problems
            .iter()
            .find(|p| p.slug() == slug)
            .map(|p| p.as_ref())
    };
    if let Some(problem) = named(name) {
        return Ok(problem);
    }
    // A first word, or no problem's name: `by_slug` decides (and words the error).
    let problem = by_slug(name).map_err(|e| raise(py, e, Raise::UnknownProblem))?;
    Ok(named(problem.slug()).expect("by_slug finds only the problems of `all`"))
}

/// The array's values without a copy (the Python side passes contiguous float64 arrays).
fn slice_of<'a>(py: Python<'_>, array: &'a PyReadonlyArray1<'_, f64>) -> PyResult<&'a [f64]> {
    array
        .as_slice()
        .map_err(|_| Raise::InvalidArgument.err(py, "values must be a contiguous array"))
}

/// The exact score as the 40-digit decimal the CLI prints.
fn exact_text(score: &BigRational) -> String {
    decimal_string(score, SCORE_DIGITS)
}

/// The problems and their rules and records, as JSON: `milo problems --json`'s `problems`.
#[pyfunction]
fn problems_json(py: Python<'_>) -> PyResult<String> {
    guarded(py, || {
        let specs: Vec<_> = PROBLEMS.get_or_init(all).iter().map(|p| p.spec()).collect();
        serde_json::to_string(&specs).map_err(|e| Raise::InternalError.err(py, e.to_string()))
    })
}

/// The slug of the problem named `name` (a slug or its first word).
#[pyfunction]
fn slug(py: Python<'_>, name: &str) -> PyResult<String> {
    guarded(py, || Ok(problem_named(py, name)?.slug().to_string()))
}

/// Checks `values` against the problem's rules and scores them: float64 with its error bound
/// and exact (`mode` "both", "fast" or "exact").
#[pyfunction]
#[pyo3(signature = (problem, values, mode = "both", allow_oversize = false))]
fn verify<'py>(
    py: Python<'py>,
    problem: &str,
    values: PyReadonlyArray1<'py, f64>,
    mode: &str,
    allow_oversize: bool,
) -> PyResult<Bound<'py, PyDict>> {
    guarded(py, || {
        let problem = problem_named(py, problem)?;
        let mode = match mode {
            "both" => Mode::Both,
            "fast" => Mode::Fast,
            "exact" => Mode::Exact,
            other => {
                return Err(Raise::InvalidArgument.err(
                    py,
                    format!("mode must be 'both', 'fast' or 'exact', got {other:?}"),
                ))
            }
        };
        let values = slice_of(py, &values)?;
        let options = Options {
            mode,
            allow_oversize,
        };
        let verification = verify_values(problem, values, options)
            .map_err(|v| raise(py, MiloError::Invalid(v), Raise::InvalidArgument))?;
        let report = PyDict::new(py);
        report.set_item("problem", problem.slug())?;
        report.set_item("n", verification.n)?;
        report.set_item("score", verification.fast.map(|f| f.value))?;
        report.set_item("error_bound", verification.fast.map(|f| f.error_bound))?;
        report.set_item("score_exact", verification.exact.as_ref().map(exact_text))?;
        report.set_item("check_seconds", verification.timings.check_seconds)?;
        report.set_item("fast_seconds", verification.timings.fast_seconds)?;
        report.set_item("exact_seconds", verification.timings.exact_seconds)?;
        Ok(report)
    })
}

/// The exact score of a valid construction; `which` names it in the error.
fn exact_score(
    py: Python<'_>,
    problem: &dyn Problem,
    values: &[f64],
    allow_oversize: bool,
    which: &str,
) -> PyResult<BigRational> {
    let options = Options {
        mode: Mode::Exact,
        allow_oversize,
    };
    let verification = verify_values(problem, values, options)
        .map_err(|v| Raise::InvalidConstruction.err(py, format!("{which}: {v}")))?;
    Ok(verification
        .exact
        .expect("exact mode computes the exact score"))
}

/// A comparison as a dict, with the exact score of the construction compared.
fn comparison_dict<'py>(
    py: Python<'py>,
    problem: &dyn Problem,
    score: &BigRational,
    comparison: Comparison,
) -> PyResult<Bound<'py, PyDict>> {
    let report = PyDict::new(py);
    report.set_item("problem", problem.slug())?;
    report.set_item("beats", comparison.beats)?;
    report.set_item("improvement", comparison.improvement)?;
    report.set_item("min_improvement", comparison.min_improvement)?;
    report.set_item("score_exact", exact_text(score))?;
    report.set_item("against", comparison.against)?;
    report.set_item("against_score_exact", comparison.against_score)?;
    Ok(report)
}

/// Whether `values` beats `against_values` by the problem's minimum improvement, decided on
/// exact scores.
#[pyfunction]
#[pyo3(signature = (problem, values, against_values, allow_oversize = false))]
fn compare<'py>(
    py: Python<'py>,
    problem: &str,
    values: PyReadonlyArray1<'py, f64>,
    against_values: PyReadonlyArray1<'py, f64>,
    allow_oversize: bool,
) -> PyResult<Bound<'py, PyDict>> {
    guarded(py, || {
        let problem = problem_named(py, problem)?;
        let score = exact_score(py, problem, slice_of(py, &values)?, allow_oversize, "a")?;
        let rival = exact_score(
            py,
            problem,
            slice_of(py, &against_values)?,
            allow_oversize,
            "b",
        )?;
        let comparison = compare_scores(problem, &score, &rival, "b");
        comparison_dict(py, problem, &score, comparison)
    })
}

/// Whether `values` beats a score (`against`: a decimal, or "arena" for the arena's #1 as the
/// problem file records it) by the problem's minimum improvement, decided on exact values.
#[pyfunction]
#[pyo3(signature = (problem, values, against = "arena", allow_oversize = false))]
fn compare_with_score<'py>(
    py: Python<'py>,
    problem: &str,
    values: PyReadonlyArray1<'py, f64>,
    against: &str,
    allow_oversize: bool,
) -> PyResult<Bound<'py, PyDict>> {
    guarded(py, || {
        let problem = problem_named(py, problem)?;
        let (rival, label) = if against == "arena" {
            let Some(first) = problem.spec().arena_first() else {
                return Err(Raise::InvalidArgument.err(
                    py,
                    format!(
                        "against='arena': problems/{}.toml records no arena #1",
                        problem.slug()
                    ),
                ));
            };
            let label = format!("{} {} ({})", first.holder, first.value, first.date);
            (decimal_of_f64(first.value), label)
        } else {
            let Some(value) = parse_decimal(against) else {
                return Err(Raise::InvalidArgument.err(
                    py,
                    format!("against must be 'arena', a number or an array, got {against:?}"),
                ));
            };
            (value, format!("value {against}"))
        };
        let score = exact_score(
            py,
            problem,
            slice_of(py, &values)?,
            allow_oversize,
            "values",
        )?;
        let comparison = compare_scores(problem, &score, &rival, &label);
        comparison_dict(py, problem, &score, comparison)
    })
}

/// The program a run uses: a file, a TOML text, or the problem's default.
fn program_of(
    py: Python<'_>,
    problem: &dyn Problem,
    path: Option<PathBuf>,
    text: Option<String>,
) -> PyResult<Program> {
    let program = match (path, text) {
        (Some(path), _) => Program::load(&path),
        (None, Some(text)) => Program::parse(&text, Path::new("<program>")),
        (None, None) => Program::default_for(problem),
    };
    program.map_err(|e| Raise::ProgramError.err(py, e.to_string()))
}

/// The settings of a run from the Python arguments, checked as `milo optimize` checks its flags.
fn settings_of(
    py: Python<'_>,
    budget_seconds: Option<f64>,
    evaluations: Option<u64>,
    seed: u64,
    jobs: u64,
) -> PyResult<RunSettings> {
    check_run_limits(
        ["budget_seconds", "evaluations", "jobs"],
        budget_seconds,
        evaluations,
        jobs,
    )
    .map_err(|message| Raise::InvalidArgument.err(py, message))?;
    Ok(RunSettings {
        seed,
        // As `milo optimize`: 30 s when neither budget is given.
        seconds: budget_seconds.or(evaluations.is_none().then_some(30.0)),
        evaluations,
        jobs: jobs as usize,
        cancel: CancelToken::new(),
        spent: Tally::default(),
    })
}

/// Runs a program on `start` under a budget (seconds of wall clock, evaluations or both) with the
/// GIL released; a signal (Ctrl-C) cancels the run, which stops within [`SIGNAL_POLL`] plus one
/// evaluation and the exact scoring of its best, and the signal's exception is raised with the
/// run's result attached as `milo_result`.
#[pyfunction]
#[pyo3(signature = (problem, start, program_path = None, program_text = None, budget_seconds = None, evaluations = None, seed = 1, jobs = 1))]
#[allow(clippy::too_many_arguments)]
fn optimize<'py>(
    py: Python<'py>,
    problem: &str,
    start: PyReadonlyArray1<'py, f64>,
    program_path: Option<PathBuf>,
    program_text: Option<String>,
    budget_seconds: Option<f64>,
    evaluations: Option<u64>,
    seed: u64,
    jobs: u64,
) -> PyResult<Bound<'py, PyDict>> {
    guarded(py, || {
        let problem = problem_named(py, problem)?;
        let program = program_of(py, problem, program_path, program_text)?;
        let settings = settings_of(py, budget_seconds, evaluations, seed, jobs)?;
        // A copy: the run reads it on another thread while Python may run. The run checks it.
        let start = slice_of(py, &start)?.to_vec();
        let cancel = settings.cancel.clone();
        let (outcome, signal) = std::thread::scope(|scope| {
            let (done, finished) = mpsc::channel();
            let (problem, start, program, settings) = (problem, &start, &program, &settings);
            scope.spawn(move || {
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    run_program(problem, start, program, settings, &mut Silent)
                }));
                // The receiver outlives the scope's threads: the send cannot fail.
                let _ = done.send(outcome);
            });
            wait_for_run(py, finished, &cancel)
        });
        let outcome = match outcome {
            Ok(outcome) => outcome.map_err(|e| raise(py, e, Raise::InvalidArgument))?,
            Err(payload) => return Err(internal(py, payload)),
        };
        let report = outcome_dict(py, problem, outcome, &settings)?;
        match signal {
            Some(signal) => {
                signal.value(py).setattr("milo_result", report)?;
                Err(signal)
            }
            None => Ok(report),
        }
    })
}

/// What a run's thread sends when it ends: its outcome, or the payload of its panic.
type Finished = std::thread::Result<milo::error::Result<RunOutcome>>;

/// Waits for the run with the GIL released, looking for signals every [`SIGNAL_POLL`]; the
/// first signal's exception cancels the run (the wait goes on until it has wound down).
fn wait_for_run(
    py: Python<'_>,
    mut finished: mpsc::Receiver<Finished>,
    cancel: &CancelToken,
) -> (Finished, Option<PyErr>) {
    let mut signal = None;
    loop {
        let (received, back) = py.detach(move || {
            let received = finished.recv_timeout(SIGNAL_POLL);
            (received, finished)
        });
        finished = back;
        match received {
            Ok(outcome) => return (outcome, signal),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                unreachable!("the run's thread sends before it ends")
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if signal.is_none() {
            if let Err(error) = py.check_signals() {
                cancel.cancel();
                signal = Some(error);
            }
        }
    }
}

/// A run's outcome as a dict: the best array (moved into numpy, no copy) and its exact score,
/// the start's, and what the run spent beside what it was given.
fn outcome_dict<'py>(
    py: Python<'py>,
    problem: &dyn Problem,
    outcome: RunOutcome,
    settings: &RunSettings,
) -> PyResult<Bound<'py, PyDict>> {
    let improvement = match problem.spec().direction {
        Direction::Minimize => &outcome.start_exact - &outcome.best_exact,
        Direction::Maximize => &outcome.best_exact - &outcome.start_exact,
    };
    let report = PyDict::new(py);
    report.set_item("problem", problem.slug())?;
    report.set_item("n", outcome.best.len())?;
    report.set_item("score", to_f64(&outcome.best_exact))?;
    report.set_item("score_exact", exact_text(&outcome.best_exact))?;
    report.set_item("start_score_exact", exact_text(&outcome.start_exact))?;
    report.set_item("improvement", exact_text(&improvement))?;
    report.set_item("improved", outcome.improved)?;
    report.set_item("evaluations", outcome.evaluations)?;
    report.set_item("seconds", outcome.seconds)?;
    report.set_item("budget_evaluations", settings.evaluations)?;
    report.set_item("budget_seconds", settings.seconds)?;
    report.set_item("stopped", outcome.trace.stopped.map(|s| s.to_string()))?;
    report.set_item("converged_because", outcome.trace.converged_because)?;
    report.set_item("interrupted", outcome.interrupted)?;
    report.set_item("values", outcome.best.into_pyarray(py))?;
    Ok(report)
}

/// Panics inside milo, for the test that a panic reaches Python as `milo.InternalError`.
#[pyfunction]
fn _panic_for_tests(py: Python<'_>) -> PyResult<()> {
    guarded(py, || {
        panic!("a deliberate panic (milo._milo._panic_for_tests)")
    })
}

/// The extension module.
#[pymodule]
fn _milo(module: &Bound<'_, PyModule>) -> PyResult<()> {
    // Built at import, so that no call pays for it.
    PROBLEMS.get_or_init(all);
    module.add_function(wrap_pyfunction!(problems_json, module)?)?;
    module.add_function(wrap_pyfunction!(slug, module)?)?;
    module.add_function(wrap_pyfunction!(verify, module)?)?;
    module.add_function(wrap_pyfunction!(compare, module)?)?;
    module.add_function(wrap_pyfunction!(compare_with_score, module)?)?;
    module.add_function(wrap_pyfunction!(optimize, module)?)?;
    module.add_function(wrap_pyfunction!(_panic_for_tests, module)?)?;
    Ok(())
}
