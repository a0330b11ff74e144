//! Benchmarks of search strategies: every method runs K times (and K more with fresh seeds)
//! on the same suite under the same CPU budget, in the same engine; the results are the mean
//! and 95% interval per method, the null band, the pairwise verdicts and the ladder of known
//! values, written as `results.json`, `results.md`, `methods.csv` and `runs.csv`.
//!
//! A benchmark directory holds `bench.json` (its settings) and `runs/<method>/<batch>-seed-<s>/`
//! (each run's own records, plus `summary.json` once it finished). Running it again resumes:
//! finished runs are read back, an interrupted one resumes from its records.
//!
//! - [`methods`]: the strategies, one file each; [`trajectory`]: a run as a sequence of steps;
//! - [`analysis`]: intervals, null bands, verdicts, ladder; [`table`]: Markdown and CSV;
//! - [`results`]: what `results.json` holds (what `milo report` draws).

pub mod analysis;
pub mod budget_cut;
pub mod methods;
pub mod results;
pub mod table;
pub mod trajectory;

use crate::atomic_file;
use crate::bounded_read::{read_json_capped, JsonCaps, RECORDS_JSON, SETTINGS_JSON};
use crate::cancel::CancelToken;
use crate::dir_lock::DirLock;
use crate::error::{read_error, write_error, MiloError, Result};
use crate::exact::rational::{decimal_string, to_f64, SCORE_DIGITS};
use crate::executor::{Executor, SlurmOptions};
use crate::records::unix_seconds;
use crate::runner::trace::process_cpu_seconds;
use crate::search::evaluation::Quality;
use crate::search::evolve::default_cost_measure;
use crate::search::parts::{self, EXECUTORS, SPOOL_DIR};
use crate::suite::Suite;
use results::{Batch, BenchResults, RunSummary};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use trajectory::RunLabel;

/// A benchmark's settings (`bench.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchConfig {
    /// The suite file (absolute).
    pub suite: PathBuf,
    /// The suite's pin ([`Suite::pin`]), recorded at the start and checked on resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite_pin: Option<String>,
    /// Method names, in order.
    pub methods: Vec<String>,
    /// Seeds of the first batch.
    pub seeds: Vec<u64>,
    /// Seeds of the re-run batch (fresh, disjoint from `seeds`; empty: no re-run).
    pub rerun_seeds: Vec<u64>,
    /// CPU seconds of search-task evaluation per run.
    pub cpu_seconds: f64,
    /// Quality aggregation.
    pub quality: Quality,
    /// Whether the baselines carry each task's best discovery forward as its start.
    #[serde(default)]
    pub promote_discoveries: bool,
    /// Where task evaluations run, by name (absent in older benchmarks: local threads).
    #[serde(default = "local_threads")]
    pub executor: String,
    /// How the `slurm` executor submits (absent for other executors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm: Option<SlurmOptions>,
    /// How the MILO methods search (absent in older benchmarks: the defaults).
    #[serde(default)]
    pub search: methods::search::SearchKnobs,
}

impl BenchConfig {
    /// The one-line error naming the first count out of its bound ([`crate::bounds`]), if
    /// any: checked when a benchmark starts and again when it resumes from `bench.json`.
    pub fn check(&self) -> std::result::Result<(), String> {
        use crate::bounds::{self, check};
        check("--seeds", self.seeds.len() as u64, &bounds::SEEDS)?;
        if !self.rerun_seeds.is_empty() {
            check(
                "re-run seeds",
                self.rerun_seeds.len() as u64,
                &bounds::SEEDS,
            )?;
        }
        check(
            "--methods (names)",
            self.methods.len() as u64,
            &bounds::METHODS,
        )?;
        if let Some(islands) = self.search.islands {
            check("--islands", islands as u64, &bounds::ISLANDS)?;
        }
        check(
            "--tasks-per-round",
            self.search.tasks_per_round as u64,
            &bounds::TASKS_PER_ROUND,
        )?;
        if let Some(population) = self.search.archive_population {
            check(
                "--archive-population",
                population as u64,
                &bounds::ARCHIVE_POPULATION,
            )?;
        }
        check(
            "--seed-harness (files)",
            self.search.seed_harnesses.len().max(1) as u64,
            &bounds::SEED_HARNESSES,
        )?;
        crate::optimize::budget::check_seconds("--budget", self.cpu_seconds)?;
        if let crate::search::lineage::AdmissionPolicy::Race(race) = &self.search.admission {
            race.check()?;
        }
        Ok(())
    }

    /// Every run, first batch then re-run, seed by seed, each seed running every method (so
    /// a cut-short benchmark has comparable runs of all methods).
    pub fn plan(&self) -> Vec<PlannedRun> {
        let batches = [
            (Batch::First, &self.seeds),
            (Batch::Rerun, &self.rerun_seeds),
        ];
        let mut plan = Vec::new();
        for (batch, seeds) in batches {
            for &seed in seeds {
                for method in &self.methods {
                    plan.push(PlannedRun {
                        method: method.clone(),
                        seed,
                        batch,
                    });
                }
            }
        }
        plan
    }
}

/// A benchmark seen from outside while it runs (no lock taken): its settings, the summaries of
/// the runs finished so far (in plan order) and the number of runs it plans.
pub struct BenchProgress {
    /// The settings.
    pub config: BenchConfig,
    /// The finished runs' summaries.
    pub finished: Vec<RunSummary>,
    /// How many runs the benchmark plans.
    pub planned: usize,
}

/// Where the benchmark in `dir` writes its planned runs' summaries (none when its settings
/// cannot be read).
pub fn summary_paths(dir: &Path) -> Vec<PathBuf> {
    read_json::<BenchConfig>(&dir.join(CONFIG_FILE), SETTINGS_JSON)
        .map(|config| {
            config
                .plan()
                .iter()
                .map(|run| dir.join(run.dir()).join(SUMMARY_FILE))
                .collect()
        })
        .unwrap_or_default()
}

/// Reads the benchmark in `dir` as it stands: `bench.json` and every finished run's summary.
pub fn read_progress(dir: &Path) -> Result<BenchProgress> {
    let config: BenchConfig = read_json(&dir.join(CONFIG_FILE), SETTINGS_JSON)?;
    let plan = config.plan();
    let mut finished = Vec::new();
    for run in &plan {
        let path = dir.join(run.dir()).join(SUMMARY_FILE);
        if path.is_file() {
            finished.push(read_json(&path, RECORDS_JSON)?);
        }
    }
    Ok(BenchProgress {
        planned: plan.len(),
        config,
        finished,
    })
}

fn local_threads() -> String {
    EXECUTORS[0].into()
}

/// Name of the settings file.
pub const CONFIG_FILE: &str = "bench.json";
/// Name of the results file.
pub const RESULTS_FILE: &str = "results.json";
/// Wall time between saves of a run's CPU spent while it runs (a run killed outright loses at
/// most this much of its count).
const SPENT_CHECKPOINT: std::time::Duration = std::time::Duration::from_secs(10);

/// Name of a finished run's summary.
pub const SUMMARY_FILE: &str = "summary.json";
/// Name of the file holding a run's start time.
const STARTED_FILE: &str = "started.json";

/// Where a run keeps the CPU seconds its earlier segments spent (a resumed run adds to it).
const SPENT_FILE: &str = "cpu-spent.json";

/// Written when a run's CPU cut fired: a resumed run then only finishes (a baseline validates,
/// a search is read back), whatever the cut left of the budget for the validation reserve.
const BUDGET_REACHED_FILE: &str = "budget-reached.json";

/// One run of the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedRun {
    /// The method.
    pub method: String,
    /// The seed.
    pub seed: u64,
    /// The batch.
    pub batch: Batch,
}

impl PlannedRun {
    /// Its directory, relative to the benchmark's.
    pub fn dir(&self) -> String {
        format!(
            "runs/{}/{}-seed-{}",
            self.method,
            self.batch.as_str(),
            self.seed
        )
    }
}

/// Hooks for a live display.
pub trait BenchObserver {
    /// A run is about to start (or resume); `index` counts from 1 up to `total`.
    fn starting(&mut self, _run: &PlannedRun, _index: usize, _total: usize) {}
    /// A run finished (or was read back finished).
    fn finished(&mut self, _summary: &RunSummary, _resumed: bool) {}
}

/// A benchmark: its directory (locked while the benchmark is open, see [`DirLock`]), settings
/// and suite.
pub struct Bench {
    dir: PathBuf,
    config: BenchConfig,
    suite: Suite,
    _lock: DirLock,
}

/// A benchmark directory is data, not code: one whose suite holds a program with a `command`
/// step is not resumed (its commands would run unconfined; `milo evolve --resume` has
/// `--allow-commands` for a run's, and a benchmark has no such opt-in yet).
fn refuse_stored_commands(dir: &Path, suite: &Suite) -> Result<()> {
    let first = suite.tasks.iter().find_map(|task| {
        let step = (*task.program).clone().confined().1?;
        Some((task.program_path.clone(), step))
    });
    match first {
        Some((program, step)) => Err(MiloError::Usage(format!(
            "resuming {}: {step} of {} is a `command` step, which runs code; a benchmark whose \
             programs run commands is not resumed (start a new one with `milo bench`)",
            dir.display(),
            program.display()
        ))),
        None => Ok(()),
    }
}

/// Writes `value` as pretty JSON to `path` through a temporary file (never half-written).
fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value).expect("benchmark records serialise");
    atomic_file::write(path, text.as_bytes())
}

fn already_a_benchmark(dir: &Path) -> MiloError {
    MiloError::Usage(format!(
        "{} already holds a benchmark; resume it with --resume {}",
        dir.display(),
        dir.display()
    ))
}

/// A benchmark's record file: its settings, a run's start time or CPU spent
/// ([`SETTINGS_JSON`]), or a run's summary with its curve ([`RECORDS_JSON`]).
fn read_json<T: for<'de> Deserialize<'de>>(path: &Path, caps: JsonCaps) -> Result<T> {
    read_json_capped(path, caps, "benchmark record")
}

fn write_text(path: &Path, text: &str) -> Result<()> {
    atomic_file::write(path, text.as_bytes())
}

impl Bench {
    /// Starts a new benchmark in `dir` (which must not hold one).
    pub fn start(dir: &Path, config: BenchConfig) -> Result<Bench> {
        config.check().map_err(MiloError::Usage)?;
        for name in &config.methods {
            if !methods::transfer::is_transfer(name) {
                methods::resolve(name, dir)?;
            }
        }
        let path = dir.join(CONFIG_FILE);
        if path.exists() {
            return Err(already_a_benchmark(dir));
        }
        let suite = Suite::load(&config.suite)?;
        std::fs::create_dir_all(dir).map_err(write_error(dir))?;
        let lock = DirLock::acquire(dir)?;
        // Checked again under the lock: another process may have started one meanwhile.
        if path.exists() {
            return Err(already_a_benchmark(dir));
        }
        // Transfer methods' files are frozen into the benchmark, under names that pin them.
        let methods = config
            .methods
            .iter()
            .map(|name| match methods::transfer::is_transfer(name) {
                true => methods::transfer::freeze(name, dir, &suite),
                false => Ok(name.clone()),
            })
            .collect::<Result<Vec<String>>>()?;
        let config = BenchConfig {
            suite_pin: Some(suite.pin.clone()),
            methods,
            ..config
        };
        write_json(&path, &config)?;
        Ok(Bench {
            dir: dir.to_path_buf(),
            config,
            suite,
            _lock: lock,
        })
    }

    /// Resumes the benchmark in `dir`.
    pub fn resume(dir: &Path) -> Result<Bench> {
        let path = dir.join(CONFIG_FILE);
        // Anything there (a FIFO or a link included) is read, and refused, under the lock.
        if std::fs::symlink_metadata(&path).is_err() {
            return Err(read_error(&path)(std::io::ErrorKind::NotFound.into()));
        }
        let lock = DirLock::acquire(dir)?;
        let config: BenchConfig = read_json(&path, SETTINGS_JSON)?;
        config.check().map_err(|message| MiloError::Malformed {
            path: path.clone(),
            message,
        })?;
        let suite = Suite::load(&config.suite)?;
        suite.check_pin(config.suite_pin.as_deref())?;
        refuse_stored_commands(dir, &suite)?;
        Ok(Bench {
            dir: dir.to_path_buf(),
            config,
            suite,
            _lock: lock,
        })
    }

    /// The settings.
    pub fn config(&self) -> &BenchConfig {
        &self.config
    }

    /// The suite.
    pub fn suite(&self) -> &Suite {
        &self.suite
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every run (see [`BenchConfig::plan`]).
    pub fn plan(&self) -> Vec<PlannedRun> {
        self.config.plan()
    }

    /// Runs every run not yet finished, then analyses all of them and writes the results;
    /// `None` when `cancel` stopped it (running it again resumes).
    pub fn run(
        &self,
        jobs: usize,
        cancel: &CancelToken,
        observer: &mut dyn BenchObserver,
    ) -> Result<Option<BenchResults>> {
        let plan = self.plan();
        let mut summaries = Vec::with_capacity(plan.len());
        for (i, planned) in plan.iter().enumerate() {
            let dir = self.dir.join(planned.dir());
            let summary_path = dir.join(SUMMARY_FILE);
            if summary_path.exists() {
                let summary: RunSummary = read_json(&summary_path, RECORDS_JSON)?;
                observer.finished(&summary, true);
                summaries.push(summary);
                continue;
            }
            observer.starting(planned, i + 1, plan.len());
            std::fs::create_dir_all(&dir).map_err(write_error(&dir))?;
            let started_path = dir.join(STARTED_FILE);
            let started_at: f64 = if started_path.exists() {
                read_json(&started_path, SETTINGS_JSON)?
            } else {
                let now = unix_seconds();
                write_json(&started_path, &now)?;
                now
            };
            // Everything the run spends in this process counts, summed over its segments.
            let spent_path = dir.join(SPENT_FILE);
            let spent_before: f64 = match spent_path.exists() {
                true => read_json(&spent_path, SETTINGS_JSON)?,
                false => 0.0,
            };
            let cpu_at_start = process_cpu_seconds();
            let method = methods::resolve(&planned.method, &self.dir)?;
            let reserve = budget_cut::ValidationReserve::default();
            let spool = dir.join(SPOOL_DIR);
            let slurm = self.config.slurm.clone();
            let executor: Arc<dyn Executor> =
                parts::executor(&self.config.executor, jobs, &spool, slurm)?.into();
            let ctx = |cancel: CancelToken, budget_spent| methods::RunContext {
                suite: &self.suite,
                dir: &dir,
                seed: planned.seed,
                cpu_seconds: self.config.cpu_seconds,
                jobs,
                cancel,
                quality: self.config.quality,
                cost: default_cost_measure(&self.suite, "builtin"),
                promote: self.config.promote_discoveries,
                executor_name: &self.config.executor,
                slurm: self.config.slurm.clone(),
                executor: executor.clone(),
                search: self.config.search.clone(),
                budget_spent,
                reserve: reserve.clone(),
            };
            // With local threads the run goes on until the process has spent its budget (over
            // all its segments) less what a baseline keeps back for validating its best, cut
            // there; then it only finishes (a baseline validates, a search is read back). Other executors spend their CPU in other processes: there the
            // methods' own counts of their evaluations' CPU stop them.
            let local = self.config.executor == EXECUTORS[0];
            let left = self.config.cpu_seconds - spent_before;
            let reached_path = dir.join(BUDGET_REACHED_FILE);
            let (mut ran, cut_at_budget) = if !local {
                (method.run(&ctx(cancel.clone(), false)), false)
            } else if left <= 0.0 || reached_path.exists() {
                (Ok(None), true)
            } else {
                let run_token = CancelToken::new();
                let spent_file = spent_path.clone();
                let checkpoint = budget_cut::Checkpoint {
                    every: SPENT_CHECKPOINT,
                    save: Box::new(move |segment| {
                        let _ = write_json(&spent_file, &(spent_before + segment));
                    }),
                };
                let cut =
                    budget_cut::CpuCut::arm(cancel, &run_token, left, &reserve, Some(checkpoint));
                let ran = method.run(&ctx(run_token, false));
                (ran, cut.reached() && !cancel.is_cancelled())
            };
            if cut_at_budget && matches!(ran, Ok(None)) {
                write_json(&reached_path, &true)?;
                ran = method.run(&ctx(cancel.clone(), true));
            }
            let spent = spent_before + (process_cpu_seconds() - cpu_at_start);
            write_json(&spent_path, &spent)?;
            let Some(mut trajectory) = ran? else {
                return Ok(None);
            };
            trajectory.started_at = started_at;
            let label = RunLabel {
                method: planned.method.clone(),
                seed: planned.seed,
                batch: planned.batch,
                dir: planned.dir(),
            };
            let direction = self.suite.problem.spec().direction;
            let mut summary = RunSummary {
                process_cpu_seconds: local.then_some(spent),
                ..trajectory::summarise(label, &trajectory, direction, self.config.cpu_seconds)
            };
            // A run cut at its budget before its first evaluation ended found nothing: its best
            // is its best search start.
            if trajectory.steps.is_empty() {
                let starts = self.suite.search_tasks().map(|t| &t.start.exact);
                if let Some(best) = starts.reduce(|a, b| match direction.better(b, a) {
                    true => b,
                    false => a,
                }) {
                    summary.best_exact = decimal_string(best, SCORE_DIGITS);
                    summary.best = to_f64(best);
                }
            }
            write_json(&summary_path, &summary)?;
            observer.finished(&summary, false);
            summaries.push(summary);
        }
        let results = BenchResults {
            transfers: methods::transfer::provenances(&self.config.methods, &self.dir),
            ..analysis::analyse(&self.context(), summaries)
        };
        write_json(&self.dir.join(RESULTS_FILE), &results)?;
        write_text(&self.dir.join("results.md"), &table::markdown(&results))?;
        write_text(&self.dir.join("methods.csv"), &table::methods_csv(&results))?;
        write_text(&self.dir.join("runs.csv"), &table::runs_csv(&results))?;
        Ok(Some(results))
    }

    /// What the analysis needs beyond the runs: the problem, its known values.
    fn context(&self) -> analysis::Context<'_> {
        let problem = self.suite.problem.as_ref();
        let spec = problem.spec();
        let mut known: Vec<(String, f64)> = spec
            .records
            .iter()
            .map(|r| (format!("{} ({})", r.holder, r.date), r.value))
            .collect();
        for start in &self.suite.starts {
            known.push((
                format!("frozen start: {} ({})", start.label, start.split.as_str()),
                to_f64(&start.exact),
            ));
        }
        let best = self.suite.best_start();
        known.push((
            format!("best frozen start ({})", best.label),
            to_f64(&best.exact),
        ));
        analysis::Context {
            problem: problem.slug(),
            direction: spec.direction,
            min_improvement: spec.min_improvement,
            suite: self.config.suite.display().to_string(),
            cpu_seconds: self.config.cpu_seconds,
            arena_first: spec.arena_first().map(|r| r.value),
            known,
            methods: &self.config.methods,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_past_their_items_are_refused_while_read() {
        let dir = tempfile::tempdir().unwrap();
        let items = crate::bounded_read::SETTINGS_JSON.items;
        // 2 MB of seeds, each one item.
        let seeds = "1,".repeat(items as usize);
        let text = format!(r#"{{"suite": "/s.toml", "methods": ["stock"], "seeds": [{seeds}1]}}"#);
        std::fs::write(dir.path().join(CONFIG_FILE), text).unwrap();
        let err = read_progress(dir.path()).err().expect("refused");
        assert_eq!(err.exit_code(), crate::error::EXIT_INPUT);
        assert!(
            err.to_string().contains(&format!(
                "benchmark record is past its cap of {items} items"
            )),
            "{err}"
        );
    }

    #[test]
    fn a_settings_file_without_promotion_reads_as_promotion_off() {
        let config = BenchConfig {
            suite: PathBuf::from("/suites/tiny.toml"),
            suite_pin: None,
            methods: vec!["stock".into()],
            seeds: vec![1],
            rerun_seeds: vec![2],
            cpu_seconds: 1.5,
            quality: Quality::Best,
            promote_discoveries: true,
            executor: "local-threads".into(),
            slurm: None,
            search: Default::default(),
        };
        let mut json = serde_json::to_value(&config).unwrap();
        assert_eq!(json["promote_discoveries"], true);
        json.as_object_mut().unwrap().remove("promote_discoveries");
        let old: BenchConfig = serde_json::from_value(json).unwrap();
        assert_eq!(
            old,
            BenchConfig {
                promote_discoveries: false,
                ..config
            }
        );
    }
}
