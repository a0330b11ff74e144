//! `milo evolve`: the MILO search over harnesses on a task suite, with a live display.

use super::headings;
use super::search_status::{best_result, node_counts, BestResult, SearchStatus, LOG_FILE};
use super::verdict::{against, against_arena_first};
use crate::agent::writer_by_name;
use crate::bounds;
use crate::cancel::CancelToken;
use crate::error::{MiloError, Result, EXIT_OK};
use crate::exact::rational::{decimal_string, parse_decimal};
use crate::executor::slurm::DEFAULT_PILOT_STALE_SECONDS;
use crate::executor::SlurmOptions;
use crate::harness::Harness;
use crate::llm::AgentsConfig;
use crate::optimize::budget::MAX_SECONDS;
use crate::search::evaluation::Quality;
use crate::search::evolve::{bars_passed, default_cost_measure, Search, Stop, BEST_FILE};
use crate::search::harness_race::{self, RaceSettings};
use crate::search::lineage::{
    already_holds_a_run, AdmissionPolicy, Move, RunConfig, ADMISSION_POLICIES,
    DEFAULT_TASKS_PER_ROUND, LINEAGE_FILE,
};
use crate::search::parts::{EXECUTORS, LINEAGE_STORES, ORCHESTRATORS};
use crate::search::{archive, mutators};
use crate::suite::embedded::write_default_suite;
use crate::suite::Suite;
use num_traits::ToPrimitive;
use std::path::PathBuf;

/// How the `slurm` executor submits (`milo evolve --executor slurm`).
#[derive(clap::Args, Debug, Clone)]
pub struct SlurmArgs {
    /// Slurm partition (default: the cluster's default).
    #[arg(long = "slurm-partition", value_name = "NAME")]
    partition: Option<String>,
    /// At most K tasks of a batch run at once (the job array's `%K`).
    #[arg(long = "slurm-throttle", value_name = "K", conflicts_with = "pilots", value_parser = super::count::<usize>(bounds::SLURM_COUNT))]
    throttle: Option<usize>,
    /// Pilot mode: K long-running workers per batch claim its tasks one by one (for tasks of
    /// seconds); default: one job-array element per task.
    #[arg(long = "slurm-pilots", value_name = "K", value_parser = super::count::<usize>(bounds::SLURM_COUNT))]
    pilots: Option<usize>,
    /// Pilot mode: seconds a claim's heartbeat may stand still before its task goes back to the
    /// queue.
    #[arg(
        long = "slurm-pilot-stale",
        value_name = "SECONDS",
        default_value_t = DEFAULT_PILOT_STALE_SECONDS
    )]
    pilot_stale: f64,
    /// Minutes added to a task's budget for Slurm's --time (a backstop: milo stops first).
    #[arg(
        long = "slurm-time-margin",
        value_name = "MINUTES",
        default_value_t = 5
    )]
    time_margin: u64,
    /// Seconds between two looks at the queue.
    #[arg(long = "slurm-poll", value_name = "SECONDS", default_value_t = 2.0)]
    poll: f64,
    /// Submissions of one task before it is recorded as lost.
    #[arg(long = "slurm-max-submits", value_name = "N", default_value_t = 3, value_parser = super::count::<usize>(bounds::SLURM_COUNT))]
    max_submits: usize,
    /// An extra sbatch option, passed as it is (repeat for several).
    #[arg(long = "sbatch-arg", value_name = "ARG", allow_hyphen_values = true)]
    sbatch_args: Vec<String>,
    /// A shell line the job script runs before the worker, e.g. 'module load gcc' (repeat for
    /// several).
    #[arg(long = "slurm-setup", value_name = "LINE", allow_hyphen_values = true)]
    setup: Vec<String>,
}

impl SlurmArgs {
    /// The submission options when `executor` is `slurm`.
    pub fn options(&self, executor: &str) -> Option<SlurmOptions> {
        (executor == "slurm").then(|| SlurmOptions {
            partition: self.partition.clone(),
            throttle: self.throttle,
            time_margin_minutes: self.time_margin,
            poll_seconds: self.poll,
            max_submits: self.max_submits,
            sbatch_args: self.sbatch_args.clone(),
            setup: self.setup.clone(),
            pilots: self.pilots,
            pilot_stale_seconds: self.pilot_stale,
        })
    }
}

/// The help heading of [`AdmissionArgs`].
const ADMISSION_HEADING: &str = "Admission of children";

/// How a search admits children (`milo evolve`, `milo campaign`, `milo bench`).
#[derive(clap::Args, Debug, Clone)]
pub struct AdmissionArgs {
    /// How children are decided: `paired` (one child a step, run with its parent on every task of
    /// the round) or `race` (several children share one parent evaluation and are decided block
    /// by block with a paired t test).
    #[arg(long, help_heading = ADMISSION_HEADING, value_name = "POLICY", default_value = ADMISSION_POLICIES[0], value_parser = ADMISSION_POLICIES)]
    admission: String,
    /// Race: children proposed in a step.
    #[arg(long, help_heading = ADMISSION_HEADING, value_name = "K", default_value_t = harness_race::DEFAULT_CHILDREN, value_parser = super::count::<usize>(1..=harness_race::MAX_CHILDREN as u64))]
    race_children: usize,
    /// Race: tasks in each block (default: one per search slot, at least 2).
    #[arg(long, help_heading = ADMISSION_HEADING, value_name = "N", value_parser = super::count::<usize>(bounds::RACE_TASKS))]
    race_block: Option<usize>,
    /// Race: most tasks a child runs (default: every task of the round).
    #[arg(long, help_heading = ADMISSION_HEADING, value_name = "N", value_parser = super::count::<usize>(bounds::RACE_TASKS))]
    race_cap: Option<usize>,
    /// Race: one-sided significance level of the paired t test at the cap.
    #[arg(long, help_heading = ADMISSION_HEADING, value_name = "ALPHA", default_value_t = harness_race::DEFAULT_ALPHA)]
    race_alpha: f64,
    /// Race: one-sided level of the futility bound before the cap (a child whose gain's t
    /// statistic falls below its critical value stops early).
    #[arg(long, help_heading = ADMISSION_HEADING, value_name = "LEVEL", default_value_t = harness_race::DEFAULT_FUTILITY)]
    race_futility: f64,
}

impl AdmissionArgs {
    /// The policy these flags name; a usage error naming a knob out of range.
    pub fn policy(&self) -> Result<AdmissionPolicy> {
        if self.admission == ADMISSION_POLICIES[0] {
            return Ok(AdmissionPolicy::Paired);
        }
        let race = RaceSettings {
            children: self.race_children,
            block: self.race_block,
            cap: self.race_cap,
            alpha: self.race_alpha,
            futility: self.race_futility,
        };
        race.check().map_err(MiloError::Usage)?;
        Ok(AdmissionPolicy::Race(race))
    }
}

/// Examples in `milo evolve --help`.
pub const EXAMPLES: &str = "Examples:
  milo evolve --jobs 2 --promote-discoveries          # the default suite, 4 rounds
  milo evolve --suite problems/suites/arena-third-autocorrelation-inequality.toml \\
      --hours 1 --jobs 2 --promote-discoveries --task-evaluations 100000 --run-dir runs/third-hour
  milo evolve --resume runs/third-hour -q             # continue, no per-step lines";

/// Arguments of `milo evolve`.
#[derive(clap::Args, Debug)]
pub struct EvolveArgs {
    /// The task suite (default: the suite embedded in milo, problems/suites/default.toml, third
    /// autocorrelation inequality, written into the run directory's default-suite/).
    #[arg(help_heading = headings::SEARCH, long, value_name = "FILE")]
    suite: Option<PathBuf>,
    /// Where the lineage, harnesses and discoveries go (default: runs/evolve-<UTC time>).
    #[arg(help_heading = headings::OUTPUT, long, value_name = "DIR")]
    run_dir: Option<PathBuf>,
    /// Islands at the start.
    #[arg(help_heading = headings::SEARCH, long, default_value_t = 3, value_parser = super::count::<usize>(bounds::ISLANDS))]
    islands: usize,
    /// Rounds to run (default 4 unless --hours is given).
    #[arg(help_heading = headings::BUDGETS, long, conflicts_with = "hours", value_parser = super::count::<usize>(bounds::ROUNDS))]
    rounds: Option<usize>,
    /// Wall-clock limit in hours: at it the step in flight is cancelled (--resume redoes it).
    #[arg(help_heading = headings::BUDGETS, long)]
    hours: Option<f64>,
    /// Threads for evaluating tasks in parallel.
    #[arg(help_heading = headings::BUDGETS, long, default_value_t = 1, value_parser = super::count::<usize>(bounds::JOBS))]
    jobs: usize,
    /// Seed of every random choice.
    #[arg(help_heading = headings::SEARCH, long, default_value_t = 1)]
    seed: u64,
    /// Rounds without a gain in an island's best search quality before the orchestrator steps
    /// in (validation is held out: it never steers the search).
    #[arg(help_heading = headings::SEARCH, long, default_value_t = 3, value_parser = super::count::<usize>(bounds::PATIENCE))]
    patience: usize,
    /// How a harness's quality aggregates its per-task gains.
    #[arg(help_heading = headings::SEARCH, long, value_enum, default_value_t = Quality::Best)]
    quality: Quality,
    /// Attempts per task in each evaluation.
    #[arg(help_heading = headings::BUDGETS, long, default_value_t = 1, value_parser = super::count::<usize>(bounds::ATTEMPTS))]
    attempts: usize,
    /// The agent that writes optimizer programs (`builtin`; `verbatim`: the parent unchanged;
    /// `llm`: a language model from the agents file's [writer] pool, needs --agents).
    #[arg(help_heading = headings::LLM, long, value_name = "NAME", default_value = "builtin")]
    writer: String,
    /// The agents file (TOML): LLM backends and the pools of the writer, mutator and
    /// orchestrator roles; needed by `--writer llm`, the `llm` mutator and `--orchestrator llm`.
    /// Recorded in the run (it names key variables, never keys), so --resume needs it no more.
    #[arg(help_heading = headings::LLM, long, value_name = "FILE")]
    agents: Option<PathBuf>,
    /// The mutator pool, comma-separated: island i starts with the i-th (cyclically), and the
    /// orchestrator reassigns islands from this pool (`llm` needs --agents).
    #[arg(help_heading = headings::SEARCH, long, value_name = "LIST", value_delimiter = ',', default_values_t = mutators::NAMES.map(String::from))]
    mutators: Vec<String>,
    /// The orchestrator consulted when islands stall (`llm` needs --agents).
    #[arg(help_heading = headings::SEARCH, long, value_name = "NAME", default_value = ORCHESTRATORS[0])]
    orchestrator: String,
    /// Where task evaluations run (`local-threads`: this process, `--jobs` threads; `slurm`: job
    /// arrays or pilots over the run directory, which the nodes must share).
    #[arg(help_heading = headings::SLURM, long, value_name = "NAME", default_value = EXECUTORS[0])]
    executor: String,
    #[command(flatten, next_help_heading = headings::SLURM)]
    slurm: SlurmArgs,
    #[command(flatten)]
    admission: AdmissionArgs,
    /// A harness file to seed the islands with (repeat for several; island i starts from the
    /// i-th, in turn): your own, or one a run evolved (`RUN/harnesses/<hash>.toml`). Recorded
    /// whole in the run. Default: the built-in seeds.
    #[arg(help_heading = headings::SEARCH, long, value_name = "FILE")]
    seed_harness: Vec<PathBuf>,
    /// Programs each slot's archive keeps as parents: each task of a round runs the slot's best
    /// with probability 1/2, else one of its K best drawn uniformly (program evolution's
    /// population, as an `alphaevolve` island keeps; 1: always the best).
    #[arg(help_heading = headings::SEARCH, long, value_name = "K", default_value_t = archive::PROGRAM_EVOLUTION_POPULATION, value_parser = super::count::<usize>(bounds::ARCHIVE_POPULATION))]
    archive_population: usize,
    /// Search tasks per harness per round: the suite's search slots (start × program) in turn,
    /// with seeds fresh to every round.
    #[arg(help_heading = headings::BUDGETS, long, value_name = "K", default_value_t = DEFAULT_TASKS_PER_ROUND, value_parser = super::count::<usize>(bounds::TASKS_PER_ROUND))]
    tasks_per_round: usize,
    /// Objective evaluations of every task, replacing the suite's budget (a record campaign's
    /// setting: longer episodes let a program go deeper; recorded in the run).
    #[arg(help_heading = headings::BUDGETS, long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    task_evaluations: Option<u64>,
    /// Promote each slot's best construction of a round to the slot's start for the rounds after
    /// (a record campaign's setting; off: every task starts from the suite's frozen start).
    #[arg(help_heading = headings::SEARCH, long)]
    promote_discoveries: bool,
    /// Print every node, move and round summary on the terminal too (they always go to the
    /// run's milo.log).
    #[arg(help_heading = headings::OUTPUT, short, long)]
    verbose: bool,
    /// Resume the run in DIR from its lineage (other settings, the parts among them, are read
    /// from it; --jobs applies). With --rounds N (in all) or --hours H a run, finished or not,
    /// goes on to the new limit, and the lineage records it.
    #[arg(help_heading = headings::SEARCH, long, value_name = "DIR", conflicts_with_all = ["suite", "run_dir", "islands", "seed", "patience", "quality", "attempts", "writer", "agents", "mutators", "orchestrator", "executor", "partition", "throttle", "time_margin", "poll", "max_submits", "sbatch_args", "setup", "pilots", "pilot_stale", "tasks_per_round", "task_evaluations", "promote_discoveries", "admission", "race_children", "race_block", "race_cap", "race_alpha", "race_futility", "seed_harness", "archive_population"])]
    resume: Option<PathBuf>,
    /// With --resume: run the `command` steps of the run's programs (the suite's and those its
    /// lineage records), which run code. They run confined to a fresh work directory each, as a
    /// model's commands do: no writes elsewhere, no network, an empty environment. Without it a
    /// run whose programs hold one is refused.
    #[arg(help_heading = headings::SEARCH, long, requires = "resume")]
    allow_commands: bool,
}

/// Runs `milo evolve`.
pub fn run(args: &EvolveArgs) -> Result<i32> {
    let cancel = super::cancel_on_ctrl_c();
    check_hours(args.hours)?;
    let mut search = match &args.resume {
        Some(dir) => {
            let mut search = Search::resume(dir, args.jobs, cancel, args.allow_commands)?;
            if args.rounds.is_some() || args.hours.is_some() {
                search.extend(args.rounds, args.hours)?;
            }
            search
        }
        None => start(args, cancel)?,
    };
    note!(
        "milo evolve: suite '{}' ({}), {} tasks a round, {} held out, {} each{}",
        search.suite().name,
        search.suite().problem.slug(),
        search.config().tasks_per_round,
        search.validation_tasks().len(),
        search.suite().budget.text(),
        if search.config().promote_discoveries {
            ", discoveries promoted"
        } else {
            ""
        },
    );
    note!(
        "milo evolve: in {}; Ctrl-C stops after the last finished step, --resume continues",
        search.dir().display(),
    );
    let mut status = SearchStatus::new(&search, args.verbose, false);
    let stop = search.run(&mut status)?;
    drop(status);
    summarise(&search, stop)?;
    Ok(EXIT_OK)
}

fn start(args: &EvolveArgs, cancel: CancelToken) -> Result<Search> {
    let agents = match &args.agents {
        Some(path) => Some(AgentsConfig::load(path)?),
        None => {
            check_llm_parts_have_agents(args)?;
            None
        }
    };
    if args.writer == LLM {
        // The writer's pool, checked before anything is written.
        writer_by_name(&args.writer, agents.as_ref())?;
    }
    let dir = args.run_dir.clone().unwrap_or_else(|| {
        let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        PathBuf::from("runs").join(format!("evolve-{}", now.replace(':', "-")))
    });
    let suite_path = match &args.suite {
        Some(path) => path.clone(),
        // A directory holding a run gets nothing written into it.
        None if dir.join(LINEAGE_FILE).exists() => return Err(already_holds_a_run(&dir)),
        None => write_default_suite(&dir)?,
    };
    let suite = Suite::load(&suite_path)?;
    let config = RunConfig {
        suite: std::path::absolute(&suite_path).unwrap_or(suite_path),
        suite_pin: None,
        islands: args.islands,
        rounds: match args.hours {
            Some(_) => args.rounds,
            None => Some(args.rounds.unwrap_or(4)),
        },
        hours: args.hours,
        seed: args.seed,
        patience: args.patience,
        quality: args.quality,
        cost: default_cost_measure(&suite, &args.writer),
        attempts: args.attempts,
        writer: args.writer.clone(),
        mutators: args.mutators.clone(),
        orchestrator: args.orchestrator.clone(),
        lineage_store: LINEAGE_STORES[0].into(),
        executor: args.executor.clone(),
        slurm: args.slurm.options(&args.executor),
        cpu_seconds: None,
        components: Default::default(),
        tasks_per_round: args.tasks_per_round,
        task_evaluations: args.task_evaluations,
        promote_discoveries: args.promote_discoveries,
        agents,
        admission: args.admission.policy()?,
        archive_population: args.archive_population,
        seed_harnesses: Harness::load_all(&args.seed_harness)?,
    };
    Search::start(&dir, config, args.jobs, cancel)
}

/// `--hours`, when given, must be a positive number of hours within milo's longest budget.
pub(super) fn check_hours(hours: Option<f64>) -> Result<()> {
    let max = MAX_SECONDS / 3600.0;
    match hours {
        Some(h) if !(h.is_finite() && h > 0.0 && h <= max) => Err(MiloError::Usage(format!(
            "--hours must be a number of hours in (0, {max:.0}], got {h}"
        ))),
        _ => Ok(()),
    }
}

/// A usage error naming the first part that asks a language model (`--writer llm`, the `llm`
/// mutator, `--orchestrator llm`) when no agents file is given.
fn check_llm_parts_have_agents(args: &EvolveArgs) -> Result<()> {
    let part = if args.writer == LLM {
        "--writer llm"
    } else if args.mutators.iter().any(|m| m == LLM) {
        "the llm mutator (--mutators ...,llm)"
    } else if args.orchestrator == LLM {
        "--orchestrator llm"
    } else {
        return Ok(());
    };
    Err(MiloError::Usage(format!(
        "{part} needs an agents file: --agents FILE (its backends and role pools)"
    )))
}

/// The name of every part that asks a language model.
const LLM: &str = "llm";

/// Prints the run's summary on standard output: why it stopped, the nodes, each island's best
/// beside its validation, the best construction and where `best.json`, the discoveries, the
/// lineage and the log are.
pub(super) fn summarise(search: &Search, stop: Stop) -> Result<()> {
    let state = search.state();
    let dir = search.dir();
    let why = match stop {
        Stop::Rounds => "all rounds done",
        Stop::Hours => "time is up",
        Stop::Interrupted => "interrupted",
        Stop::Budget => "the CPU budget is spent",
    };
    let (seeds, admitted, rejected) = node_counts(state);
    let promotions = state
        .events
        .iter()
        .filter(|e| matches!(e.action, Move::Promote { .. }))
        .count();
    out!(
        "milo evolve: {why} after {} rounds: {seeds} seed harnesses, {} children ({admitted} admitted, {rejected} rejected), {} orchestrator moves, {promotions} promotions, {} islands",
        state.rounds_done,
        admitted + rejected,
        state.events.len() - promotions,
        state.islands.len()
    )?;
    let (children, runs) = state.decision_cost();
    if children > 0 {
        let admitted_children = state
            .nodes
            .iter()
            .filter(|n| n.parent_evaluation.is_some() && n.admitted())
            .count();
        out!(
            "children: {admitted_children} of {children} evaluated admitted ({} admission), {:.1} task runs per decision (parents' runs counted once)",
            search.config().admission.name(),
            runs as f64 / children as f64
        )?;
    }
    // Each island's best beside its held-out validation: does the champion replicate?
    for island in 0..state.islands.len() {
        if let Some(best) = state.island_best(island) {
            let validation = best
                .validation
                .as_ref()
                .map_or("not validated".into(), |v| {
                    format!("{:.3}", v.fitness.quality)
                });
            out!(
                "island {island} best {} ({}): search quality {:.3}, validation quality {validation}",
                best.id, best.name, best.evaluation.fitness.quality
            )?;
        }
    }
    let spec = search.suite().problem.spec();
    let best = best_result(state, spec.direction);
    if let Some(best) = &best {
        out!(
            "best construction score: {} (task {}, node {}, island {})",
            best.score,
            best.task,
            best.node,
            best.island
        )?;
    }
    let suite = search.suite();
    let record_name = match suite.record_given {
        true => "the suite's record",
        false => "the suite's best start",
    };
    out!(
        "{record_name} (suite '{}'): {}",
        suite.name,
        decimal_string(&suite.record, 40)
    )?;
    let discoveries = dir.join("discoveries");
    let found = std::fs::read_dir(&discoveries)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| {
                    !e.file_name()
                        .to_string_lossy()
                        .ends_with(".provenance.json")
                })
                .count()
        })
        .unwrap_or(0);
    let best_file = dir.join(BEST_FILE);
    if best_file.exists() {
        out!("best construction: {}", best_file.display())?;
    }
    out!(
        "discoveries: {found} in {}; lineage: {}; log: {}; inspect with `milo lineage {}`",
        discoveries.display(),
        dir.join(LINEAGE_FILE).display(),
        dir.join(LOG_FILE).display(),
        dir.display()
    )?;
    if let Some(best) = &best {
        out!("{}", verdict(search, best, record_name))?;
        out!("{}", bars_line(search, best))?;
    }
    out!("the report: milo report {}", dir.display())
}

/// The problem's records (`problems/<slug>.toml`) the best passes by the arena's threshold,
/// decided on its recorded exact score, in one line.
fn bars_line(search: &Search, best: &BestResult) -> String {
    let problem = search.suite().problem.as_ref();
    let Some(score) = parse_decimal(&best.score) else {
        return format!(
            "records passed: unknown (the best's score '{}' is no decimal)",
            best.score
        );
    };
    let bars = bars_passed(problem, &score);
    if bars.is_empty() {
        return format!(
            "records passed: none of the {} in problems/{}.toml",
            problem.spec().records.len(),
            problem.slug()
        );
    }
    let passed: Vec<String> = bars
        .iter()
        .map(|bar| {
            let text = |key: &str| bar[key].as_str().unwrap_or_default().to_string();
            format!(
                "{} {} by {}",
                text("holder"),
                bar["value"],
                text("improvement")
            )
        })
        .collect();
    format!("records passed: {}", passed.join("; "))
}

/// The run's verdict in one line: the best against the suite's record (or best start) and the
/// arena's #1, how many children were admitted, and whose run made the best construction.
fn verdict(search: &Search, best: &BestResult, record_name: &str) -> String {
    let state = search.state();
    let spec = search.suite().problem.spec();
    let score: f64 = best.score.parse().unwrap_or(f64::NAN);
    let record = search.suite().record.to_f64().unwrap_or(f64::NAN);
    let mut parts = vec![format!(
        "verdict: best {score:.8}, {}",
        against(spec.direction, score, record, record_name)
    )];
    parts.extend(against_arena_first(spec, score));
    let (_, admitted, rejected) = node_counts(state);
    parts.push(format!(
        "{admitted} of {} children admitted",
        admitted + rejected
    ));
    if let Some(node) = state.node(&best.node) {
        let whose = match (node.parents.is_empty(), node.admitted()) {
            (true, _) => "a seed harness",
            (false, true) => "an admitted child",
            (false, false) => "a rejected child (its construction is kept, its harness is not)",
        };
        parts.push(format!(
            "the best came from {whose}, {} in round {}",
            node.id, node.round
        ));
    }
    parts.join("; ")
}
