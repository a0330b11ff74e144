//! `milo arena pull SLUG`: save a problem's live leaderboard, each entry re-verified exactly.

use crate::arena::client::{DEFAULT_BASE_URL, DEFAULT_TIMEOUT, MAX_LIMIT};
use crate::arena::pull::{Flag, PullSummary, RELATIVE_TOLERANCE, SUMMARY_FILE};
use crate::arena::{pull, ArenaClient, PullRequest};
use crate::error::Result;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Arguments of `milo arena`.
#[derive(clap::Args, Debug)]
pub struct ArenaArgs {
    #[command(subcommand)]
    command: ArenaCommand,
}

#[derive(clap::Subcommand, Debug)]
enum ArenaCommand {
    /// Save a problem's best entries as construction files with provenance, each re-verified
    /// exactly; entries that are invalid or whose arena score disagrees with ours are flagged.
    ///
    /// Exit codes: 0 all entries valid and agreeing; 3 some entry invalid (saved anyway);
    /// 5 some arena score disagrees by more than 1e-12 relative; 4 the server could not be
    /// reached in time or gave an unusable answer; 2 usage errors (unknown slug, a non-empty
    /// target without --force). On any error nothing is left at the target.
    Pull(PullArgs),
}

/// Arguments of `milo arena pull`.
#[derive(clap::Args, Debug)]
pub struct PullArgs {
    /// Problem slug (see `milo problems`).
    slug: String,
    /// How many of the best entries to pull.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=MAX_LIMIT as u64))]
    limit: u64,
    /// The arena server.
    #[arg(long, default_value = DEFAULT_BASE_URL)]
    base_url: String,
    /// Directory to create [default: arena/SLUG under the current directory].
    #[arg(long, value_name = "DIR")]
    into: Option<PathBuf>,
    /// Seconds allowed to connect, and for each read or write on the connection.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_TIMEOUT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    timeout: u64,
    /// Replace the target directory if it exists and is not empty.
    #[arg(long)]
    force: bool,
    /// Print the summary (the content of PULL.json plus `directory`) as one JSON object.
    #[arg(long)]
    json: bool,
}

/// Runs `milo arena`.
pub fn run(args: &ArenaArgs) -> Result<i32> {
    match &args.command {
        ArenaCommand::Pull(args) => run_pull(args),
    }
}

fn run_pull(args: &PullArgs) -> Result<i32> {
    let client = ArenaClient::new(&args.base_url, Duration::from_secs(args.timeout))?;
    let into = args
        .into
        .clone()
        .unwrap_or_else(|| Path::new("arena").join(&args.slug));
    let request = PullRequest {
        slug: args.slug.clone(),
        limit: args.limit as usize,
        into: into.clone(),
        force: args.force,
    };
    let summary = pull(&client, &request)?;
    if args.json {
        let mut value = serde_json::to_value(&summary).expect("the summary serializes");
        value["directory"] = serde_json::json!(into);
        super::print_json(&value);
    } else {
        print_table(&summary, &into);
    }
    report_flags(&summary);
    Ok(summary.exit_code())
}

fn print_table(summary: &PullSummary, into: &Path) {
    let agent_width = summary
        .entries
        .iter()
        .map(|e| e.provenance.agent.chars().count())
        .max()
        .unwrap_or(0)
        .max("agent".len());
    println!(
        "{:>4}  {:<agent_width$}  {:<24}  {:<46}  flags",
        "rank", "agent", "arena score", "our exact score"
    );
    for entry in &summary.entries {
        let p = &entry.provenance;
        println!(
            "{:>4}  {:<agent_width$}  {:<24}  {:<46}  {}",
            p.rank,
            p.agent,
            format!("{:?}", p.arena_score),
            p.score_exact.as_deref().unwrap_or("—"),
            flag_text(&p.flags)
        );
    }
    println!(
        "{} entries of {} from {} saved in {} (see {SUMMARY_FILE})",
        summary.counts.entries,
        summary.problem.slug,
        summary.base_url,
        into.display()
    );
}

fn flag_text(flags: &[Flag]) -> String {
    if flags.is_empty() {
        return "-".into();
    }
    let words: Vec<&str> = flags
        .iter()
        .map(|f| match f {
            Flag::Invalid => "INVALID",
            Flag::ScoreMismatch => "SCORE-MISMATCH",
        })
        .collect();
    words.join(",")
}

/// One line on standard error per flagged entry, and a closing count.
fn report_flags(summary: &PullSummary) {
    for entry in &summary.entries {
        let p = &entry.provenance;
        if let Some(violation) = &p.violation {
            eprintln!(
                "milo: rank {} ({}) is invalid, saved for inspection: {violation}",
                p.rank, p.file
            );
        }
        if p.flags.contains(&Flag::ScoreMismatch) {
            eprintln!(
                "milo: rank {} ({}): arena score {:?} differs from our exact score {} by {} relative (tolerance {RELATIVE_TOLERANCE:e})",
                p.rank,
                p.file,
                p.arena_score,
                p.score_exact.as_deref().unwrap_or("?"),
                p.relative_difference
                    .map_or_else(|| "an undefined amount".to_string(), |r| format!("{r:.3e}"))
            );
        }
    }
    let c = summary.counts;
    if c.invalid + c.score_mismatch > 0 {
        eprintln!(
            "milo: flagged: {} invalid, {} score mismatch, of {} entries",
            c.invalid, c.score_mismatch, c.entries
        );
    }
}
