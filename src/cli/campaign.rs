//! `milo campaign SLUG`: pull the live leaderboard, freeze it into a suite, run the MILO search
//! with discoveries promoted, and offer each new best to the arena (sent only with `--submit`).

use super::arena::{print_check, SendArgs, ServerArgs};
use super::evolve::{summarise, AdmissionArgs};
use super::headings;
use super::search_status::SearchStatus;
use crate::arena::ApiKey;
use crate::bounds;
use crate::campaign::{Campaign, CampaignSettings, Offer, SuitePlan};
use crate::cancel::CancelToken;
use crate::error::{MiloError, Result, EXIT_OK, EXIT_SUBMISSION_FAILED};
use crate::report::write_report;
use crate::search::evaluation::{Improvement, Quality};
use crate::search::evolve::{default_cost_measure, Search, SearchObserver};
use crate::search::lineage::{
    EventRecord, FailureRecord, NodeRecord, RunConfig, DEFAULT_TASKS_PER_ROUND,
};
use crate::search::parts::{EXECUTORS, LINEAGE_STORES, ORCHESTRATORS};
use crate::search::state::SearchState;
use crate::search::{archive, mutators};
use crate::suite::{Suite, TaskBudget};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Examples in `milo campaign --help`.
pub const EXAMPLES: &str = "Examples:
  milo campaign first-autocorrelation-inequality --hours 2 --jobs 2
  milo campaign third-autocorrelation-inequality --rounds 3 --limit 5 --agent my-agent --submit
  milo campaign --resume campaigns/first-autocorrelation-inequality-2026-12-03T20-00-00Z";

/// Arguments of `milo campaign`.
#[derive(clap::Args, Debug)]
pub struct CampaignArgs {
    /// Problem slug (see `milo problems`); not needed with --resume.
    #[arg(help_heading = headings::SEARCH, required_unless_present = "resume")]
    slug: Option<String>,
    /// The campaign directory (default: campaigns/SLUG-<UTC time>).
    #[arg(help_heading = headings::OUTPUT, long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Print every node, move and round summary on the terminal too (they always go to the
    /// run's milo.log).
    #[arg(help_heading = headings::OUTPUT, short, long)]
    verbose: bool,
    /// Resume the campaign in DIR (its settings, the server and agent among them, are read from
    /// DIR/campaign.json; --jobs and --timeout apply).
    #[arg(help_heading = headings::SEARCH, long, value_name = "DIR", conflicts_with_all = ["slug", "dir", "limit", "programs", "seeds", "validation_seeds", "task_evaluations", "task_seconds", "islands", "seed", "tasks_per_round", "rounds", "hours", "admission", "race_children", "race_block", "race_cap", "race_alpha", "race_futility"])]
    resume: Option<PathBuf>,
    /// Wall-clock limit in hours: at it the step in flight is cancelled (--resume redoes it).
    #[arg(help_heading = headings::BUDGETS, long, conflicts_with = "rounds")]
    hours: Option<f64>,
    /// Rounds to run (default 4 unless --hours is given).
    #[arg(help_heading = headings::BUDGETS, long)]
    rounds: Option<usize>,
    /// Live top entries to pull as starts.
    #[arg(help_heading = headings::SEARCH, long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=100))]
    limit: u64,
    /// Parent optimizer programs (default: the problem's default program).
    #[arg(help_heading = headings::SEARCH, long, num_args = 1..)]
    programs: Vec<PathBuf>,
    /// Seeds of the search tasks, comma-separated.
    #[arg(help_heading = headings::SEARCH, long, value_delimiter = ',', default_values_t = [1, 2])]
    seeds: Vec<u64>,
    /// Seeds held out for validation (on the same starts), comma-separated.
    #[arg(help_heading = headings::SEARCH, long, value_delimiter = ',', default_values_t = [101])]
    validation_seeds: Vec<u64>,
    /// Budget of each task in objective evaluations (deterministic).
    #[arg(help_heading = headings::BUDGETS, long, value_name = "N", default_value_t = 20_000)]
    task_evaluations: u64,
    /// Also a wall-clock budget per task, in seconds.
    #[arg(help_heading = headings::BUDGETS, long, value_name = "SECONDS")]
    task_seconds: Option<f64>,
    /// Islands at the start.
    #[arg(help_heading = headings::SEARCH, long, default_value_t = 3, value_parser = super::count::<usize>(bounds::ISLANDS))]
    islands: usize,
    /// Search tasks per harness per round.
    #[arg(help_heading = headings::BUDGETS, long, value_name = "K", default_value_t = DEFAULT_TASKS_PER_ROUND, value_parser = super::count::<usize>(bounds::TASKS_PER_ROUND))]
    tasks_per_round: usize,
    #[command(flatten)]
    admission: AdmissionArgs,
    /// Seed of every random choice.
    #[arg(help_heading = headings::SEARCH, long, default_value_t = 1)]
    seed: u64,
    /// Threads for evaluating tasks in parallel.
    #[arg(help_heading = headings::BUDGETS, long, default_value_t = 1, value_parser = super::count::<usize>(bounds::JOBS))]
    jobs: usize,
    /// Send a construction that the live rules make the new #1 (needs the API key); without it
    /// the campaign only says what it would send.
    #[arg(help_heading = headings::ARENA, long)]
    submit: bool,
    #[command(flatten, next_help_heading = headings::ARENA)]
    server: ServerArgs,
    #[command(flatten, next_help_heading = headings::ARENA)]
    sending: SendArgs,
}

/// Runs `milo campaign`.
pub fn run(args: &CampaignArgs) -> Result<i32> {
    // The search's token: Ctrl-C and --hours cancel it, and with it the offers made during the
    // search (their requests in flight and their rate-limit waits). The final offer, made after
    // --hours, stops on Ctrl-C only; after Ctrl-C none is made.
    let cancel = CancelToken::new();
    let interrupt = CancelToken::new();
    super::cancel_on_ctrl_c_all(&[&cancel, &interrupt]);
    let timeout = Duration::from_secs(args.server.timeout);
    let (mut campaign, mut search) = match &args.resume {
        Some(dir) => {
            let settings = crate::campaign::read_settings(dir)?;
            let key = key_if(settings.submit)?;
            let deadline = Duration::from_secs(args.server.deadline);
            let campaign = Campaign::open(dir, timeout, deadline, key)?;
            let search = Search::resume(&campaign.run_dir(), args.jobs, cancel.clone(), false)?;
            (campaign, search)
        }
        None => create(args, cancel.clone())?,
    };
    note!(
        "milo campaign: {} against {} in {} ({}); --resume {} continues",
        campaign.settings().slug,
        campaign.settings().base_url,
        campaign.dir().display(),
        if campaign.settings().submit {
            "a new #1 is submitted"
        } else {
            "a new #1 is reported, not sent (--submit sends it)"
        },
        campaign.dir().display()
    );
    // The last offer that failed, unless a later one came to something.
    let mut failed = None;
    let stop = {
        let mut observer = CampaignObserver {
            status: SearchStatus::new(&search, args.verbose, false),
            campaign: &mut campaign,
            cancel: &cancel,
            failed: &mut failed,
        };
        search.run(&mut observer)?
    };
    summarise(&search, stop)?;
    if interrupt.is_cancelled() {
        note!(
            "milo campaign: interrupted; the best was not offered (`milo campaign --resume {}` \
             offers it)",
            campaign.dir().display()
        );
    } else {
        let last = campaign.offer(&interrupt);
        report_offer(&last)?;
        settle(&mut failed, last);
    }
    let index = write_report(campaign.dir(), &campaign.dir().join("report"))?;
    out!(
        "campaign report: {}; submissions: milo arena status --ledger {}",
        index.display(),
        campaign.ledger().display()
    )?;
    let Some(error) = failed else {
        return Ok(EXIT_OK);
    };
    let what_to_run = match error {
        // Its message says what to check and run.
        MiloError::HeldBack(_) => String::new(),
        _ => format!(
            "; `milo arena status --ledger {}` lists what was sent, and `milo campaign --resume {}` \
             offers the best again",
            campaign.ledger().display(),
            campaign.dir().display()
        ),
    };
    say!(
        "milo campaign: {}, but its best was not submitted (exit {EXIT_SUBMISSION_FAILED}): \
         {}{what_to_run}",
        ended(interrupt.is_cancelled()),
        crate::secrets::scrub(&error.to_string())
    );
    Ok(EXIT_SUBMISSION_FAILED)
}

/// How the search ended, for the last line: stopped by Ctrl-C, or finished (its rounds, its
/// `--hours` or its budget spent).
fn ended(interrupted: bool) -> &'static str {
    if interrupted {
        "the search was stopped (Ctrl-C)"
    } else {
        "the search finished"
    }
}

/// Keeps in `failed` the error of an offer that failed; an offer that came to something (checked,
/// reported or sent) supersedes an earlier failure, and one that did not ask the server keeps it.
fn settle(failed: &mut Option<MiloError>, offer: Result<Offer>) {
    match offer {
        Ok(Offer::NotYet) => {}
        Ok(_) => *failed = None,
        Err(e) => *failed = Some(e),
    }
}

/// The key, read only when the campaign submits.
fn key_if(submit: bool) -> Result<Option<ApiKey>> {
    if submit {
        ApiKey::load().map(Some)
    } else {
        Ok(None)
    }
}

fn create(args: &CampaignArgs, cancel: CancelToken) -> Result<(Campaign, Search)> {
    let slug = args
        .slug
        .clone()
        .expect("clap requires a slug without --resume");
    super::evolve::check_hours(args.hours)?;
    let budget = TaskBudget {
        seconds: args.task_seconds,
        evaluations: Some(args.task_evaluations),
    };
    budget.check().map_err(|message| {
        MiloError::Usage(format!("{message} (--task-evaluations, --task-seconds)"))
    })?;
    let key = key_if(args.submit)?;
    // Ctrl-C abandons the pull in flight.
    let client = args.server.client()?.cancelled_by(&cancel);
    let dir = args.dir.clone().unwrap_or_else(|| {
        let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        PathBuf::from("campaigns").join(format!("{slug}-{}", now.replace(':', "-")))
    });
    let settings = CampaignSettings {
        slug,
        base_url: client.base_url().to_string(),
        agent: args.sending.agent.clone(),
        submit: args.submit,
        max_wait: args.sending.max_wait,
        started_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        pulled_leader: None,
    };
    let plan = SuitePlan {
        limit: args.limit as usize,
        programs: args.programs.clone(),
        seeds: args.seeds.clone(),
        validation_seeds: args.validation_seeds.clone(),
        budget,
    };
    let (campaign, suite_path) = Campaign::create(&dir, settings, &plan, client, key)?;
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
        patience: 3,
        quality: Quality::Best,
        cost: default_cost_measure(&suite, "builtin"),
        attempts: 1,
        writer: "builtin".into(),
        mutators: mutators::NAMES.map(String::from).to_vec(),
        orchestrator: ORCHESTRATORS[0].into(),
        lineage_store: LINEAGE_STORES[0].into(),
        executor: EXECUTORS[0].into(),
        slurm: None,
        cpu_seconds: None,
        components: Default::default(),
        tasks_per_round: args.tasks_per_round,
        task_evaluations: None,
        promote_discoveries: true,
        agents: None,
        admission: args.admission.policy()?,
        archive_population: archive::PROGRAM_EVOLUTION_POPULATION,
        seed_harnesses: vec![],
    };
    let search = Search::start(&campaign.run_dir(), config, args.jobs, cancel)?;
    Ok((campaign, search))
}

/// The search's status, plus an offer to the arena at each round's end.
struct CampaignObserver<'a> {
    status: SearchStatus,
    campaign: &'a mut Campaign,
    cancel: &'a CancelToken,
    failed: &'a mut Option<MiloError>,
}

impl SearchObserver for CampaignObserver<'_> {
    fn node(&mut self, state: &SearchState, node: &NodeRecord) {
        self.status.node(state, node);
    }

    fn event(&mut self, event: &EventRecord) {
        self.status.event(event);
    }

    fn failure(&mut self, failure: &FailureRecord) {
        self.status.failure(failure);
    }

    fn discovery(&mut self, path: &Path, discovery: &Improvement) {
        self.status.discovery(path, discovery);
    }

    fn round_end(&mut self, state: &SearchState, round: usize) {
        self.status.round_end(state, round);
        // A failed offer (the server down, a rate limit past --max-wait) does not stop the
        // search: it is said, and the next round offers again.
        // Standard output gone: the search goes on; the end says it.
        let offer = self.campaign.offer(self.cancel);
        let _ = self.status.suspend(|| report_offer(&offer));
        if let Err(e) = &offer {
            say!(
                "milo campaign: offering the best to the arena failed: {}",
                crate::secrets::scrub(&e.to_string())
            );
        }
        settle(self.failed, offer);
    }
}

/// Says what an offer came to (a failure is said by the caller).
fn report_offer(offer: &Result<Offer>) -> Result<()> {
    match offer {
        Ok(Offer::NotYet) => {}
        Ok(Offer::NotFirst(checked)) => {
            out!("campaign: the run's best, checked against the live leaderboard:")?;
            print_check(checked)?;
        }
        Ok(Offer::WouldSubmit(checked)) => {
            print_check(checked)?;
            out!(
                "campaign: not sent (submitting is off, or this construction was sent already); \
                 send it with `milo arena submit {} {}`",
                checked.problem.slug,
                checked.file.display()
            )?;
        }
        Ok(Offer::Submitted(checked, sent)) => {
            print_check(checked)?;
            out!(
                "campaign: SUBMITTED {} as solution {} (status {})",
                checked.file.display(),
                sent.id,
                sent.status.as_deref().unwrap_or("unknown")
            )?;
        }
        Err(_) => {}
    }
    Ok(())
}
