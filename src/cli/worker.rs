//! `milo worker TASK RESULT`: run one spooled attempt task (what a Slurm job-array element runs);
//! `milo worker --pilot BATCH_DIR`: claim and run a batch's tasks until none is left (what a
//! pilot runs).

use crate::error::{MiloError, Result, EXIT_OK};
use crate::executor::pilot::{holder_name, run_pilot, PilotPace};
use crate::executor::spool::work;
use std::path::PathBuf;
use std::time::Duration;

/// Examples in `milo worker --help`.
pub const EXAMPLES: &str = "Examples (what a Slurm job script runs):
  milo worker RUN/spool/BATCH/task-0.json RUN/spool/BATCH/result-0.json
  milo worker --pilot RUN/spool/BATCH";

/// Arguments of `milo worker`.
#[derive(clap::Args, Debug)]
pub struct WorkerArgs {
    /// The task file (an attempt task as JSON, written by the controller).
    #[arg(required_unless_present = "pilot")]
    task: Option<PathBuf>,
    /// Where the result goes (written under a temporary name, then renamed; if it exists the
    /// worker exits at once).
    #[arg(required_unless_present = "pilot")]
    result: Option<PathBuf>,
    /// Run as a pilot over the batch in BATCH_DIR: claim its queued tasks one by one, until the
    /// queue and the claims are empty.
    #[arg(long, value_name = "BATCH_DIR", conflicts_with_all = ["task", "result"])]
    pilot: Option<PathBuf>,
    /// Pilot: seconds between two heartbeats of the claim being evaluated.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 10.0,
        requires = "pilot"
    )]
    heartbeat: f64,
    /// Pilot: seconds the queue may stay empty while other pilots hold claims before leaving.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 120.0,
        requires = "pilot"
    )]
    idle: f64,
    /// Pilot: seconds between two looks at an empty queue.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 2.0,
        requires = "pilot"
    )]
    poll: f64,
}

/// The longest pause a pilot accepts, in seconds (a day).
const MAX_PAUSE_SECONDS: f64 = 86_400.0;

/// Runs `milo worker`.
pub fn run(args: &WorkerArgs) -> Result<i32> {
    if let Some(batch) = &args.pilot {
        let pause = |option: &str, seconds: f64| {
            if seconds.is_finite() && seconds > 0.0 && seconds <= MAX_PAUSE_SECONDS {
                Ok(Duration::from_secs_f64(seconds))
            } else {
                Err(MiloError::Usage(format!(
                    "{option} must be a positive number of seconds up to {MAX_PAUSE_SECONDS}, got {seconds}"
                )))
            }
        };
        let pace = PilotPace {
            heartbeat: pause("--heartbeat", args.heartbeat)?,
            idle: pause("--idle", args.idle)?,
            poll: pause("--poll", args.poll)?,
        };
        let holder = holder_name();
        let evaluated = run_pilot(batch, &holder, pace)?;
        out!("pilot {holder} evaluated {evaluated} tasks")?;
        return Ok(EXIT_OK);
    }
    let (Some(task), Some(result)) = (&args.task, &args.result) else {
        return Err(MiloError::Usage(
            "milo worker needs TASK and RESULT, or --pilot BATCH_DIR".into(),
        ));
    };
    work(task, result)?;
    Ok(EXIT_OK)
}
