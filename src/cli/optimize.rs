//! `milo optimize PROBLEM --start FILE`: run an optimizer program on a construction.

use super::json_line;
use super::status::{clock, eta, StatusLine};
use crate::construction::{read_values, write_values};
use crate::error::{write_error, MiloError, Result, EXIT_OK};
use crate::exact::rational::{decimal_string, SCORE_DIGITS};
use crate::optimize::budget::check_seconds;
use crate::problems::{by_slug, Direction, Problem};
use crate::program::Program;
use crate::runner::{run_program, Observer, RunSettings, StageRecord, TracePoint};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Examples in `milo optimize --help`.
pub const EXAMPLES: &str = "Examples:
  milo optimize third-autocorrelation-inequality \\
      --start constructions/third-autocorrelation-inequality/capped-arcsine-400.json --budget 60
  milo optimize first-autocorrelation-inequality --start start.npy --evaluations 20000 \\
      --seed 3 --out best.npy --trace trace.json     # .npy out for np.load
  milo optimize erdos-min-overlap --start - --budget 30 --json -q < start.txt";

/// Arguments of `milo optimize`.
#[derive(clap::Args, Debug)]
pub struct OptimizeArgs {
    /// Problem slug (see `milo problems`).
    problem: String,
    /// The start construction: JSON, .npy or text, optionally gzipped; `-` reads standard input.
    #[arg(long)]
    start: PathBuf,
    /// Program file (TOML); default: the problem's default program.
    #[arg(long)]
    program: Option<PathBuf>,
    /// Wall-clock budget in seconds, at most 1e7 (default 30 unless --evaluations is given).
    #[arg(long, value_name = "SECONDS")]
    budget: Option<f64>,
    /// Budget in objective evaluations (deterministic: same seed, same bits).
    #[arg(long)]
    evaluations: Option<u64>,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Threads for independent restarts.
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Where to write the best construction, in the format its name asks for (`.npy` float64,
    /// `.txt`/`.csv` text, anything else JSON; `.gz` gzips): created at the start, an existing
    /// file is refused.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write the run's trace (per-stage records, best score over time) as JSON here (created at
    /// the start; an existing file is refused).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Print one JSON object instead of text (and no progress bar; -q hides it too).
    #[arg(long)]
    json: bool,
}

/// A file reserved at the start of a run (created empty; an existing file is refused) and filled
/// at its end; removed again if the run fails before filling it.
struct Reserved {
    path: PathBuf,
    filled: bool,
}

impl Reserved {
    /// Creates `path` empty for the file of `flag`.
    fn new(flag: &str, path: &Path) -> Result<Reserved> {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
        {
            Ok(_) => Ok(Reserved {
                path: path.to_path_buf(),
                filled: false,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                Err(MiloError::Usage(format!(
                    "{flag} {}: the file exists; choose another (milo never overwrites it)",
                    path.display()
                )))
            }
            Err(e) => Err(write_error(path)(e)),
        }
    }

    /// Replaces the reservation with the content `write` puts at its path.
    fn fill(mut self, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
        write(&self.path)?;
        self.filled = true;
        Ok(())
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        if !self.filled {
            // Only the empty reservation is there: the content is renamed in whole or not at all.
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The default program of a problem, embedded from `problems/optimizers/<slug>.default.toml`.
pub fn default_program(problem: &dyn Problem) -> Result<Program> {
    let slug = problem.slug();
    Program::parse(
        problem.default_program(),
        Path::new(&format!("problems/optimizers/{slug}.default.toml")),
    )
}

/// Shows the best score, the stage, β, the evaluation rate, the budget and the most time left.
struct ProgressObserver {
    status: StatusLine,
    budget_seconds: Option<f64>,
    budget_evaluations: Option<u64>,
    best: f64,
    stage: String,
    beta: Option<f64>,
    /// Evaluations and seconds at the last report.
    spent: (u64, f64),
}

impl ProgressObserver {
    fn refresh(&self) {
        let (evaluations, seconds) = self.spent;
        let beta = self.beta.map(|b| format!(" β {b:.0e}")).unwrap_or_default();
        let rate = if seconds > 0.0 {
            evaluations as f64 / seconds
        } else {
            0.0
        };
        // The program may stop sooner by its own tests: the budget bounds the time left.
        let mut budget = Vec::new();
        let mut left: Option<f64> = None;
        if let Some(total) = self.budget_evaluations {
            budget.push(format!("{evaluations}/{total} evaluations"));
            if let Some(eta) = eta(
                Duration::from_secs_f64(seconds.max(0.0)),
                evaluations as f64,
                total as f64,
            ) {
                left = Some(eta.as_secs_f64());
            }
        }
        if let Some(total) = self.budget_seconds {
            budget.push(format!("{total} s"));
            let by_time = (total - seconds).max(0.0);
            left = Some(left.map_or(by_time, |l| l.min(by_time)));
        }
        let left = left
            .map(|l| format!(", at most {} left", clock(Duration::from_secs_f64(l))))
            .unwrap_or_default();
        self.status.set(format!(
            "best {:.12} | {}{beta} | {rate:.0} evals/s | budget {}{left}",
            self.best,
            self.stage,
            budget.join(" or ")
        ));
    }
}

impl Observer for ProgressObserver {
    fn stage_started(&mut self, path: &str, kind: &str) {
        self.stage = format!("{kind} {path}");
        self.refresh();
    }
    fn stage_finished(&mut self, record: &StageRecord) {
        if let Some(note) = &record.note {
            self.status
                .println(&format!("milo: {} {}: {note}", record.kind, record.path));
        }
        self.beta = record.beta;
        self.spent = (record.evaluations, record.seconds);
        self.refresh();
    }
    fn improved(&mut self, point: &TracePoint) {
        self.best = point.score;
        self.spent = (point.evaluations, point.seconds);
        self.refresh();
    }
}

/// Runs `milo optimize`.
pub fn run(args: &OptimizeArgs) -> Result<i32> {
    let problem = by_slug(&args.problem)?;
    let start = read_values(&args.start)?;
    let program = match &args.program {
        Some(path) => Program::load(path)?,
        None => default_program(problem.as_ref())?,
    };
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from(format!("milo-{}-seed{}.json", problem.slug(), args.seed))
    });
    if args.jobs == 0 {
        return Err(MiloError::Usage("--jobs must be at least 1".into()));
    }
    if let Some(seconds) = args.budget {
        check_seconds("--budget", seconds).map_err(MiloError::Usage)?;
    }
    if args.evaluations == Some(0) {
        return Err(MiloError::Usage(
            "--evaluations must be at least 1, got 0".into(),
        ));
    }
    if let Some(trace) = &args.trace {
        if std::path::absolute(trace).ok() == std::path::absolute(&out).ok() {
            return Err(MiloError::Usage(format!(
                "--out and --trace both name {}; give them different files",
                out.display()
            )));
        }
    }
    // Both files are created now, so a missing directory or a taken name fails before the run
    // and two runs cannot both claim one name.
    let out_file = Reserved::new("--out", &out)?;
    let trace_file = args
        .trace
        .as_deref()
        .map(|path| Reserved::new("--trace", path))
        .transpose()?;
    let settings = RunSettings {
        seed: args.seed,
        seconds: args.budget.or(if args.evaluations.is_none() {
            Some(30.0)
        } else {
            None
        }),
        evaluations: args.evaluations,
        jobs: args.jobs,
        // Ctrl-C: stages wind down, the best so far is verified and written.
        cancel: super::cancel_on_ctrl_c(),
    };
    note!(
        "milo: optimizing {} (n = {}) with program '{}'; Ctrl-C writes the best so far to {}",
        problem.slug(),
        start.len(),
        program.name,
        out.display()
    );
    let mut observer = ProgressObserver {
        status: StatusLine::start("milo optimize", args.json),
        budget_seconds: settings.seconds,
        budget_evaluations: settings.evaluations,
        best: problem.score_fast(&start).value,
        stage: "starting".into(),
        beta: None,
        spent: (0, 0.0),
    };
    observer.refresh();
    let outcome = run_program(problem.as_ref(), &start, &program, &settings, &mut observer)?;
    drop(observer);
    out_file.fill(|path| write_values(path, &outcome.best))?;
    if let Some(trace_file) = trace_file {
        let text = serde_json::to_string_pretty(&outcome.trace).expect("traces serialise");
        trace_file.fill(|path| crate::atomic_file::write(path, text.as_bytes()))?;
    }
    let improvement = match problem.spec().direction {
        Direction::Minimize => &outcome.start_exact - &outcome.best_exact,
        Direction::Maximize => &outcome.best_exact - &outcome.start_exact,
    };
    let notes: Vec<_> = outcome
        .trace
        .stages
        .iter()
        .filter_map(|s| {
            let note = s.note.as_ref()?;
            Some(json!({"path": s.path, "kind": s.kind, "note": note}))
        })
        .collect();
    let report = json!({
        "problem": problem.slug(),
        "program": program.name,
        "seed": args.seed,
        "n_start": start.len(),
        "n_best": outcome.best.len(),
        "start_exact": decimal_string(&outcome.start_exact, SCORE_DIGITS),
        "best_exact": decimal_string(&outcome.best_exact, SCORE_DIGITS),
        "improvement": decimal_string(&improvement, 6),
        "improved": outcome.improved,
        "beats_start_by_min_improvement": improvement >= problem.spec().min_improvement_exact(),
        "evaluations": outcome.evaluations,
        "seconds": outcome.seconds,
        "interrupted": outcome.interrupted,
        "stopped": outcome.trace.stopped,
        "out": out,
        "notes": notes,
    });
    if args.json {
        return json_line(&report);
    }
    out!("problem      {} (program {})", problem.slug(), program.name)?;
    out!(
        "start exact  {}  (n = {})",
        report["start_exact"].as_str().unwrap_or(""),
        start.len()
    )?;
    out!(
        "best exact   {}  (n = {})",
        report["best_exact"].as_str().unwrap_or(""),
        outcome.best.len()
    )?;
    out!(
        "improvement  {} (min_improvement {:e}){}",
        report["improvement"].as_str().unwrap_or(""),
        problem.spec().min_improvement,
        if outcome.improved {
            ""
        } else {
            " — no verified improvement; wrote the start"
        }
    )?;
    out!(
        "evaluations  {} in {:.1}s",
        outcome.evaluations,
        outcome.seconds
    )?;
    for note in &notes {
        out!(
            "note         {} {}: {}",
            note["kind"].as_str().unwrap_or(""),
            note["path"].as_str().unwrap_or(""),
            note["note"].as_str().unwrap_or("")
        )?;
    }
    if let Some(why) = outcome.trace.stopped {
        out!("stopped      {why}")?;
    }
    out!("wrote        {}", out.display())?;
    Ok(EXIT_OK)
}
