//! `milo suite freeze …` and `milo suite show FILE`: build task suites and list their tasks.

use super::json_line;
use crate::error::{MiloError, Result, EXIT_OK};
use crate::exact::rational::{decimal_string, SCORE_DIGITS};
use crate::optimize::budget::check_seconds;
use crate::problems::Direction;
use crate::suite::freeze::{freeze, FreezeRequest};
use crate::suite::{Suite, TaskBudget};
use clap::Subcommand;
use serde_json::json;
use std::path::PathBuf;

/// Examples in `milo suite --help`.
pub const EXAMPLES: &str = "Examples:
  milo suite show problems/suites/default.toml
  milo suite freeze --problem third-autocorrelation-inequality --from ../shared/arena/third-autocorrelation-inequality \\
      --programs problems/optimizers/third-autocorrelation-inequality.default.toml --seeds 1,2 \\
      --validation-seeds 3 --budget-evaluations 3000 --out my-suite.toml";

/// Examples in `milo suite freeze --help`.
const FREEZE_EXAMPLES: &str = "Examples:
  milo suite freeze --problem first-autocorrelation-inequality --from arena/first-autocorrelation-inequality \\
      --programs problems/optimizers/first-autocorrelation-inequality.default.toml --seeds 1,2 \\
      --validation-starts alphaevolve --budget-evaluations 2000 --out first.toml";

/// Examples in `milo suite show --help`.
const SHOW_EXAMPLES: &str = "Examples:
  milo suite show problems/suites/default.toml
  milo suite show my-suite.toml --json";

/// Arguments of `milo suite`.
#[derive(clap::Args, Debug)]
pub struct SuiteArgs {
    #[command(subcommand)]
    command: SuiteCommand,
}

#[derive(Subcommand, Debug)]
enum SuiteCommand {
    /// Build a suite file from construction files, pinning each by sha256.
    #[command(after_help = FREEZE_EXAMPLES)]
    Freeze(Box<FreezeArgs>),
    /// Verify a suite and list its tasks with their start scores.
    #[command(after_help = SHOW_EXAMPLES)]
    Show(ShowArgs),
}

/// Arguments of `milo suite freeze`.
#[derive(clap::Args, Debug)]
struct FreezeArgs {
    /// Problem slug (see `milo problems`) or its first word (`erdos`, `first`, `second`, `third`).
    #[arg(long, value_parser = super::problem_names())]
    problem: String,
    /// Construction files, or folders whose *.json / *.json.gz constructions are taken
    /// (provenance files, MANIFEST.json and PULL.json are skipped).
    #[arg(long, num_args = 1.., required = true)]
    from: Vec<PathBuf>,
    /// Parent optimizer program files (TOML).
    #[arg(long, num_args = 1.., required = true)]
    programs: Vec<PathBuf>,
    /// Seeds of the search tasks, comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    seeds: Vec<u64>,
    /// Seeds held out for validation, comma-separated.
    #[arg(long, value_delimiter = ',')]
    validation_seeds: Vec<u64>,
    /// Labels (file names without .json / .json.gz) of starts held out for validation.
    #[arg(long, value_delimiter = ',')]
    validation_starts: Vec<String>,
    /// Wall-clock budget of each task in seconds, at most 1e7.
    #[arg(long, value_name = "SECONDS")]
    budget_seconds: Option<f64>,
    /// Budget of each task in objective evaluations (deterministic task runs).
    #[arg(long, value_name = "EVALUATIONS")]
    budget_evaluations: Option<u64>,
    /// Name of the suite (default: the output file's stem).
    #[arg(long)]
    name: Option<String>,
    /// What the suite is for.
    #[arg(long, default_value = "")]
    description: String,
    /// The suite file to write (refuses to overwrite an existing file).
    #[arg(long)]
    out: PathBuf,
}

/// Arguments of `milo suite show`.
#[derive(clap::Args, Debug)]
struct ShowArgs {
    /// The suite file.
    file: PathBuf,
    /// Print a JSON list of tasks `{id, split, start, program, seed, start_exact, …}`.
    #[arg(long)]
    json: bool,
}

/// Runs `milo suite`.
pub fn run(args: &SuiteArgs) -> Result<i32> {
    match &args.command {
        SuiteCommand::Freeze(a) => run_freeze(a),
        SuiteCommand::Show(a) => run_show(a),
    }
}

fn run_freeze(args: &FreezeArgs) -> Result<i32> {
    if let Some(seconds) = args.budget_seconds {
        check_seconds("--budget-seconds", seconds).map_err(MiloError::Usage)?;
    }
    let budget = TaskBudget {
        seconds: args.budget_seconds,
        evaluations: args.budget_evaluations,
    };
    budget.check().map_err(|message| {
        MiloError::Usage(format!(
            "{message} (--budget-seconds and/or --budget-evaluations)"
        ))
    })?;
    let request = FreezeRequest {
        problem: args.problem.clone(),
        from: args.from.clone(),
        programs: args.programs.clone(),
        seeds: args.seeds.clone(),
        validation_seeds: args.validation_seeds.clone(),
        validation_starts: args.validation_starts.clone(),
        budget,
        out: args.out.clone(),
        name: args.name.clone(),
        description: args.description.clone(),
    };
    let suite = freeze(&request)?;
    out!(
        "wrote {}: {} starts, {} search tasks, {} validation tasks",
        args.out.display(),
        suite.starts.len(),
        suite.search_tasks().count(),
        suite.validation_tasks().count()
    )?;
    Ok(EXIT_OK)
}

fn run_show(args: &ShowArgs) -> Result<i32> {
    let suite = Suite::load(&args.file)?;
    if args.json {
        let tasks: Vec<serde_json::Value> = suite
            .tasks
            .iter()
            .map(|t| {
                json!({
                    "id": t.id,
                    "split": t.split,
                    "start": t.start.label,
                    "program": t.program.name,
                    "seed": t.seed,
                    "start_exact": decimal_string(&t.start.exact, SCORE_DIGITS),
                    "start_path": t.start.path,
                    "program_path": t.program_path,
                })
            })
            .collect();
        return json_line(&serde_json::Value::Array(tasks));
    }
    print_text(&suite)?;
    Ok(EXIT_OK)
}

fn print_text(suite: &Suite) -> Result<()> {
    let spec = suite.problem.spec();
    out!("suite    {} ({})", suite.name, suite.path.display())?;
    if !suite.description.is_empty() {
        out!("         {}", suite.description)?;
    }
    let direction = match spec.direction {
        Direction::Minimize => "minimize",
        Direction::Maximize => "maximize",
    };
    out!("problem  {} ({direction})", spec.slug)?;
    out!("budget   {} per task", suite.budget.text())?;
    out!(
        "record   {}{}",
        decimal_string(&suite.record, SCORE_DIGITS),
        if suite.record_given {
            " (from the suite file)"
        } else {
            " (best start)"
        }
    )?;
    out!("")?;
    let width = suite
        .starts
        .iter()
        .map(|s| s.label.len())
        .max()
        .unwrap_or(0);
    out!(
        "{:width$}  {:10}  {:>7}  {:46}  file",
        "start",
        "split",
        "n",
        "exact score"
    )?;
    for s in &suite.starts {
        out!(
            "{:width$}  {:10}  {:>7}  {:46}  {}",
            s.label,
            s.split.as_str(),
            s.values.len(),
            decimal_string(&s.exact, SCORE_DIGITS),
            s.path.display()
        )?;
    }
    out!("")?;
    let id_width = suite.tasks.iter().map(|t| t.id.len()).max().unwrap_or(0);
    out!(
        "tasks: {} search, {} validation",
        suite.search_tasks().count(),
        suite.validation_tasks().count()
    )?;
    out!(
        "{:id_width$}  {:10}  {:>6}  start score (exact)",
        "id",
        "split",
        "seed"
    )?;
    for t in &suite.tasks {
        out!(
            "{:id_width$}  {:10}  {:>6}  {}",
            t.id,
            t.split.as_str(),
            t.seed,
            decimal_string(&t.start.exact, SCORE_DIGITS)
        )?;
    }
    Ok(())
}
