//! `milo worker TASK RESULT`: run one spooled attempt task (what a Slurm job runs).

use crate::error::{Result, EXIT_OK};
use crate::executor::spool::work;
use std::path::PathBuf;

/// Examples in `milo worker --help`.
pub const EXAMPLES: &str = "Examples (what a Slurm job script runs):
  milo worker RUN/spool/BATCH/task-0.json RUN/spool/BATCH/result-0.json";

/// Arguments of `milo worker`.
#[derive(clap::Args, Debug)]
pub struct WorkerArgs {
    /// The task file (an attempt task as JSON, written by the controller).
    task: PathBuf,
    /// Where the result goes (written under a temporary name, then renamed; if it exists the
    /// worker exits at once).
    result: PathBuf,
}

/// Runs `milo worker`.
pub fn run(args: &WorkerArgs) -> Result<i32> {
    work(&args.task, &args.result)?;
    Ok(EXIT_OK)
}
