//! `milo campaign SLUG`: from a live leaderboard to a verified submission.
//!
//! A campaign directory holds:
//! - `campaign.json`: the [`CampaignSettings`] (problem, server, agent, whether to submit);
//! - `pull/`: the live top entries, pulled and re-verified (`milo arena pull`);
//! - `programs/`: the parent optimizer programs (the problem's default unless others are given);
//! - `suite.toml`: the valid pulled entries frozen into a suite (starts pinned by sha256);
//! - `run/`: the MILO search on that suite with discoveries promoted (resumable like any run);
//! - `ledger.jsonl`: every submission (its intent, written before sending, and its outcome) and
//!   status (`milo arena status --ledger DIR/ledger.jsonl`).
//!
//! The run's best construction is offered to the arena ([`Campaign::offer`]) at each round's end
//! and at the end: when it beats the #1 the campaign last saw by the threshold, the live
//! leaderboard is read again and the rules applied exactly; only a new #1, only with submitting
//! switched on, and only once per construction, is sent. A construction the ledger records as
//! possibly sent (milo stopped mid-send, or the request failed after it went out) is held back
//! ([`crate::error::MiloError::HeldBack`]), on a resume too.

use crate::arena::ledger::{self, Prior};
use crate::arena::pull::{pull, PullRequest, PullSummary};
use crate::arena::rules::Verdict;
use crate::arena::send::Submitted;
use crate::arena::submit::{check, send, Checked, Overrides, Patience};
use crate::arena::{ApiKey, ArenaClient};
use crate::bounded_read::{read_regular_file_capped, CONFIG_CAP, CONSTRUCTION_CAP};
use crate::cancel::CancelToken;
use crate::construction::read_record_values;
use crate::error::{quoted, write_error, MiloError, Result};
use crate::exact::rational::{decimal_string, from_f64, to_f64, SCORE_DIGITS};
use crate::problems::{by_slug, Direction};
use crate::search::evolve::BEST_FILE;
use crate::suite::freeze::{freeze, FreezeRequest};
use crate::suite::TaskBudget;
use num_rational::BigRational;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The campaign's settings file.
pub const CAMPAIGN_FILE: &str = "campaign.json";
/// The run directory inside a campaign.
pub const RUN_DIR: &str = "run";
/// The ledger inside a campaign.
pub const LEDGER_FILE: &str = "ledger.jsonl";
/// The suite inside a campaign.
pub const SUITE_FILE: &str = "suite.toml";
/// The pull inside a campaign.
pub const PULL_DIR: &str = "pull";

/// What a campaign is (`campaign.json`); read back on `--resume`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CampaignSettings {
    /// The problem.
    pub slug: String,
    /// The arena server.
    pub base_url: String,
    /// Our agent's name on the arena, if given.
    pub agent: Option<String>,
    /// Whether a new #1 is sent (otherwise only reported).
    pub submit: bool,
    /// Longest total wait for a rate limit, seconds.
    pub max_wait: u64,
    /// When the campaign started (RFC 3339, UTC).
    pub started_at: String,
    /// The live #1 when the campaign pulled (agent, arena score), if there was one.
    pub pulled_leader: Option<(String, f64)>,
}

/// How to build a new campaign's suite.
#[derive(Clone, Debug)]
pub struct SuitePlan {
    /// Entries to pull (1…100).
    pub limit: usize,
    /// Parent programs (empty: the problem's default program).
    pub programs: Vec<PathBuf>,
    /// Seeds of the search tasks.
    pub seeds: Vec<u64>,
    /// Seeds of the validation tasks (the same starts, seeds held out).
    pub validation_seeds: Vec<u64>,
    /// Budget of each task.
    pub budget: TaskBudget,
}

/// What offering the run's best construction to the arena came to.
#[derive(Debug)]
pub enum Offer {
    /// No construction yet, or none better than what was already offered or the last-seen #1 by
    /// the threshold: the server was not asked.
    NotYet,
    /// Checked against the live leaderboard: not a new #1.
    NotFirst(Box<Checked>),
    /// A new #1, not sent (submitting is off, or no key).
    WouldSubmit(Box<Checked>),
    /// A new #1, sent.
    Submitted(Box<Checked>, Submitted),
}

/// A campaign directory and its settings.
pub struct Campaign {
    dir: PathBuf,
    settings: CampaignSettings,
    client: ArenaClient,
    key: Option<ApiKey>,
    /// The exact score last offered (the server is asked again only for something better).
    offered: Option<BigRational>,
}

impl Campaign {
    /// Creates a campaign in `dir` (absent or empty): pulls the live top entries, freezes the
    /// valid ones with the programs into a suite. Returns the campaign and the suite's path.
    pub fn create(
        dir: &Path,
        settings: CampaignSettings,
        plan: &SuitePlan,
        client: ArenaClient,
        key: Option<ApiKey>,
    ) -> Result<(Campaign, PathBuf)> {
        if dir.exists() && std::fs::read_dir(dir).map_err(io(dir))?.next().is_some() {
            return Err(MiloError::Usage(format!(
                "{} exists and is not empty; resume it with --resume {}, or choose another --dir",
                dir.display(),
                dir.display()
            )));
        }
        std::fs::create_dir_all(dir).map_err(write_error(dir))?;
        let built = Campaign::build(dir, settings, plan, &client);
        if built.is_err() {
            // The directory was absent or empty: nothing of the user's is removed.
            let _ = std::fs::remove_dir_all(dir);
        }
        let (settings, suite) = built?;
        Ok((Campaign::with(dir, settings, client, key), suite))
    }

    /// The pull, the programs, the suite and `campaign.json`; returns the settings and the
    /// suite's path.
    fn build(
        dir: &Path,
        settings: CampaignSettings,
        plan: &SuitePlan,
        client: &ArenaClient,
    ) -> Result<(CampaignSettings, PathBuf)> {
        let problem = by_slug(&settings.slug)?;
        let pulled = pull(
            client,
            &PullRequest {
                slug: settings.slug.clone(),
                limit: plan.limit,
                into: dir.join(PULL_DIR),
                force: false,
            },
        )?;
        let starts = valid_files(&pulled, &dir.join(PULL_DIR))?;
        let programs = if plan.programs.is_empty() {
            let folder = dir.join("programs");
            std::fs::create_dir_all(&folder).map_err(write_error(&folder))?;
            let path = folder.join(format!("{}.default.toml", settings.slug));
            crate::atomic_file::write(&path, problem.default_program().as_bytes())?;
            vec![path]
        } else {
            plan.programs.clone()
        };
        let suite = dir.join(SUITE_FILE);
        freeze(&FreezeRequest {
            problem: settings.slug.clone(),
            from: starts,
            programs,
            seeds: plan.seeds.clone(),
            validation_seeds: plan.validation_seeds.clone(),
            validation_starts: Vec::new(),
            budget: plan.budget,
            out: suite.clone(),
            name: Some(format!("campaign-{}", settings.slug)),
            description: format!(
                "The live top {} of {} at {}, pulled {}.",
                plan.limit, settings.slug, settings.base_url, pulled.pulled_at
            ),
        })?;
        let settings = CampaignSettings {
            pulled_leader: pulled
                .entries
                .first()
                .map(|e| (e.provenance.agent.clone(), e.provenance.arena_score)),
            ..settings
        };
        let path = dir.join(CAMPAIGN_FILE);
        let text = serde_json::to_string_pretty(&settings).expect("settings serialize");
        crate::atomic_file::write(&path, (text + "\n").as_bytes())?;
        Ok((settings, suite))
    }

    /// Opens the campaign in `dir` (its `campaign.json`) to resume it, its server's requests
    /// bounded by `timeout` (each read) and `deadline` (a whole request).
    pub fn open(
        dir: &Path,
        timeout: Duration,
        deadline: Duration,
        key: Option<ApiKey>,
    ) -> Result<Campaign> {
        let settings = read_settings(dir)?;
        let client = ArenaClient::new(&settings.base_url, timeout, deadline)?;
        Ok(Campaign::with(dir, settings, client, key))
    }

    fn with(
        dir: &Path,
        settings: CampaignSettings,
        client: ArenaClient,
        key: Option<ApiKey>,
    ) -> Campaign {
        Campaign {
            dir: dir.to_path_buf(),
            settings,
            client,
            key,
            offered: None,
        }
    }

    /// The campaign's settings.
    pub fn settings(&self) -> &CampaignSettings {
        &self.settings
    }

    /// The campaign's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The search run's directory.
    pub fn run_dir(&self) -> PathBuf {
        self.dir.join(RUN_DIR)
    }

    /// The ledger's path.
    pub fn ledger(&self) -> PathBuf {
        self.dir.join(LEDGER_FILE)
    }

    /// Offers the run's best construction (`run/best.json`) to the arena; see [`Offer`].
    /// Cancelling `cancel` abandons the request in flight and ends a wait for a rate limit to
    /// pass.
    pub fn offer(&mut self, cancel: &CancelToken) -> Result<Offer> {
        let client = self.client.cancelled_by(cancel);
        let best = self.run_dir().join(BEST_FILE);
        if !best.is_file() {
            return Ok(Offer::NotYet);
        }
        let problem = by_slug(&self.settings.slug)?;
        let spec = problem.spec();
        let exact = problem.score_exact(&read_record_values(&best)?);
        let better = |a: &BigRational, b: &BigRational| spec.direction.better(a, b);
        if self.offered.as_ref().is_some_and(|o| !better(&exact, o)) {
            return Ok(Offer::NotYet);
        }
        if let Some((_, leader)) = &self.settings.pulled_leader {
            let gain = match spec.direction {
                Direction::Minimize => from_f64(*leader) - &exact,
                Direction::Maximize => &exact - from_f64(*leader),
            };
            if gain < spec.min_improvement_exact() {
                return Ok(Offer::NotYet);
            }
        }
        // Keep a copy: best.json moves on while the arena evaluates.
        let copy = self.dir.join("submissions");
        std::fs::create_dir_all(&copy).map_err(write_error(&copy))?;
        let file = copy.join(format!("{}.json", decimal_string(&exact, SCORE_DIGITS)));
        let bytes = read_regular_file_capped(&best, CONSTRUCTION_CAP, "construction")?;
        crate::atomic_file::write(&file, &bytes)?;
        let checked = check(
            &client,
            &self.settings.slug,
            &file,
            self.settings.agent.as_deref(),
            false,
        )?;
        self.offered = Some(exact);
        if let Some(leader) = &checked.assessment.leader {
            self.settings.pulled_leader = Some(leader.clone());
        }
        if checked.assessment.verdict != Verdict::NewFirst {
            return Ok(Offer::NotFirst(Box::new(checked)));
        }
        // Sent and confirmed already: reported, not sent. Possibly sent (no confirmation): `send`
        // holds it back and says what to run.
        let records = ledger::read(&self.ledger())?;
        let already = matches!(
            ledger::prior(
                &records,
                &checked.sha256,
                &checked.problem.slug,
                client.base_url()
            ),
            Some(Prior::Confirmed(..))
        );
        match (&self.key, self.settings.submit && !already) {
            (Some(key), true) => {
                let patience = Patience {
                    max_wait: Duration::from_secs(self.settings.max_wait),
                    cancel,
                };
                let sent = send(
                    &client,
                    &checked,
                    key,
                    &patience,
                    Overrides::default(),
                    &self.ledger(),
                )?;
                // The next offer has to beat this one by the threshold, as the arena will ask.
                let agent = self.settings.agent.clone().unwrap_or_else(|| "us".into());
                let score = to_f64(self.offered.as_ref().expect("set above"));
                self.settings.pulled_leader = Some((agent, score));
                Ok(Offer::Submitted(Box::new(checked), sent))
            }
            _ => Ok(Offer::WouldSubmit(Box::new(checked))),
        }
    }
}

/// The settings of the campaign in `dir`.
pub fn read_settings(dir: &Path) -> Result<CampaignSettings> {
    let path = dir.join(CAMPAIGN_FILE);
    let bytes = read_regular_file_capped(&path, CONFIG_CAP, "campaign settings")?;
    serde_json::from_slice(&bytes).map_err(|e| MiloError::Malformed {
        path,
        message: format!("not a campaign's settings: {}", quoted(&e.to_string())),
    })
}

/// The construction files of the pull's valid entries (an error when none is valid).
fn valid_files(pulled: &PullSummary, dir: &Path) -> Result<Vec<PathBuf>> {
    let files: Vec<PathBuf> = pulled
        .entries
        .iter()
        .filter(|e| e.provenance.valid)
        .map(|e| dir.join(&e.provenance.file))
        .collect();
    if files.is_empty() {
        return Err(MiloError::Usage(format!(
            "none of the {} pulled entries of {} is valid: nothing to start from",
            pulled.entries.len(),
            pulled.problem.slug
        )));
    }
    Ok(files)
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> MiloError + '_ {
    move |source| MiloError::Io {
        path: path.to_path_buf(),
        source,
    }
}
