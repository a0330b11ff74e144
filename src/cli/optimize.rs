//! `milo optimize PROBLEM --start FILE`: run an optimizer program on a construction.

use super::headings;
use super::json_line;
use super::status::{eta, Gauge, GaugeFn, StatusLine};
use super::verdict::{against, against_arena_first};
use crate::construction::{read_record_values, read_values, write_values};
use crate::dir_lock::DirLock;
use crate::error::{write_error, MiloError, Result, EXIT_OK};
use crate::exact::rational::{decimal_string, to_f64, SCORE_DIGITS};
use crate::optimize::budget::check_run_limits;
use crate::problems::{by_slug, Direction, Problem, ProblemSpec};
use crate::program::Program;
use crate::runner::trace::process_cpu_seconds;
use crate::runner::trace_file::{values_sha256, RunHeader, Segment, TraceFile};
use crate::runner::{
    derive_seed, run_program_scored, Observer, RunOutcome, RunSettings, StageRecord, StopReason,
    Trace, TracePoint,
};
use crate::tally::Tally;
use num_rational::BigRational;
use serde_json::json;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Examples in `milo optimize --help`.
pub const EXAMPLES: &str = "Examples:
  milo optimize third-autocorrelation-inequality \\
      --start constructions/third-autocorrelation-inequality/capped-arcsine-400.json --budget 60
  milo optimize first-autocorrelation-inequality --start start.npy --evaluations 20000 \\
      --seed 3 --out best.npy --trace trace.json     # .npy out for np.load
  milo optimize erdos-min-overlap --start - --budget 30 --json -q < start.txt
  milo optimize second-autocorrelation-inequality --start start.json --budget 7200 \\
      --out best.json.gz --trace run.trace.json      # saved as it goes
  milo optimize --resume run.trace.json              # after any stop: on from the best";

/// Arguments of `milo optimize`.
#[derive(clap::Args, Debug)]
pub struct OptimizeArgs {
    /// Problem slug (see `milo problems`) or its first word (`erdos`, `first`, `second`, `third`).
    #[arg(help_heading = headings::SEARCH, required_unless_present = "resume", conflicts_with = "resume", value_parser = super::problem_names())]
    problem: Option<String>,
    /// The start construction: JSON, .npy or text, optionally gzipped; `-` reads standard input.
    #[arg(help_heading = headings::SEARCH, long, required_unless_present = "resume", conflicts_with = "resume")]
    start: Option<PathBuf>,
    /// Program file (TOML); default: the problem's default program.
    #[arg(help_heading = headings::SEARCH, long, conflicts_with = "resume")]
    program: Option<PathBuf>,
    /// Wall-clock budget in seconds, at most 1e7 (default 30 unless --evaluations is given).
    /// With --resume: the run's new total over all its segments.
    #[arg(help_heading = headings::BUDGETS, long, value_name = "SECONDS")]
    budget: Option<f64>,
    /// Budget in objective evaluations (deterministic: same seed, same bits). With --resume: the
    /// run's new total over all its segments.
    #[arg(help_heading = headings::BUDGETS, long)]
    evaluations: Option<u64>,
    /// Seed of every random choice.
    #[arg(help_heading = headings::SEARCH, long, default_value_t = 1, conflicts_with = "resume")]
    seed: u64,
    /// Threads for independent restarts (default 1; with --resume, the run's own).
    #[arg(help_heading = headings::BUDGETS, long, value_parser = super::count::<usize>(crate::bounds::JOBS))]
    jobs: Option<usize>,
    /// Where to write the best construction, in the format its name asks for (`.npy` float64,
    /// `.txt`/`.csv` text, anything else JSON; `.gz` gzips): created at the start (an existing
    /// file is refused) and rewritten whenever the best improves, at most every 10 s.
    #[arg(help_heading = headings::OUTPUT, long, conflicts_with = "resume")]
    out: Option<PathBuf>,
    /// Write the run's trace (settings, per-stage records, best score over time) as JSON here,
    /// gzipped when the name ends in `.gz` (created at the start; an existing file is refused),
    /// kept current like --out: with it the run can be continued after any stop (--resume).
    #[arg(help_heading = headings::OUTPUT, long, conflicts_with = "resume")]
    trace: Option<PathBuf>,
    /// Continue the run whose --trace file this is, from the best construction its --out holds,
    /// with what is left of its budget (--budget or --evaluations set a new total). Both files
    /// are updated in place; the --out must hold what the run last wrote there.
    #[arg(help_heading = headings::SEARCH, long, value_name = "TRACE")]
    resume: Option<PathBuf>,
    /// With --resume: run the `command` steps of the trace's stored program (they run code).
    /// They run confined to a fresh work directory, as a model's commands do: no writes
    /// elsewhere, no network, an empty environment. Without it such a trace is refused.
    #[arg(help_heading = headings::SEARCH, long, requires = "resume")]
    allow_commands: bool,
    /// Print one JSON object instead of text (and no progress bar; -q hides it too).
    #[arg(help_heading = headings::OUTPUT, long)]
    json: bool,
}

/// A file reserved at the start of a run (created empty; an existing file is refused) and
/// written during or at the end of it; removed again if the run fails before writing it.
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

    /// A file the run already owns (a resumed run's): never removed.
    fn owned(path: &Path) -> Reserved {
        Reserved {
            path: path.to_path_buf(),
            filled: true,
        }
    }

    /// Replaces the file's content with what `write` puts at its path (atomically).
    fn fill(&mut self, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
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

/// How often, at most, a run rewrites its --out and --trace files while it runs.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(10);

/// The run's --out and --trace files, kept current while it runs so that any stop leaves a best
/// construction and a trace to continue from.
struct RunFiles {
    out: Reserved,
    trace: Option<Reserved>,
    /// Held on `TRACE.lock` while the run goes on: one process at a time writes a run's files.
    _lock: Option<DirLock>,
    /// The trace file as it was before this segment (the settings and earlier segments).
    base: TraceFile,
    /// This segment's seed, start score and length.
    seed: u64,
    start_score: f64,
    start_n: usize,
    /// This segment's trace so far (its own clock).
    segment: Trace,
    started: Instant,
    cpu_at_start: f64,
    /// A best not yet written, and when the files were last written.
    pending: Option<Vec<f64>>,
    written_at: Option<Instant>,
}

impl RunFiles {
    fn stage_finished(&mut self, record: &StageRecord) {
        self.segment.stages.push(record.clone());
        self.write_if_due();
    }

    fn improved(&mut self, point: &TracePoint, best: &[f64]) {
        self.segment.points.push(point.clone());
        self.pending = Some(best.to_vec());
        self.write_if_due();
    }

    /// Writes the pending best and the trace so far, unless they were written less than
    /// [`CHECKPOINT_EVERY`] ago. A failed write is reported and the run goes on (the end writes
    /// again, and fails the run then).
    fn write_if_due(&mut self) {
        if self.pending.is_none()
            || self
                .written_at
                .is_some_and(|t| t.elapsed() < CHECKPOINT_EVERY)
        {
            return;
        }
        let best = self.pending.take().expect("checked above");
        let running = self.segment_record(None, None);
        let trace = self.base.with_segment(running, &self.segment);
        if let Err(e) = self.write(&best, trace) {
            say!("milo: could not save the best so far: {e}");
        }
        self.written_at = Some(Instant::now());
    }

    fn segment_record(&self, stopped: Option<StopReason>, best_exact: Option<String>) -> Segment {
        Segment {
            seed: self.seed,
            start_score: self.start_score,
            start_n: self.start_n,
            seconds: self.started.elapsed().as_secs_f64(),
            cpu_seconds: process_cpu_seconds() - self.cpu_at_start,
            // Stages report their own evaluations; restarts' inner stages only reach the points.
            evaluations: self
                .segment
                .stages
                .iter()
                .map(|s| s.evaluations)
                .sum::<u64>()
                .max(self.segment.points.last().map_or(0, |p| p.evaluations)),
            stopped,
            best_exact,
        }
    }

    /// Writes the trace (naming `best` as written to --out), then --out: a stop between the
    /// two leaves an --out the trace still names ([`TraceFile::out_sha256`]).
    fn write(&mut self, best: &[f64], mut trace: TraceFile) -> Result<()> {
        self.base.writing_out(values_sha256(best));
        if let Some(file) = &mut self.trace {
            trace.out_sha256 = self.base.out_sha256.clone();
            file.fill(|path| trace.write(path))?;
        }
        self.out.fill(|path| write_values(path, best))
    }

    /// Writes the run's verified result and its whole trace.
    fn finish(mut self, outcome: &RunOutcome) -> Result<()> {
        let mut segment = self.segment_record(
            outcome.trace.stopped,
            Some(decimal_string(&outcome.best_exact, SCORE_DIGITS)),
        );
        segment.seconds = outcome.seconds;
        segment.evaluations = outcome.evaluations;
        let trace = self.base.with_segment(segment, &outcome.trace);
        self.write(&outcome.best, trace)
    }
}

/// What a run is asked to do, from the command line or from the trace of a run to continue.
struct Plan {
    problem: Box<dyn Problem>,
    program: Program,
    start: Vec<f64>,
    start_exact: BigRational,
    settings: RunSettings,
    files: RunFiles,
    /// Segments before this one.
    resumed_after: usize,
}

impl Plan {
    /// A new run from the command line.
    fn new(args: &OptimizeArgs) -> Result<Plan> {
        let (Some(slug), Some(start_path)) = (&args.problem, &args.start) else {
            unreachable!("clap requires PROBLEM and --start without --resume")
        };
        let problem = by_slug(slug)?;
        let start = read_values(start_path)?;
        let program = match &args.program {
            Some(path) => Program::load(path)?,
            None => Program::default_for(problem.as_ref())?,
        };
        let out = args.out.clone().unwrap_or_else(|| {
            PathBuf::from(format!("milo-{}-seed{}.json", problem.slug(), args.seed))
        });
        let jobs = args.jobs.unwrap_or(1);
        check_budgets(args, jobs)?;
        if let Some(trace) = &args.trace {
            if std::path::absolute(trace).ok() == std::path::absolute(&out).ok() {
                return Err(MiloError::Usage(format!(
                    "--out and --trace both name {}; give them different files",
                    out.display()
                )));
            }
        }
        problem.check(&start).map_err(MiloError::Invalid)?;
        let start_exact = problem.score_exact(&start);
        // Both files are created now, so a missing directory or a taken name fails before the
        // run and two runs cannot both claim one name.
        let out_file = Reserved::new("--out", &out)?;
        let trace_file = args
            .trace
            .as_deref()
            .map(|path| Reserved::new("--trace", path))
            .transpose()?;
        let lock = args.trace.as_deref().map(lock_run).transpose()?;
        let seconds = args.budget.or(args.evaluations.is_none().then_some(30.0));
        let header = RunHeader {
            problem: problem.slug().to_string(),
            program_name: program.name.clone(),
            program: program.to_toml(),
            start: start_path.clone(),
            start_sha256: values_sha256(&start),
            start_n: start.len(),
            start_exact: decimal_string(&start_exact, SCORE_DIGITS),
            out: match &args.trace {
                Some(trace) => relative_to_folder_of(&out, trace),
                None => out.clone(),
            },
            seed: args.seed,
            jobs,
            budget_seconds: seconds,
            budget_evaluations: args.evaluations,
        };
        let settings = RunSettings {
            seed: args.seed,
            seconds,
            evaluations: args.evaluations,
            jobs,
            cancel: super::cancel_on_ctrl_c(),
            spent: Tally::default(),
        };
        let base = TraceFile {
            run: Some(header),
            ..TraceFile::default()
        };
        Ok(Plan::with_files(
            problem,
            program,
            (start, start_exact),
            settings,
            (out_file, trace_file),
            base,
            lock,
        ))
    }

    /// The continuation of the run whose trace is `trace_path`.
    fn resume(args: &OptimizeArgs, trace_path: &Path) -> Result<Plan> {
        // Read once to refuse a missing or foreign file before a lock file is made beside it;
        // read again under the lock, which no other process can change then.
        TraceFile::read(trace_path)?;
        let lock = lock_run(trace_path)?;
        let base = TraceFile::read(trace_path)?;
        let Some(mut header) = base.run.clone() else {
            return Err(MiloError::Malformed {
                path: trace_path.to_path_buf(),
                message: "this trace holds no run settings (written before runs could be \
                          resumed); start a new run with --start"
                    .into(),
            });
        };
        let problem = by_slug(&header.problem)?;
        let (program, command) = Program::parse(&header.program, trace_path)?.confined();
        if let (Some(step), false) = (command, args.allow_commands) {
            return Err(MiloError::Usage(format!(
                "--resume {}: {step} of the run's program is a `command` step, which runs code; \
                 give --allow-commands to run it, confined to its work directory",
                trace_path.display()
            )));
        }
        let out = folder_of(trace_path).join(&header.out);
        let jobs = args.jobs.unwrap_or(header.jobs);
        check_budgets(args, jobs)?;
        if args.budget.is_some() || args.evaluations.is_some() {
            header.budget_seconds = args.budget;
            header.budget_evaluations = args.evaluations;
        }
        let (spent_seconds, spent_evaluations) = base.spent();
        let seconds = header.budget_seconds.map(|total| total - spent_seconds);
        let evaluations = header
            .budget_evaluations
            .map(|total| total.saturating_sub(spent_evaluations));
        if seconds.is_some_and(|s| s <= 0.0) || evaluations == Some(0) {
            return Err(MiloError::Usage(format!(
                "--resume {}: the run has spent its budget ({:.0} s and {} evaluations in {} \
                 segment(s)); give a larger total with --budget or --evaluations",
                trace_path.display(),
                spent_seconds,
                spent_evaluations,
                base.segments.len()
            )));
        }
        let start = resume_start((trace_path, &base), &out, &header)?;
        problem.check(&start).map_err(MiloError::Invalid)?;
        let start_exact = problem.score_exact(&start);
        let segment = base.segments.len();
        let settings = RunSettings {
            // Each segment draws afresh: a resumed run does not replay the hops it made.
            seed: derive_seed(header.seed, segment as u64),
            seconds,
            evaluations,
            jobs,
            cancel: super::cancel_on_ctrl_c(),
            spent: Tally::default(),
        };
        let base = TraceFile {
            run: Some(header),
            ..base
        };
        let out_file = Reserved::owned(&out);
        let trace_file = Some(Reserved::owned(trace_path));
        let mut plan = Plan::with_files(
            problem,
            program,
            (start, start_exact),
            settings,
            (out_file, trace_file),
            base,
            Some(lock),
        );
        plan.resumed_after = segment;
        Ok(plan)
    }

    /// A plan that starts from `start` (with its exact score) and writes `files` (--out and
    /// --trace) on top of `base`.
    fn with_files(
        problem: Box<dyn Problem>,
        program: Program,
        (start, start_exact): (Vec<f64>, BigRational),
        settings: RunSettings,
        (out, trace): (Reserved, Option<Reserved>),
        base: TraceFile,
        lock: Option<DirLock>,
    ) -> Plan {
        let files = RunFiles {
            out,
            trace,
            _lock: lock,
            base,
            seed: settings.seed,
            start_score: problem.score_fast(&start).value,
            start_n: start.len(),
            segment: Trace::default(),
            started: Instant::now(),
            cpu_at_start: process_cpu_seconds(),
            pending: None,
            written_at: None,
        };
        Plan {
            problem,
            program,
            start,
            start_exact,
            settings,
            files,
            resumed_after: 0,
        }
    }
}

/// Locks the run whose trace is `trace` (on `TRACE.lock`), or says which process runs it.
fn lock_run(trace: &Path) -> Result<DirLock> {
    let mut name = trace.as_os_str().to_os_string();
    name.push(".lock");
    DirLock::acquire_file(PathBuf::from(name))
}

/// Budget and thread-count checks common to new and resumed runs (a resumed run's recorded
/// jobs included).
fn check_budgets(args: &OptimizeArgs, jobs: usize) -> Result<()> {
    check_run_limits(
        ["--budget", "--evaluations", "--jobs"],
        args.budget,
        args.evaluations,
        jobs as u64,
    )
    .map_err(MiloError::Usage)
}

/// The construction a resumed run starts from: the best its --out holds, which must be one the
/// trace says the run wrote there; or, when --out is still the empty file the run reserved, its
/// own start (which must still be the same construction). Anything else is refused naming both
/// files: a resume writes only the --out its run created.
fn resume_start(
    (trace_path, trace): (&Path, &TraceFile),
    out: &Path,
    header: &RunHeader,
) -> Result<Vec<f64>> {
    let refused = |why: String| {
        MiloError::Usage(format!(
            "--resume {}: its --out {} {why}; a resume writes only the --out its run created \
             (start a new run with --start)",
            trace_path.display(),
            out.display()
        ))
    };
    let meta =
        std::fs::symlink_metadata(out).map_err(|e| refused(format!("cannot be read ({e})")))?;
    if !meta.is_file() {
        return Err(refused(format!(
            "is {}, not a file the run wrote",
            crate::atomic_file::kind_of(meta.file_type())
        )));
    }
    if meta.len() > 0 {
        let best = read_record_values(out)
            .map_err(|e| refused(format!("is not a construction the run wrote ({e})")))?;
        if !trace.wrote_out(&best) {
            return Err(refused(
                "holds a construction the trace does not name as the run's last best (sha256 \
                 of its values)"
                    .into(),
            ));
        }
        return Ok(best);
    }
    crate::bounded_read::require_file(&header.start, "the run's start")?;
    let start = read_values(&header.start).map_err(|e| {
        MiloError::Usage(format!(
            "{} holds no best construction and the run's start {} cannot be read ({e}); \
             start a new run",
            out.display(),
            header.start.display()
        ))
    })?;
    if values_sha256(&start) != header.start_sha256 {
        return Err(MiloError::Usage(format!(
            "{} holds no best construction and the run's start {} has changed since the run \
             began (sha256 of its values differs); start a new run",
            out.display(),
            header.start.display()
        )));
    }
    Ok(start)
}

/// The folder a file is in (`.` for a bare name).
fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// `path` relative to the folder of `file` when both resolve; otherwise as given.
fn relative_to_folder_of(path: &Path, file: &Path) -> PathBuf {
    let (Ok(path_abs), Ok(folder)) = (
        std::path::absolute(path),
        std::path::absolute(folder_of(file)),
    ) else {
        return path.to_path_buf();
    };
    pathdiff::diff_paths(&path_abs, &folder).unwrap_or(path_abs)
}

/// Shows the best score, the construction's length and the stage on the status line, and keeps
/// the run's files current; the bar, the rate and the time left come from [`budget_gauge`].
struct ProgressObserver<'a> {
    status: StatusLine,
    best: f64,
    n: usize,
    /// The stage running: its kind and its path in the program.
    stage: Option<(String, String)>,
    /// The β each stage path last finished at.
    betas: HashMap<String, f64>,
    files: &'a mut RunFiles,
}

impl ProgressObserver<'_> {
    fn refresh(&self) {
        let stage = match &self.stage {
            Some((kind, path)) => {
                let beta = self.betas.get(path).map(|b| format!(", β {b:.0e}"));
                format!(
                    "{kind} ({}{})",
                    plain_position(path),
                    beta.unwrap_or_default()
                )
            }
            None => "starting".into(),
        };
        self.status
            .set(format!("best {:.12} · n {} · {stage}", self.best, self.n));
    }
}

/// A stage's path in its program in plain words: `steps[2].body[0]` is `step 3.1`.
fn plain_position(path: &str) -> String {
    let numbers: Vec<String> = path
        .split('[')
        .skip(1)
        .filter_map(|part| part.split(']').next()?.parse::<usize>().ok())
        .map(|i| (i + 1).to_string())
        .collect();
    format!("step {}", numbers.join("."))
}

/// The run's gauge, from its live evaluation count: a bar over whichever budget is nearer its
/// end (time or evaluations), the evaluations per second so far, the time left (to the deadline,
/// or at the rate so far for evaluations).
fn budget_gauge(settings: &RunSettings) -> GaugeFn {
    let started = Instant::now();
    let spent = settings.spent.clone();
    let (seconds, evaluations) = (settings.seconds, settings.evaluations);
    Box::new(move || {
        let elapsed = started.elapsed();
        let used = spent.get();
        let rate = used as f64 / elapsed.as_secs_f64().max(1e-9);
        let by_time = seconds.filter(|s| *s > 0.0).map(|total| {
            let left = Duration::from_secs_f64((total - elapsed.as_secs_f64()).clamp(0.0, 1e7));
            (elapsed.as_secs_f64() / total, left)
        });
        let by_evaluations = evaluations.map(|total| {
            let left = eta(elapsed, used as f64, total as f64).unwrap_or(Duration::MAX);
            (used as f64 / total as f64, left)
        });
        let binding = match (by_time, by_evaluations) {
            (Some(t), Some(e)) => Some(if e.0 > t.0 { e } else { t }),
            (t, e) => t.or(e),
        };
        let mut figures = format!("{rate:.0} evals/s");
        if let Some(total) = evaluations {
            figures.push_str(&format!(" · {used}/{total} evaluations"));
        }
        Gauge {
            fraction: binding.map(|(fraction, _)| fraction),
            left: binding.map(|(_, left)| left).filter(|l| *l < Duration::MAX),
            figures,
        }
    })
}

impl Observer for ProgressObserver<'_> {
    fn stage_started(&mut self, path: &str, kind: &str, n: usize) {
        self.stage = Some((kind.to_string(), path.to_string()));
        self.n = n;
        self.refresh();
    }
    fn stage_finished(&mut self, record: &StageRecord) {
        if let Some(note) = &record.note {
            self.status.println(&format!(
                "milo: {} ({}): {note}",
                record.kind,
                plain_position(&record.path)
            ));
        }
        if let Some(beta) = record.beta {
            self.betas.insert(record.path.clone(), beta);
        }
        self.n = record.n;
        self.refresh();
        self.files.stage_finished(record);
    }
    fn improved(&mut self, point: &TracePoint, best: &[f64]) {
        self.best = point.score;
        self.n = best.len();
        self.refresh();
        self.files.improved(point, best);
    }
}

/// Runs `milo optimize`.
pub fn run(args: &OptimizeArgs) -> Result<i32> {
    let Plan {
        problem,
        program,
        start,
        start_exact,
        settings,
        mut files,
        resumed_after,
    } = match &args.resume {
        Some(trace) => Plan::resume(args, trace)?,
        None => Plan::new(args)?,
    };
    let out = files.out.path.clone();
    if resumed_after > 0 {
        note!(
            "milo: continuing {} (segment {}, n = {}) with program '{}' from {}; Ctrl-C writes \
             the best so far",
            problem.slug(),
            resumed_after + 1,
            start.len(),
            program.name,
            out.display()
        );
    } else {
        note!(
            "milo: optimizing {} (n = {}) with program '{}'; Ctrl-C writes the best so far to {}",
            problem.slug(),
            start.len(),
            program.name,
            out.display()
        );
    }
    let limit = problem.spec().max_len;
    if start.len() > limit {
        note!(
            "milo: the start holds {} values, over the limit of {limit}: it is a start only; the \
             result is the best construction within the limit the program makes",
            start.len()
        );
    }
    let mut observer = ProgressObserver {
        status: StatusLine::start("milo optimize", args.json),
        best: files.start_score,
        n: start.len(),
        stage: None,
        betas: HashMap::new(),
        files: &mut files,
    };
    observer.status.set_gauge(budget_gauge(&settings));
    observer.refresh();
    let outcome = run_program_scored(
        problem.as_ref(),
        &start,
        &start_exact,
        &program,
        &settings,
        &mut observer,
    )?;
    drop(observer);
    files.finish(&outcome)?;
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
        "seed": settings.seed,
        "segment": resumed_after + 1,
        "n_start": start.len(),
        "n_best": outcome.best.len(),
        "start_exact": decimal_string(&outcome.start_exact, SCORE_DIGITS),
        "best_exact": decimal_string(&outcome.best_exact, SCORE_DIGITS),
        "improvement": decimal_string(&improvement, SCORE_DIGITS),
        "min_improvement": format!("{:e}", problem.spec().min_improvement),
        "improved": outcome.improved,
        "start_over_limit": outcome.start_over_limit,
        "beats_start_by_min_improvement": improvement >= problem.spec().min_improvement_exact(),
        "evaluations": outcome.evaluations,
        "seconds": outcome.seconds,
        "interrupted": outcome.interrupted,
        "stopped": outcome.trace.stopped,
        "converged_because": outcome.trace.converged_because,
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
        decimal_string(&improvement, 6),
        problem.spec().min_improvement,
        if outcome.start_over_limit {
            " — the start is over the length limit; wrote the best construction within it"
        } else if outcome.improved {
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
    out!("{}", verdict(problem.spec(), &outcome))?;
    Ok(EXIT_OK)
}

/// The run's verdict in one line: the best against the start and against the arena's #1, and,
/// when the program stopped itself before its budget, why.
fn verdict(spec: &ProblemSpec, outcome: &RunOutcome) -> String {
    let best = to_f64(&outcome.best_exact);
    let start = to_f64(&outcome.start_exact);
    let mut parts = vec![format!(
        "verdict: best {best:.8}, {}",
        against(spec.direction, best, start, "the start")
    )];
    parts.extend(against_arena_first(spec, best));
    if outcome.trace.stopped == Some(StopReason::Converged) {
        parts.push(format!(
            "stopped before its budget: {}",
            outcome
                .trace
                .converged_because
                .as_deref()
                .unwrap_or("the program ran to its end")
        ));
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::Trace;

    #[test]
    fn a_program_that_stops_itself_says_why_in_its_verdict() {
        let second = by_slug("second-autocorrelation-inequality").unwrap();
        let one = BigRational::from_integer(1.into());
        let mut outcome = RunOutcome {
            best: vec![1.0],
            start_exact: one.clone(),
            best_exact: one,
            improved: false,
            trace: Trace {
                stopped: Some(StopReason::Converged),
                converged_because: Some("steps[2] (until_stall): 1 pass in a row …".into()),
                ..Trace::default()
            },
            evaluations: 1,
            seconds: 1.0,
            interrupted: false,
            start_over_limit: false,
        };
        let line = verdict(second.spec(), &outcome);
        assert!(
            line.ends_with(
                "; stopped before its budget: steps[2] (until_stall): 1 pass in a row …"
            ),
            "{line}"
        );
        outcome.trace.converged_because = None;
        let line = verdict(second.spec(), &outcome);
        assert!(line.ends_with("the program ran to its end"), "{line}");
        outcome.trace.stopped = Some(StopReason::Deadline);
        assert!(!verdict(second.spec(), &outcome).contains("stopped before"));
    }
}
