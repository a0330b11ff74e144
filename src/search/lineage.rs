//! The lineage memory: an append-only, on-disk record of everything the search tried.
//!
//! A run directory holds `lineage.jsonl` (one [`LineageRecord`] per line, appended, flushed and synced
//! before the next step) and `harnesses/<hash>.toml` (every harness, content-addressed). Nodes
//! form per-island trees; rejected children stay as negative evidence; a node whose co-parent
//! lives on another island is a graft edge; orchestrator moves are events with their diagnosis.
//! Reading a lineage back tolerates a torn last line (see [`crate::records`]).

use super::admission::Verdict;
use super::evaluation::Evaluation;
use crate::bounded_read::{read_regular_text_capped, CONFIG_CAP};
use crate::dir_lock::{DirLock, LOCK_FILE};
use crate::error::{read_error, write_error, MiloError, Result};
use crate::harness::Harness;
use crate::llm::Usage;
pub use crate::records::read_records;
use crate::records::AppendLog;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The settings a run started with (the first record; `--resume` reads them back).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// The suite file.
    pub suite: PathBuf,
    /// The suite's pin ([`crate::suite::Suite::pin`]), recorded when the run starts and checked
    /// on resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite_pin: Option<String>,
    /// Number of islands at the start.
    pub islands: usize,
    /// Rounds to run (None: until `hours` or forever).
    pub rounds: Option<usize>,
    /// Wall-clock limit in hours.
    pub hours: Option<f64>,
    /// Seed of every random choice of the search.
    pub seed: u64,
    /// Rounds without a gain in an island's best search quality before the orchestrator is
    /// consulted.
    pub patience: usize,
    /// Quality aggregation.
    pub quality: super::evaluation::Quality,
    /// Cost measure.
    pub cost: super::evaluation::CostMeasure,
    /// Attempts per task.
    pub attempts: usize,
    /// The agent that writes programs, by name (see [`super::parts`]).
    pub writer: String,
    /// The mutator of each island at the start (island i gets `mutators[i % len]`); also the
    /// pool the orchestrator reassigns islands from. Names as [`super::parts`] knows them.
    pub mutators: Vec<String>,
    /// The orchestrator, by name (absent in older lineages: the built-in one).
    #[serde(default = "default_orchestrator")]
    pub orchestrator: String,
    /// The lineage store, by name (absent in older lineages: the JSON-lines store).
    #[serde(default = "default_lineage_store")]
    pub lineage_store: String,
    /// The executor of attempts, by name (absent in older lineages: local threads).
    #[serde(default = "default_executor")]
    pub executor: String,
    /// How the `slurm` executor submits (absent for other executors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm: Option<crate::executor::SlurmOptions>,
    /// Stop once the search's evaluations (search tasks, parents' re-runs, validation) have taken
    /// this many CPU seconds, summed over nodes (benchmarks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<f64>,
    /// Which of MILO's components are on (all, unless a benchmark ablates some).
    #[serde(default)]
    pub components: Components,
    /// Search tasks per harness per round: the suite's search slots in turn, each with a fresh
    /// seed every round (absent in older lineages: [`DEFAULT_TASKS_PER_ROUND`]).
    #[serde(default = "default_tasks_per_round")]
    pub tasks_per_round: usize,
    /// Objective evaluations of every task, overriding the suite's budget (`--task-evaluations`;
    /// absent: the suite's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_evaluations: Option<u64>,
    /// Whether the best construction found on a slot in a round becomes the slot's start for
    /// the rounds after (a curriculum move recorded in the lineage; off: the method as published).
    #[serde(default)]
    pub promote_discoveries: bool,
    /// The LLM backends and role pools (`--agents FILE`), recorded whole (it holds the names of
    /// key variables, never keys) so a resume or a cluster worker rebuilds the same agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<crate::llm::AgentsConfig>,
    /// How children are admitted (absent in older lineages: `paired`).
    #[serde(default)]
    pub admission: AdmissionPolicy,
    /// Programs each slot's archive keeps as parents, drawn from per task
    /// ([`super::archive`]; `--archive-population`; absent: 1, the slot's best).
    #[serde(
        default = "default_archive_population",
        skip_serializing_if = "is_default_archive_population"
    )]
    pub archive_population: usize,
    /// The seed harnesses the islands start from, in turn, recorded whole (`--seed-harness`;
    /// empty: the built-in seeds for the writer).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seed_harnesses: Vec<Harness>,
}

impl RunConfig {
    /// The one-line error naming the first count out of its bound ([`crate::bounds`]), if
    /// any: checked when a run starts and again when it resumes from its record.
    pub fn check(&self) -> std::result::Result<(), String> {
        use crate::bounds::{self, check};
        check("--islands", self.islands as u64, &bounds::ISLANDS)?;
        if let Some(rounds) = self.rounds {
            check("--rounds", rounds as u64, &bounds::ROUNDS)?;
        }
        check("--patience", self.patience as u64, &bounds::PATIENCE)?;
        check("--attempts", self.attempts as u64, &bounds::ATTEMPTS)?;
        check(
            "--tasks-per-round",
            self.tasks_per_round as u64,
            &bounds::TASKS_PER_ROUND,
        )?;
        check(
            "--archive-population",
            self.archive_population as u64,
            &bounds::ARCHIVE_POPULATION,
        )?;
        if self.task_evaluations == Some(0) {
            return Err("--task-evaluations must be at least 1, got 0".into());
        }
        check(
            "--seed-harness (files)",
            self.seed_harnesses.len().max(1) as u64,
            &bounds::SEED_HARNESSES,
        )?;
        check(
            "--mutators (names)",
            self.mutators.len() as u64,
            &bounds::METHODS,
        )?;
        if let AdmissionPolicy::Race(race) = &self.admission {
            race.check()?;
        }
        Ok(())
    }
}

/// How a step decides its children (a part chosen by name: `paired` or `race`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "policy", rename_all = "snake_case")]
pub enum AdmissionPolicy {
    /// One child a step, run with its parent on every task of the round and admitted by
    /// [`super::admission::admit`].
    #[default]
    Paired,
    /// Several children a step sharing one parent evaluation, decided block by block
    /// ([`super::harness_race`]).
    Race(super::harness_race::RaceSettings),
}

/// Names of the admission policies (the first is the default).
pub const ADMISSION_POLICIES: [&str; 2] = ["paired", "race"];

impl AdmissionPolicy {
    /// The policy's name.
    pub fn name(&self) -> &'static str {
        match self {
            AdmissionPolicy::Paired => ADMISSION_POLICIES[0],
            AdmissionPolicy::Race(_) => ADMISSION_POLICIES[1],
        }
    }
}

/// Search tasks per harness per round unless a run says otherwise.
pub const DEFAULT_TASKS_PER_ROUND: usize = 8;

fn default_tasks_per_round() -> usize {
    DEFAULT_TASKS_PER_ROUND
}

fn default_archive_population() -> usize {
    1
}

fn is_default_archive_population(population: &usize) -> bool {
    *population == default_archive_population()
}

/// The orchestrator a run uses unless it names one.
pub const DEFAULT_ORCHESTRATOR: &str = "builtin";
/// The lineage store a run uses unless it names one.
pub const DEFAULT_LINEAGE_STORE: &str = "jsonl";
/// The executor a run uses unless it names one.
pub const DEFAULT_EXECUTOR: &str = "local-threads";

fn default_orchestrator() -> String {
    DEFAULT_ORCHESTRATOR.into()
}

fn default_lineage_store() -> String {
    DEFAULT_LINEAGE_STORE.into()
}

fn default_executor() -> String {
    DEFAULT_EXECUTOR.into()
}

/// How a parent is picked from an island's admitted set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParentChoice {
    /// Softmax of dominance against behavioural crowding ([`super::selection`]).
    #[default]
    Pareto,
    /// Always the member with the best quality (ties: lower cost): greedy refinement.
    Best,
    /// Uniformly at random: a flat archive.
    Uniform,
}

/// The parts of MILO a run uses; the default is the full method. The benchmark's ablation
/// ladder and its greedy baseline switch parts off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Components {
    /// How parents are picked.
    pub parent_choice: ParentChoice,
    /// Whether mutators see the island's history and the rejected harnesses (lineage memory).
    pub memory: bool,
    /// Whether the orchestrator is consulted when islands stall.
    pub orchestrator: bool,
    /// Whether mutators evolve harnesses (off: every island re-evaluates its seed harness each
    /// round, so only the program archive and promoted starts move — `milo-frozen`).
    pub harness_evolution: bool,
}

impl Default for Components {
    fn default() -> Self {
        Components {
            parent_choice: ParentChoice::Pareto,
            memory: true,
            orchestrator: true,
            harness_evolution: true,
        }
    }
}

/// One harness tried by the search: where it came from, how it did, and whether it was admitted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeRecord {
    /// `n<number>`, in creation order.
    pub id: String,
    /// The island it was proposed for.
    pub island: usize,
    /// The round (0 for seed harnesses).
    pub round: usize,
    /// Parent node ids: the parent first, then a co-parent if any (possibly on another island).
    pub parents: Vec<String>,
    /// The mutator that proposed it (`seed` for seed harnesses).
    pub mutator: String,
    /// Content hash of the harness (its file is `harnesses/<hash>.toml`).
    pub harness: String,
    /// The harness's name.
    pub name: String,
    /// The edit: a unified diff of the parent's harness TOML to this one.
    pub edit: String,
    /// The evidence and diagnosis that motivated the edit.
    pub evidence: Vec<String>,
    /// Tokens (and dollars) its mutator spent proposing it: zero, and absent from the record,
    /// for a built-in mutator.
    #[serde(default, skip_serializing_if = "Usage::is_zero")]
    pub usage: Usage,
    /// Evaluation on the search tasks.
    pub evaluation: Evaluation,
    /// The parent's evaluation on the same tasks and seeds (what admission compares the child
    /// with; absent for seed nodes and in older lineages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_evaluation: Option<Evaluation>,
    /// Admission verdict with its reason.
    pub verdict: Verdict,
    /// Evaluation on the validation tasks, when this node became its island's best.
    pub validation: Option<Evaluation>,
    /// When the node was recorded (seconds since the Unix epoch; absent in older lineages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<f64>,
}

impl NodeRecord {
    /// Its search evaluations in the order its step ran them: its parent's re-evaluation, then
    /// its own (never validation). "The first on ties" means the first found in this order, as
    /// `best.json` keeps the first construction to reach a score.
    pub fn search_evaluations(&self) -> impl Iterator<Item = &Evaluation> {
        self.parent_evaluation
            .as_ref()
            .into_iter()
            .chain(std::iter::once(&self.evaluation))
    }

    /// Whether the node was admitted.
    pub fn admitted(&self) -> bool {
        self.verdict.admitted
    }

    /// Everything language models spent on this node: its mutator's proposal and the writer's
    /// runs in its evaluation, its parent's re-run and its validation.
    pub fn total_usage(&self) -> Usage {
        let mut spent = self.usage;
        spent += self.evaluation.usage();
        for evaluation in [&self.parent_evaluation, &self.validation]
            .into_iter()
            .flatten()
        {
            spent += evaluation.usage();
        }
        spent
    }

    /// Whether the child behaved exactly as its parent: every task's gain equal to the
    /// parent's re-run on the same tasks and seeds (a behaviour-neutral mutation). `None` for
    /// a node without the parent's re-run (seed nodes, older lineages).
    pub fn same_gains_as_parent(&self) -> Option<bool> {
        let parent = self.parent_evaluation.as_ref()?;
        let gains = |e: &Evaluation| e.tasks.iter().map(|t| t.gain).collect::<Vec<f64>>();
        Some(gains(parent) == gains(&self.evaluation))
    }
}

/// An orchestrator move.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Move {
    /// Give a dry island another mutator.
    Reassign {
        /// The island.
        island: usize,
        /// Its new mutator.
        mutator: String,
    },
    /// Use a stronger island's best as co-parent in an exhausted island.
    Graft {
        /// The stronger island.
        from: usize,
        /// The exhausted island.
        into: usize,
        /// The grafted node.
        node: String,
    },
    /// Move a crowded-out subtree that solves different tasks into a new island.
    Speciate {
        /// The island it leaves.
        from: usize,
        /// The subtree's admitted nodes, root first.
        nodes: Vec<String>,
        /// The new island's mutator.
        mutator: String,
    },
    /// Replace the search slots with high-regret ones.
    Curriculum {
        /// The new search slot ids (recorded as `tasks`, as lineages always have).
        #[serde(rename = "tasks")]
        slots: Vec<String>,
    },
    /// A start's best construction of a round replaces it (`--promote-discoveries`).
    Promote {
        /// The suite start's label (every slot on it runs from the construction).
        start: String,
        /// Content address of the construction (`starts/<hash>.json` in the run directory).
        construction: String,
        /// Its exact score (40 significant digits).
        exact: String,
        /// The node whose evaluation found it.
        node: String,
    },
}

impl Move {
    /// The move's kind as a word (`reassign`, `graft`, `speciate`, `curriculum`, `promote`).
    pub fn kind(&self) -> &'static str {
        match self {
            Move::Reassign { .. } => "reassign",
            Move::Graft { .. } => "graft",
            Move::Speciate { .. } => "speciate",
            Move::Curriculum { .. } => "curriculum",
            Move::Promote { .. } => "promote",
        }
    }
}

/// An orchestrator invocation's move, with its diagnosis.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// The round after which the orchestrator ran.
    pub round: usize,
    /// The islands involved.
    pub islands: Vec<usize>,
    /// Why, in words.
    pub diagnosis: String,
    /// The move.
    #[serde(rename = "move")]
    pub action: Move,
}

impl EventRecord {
    /// One line: `<move> after round R [islands]: <diagnosis>` (no island list when none).
    pub fn headline(&self) -> String {
        let islands = match self.islands.is_empty() {
            true => String::new(),
            false => format!(" {:?}", self.islands),
        };
        format!(
            "{} after round {}{islands}: {}",
            self.action.kind(),
            self.round,
            self.diagnosis
        )
    }
}

/// A part's failure in an island's step (the island skips that round; see
/// [`super::evolve`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailureRecord {
    /// The round of the step.
    pub round: usize,
    /// The island.
    pub island: usize,
    /// Which part failed: `mutator` or `writer`.
    pub part: String,
    /// The part's name.
    pub name: String,
    /// What went wrong, in one line.
    pub message: String,
    /// Tokens (and dollars) the failed part spent (absent when none).
    #[serde(default, skip_serializing_if = "Usage::is_zero")]
    pub usage: Usage,
}

impl FailureRecord {
    /// What failed and why, with the tokens spent when there were any: `mutator llm failed:
    /// MESSAGE (TOKENS)`.
    pub fn summary(&self) -> String {
        let spent = match self.usage.is_zero() {
            true => String::new(),
            false => format!(" ({})", self.usage.summary()),
        };
        format!(
            "{} {} failed: {}{spent}",
            self.part, self.name, self.message
        )
    }
}

/// What an orchestrator consultation cost and which of its proposals it refused (recorded
/// before the consultation's moves when there is either: an LLM orchestrator's, never the
/// built-in one's).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConsultationRecord {
    /// The round after which the orchestrator ran.
    pub round: usize,
    /// The orchestrator's name.
    pub orchestrator: String,
    /// The backend that answered, when a model was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// Tokens (and dollars) spent.
    #[serde(default)]
    pub usage: Usage,
    /// Each refused proposal with the reason, one line each (the built-in rule decided instead).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<String>,
}

impl ConsultationRecord {
    /// One line: `orchestrator NAME after round R: USAGE[; rejected: …]`.
    pub fn headline(&self) -> String {
        let backend = self
            .backend
            .as_ref()
            .map(|b| format!(" ({b})"))
            .unwrap_or_default();
        let rejected = match self.rejected.is_empty() {
            true => String::new(),
            false => format!("; rejected: {}", self.rejected.join("; ")),
        };
        format!(
            "orchestrator {}{backend} after round {}: {}{rejected}",
            self.orchestrator,
            self.round,
            self.usage.summary()
        )
    }
}

/// One line of `lineage.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum LineageRecord {
    /// The run's settings (first line).
    Started(Box<RunConfig>),
    /// A harness and its evaluation and verdict.
    Node(Box<NodeRecord>),
    /// An orchestrator move.
    Event(EventRecord),
    /// A mutator or a writer failed; the island skipped the round (absent in older lineages).
    Failure(FailureRecord),
    /// An orchestrator consultation's cost and refused proposals (absent in older lineages).
    Consultation(ConsultationRecord),
    /// A round finished (all islands stepped, the orchestrator consulted).
    RoundEnd {
        /// The round.
        round: usize,
    },
    /// The run was extended on resume (`--resume DIR --rounds N` or `--hours H`): its limits from
    /// here on replace the settings' (absent in older lineages).
    Extended {
        /// Rounds to have run in all.
        rounds: Option<usize>,
        /// Wall-clock hours of each segment from here on.
        hours: Option<f64>,
    },
}

/// Where lineage records and harness files go.
pub trait LineageStore {
    /// Appends a record durably (it survives a kill right after this returns).
    fn append(&mut self, record: &LineageRecord) -> Result<()>;
    /// Appends records durably, all in one write where the store can (a step's children).
    fn append_all(&mut self, records: &[LineageRecord]) -> Result<()> {
        records.iter().try_for_each(|r| self.append(r))
    }
    /// Stores a harness under its content hash (idempotent).
    fn put_harness(&mut self, harness: &Harness) -> Result<String>;
    /// Reads a stored harness back.
    fn harness(&self, hash: &str) -> Result<Harness>;
}

/// The on-disk lineage store: `lineage.jsonl` plus `harnesses/`, its directory locked for as
/// long as the store is open (see [`DirLock`]).
pub struct JsonlLineage {
    dir: PathBuf,
    log: AppendLog<LineageRecord>,
    _lock: DirLock,
}

/// Name of the record file in a run directory.
pub const LINEAGE_FILE: &str = "lineage.jsonl";

/// The error for starting a run in a directory that holds one.
pub fn already_holds_a_run(dir: &Path) -> MiloError {
    MiloError::Usage(format!(
        "{} already holds a run; resume it with --resume {}",
        dir.display(),
        dir.display()
    ))
}

impl JsonlLineage {
    /// Creates a new run directory's lineage; an error if one already exists there.
    pub fn create(dir: &Path) -> Result<JsonlLineage> {
        std::fs::create_dir_all(dir.join("harnesses")).map_err(write_error(dir))?;
        let lock = DirLock::acquire(dir)?;
        let log =
            AppendLog::create(&dir.join(LINEAGE_FILE))?.ok_or_else(|| already_holds_a_run(dir))?;
        Ok(JsonlLineage {
            dir: dir.to_path_buf(),
            log,
            _lock: lock,
        })
    }

    /// Opens an existing run directory, locked before anything is read: its records (a torn
    /// last line is dropped and cut off the file) and the store, ready to append.
    pub fn open(dir: &Path) -> Result<(JsonlLineage, Vec<LineageRecord>)> {
        let path = dir.join(LINEAGE_FILE);
        // Anything there (a FIFO or a link included) is opened, and refused, by the log.
        if std::fs::symlink_metadata(&path).is_err() {
            // A run being created holds its lock before its lineage exists: that is "busy,
            // held by PID", not "no lineage".
            if dir.join(LOCK_FILE).is_file() {
                DirLock::acquire(dir)?;
            }
            return Err(read_error(&path)(std::io::ErrorKind::NotFound.into()));
        }
        let lock = DirLock::acquire(dir)?;
        let (log, records) = AppendLog::open(&path)?;
        let lineage = JsonlLineage {
            dir: dir.to_path_buf(),
            log,
            _lock: lock,
        };
        Ok((lineage, records))
    }

    /// The run directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl LineageStore for JsonlLineage {
    fn append(&mut self, record: &LineageRecord) -> Result<()> {
        self.log.append(record)
    }

    fn append_all(&mut self, records: &[LineageRecord]) -> Result<()> {
        self.log.append_all(records)
    }

    fn put_harness(&mut self, harness: &Harness) -> Result<String> {
        let hash = harness.content_hash();
        let path = self.dir.join("harnesses").join(format!("{hash}.toml"));
        if !path.exists() {
            crate::atomic_file::write(&path, harness.to_toml().as_bytes())?;
        }
        Ok(hash)
    }

    fn harness(&self, hash: &str) -> Result<Harness> {
        let path = self.dir.join("harnesses").join(format!("{hash}.toml"));
        // Stored by this run: a regular file only, never a FIFO read (or waited on) under the lock.
        let text = read_regular_text_capped(&path, CONFIG_CAP, "stored harness")?;
        let harness = Harness::parse(&text, &path)?;
        let content = harness.content_hash();
        if content != hash {
            return Err(MiloError::Malformed {
                path,
                message: format!(
                    "a stored harness was edited: its name pins content {hash}, its content hashes to {content}"
                ),
            });
        }
        Ok(harness)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> RunConfig {
        RunConfig {
            suite: "s.toml".into(),
            suite_pin: None,
            islands: 2,
            rounds: Some(3),
            hours: None,
            seed: 1,
            patience: 2,
            quality: super::super::evaluation::Quality::Best,
            cost: super::super::evaluation::CostMeasure::Counted,
            attempts: 1,
            writer: "builtin".into(),
            mutators: vec!["tuner".into()],
            orchestrator: "builtin".into(),
            lineage_store: "jsonl".into(),
            executor: "local-threads".into(),
            slurm: None,
            cpu_seconds: None,
            components: Components::default(),
            tasks_per_round: DEFAULT_TASKS_PER_ROUND,
            task_evaluations: None,
            promote_discoveries: false,
            agents: None,
            admission: AdmissionPolicy::Paired,
            archive_population: 1,
            seed_harnesses: vec![],
        }
    }

    #[test]
    fn records_round_trip_and_a_torn_last_line_is_dropped_and_cut() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = JsonlLineage::create(dir.path()).unwrap();
        store
            .append(&LineageRecord::Started(Box::new(config())))
            .unwrap();
        store.append(&LineageRecord::RoundEnd { round: 1 }).unwrap();
        drop(store);
        let path = dir.path().join(LINEAGE_FILE);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"record\":\"round_end\",\"rou");
        std::fs::write(&path, &text).unwrap();

        let (mut store, records) = JsonlLineage::open(dir.path()).unwrap();
        assert_eq!(
            records,
            vec![
                LineageRecord::Started(Box::new(config())),
                LineageRecord::RoundEnd { round: 1 }
            ]
        );
        store.append(&LineageRecord::RoundEnd { round: 2 }).unwrap();
        let (records, _) = read_records::<LineageRecord>(&path).unwrap();
        assert_eq!(records.len(), 3);
        assert_eq!(records[2], LineageRecord::RoundEnd { round: 2 });
    }

    #[test]
    fn an_older_started_record_loads_with_the_default_parts() {
        let mut value = serde_json::to_value(LineageRecord::Started(Box::new(config()))).unwrap();
        let object = value.as_object_mut().unwrap();
        for key in ["orchestrator", "lineage_store", "executor"] {
            object.remove(key).unwrap();
        }
        let back: LineageRecord = serde_json::from_value(value).unwrap();
        assert_eq!(back, LineageRecord::Started(Box::new(config())));
    }

    #[test]
    fn a_failure_record_round_trips() {
        let failure = LineageRecord::Failure(FailureRecord {
            round: 3,
            island: 1,
            part: "writer".into(),
            name: "builtin".into(),
            message: "task t: boom".into(),
            usage: Usage {
                prompt_tokens: 3,
                ..Usage::default()
            },
        });
        let text = serde_json::to_string(&failure).unwrap();
        assert!(text.starts_with("{\"record\":\"failure\""), "{text}");
        assert_eq!(
            serde_json::from_str::<LineageRecord>(&text).unwrap(),
            failure
        );
    }

    #[test]
    fn a_corrupt_middle_line_is_an_error_naming_it_and_create_refuses_an_existing_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LINEAGE_FILE);
        std::fs::write(
            &path,
            "{\"record\":\"round_end\",\"round\":1}\nnot json\n{}\n",
        )
        .unwrap();
        let err = read_records::<LineageRecord>(&path)
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2"), "{err}");
        assert!(JsonlLineage::create(dir.path()).is_err());
    }

    #[test]
    fn harnesses_are_content_addressed() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = JsonlLineage::create(dir.path()).unwrap();
        let h = crate::harness::seed_harnesses().remove(2);
        let hash = store.put_harness(&h).unwrap();
        assert_eq!(store.put_harness(&h).unwrap(), hash);
        assert_eq!(store.harness(&hash).unwrap(), h);
    }
}
