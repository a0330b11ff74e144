//! `milo bench`: run search methods against each other on a suite at equal CPU budget.

use super::evolve::{AdmissionArgs, SlurmArgs};
use super::headings;
use super::status::{Gauge, Pace, StatusLine};
use crate::bench::methods::search::SearchKnobs;
use crate::bench::results::RunSummary;
use crate::bench::{table, Bench, BenchConfig, BenchObserver, PlannedRun};
use crate::bounds;
use crate::error::{MiloError, Result, EXIT_OK};
use crate::harness::Harness;
use crate::search::evaluation::Quality;
use crate::search::lineage::DEFAULT_TASKS_PER_ROUND;
use crate::search::parts::EXECUTORS;
use clap::Args;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Examples in `milo bench --help`.
pub const EXAMPLES: &str = "Examples:
  milo bench --suite problems/suites/default.toml --methods best-of-n,alphaevolve,milo \\
      --seeds 3 --budget 60 --jobs 2 --out runs/bench-default
  milo bench --resume runs/bench-default";

/// Arguments of `milo bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// The task suite.
    #[arg(help_heading = headings::SEARCH, long, value_name = "FILE", required_unless_present = "resume")]
    suite: Option<PathBuf>,
    /// Methods, comma-separated: best-of-n, stock, greedy, alphaevolve, ladder-a … ladder-d,
    /// milo (= ladder-e), milo-frozen; harness:PATH (a harness file from any run, frozen, run
    /// by the built-in writer) and program:PATH (a program file run unchanged, as stock).
    #[arg(help_heading = headings::SEARCH,
        long,
        value_delimiter = ',',
        default_value = "best-of-n,alphaevolve,milo"
    )]
    methods: Vec<String>,
    /// Runs per method in the first batch (seeds 1..=K); the re-run uses K fresh seeds.
    #[arg(help_heading = headings::SEARCH, long, default_value_t = 3, value_parser = super::count::<u64>(bounds::SEEDS))]
    seeds: u64,
    /// CPU seconds of search-task evaluation per run, at most 1e7.
    #[arg(help_heading = headings::BUDGETS, long, value_name = "SECONDS")]
    budget: Option<f64>,
    /// Skip the re-run batch with fresh seeds (verdicts then say "not re-run").
    #[arg(help_heading = headings::SEARCH, long)]
    no_rerun: bool,
    /// Quality aggregation over tasks.
    #[arg(help_heading = headings::SEARCH, long, value_enum, default_value_t = Quality::Best)]
    quality: Quality,
    /// Baselines carry each task's best discovery forward as its start for later steps.
    #[arg(help_heading = headings::SEARCH, long)]
    promote_discoveries: bool,
    /// Threads per run.
    #[arg(help_heading = headings::BUDGETS, long, default_value_t = 1, value_parser = super::count::<usize>(bounds::JOBS))]
    jobs: usize,
    /// Where task evaluations run (`local-threads`, or `slurm`: job arrays or pilots over the
    /// benchmark directory, which the nodes must share).
    #[arg(help_heading = headings::SLURM, long, value_name = "NAME", default_value = EXECUTORS[0])]
    executor: String,
    #[command(flatten, next_help_heading = headings::SLURM)]
    slurm: SlurmArgs,
    #[command(flatten)]
    admission: AdmissionArgs,
    /// Islands of the MILO methods that have several (default 3).
    #[arg(help_heading = headings::SEARCH, long, value_name = "N", value_parser = super::count::<usize>(bounds::ISLANDS))]
    islands: Option<usize>,
    /// Search tasks per harness per round of the MILO methods.
    #[arg(help_heading = headings::BUDGETS, long, value_name = "K", default_value_t = DEFAULT_TASKS_PER_ROUND, value_parser = super::count::<usize>(bounds::TASKS_PER_ROUND))]
    tasks_per_round: usize,
    /// Programs each slot's archive keeps as parents in the MILO methods (see `milo evolve
    /// --archive-population`; default 6, as an `alphaevolve` island keeps).
    #[arg(help_heading = headings::SEARCH, long, value_name = "K", value_parser = super::count::<usize>(bounds::ARCHIVE_POPULATION))]
    archive_population: Option<usize>,
    /// A harness file to seed the MILO methods' islands with (repeat for several; island i
    /// starts from the i-th, in turn), e.g. `problems/harnesses/program-evolution.toml`.
    /// Recorded whole in the benchmark. Default: each method's own seeds.
    #[arg(help_heading = headings::SEARCH, long, value_name = "FILE")]
    seed_harness: Vec<PathBuf>,
    /// Benchmark directory (default: runs/bench-<time>).
    #[arg(help_heading = headings::OUTPUT, long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Resume the benchmark in DIR with its own settings.
    #[arg(help_heading = headings::SEARCH, long, value_name = "DIR", conflicts_with_all = ["suite", "methods", "seeds", "budget", "no_rerun", "quality", "promote_discoveries", "out", "executor", "partition", "throttle", "time_margin", "poll", "max_submits", "sbatch_args", "setup", "pilots", "pilot_stale", "admission", "race_children", "race_block", "race_cap", "race_alpha", "race_futility", "islands", "tasks_per_round", "archive_population", "seed_harness"])]
    resume: Option<PathBuf>,
}

/// Runs `milo bench`.
pub fn run(args: &BenchArgs) -> Result<i32> {
    let bench = match &args.resume {
        Some(dir) => Bench::resume(dir)?,
        None => start(args)?,
    };
    let cancel = super::cancel_on_ctrl_c();
    let config = bench.config();
    note!(
        "milo bench: {} on suite '{}' ({}), {} + {} seeds, {} CPU s a run{}",
        config.methods.join(", "),
        bench.suite().name,
        bench.suite().problem.slug(),
        config.seeds.len(),
        config.rerun_seeds.len(),
        config.cpu_seconds,
        if config.promote_discoveries {
            ", discoveries promoted"
        } else {
            ""
        },
    );
    note!(
        "milo bench: in {}; Ctrl-C stops, --resume continues",
        bench.dir().display(),
    );
    let mut display = Display {
        status: StatusLine::start("milo bench", false),
        runs: Arc::new(Mutex::new(Runs::default())),
    };
    let runs = Arc::clone(&display.runs);
    display.status.set_gauge(Box::new(move || {
        runs.lock().map(|r| r.gauge()).unwrap_or_default()
    }));
    let results = bench.run(args.jobs, &cancel, &mut display)?;
    drop(display);
    let Some(results) = results else {
        say!(
            "milo: interrupted; resume with: milo bench --resume {}",
            bench.dir().display()
        );
        return Ok(EXIT_OK);
    };
    out!("{}", table::markdown(&results))?;
    note!(
        "milo: results in {} (results.md, methods.csv, runs.csv, results.json); \
         draw them with: milo report {}",
        bench.dir().display(),
        bench.dir().display()
    );
    Ok(EXIT_OK)
}

fn start(args: &BenchArgs) -> Result<Bench> {
    let suite = args.suite.clone().expect("clap requires --suite");
    let Some(budget) = args.budget else {
        return Err(MiloError::Usage("--budget SECONDS is required".into()));
    };
    let k = args.seeds;
    let config = BenchConfig {
        suite: std::path::absolute(&suite).unwrap_or(suite),
        suite_pin: None,
        methods: args.methods.clone(),
        seeds: (1..=k).collect(),
        rerun_seeds: if args.no_rerun {
            vec![]
        } else {
            (k + 1..=2 * k).collect()
        },
        cpu_seconds: budget,
        quality: args.quality,
        promote_discoveries: args.promote_discoveries,
        executor: args.executor.clone(),
        slurm: args.slurm.options(&args.executor),
        search: SearchKnobs {
            admission: args.admission.policy()?,
            islands: args.islands,
            tasks_per_round: args.tasks_per_round,
            archive_population: args.archive_population,
            seed_harnesses: Harness::load_all(&args.seed_harness)?,
        },
    };
    let dir = args.out.clone().unwrap_or_else(|| {
        let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        PathBuf::from("runs").join(format!("bench-{}", now.replace(':', "-")))
    });
    Bench::start(&dir, config)
}

/// A status line (a bar over the benchmark's runs, the time left from the pace of the runs
/// finished by this process, counted down between them, the run in progress, its method and
/// seed) and one line per finished run on standard error.
struct Display {
    status: StatusLine,
    runs: Arc<Mutex<Runs>>,
}

/// The benchmark's runs, as the status line's gauge reads them.
#[derive(Default)]
struct Runs {
    /// Runs finished by this process, and their pace.
    finished_here: u64,
    pace: Pace,
    /// Runs found finished by an earlier process.
    read_back: u64,
    total: u64,
}

impl Runs {
    fn gauge(&self) -> Gauge {
        let done = self.finished_here + self.read_back;
        Gauge {
            fraction: (self.total > 0).then(|| done as f64 / self.total as f64),
            left: self.pace.left(self.total.saturating_sub(self.read_back)),
            figures: format!("{done}/{} runs", self.total),
        }
    }
}

impl BenchObserver for Display {
    fn starting(&mut self, run: &PlannedRun, index: usize, total: usize) {
        if let Ok(mut runs) = self.runs.lock() {
            runs.total = total as u64;
        }
        self.status.set(format!(
            "run {index}: {} seed {} ({} batch)",
            run.method,
            run.seed,
            run.batch.as_str()
        ));
    }

    fn finished(&mut self, s: &RunSummary, resumed: bool) {
        let Ok(mut runs) = self.runs.lock() else {
            return;
        };
        match resumed {
            true => runs.read_back += 1,
            false => {
                runs.finished_here += 1;
                let done = runs.finished_here;
                runs.pace.observe(done);
            }
        }
        self.status.println(&format!(
            "[{}/{}] {} seed {} ({}): best {} (quality {}), {} steps, {:.1} CPU s, {:.1} s{}",
            runs.finished_here + runs.read_back,
            runs.total,
            s.method,
            s.seed,
            s.batch.as_str(),
            table::score(s.best),
            table::quality(s.quality),
            s.steps,
            s.cpu_seconds,
            s.wall_seconds,
            if resumed { " (finished earlier)" } else { "" }
        ));
    }
}
