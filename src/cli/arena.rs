//! `milo arena pull SLUG`: save a problem's live leaderboard, each entry re-verified exactly;
//! `milo arena submit SLUG FILE`: check a construction against the live rules and send it;
//! `milo arena status [ID]`: follow submissions; `milo arena leaderboard SLUG`: the live board.

use crate::arena::client::{
    ArenaId, DEFAULT_BASE_URL, DEFAULT_DEADLINE, DEFAULT_TIMEOUT, MAX_LIMIT,
};
use crate::arena::ledger::{self, Tracked, DEFAULT_LEDGER};
use crate::arena::pull::{Flag, PullSummary, RELATIVE_TOLERANCE, SUMMARY_FILE};
use crate::arena::rules::Verdict;
use crate::arena::submit::{check, refresh, send, Checked, Overrides, Patience};
use crate::arena::{pull, ApiKey, ArenaClient, PullRequest};
use crate::bounded_read::{read_json_capped, SETTINGS_JSON};
use crate::cancel::CancelToken;
use crate::error::{Result, EXIT_OK, EXIT_WOULD_BE_DROPPED};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The environment variable naming the arena server.
const BASE_URL_VARIABLE: &str = "EINSTEIN_ARENA_BASE_URL";
/// The environment variable naming our agent on the arena.
const AGENT_VARIABLE: &str = "EINSTEIN_ARENA_AGENT";

/// The server and how long to wait for it: shared by every arena subcommand.
#[derive(clap::Args, Debug, Clone)]
pub struct ServerArgs {
    /// The arena server.
    #[arg(long, env = BASE_URL_VARIABLE, default_value = DEFAULT_BASE_URL)]
    pub base_url: String,
    /// Seconds allowed to connect, and for each read or write on the connection.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_TIMEOUT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub timeout: u64,
    /// Seconds allowed for one whole request (connecting, the answer and all of its body).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_DEADLINE.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub deadline: u64,
}

impl ServerArgs {
    /// A client of the server.
    pub fn client(&self) -> Result<ArenaClient> {
        ArenaClient::new(
            &self.base_url,
            Duration::from_secs(self.timeout),
            Duration::from_secs(self.deadline),
        )
    }
}

/// How a submission is sent: shared by `milo arena submit` and `milo campaign`.
#[derive(clap::Args, Debug, Clone)]
pub struct SendArgs {
    /// Our agent's name on the arena: tells a submission that improves our own entry from one
    /// the arena would discard.
    #[arg(long, env = AGENT_VARIABLE)]
    pub agent: Option<String>,
    /// Longest wall time, in seconds, spent retrying while rate-limited (HTTP 429) before giving
    /// up (at most 20 tries, at least 1 s apart).
    #[arg(long, value_name = "SECONDS", default_value_t = 900,
          value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub max_wait: u64,
}

/// Examples in `milo arena --help`.
pub const EXAMPLES: &str = "Examples:
  milo arena pull first-autocorrelation-inequality --limit 5
  milo arena leaderboard first-autocorrelation-inequality
  milo arena submit first-autocorrelation-inequality best.npy --dry-run
  milo arena status";

/// Examples in `milo arena pull --help`.
const PULL_EXAMPLES: &str = "Examples:
  milo arena pull first-autocorrelation-inequality
  milo arena pull erdos-min-overlap --limit 20 --into pulled/erdos --force --json";

/// Examples in `milo arena submit --help`.
const SUBMIT_EXAMPLES: &str = "Examples:
  milo arena submit first-autocorrelation-inequality best.json --dry-run
  milo arena submit third-autocorrelation-inequality best.npy --agent my-agent";

/// Examples in `milo arena status --help`.
const STATUS_EXAMPLES: &str = "Examples:
  milo arena status
  milo arena status 123 --ledger camp/ledger.jsonl";

/// Examples in `milo arena leaderboard --help`.
const LEADERBOARD_EXAMPLES: &str = "Examples:
  milo arena leaderboard first-autocorrelation-inequality
  milo arena leaderboard first-autocorrelation-inequality --limit 20 --pulled camp/pull";

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
    #[command(after_help = PULL_EXAMPLES)]
    Pull(PullArgs),
    /// Check a construction against the live problem and leaderboard, on exact values, and send
    /// it (inline, or as a blob above 2 MB), recording it in the ledger.
    ///
    /// Says whether it would be the new #1 (beats the best by minImprovement), enter or improve
    /// our own entry at a rank, or be rejected or discarded — and refuses to send what the rules
    /// would drop unless --force. The key comes from EINSTEIN_ARENA_API_KEY or
    /// ~/.config/einsteinarena/credentials.json and is never written or printed.
    ///
    /// The ledger is written ahead: an intent before the first request, the outcome after. A
    /// construction the ledger records as sent to this server, or as possibly sent (an intent
    /// with no outcome, or a failure after the request went out: a timeout, a cut connection, a
    /// server error), is not sent again unless --send-again.
    ///
    /// Exit codes: 0 sent (or, with --dry-run, would be kept); 9 the rules would drop it, nothing
    /// sent; 11 the ledger records it as sent or possibly sent to this server, nothing sent; 3 the
    /// construction is invalid; 4 the server failed, refused the key or kept rate-limiting past
    /// --max-wait; 2 usage errors and unreadable files.
    #[command(after_help = SUBMIT_EXAMPLES)]
    Submit(SubmitArgs),
    /// Ask the arena for the status of the ledger's pending submissions (or of one ID), record
    /// what changed, and list every submission with its latest status.
    ///
    /// Only submissions recorded under the --base-url are asked; a pending one recorded under
    /// another server is listed with a note naming it. Unconfirmed submissions (possibly sent,
    /// with no answer recorded) are listed after the table, with what to check and run.
    #[command(after_help = STATUS_EXAMPLES)]
    Status(StatusArgs),
    /// The live leaderboard (each agent's best), beside our exact re-scores of the entries a
    /// `milo arena pull` saved.
    #[command(after_help = LEADERBOARD_EXAMPLES)]
    Leaderboard(LeaderboardArgs),
}

/// Arguments of `milo arena submit`.
#[derive(clap::Args, Debug)]
pub struct SubmitArgs {
    /// Problem slug (see `milo problems`).
    slug: String,
    /// The construction file: JSON, .npy or text, optionally gzipped.
    file: PathBuf,
    #[command(flatten)]
    server: ServerArgs,
    #[command(flatten)]
    sending: SendArgs,
    /// Send even when the rules would drop the submission (rejected or discarded). A campaign
    /// has no such flag: it sends only a construction the rules make the new #1.
    #[arg(long)]
    force: bool,
    /// The ledger to append to.
    #[arg(long, value_name = "FILE", default_value = DEFAULT_LEDGER)]
    ledger: PathBuf,
    /// Check everything and say what would be sent, but do not send. When the arena cannot be
    /// asked, the check is against the #1 that milo's problem file records, and says so.
    #[arg(long)]
    dry_run: bool,
    /// Send although the ledger records this construction as sent, or as possibly sent, to this
    /// server: only once the arena's site shows it never arrived.
    #[arg(long)]
    send_again: bool,
}

/// Arguments of `milo arena status`.
#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    /// One submission's id (default: every pending one in the ledger).
    id: Option<String>,
    #[command(flatten)]
    server: ServerArgs,
    /// The ledger to read and append to.
    #[arg(long, value_name = "FILE", default_value = DEFAULT_LEDGER)]
    ledger: PathBuf,
}

/// Arguments of `milo arena leaderboard`.
#[derive(clap::Args, Debug)]
pub struct LeaderboardArgs {
    /// Problem slug (see `milo problems`).
    slug: String,
    #[command(flatten)]
    server: ServerArgs,
    /// How many entries.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=MAX_LIMIT as u64))]
    limit: u64,
    /// A `milo arena pull` directory whose exact scores to show [default: arena/SLUG if present].
    #[arg(long, value_name = "DIR")]
    pulled: Option<PathBuf>,
}

/// Arguments of `milo arena pull`.
#[derive(clap::Args, Debug)]
pub struct PullArgs {
    /// Problem slug (see `milo problems`).
    slug: String,
    /// How many of the best entries to pull.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=MAX_LIMIT as u64))]
    limit: u64,
    #[command(flatten)]
    server: ServerArgs,
    /// Directory to create [default: arena/SLUG under the current directory].
    #[arg(long, value_name = "DIR")]
    into: Option<PathBuf>,
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
        ArenaCommand::Submit(args) => run_submit(args),
        ArenaCommand::Status(args) => run_status(args),
        ArenaCommand::Leaderboard(args) => run_leaderboard(args),
    }
}

fn run_submit(args: &SubmitArgs) -> Result<i32> {
    let client = args.server.client()?;
    // The key is read before any request, so a missing key fails before the network is used.
    let key = if args.dry_run {
        None
    } else {
        Some(ApiKey::load()?)
    };
    let checked = check(
        &client,
        &args.slug,
        &args.file,
        args.sending.agent.as_deref(),
        args.dry_run,
    )?;
    print_check(&checked)?;
    submit_checked(&client, &checked, key.as_ref(), args)
}

/// Sends a checked construction unless the rules would drop it (and `--force` is not given) or
/// the ledger holds it back; without a key (a dry run) only says what would be sent. Returns the
/// exit code.
fn submit_checked(
    client: &ArenaClient,
    checked: &Checked,
    key: Option<&ApiKey>,
    args: &SubmitArgs,
) -> Result<i32> {
    let (sending, ledger) = (&args.sending, &args.ledger);
    let kept = checked.assessment.verdict.kept();
    if !kept && !args.force {
        out!("not sent: the arena's rules would drop it (--force sends it anyway)")?;
        return Ok(EXIT_WOULD_BE_DROPPED);
    }
    let Some(key) = key else {
        out!(
            "dry run: would send {} bytes {} to {}",
            checked.payload.json.len(),
            checked.upload_kind(),
            client.base_url()
        )?;
        return Ok(if kept { EXIT_OK } else { EXIT_WOULD_BE_DROPPED });
    };
    // No Ctrl-C handler here: Ctrl-C ends the command at once, a request in flight included.
    let patience = Patience {
        max_wait: Duration::from_secs(sending.max_wait),
        cancel: &CancelToken::new(),
    };
    let overrides = Overrides {
        force: args.force,
        send_again: args.send_again,
    };
    let submitted = send(client, checked, key, &patience, overrides, ledger)?;
    out!(
        "sent ({}): solution id {}, status {}; recorded in {} (follow with `milo arena status {} --ledger {}`)",
        checked.upload_kind(),
        submitted.id,
        submitted.status.as_deref().unwrap_or("unknown"),
        ledger.display(),
        submitted.id,
        ledger.display()
    )?;
    Ok(EXIT_OK)
}

/// The check's verdict and the numbers behind it.
pub fn print_check(checked: &Checked) -> Result<()> {
    let a = &checked.assessment;
    out!(
        "{} ({} values, sha256 {}…)",
        checked.file.display(),
        checked.n,
        &checked.sha256[..16]
    )?;
    out!("our exact score   {}", a.score_exact)?;
    let first = if checked.offline {
        "#1 (offline)     "
    } else {
        "live #1          "
    };
    match &a.leader {
        Some((agent, score)) => out!(
            "{first} {score:?} ({agent}); improvement {} against minImprovement {}",
            a.improvement_over_leader.as_deref().unwrap_or("?"),
            a.min_improvement
        ),
        None => out!("{first} none (the leaderboard is empty)"),
    }?;
    if let Some(own) = a.own_score {
        out!("our own entry     {own:?}")?;
    }
    for note in &checked.notes {
        out!("note: {note}")?;
    }
    if a.too_close {
        out!(
            "note: the deciding margin is within 1e-12 relative: the arena's float64 evaluation may decide it the other way"
        )?;
    }
    match (&a.verdict, checked.offline) {
        (Verdict::Ranked { .. }, true) => out!(
            "verdict: would not be the new #1 (its rank on the live leaderboard is unknown offline)"
        ),
        (verdict, _) => out!("verdict: {}", verdict.describe()),
    }?;
    Ok(())
}

fn run_status(args: &StatusArgs) -> Result<i32> {
    let client = args.server.client()?;
    let only = args.id.as_ref().map(|id| match id.parse::<i64>() {
        Ok(n) => ArenaId::Number(n),
        Err(_) => ArenaId::Text(id.clone()),
    });
    let tracked = refresh(&client, &args.ledger, only.as_ref())?;
    let unconfirmed = match only {
        Some(_) => Vec::new(),
        None => ledger::unconfirmed(&ledger::read(&args.ledger)?),
    };
    if tracked.is_empty() && unconfirmed.is_empty() {
        out!("no submissions in {}", args.ledger.display())?;
        return Ok(EXIT_OK);
    }
    if !tracked.is_empty() {
        print_tracked(&tracked, client.base_url())?;
    }
    for u in &unconfirmed {
        out!(
            "unconfirmed: {} (sha256 {}…) for {}, sent {} to {}: {}; look for it among your \
             agent's submissions on the arena, and only if it never arrived send it with \
             `milo arena submit {} {} --base-url {} --ledger {} --send-again`",
            u.file.display(),
            u.sha256.get(..16).unwrap_or(&u.sha256),
            u.slug,
            u.at,
            u.base_url,
            clean(&u.why),
            u.slug,
            u.file.display(),
            u.base_url,
            args.ledger.display()
        )?;
    }
    Ok(EXIT_OK)
}

/// The table of tracked submissions; one recorded under another server than `asked`, and not
/// decided, gets a note saying it was not asked and how to ask it.
fn print_tracked(tracked: &[Tracked], asked: &str) -> Result<()> {
    out!(
        "{:>8}  {:<34}  {:<20}  {:<10}  {:<24}  our exact score",
        "id",
        "problem",
        "sent",
        "status",
        "arena score"
    )?;
    for t in tracked {
        let s = &t.submission;
        let score = t
            .latest
            .as_ref()
            .and_then(|l| l.score)
            .map_or("—".to_string(), |x| format!("{x:?}"));
        out!(
            "{:>8}  {:<34}  {:<20}  {:<10}  {:<24}  {}",
            s.solution_id
                .as_ref()
                .map(|i| i.to_string())
                .unwrap_or_default(),
            s.slug,
            s.at,
            t.status().unwrap_or("unknown"),
            score,
            s.assessment.score_exact
        )?;
        if let Some(error) = t.latest.as_ref().and_then(|l| l.error.as_ref()) {
            out!("          the arena says: {}", clean(error))?;
        }
        if s.base_url != asked && t.status().is_none_or(|status| status == "pending") {
            out!(
                "          recorded under {}, not the server asked ({asked}): its status was \
                 not asked; pass --base-url {} to ask it",
                s.base_url,
                s.base_url
            )?;
        }
    }
    Ok(())
}

fn run_leaderboard(args: &LeaderboardArgs) -> Result<i32> {
    let client = args.server.client()?;
    let served = client.problem_detail(&args.slug)?;
    let board = client.leaderboard(&served.id, args.limit as usize)?;
    let pulled_dir = args
        .pulled
        .clone()
        .unwrap_or_else(|| Path::new("arena").join(&args.slug));
    let pulled = read_pulled(&pulled_dir, args.pulled.is_some())?;
    out!(
        "{} ({}, minImprovement {}) at {}",
        served.slug,
        served
            .scoring
            .as_ref()
            .and_then(|s| s.as_str())
            .unwrap_or("?"),
        served
            .min_improvement()
            .map_or("?".to_string(), |m| m.to_string()),
        client.base_url()
    )?;
    let width = board
        .iter()
        .map(|e| clean(&e.agent_name).chars().count())
        .max()
        .unwrap_or(0)
        .max("agent".len());
    out!(
        "{:>4}  {:<width$}  {:<24}  our exact score (from {})",
        "rank",
        "agent",
        "arena score",
        pulled_dir.display()
    )?;
    for e in &board {
        let ours = pulled
            .iter()
            .find(|p| p.agent == e.agent_name && p.arena_score == e.best_score)
            .and_then(|p| p.score_exact.clone())
            .unwrap_or_else(|| "— (not pulled)".into());
        out!(
            "{:>4}  {:<width$}  {:<24}  {ours}",
            e.rank,
            clean(&e.agent_name),
            format!("{:?}", e.best_score)
        )?;
    }
    Ok(EXIT_OK)
}

/// One pulled entry of a `PULL.json`, as far as the leaderboard needs it.
#[derive(serde::Deserialize)]
struct PulledScore {
    agent: String,
    arena_score: f64,
    score_exact: Option<String>,
}

/// The entries of `dir/PULL.json`: none when it is absent (an error only when `required`).
fn read_pulled(dir: &Path, required: bool) -> Result<Vec<PulledScore>> {
    #[derive(serde::Deserialize)]
    struct Pull {
        entries: Vec<PulledScore>,
    }
    let path = dir.join(SUMMARY_FILE);
    let what = format!("{SUMMARY_FILE} of `milo arena pull`");
    match read_json_capped::<Pull>(&path, SETTINGS_JSON, &what) {
        Ok(pull) => Ok(pull.entries),
        Err(e) if e.is_missing_file() && !required => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// A server's text made safe for one terminal line: control and bidirectional characters dropped.
fn clean(text: &str) -> String {
    text.chars()
        .filter(|c| {
            !c.is_control()
                && !('\u{202a}'..='\u{202e}').contains(c)
                && !('\u{2066}'..='\u{2069}').contains(c)
        })
        .collect()
}

fn run_pull(args: &PullArgs) -> Result<i32> {
    let client = args.server.client()?;
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
        print_table(&summary, &into)?;
    }
    report_flags(&summary);
    Ok(summary.exit_code())
}

fn print_table(summary: &PullSummary, into: &Path) -> Result<()> {
    let agent_width = summary
        .entries
        .iter()
        .map(|e| clean(&e.provenance.agent).chars().count())
        .max()
        .unwrap_or(0)
        .max("agent".len());
    out!(
        "{:>4}  {:<agent_width$}  {:<24}  {:<46}  flags",
        "rank",
        "agent",
        "arena score",
        "our exact score"
    )?;
    for entry in &summary.entries {
        let p = &entry.provenance;
        out!(
            "{:>4}  {:<agent_width$}  {:<24}  {:<46}  {}",
            p.rank,
            clean(&p.agent),
            format!("{:?}", p.arena_score),
            p.score_exact.as_deref().unwrap_or("—"),
            flag_text(&p.flags)
        )?;
    }
    out!(
        "{} entries of {} from {} saved in {} (see {SUMMARY_FILE})",
        summary.counts.entries,
        summary.problem.slug,
        summary.base_url,
        into.display()
    )?;
    Ok(())
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
            say!(
                "milo: rank {} ({}) is invalid, saved for inspection: {violation}",
                p.rank,
                p.file
            );
        }
        if p.flags.contains(&Flag::ScoreMismatch) {
            say!(
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
        say!(
            "milo: flagged: {} invalid, {} score mismatch, of {} entries",
            c.invalid,
            c.score_mismatch,
            c.entries
        );
    }
}
