//! The data the page's script (`assets/report.js`) draws from, embedded in the page as JSON:
//! for a run, every node (its lane and round, parents and grafts, verdict and reason, harness
//! diff, the evidence its mutator read, per-task gains beside its parent's, the programs it
//! ran with a unified diff of each against its parent's, the language models' tokens), the orchestrator's moves, an LLM orchestrator's consultations
//! (tokens, refused proposals), the failures and the best so far after each node as its gap
//! to the arena's #1; for a benchmark, every run's best-so-far curve. Numbers come with their
//! text in the report's digits ([`super::digits`]).

use super::digits;
use super::progress::{best_so_far, node_best};
use crate::bench::results::BenchResults;
use crate::exact::rational::{decimal_of_f64, decimal_string, parse_decimal, to_f64};
use crate::problems::spec::{Direction, KnownRecord};
use crate::search::archive::best_programs;
use crate::search::evaluation::Evaluation;
use crate::search::lineage::{Move, NodeRecord, RunConfig};
use crate::search::round_tasks::{slot_of, slots};
use crate::search::state::SearchState;
use crate::suite::Suite;
use num_rational::BigRational;
use serde::Serialize;
use std::collections::HashMap;

/// How far `value` is behind `reference` in `direction`: positive when it is worse, zero or
/// negative when it ties or beats it (computed exactly, from the reference's decimal text).
/// NaN when the reference is not finite.
pub fn gap(value: &BigRational, reference: f64, direction: Direction) -> f64 {
    if !reference.is_finite() {
        return f64::NAN;
    }
    let difference = value - decimal_of_f64(reference);
    to_f64(&match direction {
        Direction::Minimize => difference,
        Direction::Maximize => -difference,
    })
}

/// A score the charts measure against or draw as a line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Reference {
    /// What it is (`arena #1 (…, 2026-09)`, `suite record`).
    pub label: String,
    /// Its value.
    pub value: f64,
    /// Its value in the report's digits.
    pub text: String,
}

impl Reference {
    fn arena(record: &KnownRecord) -> Reference {
        Reference {
            label: format!("{} ({})", record.holder, record.date),
            value: record.value,
            text: digits::score(record.value),
        }
    }
}

/// A score with its text, its exact decimal and its gap to the arena's #1.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Score {
    /// 10 significant digits.
    pub text: String,
    /// The exact decimal as recorded.
    pub exact: String,
    /// Its gap to the arena's #1 (see [`gap`]; absent without a #1).
    pub gap: Option<f64>,
}

/// A parent of a node.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ParentLink {
    /// The parent's id.
    pub id: String,
    /// Whether it is a co-parent on another island (a graft edge).
    pub graft: bool,
}

/// One task of a node's evaluation (search) or validation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskRow {
    /// The task id.
    pub task: String,
    /// `search` or `validation`.
    pub split: &'static str,
    /// Gain in units of `min_improvement`.
    pub gain: f64,
    /// The gain in the report's digits.
    pub gain_text: String,
    /// The parent's gain on the same task in its re-run (search tasks of children).
    pub parent_gain: Option<f64>,
    /// The start's score, 10 digits.
    pub start: String,
    /// The end score, 10 digits.
    pub end: String,
    /// The end score as recorded.
    pub end_exact: String,
    /// The programs the best attempt ran, one line each (a run without edits says what it ran).
    pub edits: Vec<String>,
    /// The program behind the best construction: an index into [`RunData::programs`].
    pub program: Option<usize>,
    /// That program as a unified diff against its parent's (see [`ProgramBase`]); a seed's
    /// is the whole program, added. Absent without an improving program.
    pub program_diff: Option<String>,
}

/// The program a node's task program is diffed against: its parent's on the same task.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ProgramBase<'a> {
    /// A seed: no parent, the whole program is new.
    Seed,
    /// The parent's program on the task: the best program of the parent's re-run on it when
    /// that improved, else the program the task started from (the archive's best for its slot
    /// from the rounds before, or the suite's), which is what a re-run that found nothing
    /// better leaves.
    Parent {
        /// The parent's id.
        id: &'a str,
        /// The parent's re-run's best program on the task, when it improved.
        rerun: Option<&'a str>,
        /// The program the task started from, when known.
        started: Option<&'a str>,
    },
}

/// A unified diff (3 lines of context) of `program` against its `base`; empty when they are
/// equal.
pub fn program_diff(base: ProgramBase<'_>, program: &str, node: &str) -> String {
    let (old, label) = match base {
        ProgramBase::Seed => ("", "(none: a seed has no parent)".to_string()),
        ProgramBase::Parent {
            id, rerun: Some(p), ..
        } => (p, format!("{id} (its parent's program on this task)")),
        ProgramBase::Parent {
            id,
            rerun: None,
            started: Some(p),
        } => (
            p,
            format!("{id} (its parent's program on this task: the one the task started from)"),
        ),
        ProgramBase::Parent {
            id,
            rerun: None,
            started: None,
        } => (
            "",
            format!("{id} (its parent's program on this task is unknown)"),
        ),
    };
    similar::TextDiff::from_lines(old, program)
        .unified_diff()
        .context_radius(3)
        .header(
            &label,
            &format!("{node} (the program behind its best construction)"),
        )
        .to_string()
}

/// An edit line of a task result (`Role: edit; edit`), a run without edits saying what it ran
/// instead of an empty bullet.
fn edit_line(line: &str) -> String {
    let Some((role, rest)) = line.split_once(':') else {
        return line.to_string();
    };
    let rest = rest.trim_start();
    if !rest.is_empty() && !rest.starts_with("(failed") {
        return line.to_string();
    }
    let what = match role {
        "Minimal" => "the parent program as it is, no edit",
        "Reserve" => "the best program again, from the best construction, no edit",
        _ => "no edit",
    };
    match rest.is_empty() {
        true => format!("{role}: {what}"),
        false => format!("{role}: {what} {rest}"),
    }
}

/// One node as the page shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NodeView {
    /// `n0007`.
    pub id: String,
    /// Its island (its lane).
    pub island: usize,
    /// Its round (its column).
    pub round: usize,
    /// Its parents, the parent first.
    pub parents: Vec<ParentLink>,
    /// The mutator that proposed it.
    pub mutator: String,
    /// The harness's name.
    pub name: String,
    /// The harness's content hash.
    pub harness: String,
    /// Whether it was admitted.
    pub admitted: bool,
    /// The verdict's reason.
    pub reason: String,
    /// Quality, cost and latency.
    pub quality: f64,
    /// Cost in the run's unit.
    pub cost: f64,
    /// Latency in the run's unit.
    pub latency: f64,
    /// Quality, cost, latency in the report's digits.
    pub fitness_text: [String; 3],
    /// Its best search-task score.
    pub best: Option<Score>,
    /// The task of that score.
    pub best_task: Option<String>,
    /// Seconds since the first node, when the lineage has timestamps.
    pub seconds: Option<f64>,
    /// The harness diff against its parent (unified).
    pub edit: String,
    /// What its mutator read and diagnosed.
    pub evidence: Vec<String>,
    /// The tokens (and dollars) language models spent on it, in words: an LLM mutator's
    /// proposal and an LLM writer's runs (absent when no model was asked).
    pub usage: Option<String>,
    /// Per task: search tasks first, then validation tasks when it was validated.
    pub tasks: Vec<TaskRow>,
    /// Validation quality, when it was validated.
    pub validation: Option<String>,
    /// Whether its evaluation was reused from an earlier node.
    pub reused: bool,
}

/// An orchestrator move or a promotion.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MoveView {
    /// The round after which it happened.
    pub round: usize,
    /// `reassign`, `graft`, `speciate`, `curriculum`, `promote`.
    pub kind: &'static str,
    /// The islands involved.
    pub islands: Vec<usize>,
    /// Why.
    pub diagnosis: String,
    /// The node it names (grafted, or whose evaluation found a promoted start).
    pub node: Option<String>,
}

/// An LLM orchestrator's consultation: what it cost and which proposals it refused.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConsultationView {
    /// The round after which it ran.
    pub round: usize,
    /// The orchestrator and the backend that answered (`llm (local)`).
    pub orchestrator: String,
    /// The tokens (and dollars) spent, in words.
    pub usage: String,
    /// Each refused proposal with the reason.
    pub rejected: Vec<String>,
}

/// A mutator's or writer's failure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FailureView {
    /// The round.
    pub round: usize,
    /// The island.
    pub island: usize,
    /// `mutator NAME` or `writer NAME`.
    pub part: String,
    /// What went wrong.
    pub message: String,
}

/// The run's best after one node.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProgressPoint {
    /// The node just recorded.
    pub node: String,
    /// Its round.
    pub round: usize,
    /// Seconds (see [`RunData::time_axis`]).
    pub time: f64,
    /// The best so far.
    pub best: Score,
    /// The node that reached it.
    pub best_node: String,
}

/// An island's lane.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IslandView {
    /// Its index.
    pub id: usize,
    /// Its mutator now.
    pub mutator: String,
}

/// Everything the script draws for a search run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunData {
    /// `run`.
    pub kind: &'static str,
    /// The problem's slug.
    pub problem: String,
    /// `minimize` or `maximize`.
    pub direction: &'static str,
    /// The unit of cost and latency.
    pub cost_unit: &'static str,
    /// The arena's #1, when the problem file lists one.
    pub arena_first: Option<Reference>,
    /// The suite's record to beat.
    pub record: Reference,
    /// The record's gap to the #1.
    pub record_gap: Option<f64>,
    /// The islands (lanes): the seeds' and those speciation made.
    pub islands: Vec<IslandView>,
    /// The last round with a node or finished.
    pub rounds: usize,
    /// Every node, in creation order.
    pub nodes: Vec<NodeView>,
    /// Every distinct program the nodes' tasks name (TOML).
    pub programs: Vec<String>,
    /// Every orchestrator move and promotion.
    pub moves: Vec<MoveView>,
    /// Every LLM orchestrator consultation.
    pub consultations: Vec<ConsultationView>,
    /// Every failure.
    pub failures: Vec<FailureView>,
    /// The best so far after each node.
    pub progress: Vec<ProgressPoint>,
    /// What [`ProgressPoint::time`] measures.
    pub time_axis: &'static str,
}

/// Interns program texts: each distinct text once, by index.
#[derive(Default)]
struct Programs {
    texts: Vec<String>,
    index: HashMap<String, usize>,
}

impl Programs {
    fn intern(&mut self, text: &str) -> usize {
        if let Some(&k) = self.index.get(text) {
            return k;
        }
        self.texts.push(text.to_string());
        self.index.insert(text.to_string(), self.texts.len() - 1);
        self.texts.len() - 1
    }
}

fn direction_word(direction: Direction) -> &'static str {
    match direction {
        Direction::Minimize => "minimize",
        Direction::Maximize => "maximize",
    }
}

/// A recorded exact score with its text and gap (`None` when the text is not a decimal).
fn score(exact: &str, arena: Option<f64>, direction: Direction) -> Option<Score> {
    let value = parse_decimal(exact)?;
    Some(Score {
        text: digits::exact_score(exact),
        exact: exact.to_string(),
        gap: arena.map(|a| gap(&value, a, direction)),
    })
}

/// The programs the tasks of a node's round started from, by slot (the archive's best from the
/// rounds before, else the suite's).
type StartedPrograms = HashMap<String, String>;

/// The task rows of an evaluation, with the parent's gains beside them by task id and each
/// program diffed against its parent's (`parent_id` absent for a seed).
fn task_rows(
    evaluation: &Evaluation,
    parent: Option<&Evaluation>,
    parent_id: Option<&str>,
    node: &str,
    started: &StartedPrograms,
    programs: &mut Programs,
) -> Vec<TaskRow> {
    let parent_tasks: HashMap<&str, &crate::search::evaluation::TaskResult> = parent
        .map(|p| p.tasks.iter().map(|t| (t.task.as_str(), t)).collect())
        .unwrap_or_default();
    evaluation
        .tasks
        .iter()
        .map(|t| {
            let parent_task = parent_tasks.get(t.task.as_str());
            let base = match parent_id {
                None => ProgramBase::Seed,
                Some(id) => ProgramBase::Parent {
                    id,
                    rerun: parent_task.and_then(|p| p.best_program.as_deref()),
                    started: started.get(slot_of(&t.task)).map(String::as_str),
                },
            };
            TaskRow {
                task: t.task.clone(),
                split: t.split.as_str(),
                gain: t.gain,
                gain_text: digits::measure(t.gain),
                parent_gain: parent_task.map(|p| p.gain),
                start: digits::exact_score(&t.start_exact),
                end: digits::exact_score(&t.end_exact),
                end_exact: t.end_exact.clone(),
                edits: t.edits.iter().map(|e| edit_line(e)).collect(),
                program: t.best_program.as_deref().map(|p| programs.intern(p)),
                program_diff: t
                    .best_program
                    .as_deref()
                    .map(|p| program_diff(base, p, node)),
            }
        })
        .collect()
}

fn node_view(
    node: &NodeRecord,
    state: &SearchState,
    arena: Option<f64>,
    direction: Direction,
    first_at: Option<f64>,
    started: [&StartedPrograms; 2],
    programs: &mut Programs,
) -> NodeView {
    let parents = node
        .parents
        .iter()
        .enumerate()
        .map(|(k, id)| ParentLink {
            id: id.clone(),
            graft: k > 0 && state.node(id).is_some_and(|p| p.island != node.island),
        })
        .collect();
    let best = node_best(node, direction);
    let f = node.evaluation.fitness;
    let parent = node.parents.first().map(String::as_str);
    let mut tasks = task_rows(
        &node.evaluation,
        node.parent_evaluation.as_ref(),
        parent,
        &node.id,
        started[0],
        programs,
    );
    if let Some(validation) = &node.validation {
        tasks.extend(task_rows(
            validation, None, parent, &node.id, started[1], programs,
        ));
    }
    NodeView {
        id: node.id.clone(),
        island: node.island,
        round: node.round,
        parents,
        mutator: node.mutator.clone(),
        name: node.name.clone(),
        harness: node.harness.clone(),
        admitted: node.admitted(),
        reason: node.verdict.reason.clone(),
        quality: f.quality,
        cost: f.cost,
        latency: f.latency,
        fitness_text: [f.quality, f.cost, f.latency].map(digits::measure),
        best: best
            .as_ref()
            .and_then(|s| score(&s.task.end_exact, arena, direction)),
        best_task: best.map(|s| s.task.task.clone()),
        seconds: node.at.zip(first_at).map(|(at, first)| at - first),
        edit: node.edit.clone(),
        evidence: node.evidence.clone(),
        usage: Some(node.total_usage())
            .filter(|u| !u.is_zero())
            .map(|u| u.summary()),
        tasks,
        validation: node
            .validation
            .as_ref()
            .map(|v| digits::measure(v.fitness.quality)),
        reused: node.evaluation.reused,
    }
}

fn move_view(event: &crate::search::lineage::EventRecord) -> MoveView {
    let node = match &event.action {
        Move::Graft { node, .. } | Move::Promote { node, .. } => Some(node.clone()),
        Move::Speciate { nodes, .. } => nodes.first().cloned(),
        Move::Reassign { .. } | Move::Curriculum { .. } => None,
    };
    MoveView {
        round: event.round,
        kind: event.action.kind(),
        islands: event.islands.clone(),
        diagnosis: event.diagnosis.clone(),
        node,
    }
}

/// The programs the tasks of `round` started from, by slot: the archive's best from the rounds
/// before, else the suite's program of the slot.
fn started_programs(state: &SearchState, suite: &Suite, round: usize) -> StartedPrograms {
    let mut started = suite_programs(suite.search_tasks());
    for (slot, entry) in best_programs(state, suite.problem.as_ref(), round) {
        started.insert(slot, entry.program);
    }
    started
}

/// The suite's program of each slot of `tasks` (validation tasks always start from it).
fn suite_programs<'a>(tasks: impl Iterator<Item = &'a crate::suite::Task>) -> StartedPrograms {
    slots(tasks)
        .into_iter()
        .map(|slot| (slot.id, slot.template.program.to_toml()))
        .collect()
}

/// The data of a replayed run on `suite`.
pub fn run_data(state: &SearchState, suite: &Suite, config: &RunConfig) -> RunData {
    let spec = suite.problem.spec();
    let direction = spec.direction;
    let arena = spec.arena_first().map(|r| r.value);
    let first_at = state.nodes.first().and_then(|n| n.at);
    let mut programs = Programs::default();
    let mut started: HashMap<usize, StartedPrograms> = HashMap::new();
    let validation = suite_programs(suite.validation_tasks());
    let nodes = state
        .nodes
        .iter()
        .map(|n| {
            let started = started
                .entry(n.round)
                .or_insert_with(|| started_programs(state, suite, n.round));
            let started = [&*started, &validation];
            node_view(n, state, arena, direction, first_at, started, &mut programs)
        })
        .collect();
    let islands = state
        .islands
        .iter()
        .map(|island| IslandView {
            id: island.id,
            mutator: island.mutator.clone(),
        })
        .collect();
    let (points, timed) = best_so_far(state, direction);
    let progress = points
        .iter()
        .filter_map(|p| {
            Some(ProgressPoint {
                node: p.node.id.clone(),
                round: p.node.round,
                time: p.time,
                best: score(&p.best.task.end_exact, arena, direction)?,
                best_node: p.best.node.id.clone(),
            })
        })
        .collect();
    let record_text = decimal_string(&suite.record, crate::exact::rational::SCORE_DIGITS);
    RunData {
        kind: "run",
        problem: spec.slug.clone(),
        direction: direction_word(direction),
        cost_unit: config.cost.cost_unit(),
        arena_first: spec.arena_first().map(Reference::arena),
        record: Reference {
            label: format!("suite record ({})", suite.name),
            value: to_f64(&suite.record),
            text: digits::exact_score(&record_text),
        },
        record_gap: arena.map(|a| gap(&suite.record, a, direction)),
        islands,
        rounds: state
            .nodes
            .iter()
            .map(|n| n.round)
            .chain([state.rounds_done])
            .max()
            .unwrap_or(0),
        nodes,
        programs: programs.texts,
        moves: state.events.iter().map(move_view).collect(),
        consultations: state
            .consultations
            .iter()
            .map(|c| ConsultationView {
                round: c.round,
                orchestrator: match &c.backend {
                    Some(backend) => format!("{} ({backend})", c.orchestrator),
                    None => c.orchestrator.clone(),
                },
                usage: c.usage.summary(),
                rejected: c.rejected.clone(),
            })
            .collect(),
        failures: state
            .failures
            .iter()
            .map(|f| FailureView {
                round: f.round,
                island: f.island,
                part: format!("{} {}", f.part, f.name),
                message: match f.usage.is_zero() {
                    true => f.message.clone(),
                    false => format!("{} ({})", f.message, f.usage.summary()),
                },
            })
            .collect(),
        progress,
        time_axis: if timed {
            "wall seconds since the first node"
        } else {
            "cumulative task wall seconds (the lineage has no timestamps)"
        },
    }
}

/// One point of a benchmark run's curve.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CurveView {
    /// CPU seconds of search tasks so far.
    pub x: f64,
    /// Best so far.
    pub value: f64,
    /// Its gap to the arena's #1.
    pub gap: Option<f64>,
}

/// One run of a benchmark.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BenchRunView {
    /// The method.
    pub method: String,
    /// The seed.
    pub seed: u64,
    /// `first` or `rerun`.
    pub batch: &'static str,
    /// Its best, 10 digits.
    pub best: String,
    /// Its curve.
    pub curve: Vec<CurveView>,
}

/// Everything the script draws for a benchmark.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BenchData {
    /// `bench`.
    pub kind: &'static str,
    /// The problem's slug.
    pub problem: String,
    /// `minimize` or `maximize`.
    pub direction: String,
    /// Each run's CPU budget.
    pub budget: f64,
    /// The arena's #1.
    pub arena_first: Option<Reference>,
    /// The methods, in order (their colours).
    pub methods: Vec<String>,
    /// Every run.
    pub runs: Vec<BenchRunView>,
}

/// The data of a benchmark's results.
pub fn bench_data(results: &BenchResults) -> BenchData {
    let direction = match results.direction.as_str() {
        "maximize" => Direction::Maximize,
        _ => Direction::Minimize,
    };
    let gap_of = |value: f64| {
        results
            .arena_first
            .filter(|_| value.is_finite())
            .map(|a| gap(&decimal_of_f64(value), a, direction))
    };
    let mut methods: Vec<String> = results.methods.iter().map(|m| m.method.clone()).collect();
    for run in &results.runs {
        if !methods.contains(&run.method) {
            methods.push(run.method.clone());
        }
    }
    BenchData {
        kind: "bench",
        problem: results.problem.clone(),
        direction: direction_word(direction).into(),
        budget: results.cpu_seconds,
        arena_first: results.arena_first.map(|value| Reference {
            label: "arena #1".into(),
            value,
            text: digits::score(value),
        }),
        methods,
        runs: results
            .runs
            .iter()
            .map(|r| BenchRunView {
                method: r.method.clone(),
                seed: r.seed,
                batch: r.batch.as_str(),
                best: digits::exact_score(&r.best_exact),
                curve: r
                    .curve
                    .iter()
                    .map(|p| CurveView {
                        x: p.cpu_seconds,
                        value: p.best,
                        gap: gap_of(p.best),
                    })
                    .collect(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::results::{Batch, CurvePoint, RunSummary};
    use crate::search::admission::Verdict;
    use crate::search::evaluation::CostMeasure;
    use crate::search::evaluation::TaskResult;
    use crate::search::hypervolume::Fitness;
    use crate::search::lineage::{EventRecord, LineageRecord};
    use crate::suite::Split;

    fn task(id: &str, gain: f64, end: &str, program: Option<&str>) -> TaskResult {
        TaskResult {
            task: id.into(),
            split: Split::Search,
            start_exact: "1.5e0".into(),
            end_exact: end.into(),
            gain,
            evaluations: 10,
            work: 100.0,
            cpu_seconds: 0.5,
            wall_seconds: 0.5,
            usage: Default::default(),
            evidence: Vec::new(),
            edits: vec![format!("Revision on {id}")],
            best_program: program.map(str::to_string),
            construction: None,
            writer: None,
        }
    }

    fn evaluation(tasks: Vec<TaskResult>) -> Evaluation {
        let gains: Vec<f64> = tasks.iter().map(|t| t.gain).collect();
        Evaluation {
            fitness: Fitness {
                quality: gains.iter().copied().fold(0.0, f64::max),
                cost: 1.0,
                latency: 0.25,
            },
            gains,
            tasks,
            reused: false,
        }
    }

    fn node(
        id: &str,
        island: usize,
        round: usize,
        parents: &[&str],
        tasks: Vec<TaskResult>,
    ) -> NodeRecord {
        NodeRecord {
            id: id.into(),
            island,
            round,
            parents: parents.iter().map(|p| p.to_string()).collect(),
            mutator: if round == 0 { "seed" } else { "tuner" }.into(),
            harness: format!("hash-{id}"),
            name: id.into(),
            edit: if round == 0 {
                String::new()
            } else {
                format!("--- parent\n+++ child\n-a\n+{id}\n")
            },
            evidence: vec![format!("diagnosis of {id}")],
            usage: Default::default(),
            evaluation: evaluation(tasks),
            parent_evaluation: None,
            verdict: Verdict {
                admitted: round == 0,
                hypervolume_before: 0.0,
                hypervolume_after: 0.0,
                reason: format!("reason {id}"),
            },
            validation: None,
            at: Some(1000.0 + round as f64 * 10.0),
        }
    }

    /// Two seeds on two islands and a child of the first with a co-parent from the second.
    fn state() -> SearchState {
        let config = crate::search::lineage::RunConfig {
            suite: "s.toml".into(),
            suite_pin: None,
            islands: 2,
            rounds: Some(1),
            hours: None,
            seed: 1,
            patience: 1,
            quality: crate::search::evaluation::Quality::Best,
            cost: CostMeasure::Counted,
            attempts: 1,
            writer: "builtin".into(),
            mutators: vec!["tuner".into()],
            orchestrator: "builtin".into(),
            lineage_store: "jsonl".into(),
            executor: "local-threads".into(),
            slurm: None,
            cpu_seconds: None,
            components: Default::default(),
            tasks_per_round: 2,
            task_evaluations: None,
            promote_discoveries: false,
            agents: None,
            admission: Default::default(),
            archive_population: 1,
            seed_harnesses: vec![],
        };
        let shared = "name = \"p\"\n";
        let mut child = node(
            "n0002",
            0,
            1,
            &["n0000", "n0001"],
            vec![
                task("t0", 3.0, "1.4e0", Some(shared)),
                task("t1", 0.0, "1.5e0", None),
            ],
        );
        child.parent_evaluation = Some(evaluation(vec![
            task("t1", 1.0, "1.45e0", None),
            task("t0", 2.0, "1.3e0", Some("name = \"q\"\n")),
        ]));
        SearchState::replay(&[
            LineageRecord::Started(Box::new(config)),
            LineageRecord::Node(Box::new(node(
                "n0000",
                0,
                0,
                &[],
                vec![task("t0", 1.0, "1.47e0", Some(shared))],
            ))),
            LineageRecord::Node(Box::new(node(
                "n0001",
                1,
                0,
                &[],
                vec![task("t0", 0.5, "1.49e0", None)],
            ))),
            LineageRecord::Node(Box::new(child)),
            LineageRecord::Event(EventRecord {
                round: 1,
                islands: vec![1, 0],
                diagnosis: "island 0 is dry".into(),
                action: Move::Graft {
                    from: 1,
                    into: 0,
                    node: "n0001".into(),
                },
            }),
            LineageRecord::RoundEnd { round: 1 },
        ])
    }

    #[test]
    fn gaps_are_exact_and_signed_by_direction() {
        let q = |s: &str| parse_decimal(s).unwrap();
        assert_eq!(gap(&q("1.4508066"), 1.4508066, Direction::Minimize), 0.0);
        assert!((gap(&q("1.5"), 1.4508066, Direction::Minimize) - 0.0491934).abs() < 1e-15);
        assert!(gap(&q("1.45"), 1.4508066, Direction::Minimize) < 0.0);
        assert!((gap(&q("0.95"), 0.96, Direction::Maximize) - 0.01).abs() < 1e-15);
        assert!(gap(&q("0.97"), 0.96, Direction::Maximize) < 0.0);
        assert!(gap(&q("1"), f64::NAN, Direction::Minimize).is_nan());
    }

    #[test]
    fn a_node_view_has_its_grafts_its_parent_gains_and_shared_programs() {
        let state = state();
        let mut programs = Programs::default();
        let views: Vec<NodeView> = state
            .nodes
            .iter()
            .map(|n| {
                node_view(
                    n,
                    &state,
                    Some(1.25),
                    Direction::Minimize,
                    Some(1000.0),
                    [&HashMap::new(), &HashMap::new()],
                    &mut programs,
                )
            })
            .collect();
        let child = &views[2];
        assert_eq!(
            child.parents,
            vec![
                ParentLink {
                    id: "n0000".into(),
                    graft: false
                },
                ParentLink {
                    id: "n0001".into(),
                    graft: true
                },
            ]
        );
        // The parent's re-run is matched by task id, not by position.
        let parent_gains: Vec<Option<f64>> = child.tasks.iter().map(|t| t.parent_gain).collect();
        assert_eq!(parent_gains, [Some(2.0), Some(1.0)]);
        assert_eq!(views[0].tasks[0].parent_gain, None);
        // The child's best is its parent's re-run's 1.3 on t0 (it counts both evaluations).
        let best = child.best.as_ref().unwrap();
        assert_eq!(best.text, "1.300000000");
        assert_eq!(best.exact, "1.3e0");
        assert!((best.gap.unwrap() - 0.05).abs() < 1e-15);
        assert_eq!(child.best_task.as_deref(), Some("t0"));
        // One program text shared by two nodes is stored once.
        assert_eq!(programs.texts, ["name = \"p\"\n"]);
        assert_eq!(views[0].tasks[0].program, Some(0));
        assert_eq!(child.tasks[0].program, Some(0));
        assert_eq!(child.seconds, Some(10.0));
        assert_eq!(child.fitness_text, ["3.00", "1.00", "0.250"]);
        assert!(child.edit.contains("+n0002"));
        assert_eq!(child.reason, "reason n0002");
        assert!(!child.admitted && views[0].admitted);
    }

    #[test]
    fn programs_are_diffed_against_the_parents_and_a_seeds_is_whole() {
        let state = state();
        let mut programs = Programs::default();
        let started = HashMap::from([("t0".to_string(), "name = \"s\"\n".to_string())]);
        let view = |k: usize, programs: &mut Programs| {
            node_view(
                &state.nodes[k],
                &state,
                None,
                Direction::Minimize,
                None,
                [&started, &HashMap::new()],
                programs,
            )
        };
        // The seed's program is all new.
        let seed = view(0, &mut programs);
        let diff = seed.tasks[0].program_diff.as_deref().unwrap();
        assert!(
            diff.starts_with("--- (none: a seed has no parent)\n+++ n0000"),
            "{diff}"
        );
        assert!(diff.ends_with("@@ -0,0 +1 @@\n+name = \"p\"\n"), "{diff}");
        // The child against its parent's re-run on the same task (matched by id).
        let child = view(2, &mut programs);
        let diff = child.tasks[0].program_diff.as_deref().unwrap();
        assert!(
            diff.starts_with("--- n0000 (its parent's program"),
            "{diff}"
        );
        assert!(diff.contains("\n-name = \"q\"\n+name = \"p\"\n"), "{diff}");
        // No improving program, no diff.
        assert_eq!(child.tasks[1].program_diff, None);
        // Without the parent's re-run: against the program the task started from.
        let rows = task_rows(
            &state.nodes[2].evaluation,
            None,
            Some("n0000"),
            "n0002",
            &started,
            &mut programs,
        );
        let diff = rows[0].program_diff.as_deref().unwrap();
        assert!(diff.contains("the one the task started from"), "{diff}");
        assert!(diff.contains("\n-name = \"s\"\n+name = \"p\"\n"), "{diff}");
        // Equal programs: an empty diff.
        let same = ProgramBase::Parent {
            id: "n0000",
            rerun: Some("a = 1\n"),
            started: None,
        };
        assert_eq!(program_diff(same, "a = 1\n", "n0002"), "");
    }

    #[test]
    fn edit_lines_without_edits_say_what_ran() {
        assert_eq!(
            edit_line("Minimal: "),
            "Minimal: the parent program as it is, no edit"
        );
        assert_eq!(
            edit_line("Reserve: "),
            "Reserve: the best program again, from the best construction, no edit"
        );
        assert_eq!(
            edit_line("Revision:  (failed: no answer)"),
            "Revision: no edit (failed: no answer)"
        );
        assert_eq!(edit_line("Revision: tune beta"), "Revision: tune beta");
    }

    #[test]
    fn moves_name_their_node() {
        let state = state();
        let view = move_view(&state.events[0]);
        assert_eq!(view.kind, "graft");
        assert_eq!(view.node.as_deref(), Some("n0001"));
        assert_eq!(view.islands, [1, 0]);
    }

    #[test]
    fn bench_data_has_every_run_with_its_gaps_and_every_method() {
        let run = |method: &str, batch| RunSummary {
            method: method.into(),
            seed: 1,
            batch,
            dir: "d".into(),
            cpu_seconds: 2.0,
            process_cpu_seconds: None,
            wall_seconds: 2.0,
            steps: 2,
            counted_steps: 2,
            best_exact: "9.612715973123e-1".into(),
            best: 0.9612715973123,
            quality: 1.0,
            validation_best_exact: None,
            validation_best: None,
            validation_quality: None,
            curve: vec![
                CurvePoint {
                    cpu_seconds: 1.0,
                    wall_seconds: 1.0,
                    best: 0.95,
                },
                CurvePoint {
                    cpu_seconds: 2.0,
                    wall_seconds: 2.0,
                    best: f64::NAN,
                },
            ],
        };
        let results = BenchResults {
            problem: "second-autocorrelation-inequality".into(),
            direction: "maximize".into(),
            suite: "s.toml".into(),
            cpu_seconds: 2.0,
            arena_first: Some(0.96),
            methods: Vec::new(),
            runs: vec![run("milo", Batch::First), run("stock", Batch::Rerun)],
            verdicts: Vec::new(),
            ladder: Vec::new(),
            transfers: Vec::new(),
        };
        let data = bench_data(&results);
        assert_eq!(data.methods, ["milo", "stock"]);
        assert_eq!(data.runs[1].batch, "rerun");
        assert_eq!(data.runs[0].best, "0.9612715973");
        let gap = data.runs[0].curve[0].gap.unwrap();
        assert!((gap - 0.01).abs() < 1e-15, "{gap}");
        assert_eq!(data.runs[0].curve[1].gap, None);
        assert_eq!(data.arena_first.unwrap().text, "0.9600000000");
    }
}
