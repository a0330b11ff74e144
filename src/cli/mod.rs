//! The `milo` command line: one file per subcommand.
//!
//! Commands print through [`out!`] (and [`json_line`]): a failed write to standard output is an
//! error, not a panic. A closed pipe (`milo problems | head -1`) ends the command quietly with
//! exit 0; any other failure (`> /dev/full`) is reported as `cannot write standard output` (exit 7).
//! Standard error is written through `say!` (see [`crate::say`]): a line it cannot take
//! (`2>/dev/full`) is dropped, and the work and the exit code stand.

/// Prints one line on standard output like `println!`, returning a [`crate::error::Result`]
/// instead of panicking when standard output is closed or full.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::write_line(format_args!($($arg)*))
    };
}

/// Prints one line of progress or information on standard error like `eprintln!`, unless
/// `-q/--quiet` was given (errors are reported through [`report`] and always print).
macro_rules! note {
    ($($arg:tt)*) => {
        if !$crate::cli::is_quiet() {
            say!($($arg)*);
        }
    };
}

mod arena;
mod bench;
mod campaign;
mod completions;
mod convert;
mod evolve;
mod headings;
mod lineage;
mod optimize;
mod problems;
mod report;
mod search_status;
mod status;
mod suite;
mod verdict;
mod verify;
mod worker;

use crate::cancel::CancelToken;
use crate::error::{MiloError, Result, EXIT_OK};
use clap::{Parser, Subcommand};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether `-q/--quiet` was given: set once by [`execute`], read by [`note!`].
static QUIET: AtomicBool = AtomicBool::new(false);

/// Whether progress and information on standard error are silenced (`-q/--quiet`).
pub fn is_quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// The parser of a problem argument: a slug or its first word (`erdos`, `first`, `second`,
/// `third`), resolved to the slug; the shell completions offer the slugs, and an unknown name
/// gets milo's one-line error with the nearest name.
#[derive(Clone)]
struct ProblemName;

impl clap::builder::TypedValueParser for ProblemName {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> std::result::Result<String, clap::Error> {
        match crate::problems::by_slug(&value.to_string_lossy()) {
            Ok(problem) => Ok(problem.slug().to_string()),
            Err(e) => Err(
                clap::Error::raw(clap::error::ErrorKind::InvalidValue, format!("{e}\n"))
                    .with_cmd(cmd),
            ),
        }
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        let values: Vec<clap::builder::PossibleValue> = crate::problems::all()
            .iter()
            .map(|p| {
                let slug = p.slug().to_string();
                let alias = crate::problems::alias(&slug).to_string();
                clap::builder::PossibleValue::new(slug).alias(alias)
            })
            .collect();
        Some(Box::new(values.into_iter()))
    }
}

/// The parser of every problem argument (see [`ProblemName`]).
fn problem_names() -> ProblemName {
    ProblemName
}

/// The parser of a count flag bounded by `range` (one of [`crate::bounds`]): a value outside
/// it exits 2 naming the flag, the value and the range.
fn count<T>(range: std::ops::RangeInclusive<u64>) -> clap::builder::RangedU64ValueParser<T>
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
    <T as TryFrom<u64>>::Error: Send + Sync + 'static + std::error::Error + ToString,
{
    clap::builder::RangedU64ValueParser::<T>::new().range(range)
}

/// A cancel token that Ctrl-C cancels (the handler is installed once per process; a command
/// installs it once).
fn cancel_on_ctrl_c() -> CancelToken {
    let cancel = CancelToken::new();
    cancel_on_ctrl_c_all(&[&cancel]);
    cancel
}

/// Has Ctrl-C cancel every one of `tokens` (as [`cancel_on_ctrl_c`], for a command whose parts
/// stop on different events besides Ctrl-C).
fn cancel_on_ctrl_c_all(tokens: &[&CancelToken]) {
    let handlers: Vec<CancelToken> = tokens.iter().map(|t| (*t).clone()).collect();
    let _ = ctrlc::set_handler(move || handlers.iter().for_each(CancelToken::cancel));
}

/// Examples in `milo --help`.
const EXAMPLES: &str = "Examples:
  milo problems
  milo verify first-autocorrelation-inequality best.npy --against 1.5029
  milo optimize third-autocorrelation-inequality --start start.json --budget 60 --out best.npy
  milo evolve --jobs 2 --promote-discoveries
  milo completions bash > ~/.local/share/bash-completion/completions/milo";

/// Verify, improve and benchmark constructions for the EinsteinArena problems.
#[derive(Parser, Debug)]
#[command(name = "milo", version, about, after_help = EXAMPLES)]
pub struct Cli {
    /// Silence progress and information on standard error (spinners, start lines, per-step
    /// lines); errors still print.
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the problems with their thresholds and known records.
    #[command(after_help = problems::EXAMPLES)]
    Problems(problems::ProblemsArgs),
    /// Check a construction's validity and score it, fast (float64) and exactly.
    ///
    /// Exit codes: 0 valid (and, with --against, better by min_improvement); 10 valid but not
    /// better than the --against rival; 3 invalid construction; 6 unreadable or malformed
    /// file; 2 usage errors.
    #[command(after_help = verify::EXAMPLES)]
    Verify(verify::VerifyArgs),
    /// Improve a construction with an optimizer program under a budget.
    #[command(after_help = optimize::EXAMPLES)]
    Optimize(optimize::OptimizeArgs),
    /// Convert a construction between JSON, .npy and text, bit for bit.
    #[command(after_help = convert::EXAMPLES)]
    Convert(convert::ConvertArgs),
    /// Talk to the EinsteinArena server: `pull` a live leaderboard (re-verified), `submit` a
    /// construction (exact pre-checks against the live rules), `status`, `leaderboard`.
    #[command(after_help = arena::EXAMPLES)]
    Arena(arena::ArenaArgs),
    /// From a live leaderboard to a verified submission: pull, freeze into a suite, search with
    /// discoveries promoted, offer each new best to the arena (sent only with --submit).
    ///
    /// A construction the ledger records as possibly sent (milo stopped mid-send, or the request
    /// failed after it went out) is never sent again on its own, not on a resume either: the
    /// campaign says what to check and run.
    ///
    /// Exit codes: 0 the search finished and its best was sent, reported, or not worth offering;
    /// 12 the search finished but offering or sending its best failed (a refused key, a timeout,
    /// a rate limit past --max-wait, a submission held back as possibly sent): the last line says
    /// why and what to run; 4 the server failed while the campaign was being set up; 2 usage
    /// errors; 6 unreadable files; 7 write failures; 8 another milo holds the run.
    #[command(after_help = campaign::EXAMPLES)]
    Campaign(Box<campaign::CampaignArgs>),
    /// Task suites: `freeze` construction files into a suite, `show` its tasks and start scores.
    #[command(after_help = suite::EXAMPLES)]
    Suite(suite::SuiteArgs),
    /// The MILO search: evolve optimizer-writing harnesses across islands on a task suite.
    #[command(after_help = evolve::EXAMPLES)]
    Evolve(evolve::EvolveArgs),
    /// Show a search run's lineage: every harness tried, every orchestrator move and failure.
    #[command(after_help = lineage::EXAMPLES)]
    Lineage(lineage::LineageArgs),
    /// Benchmark search methods against each other on a suite at equal CPU budget.
    #[command(after_help = bench::EXAMPLES)]
    Bench(bench::BenchArgs),
    /// Write an HTML report with figures of a search run or a benchmark directory.
    #[command(after_help = report::EXAMPLES)]
    Report(report::ReportArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(after_help = completions::EXAMPLES)]
    Completions(completions::CompletionsArgs),
    /// Run one spooled attempt task and write its result, or claim a batch's tasks as a pilot
    /// (what a Slurm job runs; not for hands).
    #[command(hide = true, after_help = worker::EXAMPLES)]
    Worker(worker::WorkerArgs),
}

/// Parses the command line, runs the command, and returns the process exit code.
pub fn run() -> i32 {
    execute(Cli::parse())
}

/// Runs a parsed command line and returns the process exit code (errors are printed on one line
/// of standard error).
pub fn execute(cli: Cli) -> i32 {
    QUIET.store(cli.quiet, Ordering::Relaxed);
    // The arena key, when the environment holds one, is a secret in use for every command (a
    // model run by `evolve` may read the environment and echo it).
    crate::secrets::remember_variable(crate::arena::api_key::KEY_VARIABLE);
    let outcome = match cli.command {
        Command::Problems(args) => problems::run(&args),
        Command::Verify(args) => verify::run(&args),
        Command::Optimize(args) => optimize::run(&args),
        Command::Convert(args) => convert::run(&args),
        Command::Completions(args) => completions::run(&args),
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

/// Writes one line on standard output (the body of [`out!`]), scrubbed of the secrets in use; a
/// failure is a [`MiloError::Write`] on standard output.
fn write_line(args: std::fmt::Arguments) -> Result<()> {
    let line = args.to_string();
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(crate::secrets::scrub(&line).as_bytes())
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

/// Prints an error on one line of standard error (scrubbed of the secrets in use, then
/// [`clipped`](crate::error::clipped) to [`LINE_BYTES`](crate::error::LINE_BYTES), whatever
/// input it quotes) and returns its exit code; a standard error that cannot take it drops it.
fn report(err: &MiloError) -> i32 {
    let message = err.to_string();
    let message = crate::secrets::scrub(&message);
    say!(
        "milo: {}",
        crate::error::clipped(&message, crate::error::LINE_BYTES)
    );
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every command and subcommand, with its path of names (`milo arena pull`).
    fn commands(command: &clap::Command, path: String, out: &mut Vec<(String, clap::Command)>) {
        out.push((path.clone(), command.clone()));
        for sub in command.get_subcommands() {
            commands(sub, format!("{path} {}", sub.get_name()), out);
        }
    }

    /// The `milo …` invocations of an examples block: continuation lines joined, a trailing
    /// comment and anything after a shell operator (`|`, `>`, `<`, `&&`, `;`) cut.
    fn invocations(examples: &str) -> Vec<Vec<String>> {
        examples
            .replace("\\\n", " ")
            .lines()
            .filter_map(|line| line.find("milo ").map(|at| &line[at..]))
            .map(|line| {
                let line = line.split(" #").next().unwrap_or(line);
                let line = line
                    .split(['|', '>', '<', ';'])
                    .next()
                    .unwrap_or(line)
                    .split("&&")
                    .next()
                    .unwrap_or(line);
                line.split_whitespace().map(str::to_string).collect()
            })
            .collect()
    }

    #[test]
    fn every_command_has_examples_that_parse() {
        let mut all = Vec::new();
        commands(&Cli::command(), "milo".into(), &mut all);
        assert!(all.len() > 15, "{} commands", all.len());
        for (path, command) in &all {
            let help = command
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            assert!(help.starts_with("Examples"), "{path}: no examples");
            let runs = invocations(&help);
            assert!(!runs.is_empty(), "{path}: no `milo` line in {help}");
            for words in runs {
                if let Err(e) = Cli::try_parse_from(&words) {
                    panic!("{path}: example {words:?} does not parse: {e}");
                }
            }
        }
    }

    #[test]
    fn quiet_is_global_and_short() {
        for args in [
            ["milo", "-q", "problems"],
            ["milo", "problems", "-q"],
            ["milo", "problems", "--quiet"],
        ] {
            assert!(Cli::try_parse_from(args).unwrap().quiet, "{args:?}");
        }
        assert!(!Cli::try_parse_from(["milo", "problems"]).unwrap().quiet);
    }
}
