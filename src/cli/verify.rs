//! `milo verify PROBLEM FILE`: validity, float64 and exact scores, and an optional rival.

use crate::construction::{read_values, STDIN_ARGUMENT, STDIN_NAME};
use crate::error::{
    read_error, MiloError, Result, Violation, EXIT_INVALID, EXIT_NOT_BETTER, EXIT_OK,
};
use crate::exact::rational::{decimal_of_f64, decimal_string, parse_decimal, SCORE_DIGITS};
use crate::problems::{by_slug, Problem};
use crate::verify::{
    compare, compare_with_arena_leader, verify, Comparison, Mode, Options, Verification,
};
use num_rational::BigRational;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Examples in `milo verify --help`.
pub const EXAMPLES: &str = "Examples:
  milo verify first-autocorrelation-inequality best.json
  milo verify third-autocorrelation-inequality run.npy --json
  python3 make.py | milo verify erdos-min-overlap -          # read standard input
  milo verify first-autocorrelation-inequality mine.json --against theirs.json && echo better
  milo verify first-autocorrelation-inequality mine.txt --against 1.5029 -q; echo $?   # 10: not better
  milo verify erdos-min-overlap mine.json --against arena     # the #1 in problems/*.toml";

/// Arguments of `milo verify`.
#[derive(clap::Args, Debug)]
pub struct VerifyArgs {
    /// Problem slug (see `milo problems`) or its first word (`erdos`, `first`, `second`, `third`).
    #[arg(value_parser = super::problem_names())]
    problem: String,
    /// Construction: JSON ({"values": [...]}, {"data": {"values": [...]}} or a bare array),
    /// .npy (1-D), or text (np.savetxt), optionally gzipped; `-` reads standard input.
    file: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Which scores to compute.
    #[arg(long, value_enum, default_value_t = Mode::Both)]
    mode: Mode,
    /// A rival construction file (any format FILE may be; `-` for standard input), a score
    /// value, or `arena` (the arena's current #1 as `problems/<slug>.toml` records it); reports
    /// whether FILE beats it by the problem's min_improvement, decided on exact values, and
    /// exits 10 when it does not.
    #[arg(long, value_name = "FILE_OR_VALUE")]
    against: Option<String>,
    /// Score arrays longer than the arena accepts instead of rejecting them.
    #[arg(long)]
    allow_oversize: bool,
}

/// Runs `milo verify`.
pub fn run(args: &VerifyArgs) -> Result<i32> {
    let problem = by_slug(&args.problem)?;
    let problem = problem.as_ref();
    let options = Options {
        mode: args.mode,
        allow_oversize: args.allow_oversize,
    };
    // A rival is scored exactly, so --against forces the exact score.
    let options = if args.against.is_some() && options.mode == Mode::Fast {
        Options {
            mode: Mode::Both,
            ..options
        }
    } else {
        options
    };
    if args.file == Path::new(STDIN_ARGUMENT) && args.against.as_deref() == Some(STDIN_ARGUMENT) {
        return Err(MiloError::Usage(
            "FILE and --against cannot both be `-`: standard input holds one construction".into(),
        ));
    }
    let started = Instant::now();
    let values = read_for(problem, &args.file);
    let parse_seconds = started.elapsed().as_secs_f64();
    let outcome =
        values.and_then(|values| verify(problem, &values, options).map_err(MiloError::Invalid));
    let mut verification = match outcome {
        Ok(v) => v,
        Err(MiloError::Invalid(violation)) => return invalid(args, &violation),
        Err(other) => return Err(other),
    };
    verification.timings.parse_seconds = parse_seconds;
    let rival = match &args.against {
        Some(spec) => Some(rival_score(problem, spec, options)?),
        None => None,
    };
    let exact = verification.exact.as_ref();
    let comparison = exact
        .zip(rival.as_ref())
        .map(|(score, (value, label))| compare(problem, score, value, label));
    let leader = exact.and_then(|score| compare_with_arena_leader(problem, score));
    let not_better = comparison.as_ref().filter(|c| !c.beats).map(|c| {
        format!(
            "milo: {} does not beat {} by min_improvement {:e} (improvement {})",
            shown_name(&args.file),
            c.against,
            c.min_improvement,
            c.improvement
        )
    });
    if args.json {
        print_json_report(problem, &verification, comparison, leader)?;
    } else {
        // With `--against arena` the rival is the leader: one line says it.
        let leader = leader.filter(|_| args.against.as_deref() != Some(AGAINST_ARENA));
        print_text_report(problem, &args.file, &verification, comparison, leader)?;
    }
    match not_better {
        Some(note) => {
            note!("{note}");
            Ok(EXIT_NOT_BETTER)
        }
        None => Ok(EXIT_OK),
    }
}

/// A construction's name in messages: its path, or `standard input` for `-`.
fn shown_name(path: &Path) -> String {
    if path == Path::new(STDIN_ARGUMENT) {
        STDIN_NAME.to_string()
    } else {
        path.display().to_string()
    }
}

/// Reads a construction; violations found while reading are attributed to the problem.
fn read_for(problem: &dyn Problem, path: &Path) -> Result<Vec<f64>> {
    read_values(path).map_err(|e| match e {
        MiloError::Invalid(mut v) => {
            v.problem = problem.slug().to_string();
            MiloError::Invalid(v)
        }
        other => other,
    })
}

/// The `--against` word for the arena's current #1 as the problem file records it.
const AGAINST_ARENA: &str = "arena";

/// Exact score of the rival: a decimal value, the problem file's arena #1, or a construction
/// file verified like FILE.
fn rival_score(
    problem: &dyn Problem,
    spec: &str,
    options: Options,
) -> Result<(BigRational, String)> {
    if let Some(value) = parse_decimal(spec) {
        return Ok((value, format!("value {spec}")));
    }
    if spec == AGAINST_ARENA {
        let Some(first) = problem.spec().arena_first() else {
            return Err(MiloError::Usage(format!(
                "--against arena: problems/{}.toml records no arena #1",
                problem.slug()
            )));
        };
        let label = format!("{} {} ({})", first.holder, first.value, first.date);
        return Ok((decimal_of_f64(first.value), label));
    }
    let path = Path::new(spec);
    // A missing rival file is a missing input, as a missing FILE is (exit 6).
    if spec != STDIN_ARGUMENT && !path.exists() {
        return Err(read_error(path)(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "--against is neither a number nor an existing file",
        )));
    }
    let values = read_for(problem, path)?;
    let rival = verify(
        problem,
        &values,
        Options {
            mode: Mode::Exact,
            ..options
        },
    )
    .map_err(|v| MiloError::Usage(format!("--against {spec} is not a valid construction: {v}")))?;
    Ok((rival.exact.expect("exact mode"), format!("file {spec}")))
}

fn invalid(args: &VerifyArgs, violation: &Violation) -> Result<i32> {
    if args.json {
        out!(
            "{}",
            json!({
                "problem": args.problem,
                "file": args.file,
                "valid": false,
                "error": violation.to_string(),
                "rule": violation.rule,
                "index": violation.index,
                "value": violation.value,
            })
        )?;
    } else {
        out!("INVALID {}", args.file.display())?;
    }
    say!("milo: invalid construction: {violation}");
    Ok(EXIT_INVALID)
}

/// An exact decimal rounded to 6 significant digits for the text report (`--json` keeps 40).
fn short_decimal(text: &str) -> String {
    match text.parse::<f64>() {
        Ok(value) => format!("{value:.5e}"),
        Err(_) => text.to_string(),
    }
}

fn exact_text(v: &Verification) -> Option<String> {
    v.exact.as_ref().map(|q| decimal_string(q, SCORE_DIGITS))
}

fn print_json_report(
    problem: &dyn Problem,
    v: &Verification,
    comparison: Option<Comparison>,
    leader: Option<Comparison>,
) -> Result<()> {
    let report: Value = json!({
        "problem": problem.slug(),
        "n": v.n,
        "valid": true,
        "direction": problem.spec().direction,
        "min_improvement": format!("{:e}", problem.spec().min_improvement),
        "score_f64": v.fast.map(|f| f.value),
        "error_bound": v.fast.map(|f| f.error_bound),
        "score_exact": exact_text(v),
        "abs_diff": v.abs_diff(),
        "against": comparison,
        "arena_leader": leader,
        "timings": v.timings,
    });
    out!("{report}")
}

fn print_text_report(
    problem: &dyn Problem,
    file: &Path,
    v: &Verification,
    comparison: Option<Comparison>,
    leader: Option<Comparison>,
) -> Result<()> {
    out!("problem       {}", problem.slug())?;
    out!("file          {}", shown_name(file))?;
    out!("n             {}", v.n)?;
    out!("valid         yes")?;
    if let Some(fast) = v.fast {
        out!(
            "score f64     {:?}  (a-priori error bound {:.2e})",
            fast.value,
            fast.error_bound
        )?;
    }
    if let Some(exact) = exact_text(v) {
        out!("score exact   {exact}")?;
    }
    if let Some(diff) = v.abs_diff() {
        out!("|f64 − exact| {diff:.3e}")?;
    }
    for c in comparison.iter().chain(leader.iter()) {
        out!(
            "vs {}: {} — improvement {} (needs ≥ {:e}): {}",
            c.against,
            c.against_score,
            short_decimal(&c.improvement),
            c.min_improvement,
            if c.beats {
                "BEATS it"
            } else {
                "does not beat it"
            }
        )?;
    }
    out!(
        "time          parse {:.3}s, check {:.3}s, fast {:.3}s, exact {:.3}s",
        v.timings.parse_seconds,
        v.timings.check_seconds,
        v.timings.fast_seconds,
        v.timings.exact_seconds
    )
}
