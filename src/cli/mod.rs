//! The `milo` command line: one file per subcommand.
//!
//! Commands print through [`out!`] (and [`json_line`]): a failed write to standard output is an
//! error, not a panic. A closed pipe (`milo problems | head -1`) ends the command quietly with
//! exit 0; any other failure (`> /dev/full`) is reported as `cannot write standard output` (exit 7).

/// Prints one line on standard output like `println!`, returning a [`crate::error::Result`]
/// instead of panicking when standard output is closed or full.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::write_line(format_args!($($arg)*))
    };
}

mod arena;
mod bench;
mod campaign;
mod evolve;
mod lineage;
mod optimize;
mod problems;
mod report;
mod suite;
mod verify;
mod worker;

use crate::cancel::CancelToken;
use crate::error::{MiloError, Result, EXIT_OK};
use clap::{Parser, Subcommand};
use std::io::Write;
use std::path::Path;

/// A cancel token that Ctrl-C cancels (the handler is installed once per process; a command
/// installs it once).
fn cancel_on_ctrl_c() -> CancelToken {
    let cancel = CancelToken::new();
    let handler = cancel.clone();
    let _ = ctrlc::set_handler(move || handler.cancel());
    cancel
}

/// Verify, improve and benchmark constructions for the EinsteinArena problems.
#[derive(Parser, Debug)]
#[command(name = "milo", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the problems with their thresholds and known records.
    Problems(problems::ProblemsArgs),
    /// Check a construction's validity and score it, fast (float64) and exactly.
    Verify(verify::VerifyArgs),
    /// Improve a construction with an optimizer program under a budget.
    Optimize(optimize::OptimizeArgs),
    /// Talk to the EinsteinArena server: `pull` a live leaderboard (re-verified), `submit` a
    /// construction (exact pre-checks against the live rules), `status`, `leaderboard`.
    Arena(arena::ArenaArgs),
    /// From a live leaderboard to a verified submission: pull, freeze into a suite, search with
    /// discoveries promoted, offer each new best to the arena (sent only with --submit).
    Campaign(Box<campaign::CampaignArgs>),
    /// Task suites: `freeze` construction files into a suite, `show` its tasks and start scores.
    Suite(suite::SuiteArgs),
    /// The MILO search: evolve optimizer-writing harnesses across islands on a task suite.
    Evolve(evolve::EvolveArgs),
    /// Show a search run's lineage: every harness tried, every orchestrator move and failure.
    Lineage(lineage::LineageArgs),
    /// Benchmark search methods against each other on a suite at equal CPU budget.
    Bench(bench::BenchArgs),
    /// Write an HTML report with figures of a search run or a benchmark directory.
    Report(report::ReportArgs),
    /// Run one spooled attempt task and write its result, or claim a batch's tasks as a pilot
    /// (what a Slurm job runs; not for hands).
    #[command(hide = true)]
    Worker(worker::WorkerArgs),
}

/// Parses the command line, runs the command, and returns the process exit code.
pub fn run() -> i32 {
    execute(Cli::parse())
}

/// Runs a parsed command line and returns the process exit code (errors are printed on one line
/// of standard error).
pub fn execute(cli: Cli) -> i32 {
    let outcome = match cli.command {
        Command::Problems(args) => problems::run(&args),
        Command::Verify(args) => verify::run(&args),
        Command::Optimize(args) => optimize::run(&args),
        Command::Arena(args) => arena::run(&args),
        Command::Campaign(args) => campaign::run(&args),
        Command::Suite(args) => suite::run(&args),
        Command::Evolve(args) => evolve::run(&args),
        Command::Lineage(args) => lineage::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Report(args) => report::run(&args),
        Command::Worker(args) => worker::run(&args),
    };
    match outcome {
        Ok(code) => code,
        Err(err) if is_closed_stdout(&err) => EXIT_OK,
        Err(err) => report(&err),
    }
}

/// The name standard output goes by in write errors.
const STDOUT: &str = "standard output";

/// Writes one line on standard output (the body of [`out!`]); a failure is a
/// [`MiloError::Write`] on standard output.
fn write_line(args: std::fmt::Arguments) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_fmt(args)
        .and_then(|()| stdout.write_all(b"\n"))
        .and_then(|()| stdout.flush())
        .map_err(crate::error::write_error(Path::new(STDOUT)))
}

/// Whether `err` is a write to standard output whose reader has gone (a closed pipe): the
/// command ends quietly, as `head` expects.
fn is_closed_stdout(err: &MiloError) -> bool {
    matches!(err, MiloError::Write { path, source }
        if path == Path::new(STDOUT) && source.kind() == std::io::ErrorKind::BrokenPipe)
}

/// Prints an error on one line of standard error and returns its exit code.
fn report(err: &MiloError) -> i32 {
    eprintln!("milo: {err}");
    err.exit_code()
}

/// Prints a JSON value on one line of standard output.
fn json_line(value: &serde_json::Value) -> Result<i32> {
    out!("{value}")?;
    Ok(EXIT_OK)
}

/// [`json_line`] for callers that go on regardless: a failed write is reported on standard
/// error (a closed pipe quietly) and its exit code returned.
fn print_json(value: &serde_json::Value) -> i32 {
    match json_line(value) {
        Ok(code) => code,
        Err(err) if is_closed_stdout(&err) => EXIT_OK,
        Err(err) => report(&err),
    }
}
