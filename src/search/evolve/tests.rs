//! The evolve loop with scripted parts: a writer whose gains and costs are a table keyed by the
//! harness's name (no optimizer work), an executor that records every batch it runs, a mutator
//! that proposes scripted children and records what it saw, an orchestrator that records its
//! calls. Each run takes milliseconds.

use super::*;
use crate::agent::{Assignment, Attempt, GivenProgram, OptimizerWriter};
use crate::error::MiloError;
use crate::executor::{AttemptTask, Executor, LocalThreads};
use crate::problems::Direction;
use crate::program::Program;
use crate::search::evaluation::{CostMeasure, Evaluation, Quality};
use crate::search::lineage::{Components, ParentChoice};
use crate::search::mutators::{MutationContext, MutationError, Mutator, Proposal};
use crate::search::orchestrator::{Consultation, Orchestrator};
use crate::search::round_tasks::slot_of;
use std::collections::HashSet;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The default suite: 4 search tasks, 2 validation tasks.
const SUITE: &str = "problems/suites/default.toml";
const SEARCH_TASKS: usize = 4;

/// Gain (in units of the problem's `min_improvement`) and work (cell-evaluations) of every
/// attempt of a harness, by its name; `broken` fails.
fn script(harness: &str) -> Result<(f64, f64)> {
    match harness {
        "worse" => Ok((0.5, 2e6)),
        "better" => Ok((2.0, 1e6)),
        "cheaper" => Ok((1.0, 5e5)),
        // The seed round's unedited runs ([`ScriptedVerbatim`]): less than any seed harness.
        "verbatim" => Ok((0.5, 1e6)),
        "broken" => Err(MiloError::Usage("scripted writer failure".into())),
        _ => Ok((1.0, 1e6)),
    }
}

/// Returns the start with an exact score better by the scripted gain, made by the parent program
/// renamed `<parent>+<harness>` (so the archive's choice is visible in later rounds' programs).
struct ScriptedWriter;

impl OptimizerWriter for ScriptedWriter {
    fn name(&self) -> &str {
        "scripted"
    }

    fn solve(&self, harness: &Harness, task: &Assignment) -> Result<Attempt> {
        let (gain, work) = script(&harness.name)?;
        let spec = task.problem.spec();
        let delta = BigRational::from_float(gain * spec.min_improvement).unwrap();
        let best_exact = match spec.direction {
            Direction::Minimize => task.start_exact - delta,
            Direction::Maximize => task.start_exact + delta,
        };
        let mut program = task.parent.clone();
        program.name = format!("{}+{}", program.name, harness.name);
        Ok(Attempt {
            best: task.start.to_vec(),
            best_exact,
            improved: true,
            best_program: program,
            evidence: vec![],
            runs: vec![],
            evaluations: 0,
            work,
            seconds: 0.0,
            cpu_seconds: 0.0,
            usage: Default::default(),
        })
    }
}

/// The scripted stand-in for the `verbatim` writer: the gain of the harness named `verbatim`,
/// by the parent program unchanged.
struct ScriptedVerbatim;

impl OptimizerWriter for ScriptedVerbatim {
    fn name(&self) -> &str {
        "verbatim"
    }

    fn solve(&self, _harness: &Harness, task: &Assignment) -> Result<Attempt> {
        let mut verbatim = Harness::program_evolution();
        verbatim.name = "verbatim".into();
        let mut attempt = ScriptedWriter.solve(&verbatim, task)?;
        attempt.best_program = task.parent.clone();
        Ok(attempt)
    }
}

/// One batch an executor ran: the harness's name, the task ids, the parent programs' names, the
/// tasks' evaluation budgets.
type Batch = (String, Vec<String>, Vec<String>, Vec<Option<u64>>);

/// Local threads with the scripted writer, recording every batch.
struct RecordingExecutor {
    inner: LocalThreads,
    batches: Arc<Mutex<Vec<Batch>>>,
}

impl Executor for RecordingExecutor {
    fn name(&self) -> &str {
        "recording"
    }

    fn run(&self, tasks: &[AttemptTask], cancel: &CancelToken) -> Result<Vec<Result<Attempt>>> {
        let harness = Harness::parse(&tasks[0].harness, Path::new("task")).unwrap();
        let ids = tasks.iter().map(|t| t.task.clone()).collect();
        let programs = tasks
            .iter()
            .map(|t| Program::parse(&t.parent, Path::new("task")).unwrap().name)
            .collect();
        let budgets = tasks.iter().map(|t| t.evaluations).collect();
        self.batches
            .lock()
            .unwrap()
            .push((harness.name, ids, programs, budgets));
        self.inner.run(tasks, cancel)
    }
}

/// What the mutator saw in one call.
#[derive(Clone, Debug, PartialEq)]
struct Seen {
    parent: String,
    validation_visible: bool,
}

/// Proposes the parent renamed to the next scripted name (an `Err` fails), recording each call.
struct ScriptedMutator {
    children: Mutex<VecDeque<std::result::Result<&'static str, &'static str>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Mutator for ScriptedMutator {
    fn name(&self) -> &'static str {
        "scripted"
    }

    fn propose(&self, ctx: &MutationContext) -> std::result::Result<Proposal, MutationError> {
        let visible = ctx.parent.0.validation.is_some()
            || ctx.history.iter().any(|(n, _)| n.validation.is_some())
            || ctx.co_parent.is_some_and(|(n, _)| n.validation.is_some());
        self.seen.lock().unwrap().push(Seen {
            parent: ctx.parent.0.id.clone(),
            validation_visible: visible,
        });
        let next = self.children.lock().unwrap().pop_front();
        match next.expect("a scripted child for every call") {
            Ok(name) => {
                // A real policy change (the tune range) unless the name says `same…`: a
                // rename alone behaves as the parent, which the dry run catches.
                let mut harness = ctx.parent.1.clone();
                harness.name = name.into();
                if !name.starts_with("same") {
                    harness.tune_range = 1.0 + (harness.tune_range + name.len() as f64) % 99.0;
                }
                Ok(Proposal {
                    harness,
                    evidence: vec![format!("scripted: {name}")],
                    usage: Default::default(),
                })
            }
            Err(message) => Err(MutationError::Failed {
                message: message.into(),
                usage: Default::default(),
            }),
        }
    }
}

/// Records the round of every consultation and makes no move; fails if it is shown validation.
struct RecordingOrchestrator {
    calls: Arc<Mutex<Vec<usize>>>,
}

impl Orchestrator for RecordingOrchestrator {
    fn name(&self) -> &str {
        "recording"
    }

    fn consult(
        &self,
        state: &SearchState,
        round: usize,
        _patience: usize,
        _mutators: &[&str],
        _all_search_slots: &[String],
        _cancel: &CancelToken,
    ) -> Consultation {
        // Validation is held out: it never reaches the orchestrator.
        assert!(
            state.nodes.iter().all(|n| n.validation.is_none()),
            "the orchestrator was shown validation"
        );
        self.calls.lock().unwrap().push(round);
        Consultation::default()
    }
}

/// A scripted run's records of what its parts saw.
struct Script {
    batches: Arc<Mutex<Vec<Batch>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
    consultations: Arc<Mutex<Vec<usize>>>,
}

/// Runs one island for `rounds` rounds with the scripted children, parents chosen greedily
/// (the best member), patience 1.
fn run(
    dir: &Path,
    rounds: usize,
    children: Vec<std::result::Result<&'static str, &'static str>>,
) -> (Search, Stop, Script) {
    run_with(dir, rounds, children, |_| {})
}

/// [`run`] with the settings changed by `adjust`.
fn run_with(
    dir: &Path,
    rounds: usize,
    children: Vec<std::result::Result<&'static str, &'static str>>,
    adjust: impl FnOnce(&mut RunConfig),
) -> (Search, Stop, Script) {
    let mut config = settings(rounds);
    adjust(&mut config);
    let script = Script {
        batches: Arc::default(),
        seen: Arc::default(),
        consultations: Arc::default(),
    };
    let parts = Parts {
        mutators: vec![Box::new(ScriptedMutator {
            children: Mutex::new(children.into()),
            seen: script.seen.clone(),
        })],
        orchestrator: Box::new(RecordingOrchestrator {
            calls: script.consultations.clone(),
        }),
        executor: recording_executor(&script),
    };
    let mut search = Search::start_with(dir, config, parts, CancelToken::new()).unwrap();
    let stop = search.run(&mut Quiet).unwrap();
    (search, stop, script)
}

/// An observer that shows nothing.
struct Quiet;
impl SearchObserver for Quiet {}

/// Local threads with the scripted writer, recording into `script`.
fn recording_executor(script: &Script) -> Box<dyn Executor> {
    Box::new(RecordingExecutor {
        inner: LocalThreads::new(2)
            .with_writer(Arc::new(ScriptedWriter))
            .with_writer(Arc::new(ScriptedVerbatim)),
        batches: script.batches.clone(),
    })
}

/// One island, `rounds` rounds, the scripted parts by name, parents chosen greedily, patience 1.
fn settings(rounds: usize) -> RunConfig {
    RunConfig {
        suite: SUITE.into(),
        suite_pin: None,
        islands: 1,
        rounds: Some(rounds),
        hours: None,
        seed: 1,
        patience: 1,
        quality: Quality::Best,
        cost: CostMeasure::Counted,
        attempts: 1,
        writer: "scripted".into(),
        mutators: vec!["scripted".into()],
        orchestrator: "recording".into(),
        lineage_store: "jsonl".into(),
        executor: "recording".into(),
        slurm: None,
        cpu_seconds: None,
        components: Components {
            parent_choice: ParentChoice::Best,
            memory: true,
            orchestrator: true,
            harness_evolution: true,
        },
        tasks_per_round: SEARCH_TASKS,
        task_evaluations: None,
        promote_discoveries: false,
        agents: None,
        admission: Default::default(),
        archive_population: 1,
        seed_harnesses: vec![],
    }
}

fn node<'a>(search: &'a Search, id: &str) -> &'a NodeRecord {
    search.state().node(id).unwrap()
}

#[test]
fn a_dominated_child_is_rejected_with_its_reason_and_a_better_one_admitted() {
    let dir = tempfile::tempdir().unwrap();
    let (search, stop, _) = run(dir.path(), 2, vec![Ok("worse"), Ok("better")]);
    assert_eq!(stop, Stop::Rounds);
    let seed = node(&search, "n0000");
    assert!(seed.admitted());
    assert_eq!(seed.evaluation.tasks.len(), SEARCH_TASKS);
    let worse = node(&search, "n0001");
    assert_eq!((worse.name.as_str(), worse.round), ("worse", 1));
    assert!(!worse.admitted());
    assert!(
        worse
            .verdict
            .reason
            .starts_with("loses to its parent: mean gain over the parent -0.5000"),
        "{}",
        worse.verdict.reason
    );
    // The parent ran again on the child's tasks (common random numbers), fresh to round 1.
    let again = worse.parent_evaluation.as_ref().unwrap();
    let ids = |e: &Evaluation| e.tasks.iter().map(|t| t.task.clone()).collect::<Vec<_>>();
    assert_eq!(ids(again), ids(&worse.evaluation));
    assert_ne!(ids(again), ids(&seed.evaluation));
    let better = node(&search, "n0002");
    assert_eq!((better.name.as_str(), better.round), ("better", 2));
    assert!(better.admitted(), "{}", better.verdict.reason);
    assert!(better.evaluation.fitness.quality > seed.evaluation.fitness.quality);
    assert_eq!(search.state().admitted(0).len(), 2);
    assert!(search.state().rejected.contains(&worse.harness));
}

#[test]
fn the_selected_parent_is_used_and_validation_is_run_for_a_new_best_but_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let (search, _, script) = run(dir.path(), 3, vec![Ok("worse"), Ok("better"), Ok("after")]);
    // Greedy selection: the seed until `better` is admitted, then `better`.
    let seen = script.seen.lock().unwrap().clone();
    let parents: Vec<&str> = seen.iter().map(|s| s.parent.as_str()).collect();
    assert_eq!(parents, ["n0000", "n0000", "n0002"]);
    assert_eq!(node(&search, "n0003").parents, vec!["n0002".to_string()]);
    assert!(seen.iter().all(|s| !s.validation_visible), "{seen:?}");
    // The seed and the new best are validated; the rejected child and `after` (no better than
    // `better`) are not.
    let validated = |id: &str| node(&search, id).validation.is_some();
    assert!(validated("n0000") && validated("n0002"));
    assert!(!validated("n0001") && !validated("n0003"));
    let validation_batches: Vec<String> = script
        .batches
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, ids, _, _)| ids.iter().all(|id| id.contains("/v")))
        .map(|(name, _, _, _)| name.clone())
        .collect();
    let seed_name = node(&search, "n0000").name.clone();
    assert_eq!(validation_batches, [seed_name, "better".to_string()]);
}

#[test]
fn the_seed_round_runs_each_slots_program_unedited_once_on_island_0() {
    let dir = tempfile::tempdir().unwrap();
    let children = vec![Ok("worse"), Ok("worse")];
    let (search, _, _) = run_with(dir.path(), 1, children, |c| c.islands = 2);
    assert_eq!(node(&search, "n0001").round, 0);
    let program_names = |id: &str| -> Vec<(String, String)> {
        node(&search, id)
            .evaluation
            .tasks
            .iter()
            .map(|t| {
                let text = t.best_program.as_ref().unwrap();
                let program = Program::parse(text, Path::new("lineage")).unwrap();
                (t.task.clone(), program.name)
            })
            .collect()
    };
    let suite_program = "third-default";
    // Island 0: the first task of each slot ran the suite's program as it is, the others
    // under the seed harness; the tasks keep the round's order.
    let island_0 = program_names("n0000");
    assert_eq!(island_0.len(), SEARCH_TASKS);
    let mut slots_seen = HashSet::new();
    for (task, program) in &island_0 {
        match slots_seen.insert(slot_of(task).to_string()) {
            true => assert_eq!(program, suite_program, "{task}"),
            false => assert_eq!(program, &format!("{suite_program}+program-evolution")),
        }
    }
    assert_eq!(slots_seen.len(), 2);
    // The lineage says which tasks the run's own writer did not run.
    for task in &node(&search, "n0000").evaluation.tasks {
        let unedited = task
            .best_program
            .as_deref()
            .unwrap()
            .contains("third-default\"");
        let expected = unedited.then(|| GivenProgram.name().to_string());
        assert_eq!(task.writer, expected, "{}", task.task);
    }
    let ids: Vec<&String> = island_0.iter().map(|(t, _)| t).collect();
    let mut sorted = ids.clone();
    sorted.sort_by_key(|id| id.rsplit_once('k').unwrap().1.parse::<usize>().unwrap());
    assert_eq!(ids, sorted);
    // Island 1 ran its seed harness on every task.
    let island_1 = program_names("n0001");
    assert!(island_1
        .iter()
        .all(|(_, p)| p.starts_with(&format!("{suite_program}+"))));
}

#[test]
fn a_rounds_parent_program_is_the_archives_best_from_the_rounds_before() {
    let dir = tempfile::tempdir().unwrap();
    let (search, _, script) = run(dir.path(), 2, vec![Ok("better"), Ok("after")]);
    let batches = script.batches.lock().unwrap().clone();
    let programs_of = |prefix: &str| -> Vec<String> {
        let mut names: Vec<String> = batches
            .iter()
            .flat_map(|(_, ids, programs, _)| ids.iter().zip(programs))
            .filter(|(id, _)| id.contains(prefix))
            .map(|(_, p)| p.clone())
            .collect();
        names.sort();
        names.dedup();
        names
    };
    let suite_program = "third-default".to_string();
    let seed = node(&search, "n0000").name.clone();
    assert_eq!(programs_of("/r0k"), std::slice::from_ref(&suite_program));
    // Round 1 runs the seed's program (the only one in the archive).
    let after_seed = format!("{suite_program}+{seed}");
    assert_eq!(programs_of("/r1k"), std::slice::from_ref(&after_seed));
    // In round 1 the child `better` reached better scores than its parent's re-run, so round 2
    // runs its program.
    assert_eq!(programs_of("/r2k"), [format!("{after_seed}+better")]);
    // Validation always runs the suite's program from the frozen starts.
    assert_eq!(programs_of("/v"), [suite_program]);
}

#[test]
fn a_child_that_behaves_as_its_parent_is_re_proposed_and_then_recorded_unevaluated() {
    let dir = tempfile::tempdir().unwrap();
    let renames = vec![Ok("same-a"), Ok("same-b"), Ok("same-c"), Ok("same-d")];
    let (search, _, script) = run(dir.path(), 1, renames);
    // Four proposals (the dry run re-proposed three times), then one unevaluated record.
    assert_eq!(script.seen.lock().unwrap().len(), 4);
    let child = node(&search, "n0001");
    assert_eq!(child.name, "same-d");
    assert!(!child.admitted() && child.evaluation.tasks.is_empty());
    assert!(
        child.verdict.reason.contains("dry run"),
        "{}",
        child.verdict.reason
    );
    assert!(child.parent_evaluation.is_none());
    // Only the seed's batches ran: the child cost no evaluation.
    let batches = script.batches.lock().unwrap();
    assert!(batches
        .iter()
        .all(|(name, _, _, _)| !name.starts_with("same")));
    // A rename followed by a real change is evaluated, with the dry run in its evidence.
    let dir = tempfile::tempdir().unwrap();
    let (search, _, _) = run(dir.path(), 1, vec![Ok("same-a"), Ok("better")]);
    let child = node(&search, "n0001");
    assert_eq!(child.name, "better");
    assert!(child.evidence.iter().any(|e| e.starts_with("dry run: 1")));
    assert!(!child.evaluation.tasks.is_empty());
}

#[test]
fn with_harness_evolution_off_the_best_seed_runs_once_per_round_and_is_reused_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let (search, _, script) = run_with(dir.path(), 2, vec![], |config| {
        config.islands = 2;
        config.components.harness_evolution = false;
    });
    // No mutator was asked; each round the first island runs the best seed on the round's
    // tasks and the second reuses that evaluation, uncharged.
    assert!(script.seen.lock().unwrap().is_empty());
    for round in 1..=2 {
        let nodes: Vec<&NodeRecord> = search
            .state()
            .nodes
            .iter()
            .filter(|n| n.round == round)
            .collect();
        assert_eq!(nodes.len(), 2);
        assert!(nodes.iter().all(|n| n.mutator == "frozen" && !n.admitted()));
        assert_eq!(nodes[0].harness, nodes[1].harness);
        assert!(!nodes[0].evaluation.reused && nodes[1].evaluation.reused);
        let ran = script
            .batches
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, ids, _, _)| ids[0].contains(&format!("/r{round}k")))
            .count();
        assert_eq!(ran, 1, "round {round}");
    }
}

#[test]
fn the_orchestrator_is_consulted_when_the_island_stalls() {
    let dir = tempfile::tempdir().unwrap();
    // The seeds' validation counts for round 1 and `better`'s for round 2; round 3 improves
    // nothing, so with patience 1 the island is stalled after it.
    let (_, _, script) = run(dir.path(), 3, vec![Ok("worse"), Ok("better"), Ok("after")]);
    assert_eq!(*script.consultations.lock().unwrap(), [3]);
    let dir = tempfile::tempdir().unwrap();
    let (_, _, script) = run(dir.path(), 1, vec![Ok("better")]);
    assert!(script.consultations.lock().unwrap().is_empty());
}

#[test]
fn a_mutator_failure_is_recorded_and_the_island_skips_the_round() {
    let dir = tempfile::tempdir().unwrap();
    let (search, stop, _) = run(dir.path(), 2, vec![Err("no idea"), Ok("better")]);
    assert_eq!(stop, Stop::Rounds);
    let failures = search.state().failures.clone();
    assert_eq!(failures.len(), 1);
    let f = &failures[0];
    assert_eq!((f.round, f.island), (1, 0));
    assert_eq!((f.part.as_str(), f.name.as_str()), ("mutator", "scripted"));
    assert_eq!(f.message, "no idea");
    assert!(!search.state().nodes.iter().any(|n| n.round == 1));
    assert_eq!(node(&search, "n0001").name, "better");
    // The record is in the lineage file and replays to the same state (once the run, which
    // holds the directory's lock, is closed).
    drop(search);
    let (_, _, records) = open_store(dir.path()).unwrap();
    assert_eq!(SearchState::replay(&records).failures, failures);
}

#[test]
fn a_writer_failure_is_recorded_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (search, stop, _) = run(dir.path(), 2, vec![Ok("broken"), Ok("better")]);
    assert_eq!(stop, Stop::Rounds);
    let failures = &search.state().failures;
    assert_eq!(failures.len(), 1);
    let f = &failures[0];
    assert_eq!(
        (f.round, f.part.as_str(), f.name.as_str()),
        (1, "writer", "scripted")
    );
    assert!(
        f.message.contains("scripted writer failure"),
        "{}",
        f.message
    );
    assert!(f.message.starts_with("task "), "{}", f.message);
    assert_eq!(search.state().nodes.len(), 2);
    assert!(search.state().has_step(1, 0) && search.state().has_step(2, 0));
}

#[test]
fn a_runs_task_evaluations_replace_the_suites_budget_on_every_task_and_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let (search, _, script) = run_with(dir.path(), 1, vec![Ok("child")], |config| {
        config.task_evaluations = Some(77);
    });
    assert_eq!(search.suite().budget.evaluations, Some(77));
    let batches = script.batches.lock().unwrap().clone();
    // Seeding, its validation, the child's round: search and validation tasks alike.
    assert!(batches.len() >= 3, "{batches:?}");
    assert!(batches
        .iter()
        .all(|(_, _, _, budgets)| budgets.iter().all(|&b| b == Some(77))));
    // Recorded in the run's settings, which a resume loads the suite with.
    drop(search);
    let (_, recorded, _) = open_store(dir.path()).unwrap();
    assert_eq!(recorded.task_evaluations, Some(77));

    // Without the override every task keeps the suite's own budget.
    let dir = tempfile::tempdir().unwrap();
    let (search, _, script) = run(dir.path(), 1, vec![Ok("child")]);
    let suite_budget = Suite::load(Path::new(SUITE)).unwrap().budget.evaluations;
    assert_eq!(search.suite().budget.evaluations, suite_budget);
    assert!(script
        .batches
        .lock()
        .unwrap()
        .iter()
        .all(|(_, _, _, budgets)| budgets.iter().all(|&b| b == suite_budget)));
}

#[test]
fn zero_task_evaluations_are_a_usage_error_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = settings(1);
    config.task_evaluations = Some(0);
    let script = Script {
        batches: Arc::default(),
        seen: Arc::default(),
        consultations: Arc::default(),
    };
    let parts = Parts {
        mutators: Vec::new(),
        orchestrator: Box::new(RecordingOrchestrator {
            calls: script.consultations.clone(),
        }),
        executor: recording_executor(&script),
    };
    let err = Search::start_with(dir.path(), config, parts, CancelToken::new())
        .err()
        .expect("refused");
    assert!(matches!(err, MiloError::Usage(_)), "{err}");
    assert!(err.to_string().contains("--task-evaluations"), "{err}");
    assert!(!dir
        .path()
        .join(crate::search::lineage::LINEAGE_FILE)
        .exists());
}

#[test]
fn a_cancelled_run_stops_before_its_next_step() {
    let dir = tempfile::tempdir().unwrap();
    let config = {
        let (search, _, _) = run(dir.path(), 1, vec![Ok("worse")]);
        search.config().clone()
    };
    let other = tempfile::tempdir().unwrap();
    let cancel = CancelToken::new();
    cancel.cancel();
    let parts = Parts {
        mutators: vec![],
        orchestrator: Box::new(RecordingOrchestrator {
            calls: Arc::default(),
        }),
        executor: Box::new(
            LocalThreads::new(1)
                .with_writer(Arc::new(ScriptedWriter))
                .with_writer(Arc::new(ScriptedVerbatim)),
        ),
    };
    let mut search = Search::start_with(other.path(), config, parts, cancel).unwrap();
    struct Quiet;
    impl SearchObserver for Quiet {}
    assert_eq!(search.run(&mut Quiet).unwrap(), Stop::Interrupted);
    assert!(search.state().nodes.is_empty());
}

/// Waits until its task is cancelled (at most ten seconds), then returns the start unimproved.
struct WaitingWriter;

impl OptimizerWriter for WaitingWriter {
    fn name(&self) -> &str {
        "waiting"
    }

    fn solve(&self, _harness: &Harness, task: &Assignment) -> Result<Attempt> {
        let waited = Instant::now();
        while !task.cancel.is_cancelled() && waited.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(Attempt {
            best: task.start.to_vec(),
            best_exact: task.start_exact.clone(),
            improved: false,
            best_program: task.parent.clone(),
            evidence: vec![],
            runs: vec![],
            evaluations: 0,
            work: 1.0,
            seconds: 0.0,
            cpu_seconds: 0.0,
            usage: Default::default(),
        })
    }
}

/// Local threads with the waiting writer that, like the Slurm executor, reports a batch cut
/// off by cancellation as its own error.
struct InterruptedExecutor(LocalThreads);

impl Executor for InterruptedExecutor {
    fn name(&self) -> &str {
        "interrupted"
    }

    fn run(&self, tasks: &[AttemptTask], cancel: &CancelToken) -> Result<Vec<Result<Attempt>>> {
        let attempts = self.0.run(tasks, cancel)?;
        match cancel.is_cancelled() {
            true => Err(MiloError::Usage(
                "interrupted with tasks still queued".into(),
            )),
            false => Ok(attempts),
        }
    }
}

#[test]
fn the_hours_cancel_the_step_in_flight_at_the_deadline_and_it_records_nothing() {
    let waiting = || LocalThreads::new(2).with_writer(Arc::new(WaitingWriter));
    let executors: [Box<dyn Executor>; 2] = [
        Box::new(waiting()),
        Box::new(InterruptedExecutor(waiting())),
    ];
    for executor in executors {
        let dir = tempfile::tempdir().unwrap();
        let mut config = settings(1);
        config.rounds = None;
        config.hours = Some(0.2 / 3600.0);
        config.writer = "waiting".into();
        let parts = Parts {
            mutators: vec![],
            orchestrator: Box::new(RecordingOrchestrator {
                calls: Arc::default(),
            }),
            executor,
        };
        let cancel = CancelToken::new();
        let mut search = Search::start_with(dir.path(), config, parts, cancel.clone()).unwrap();
        // Without the deadline the seed step would wait out its ten seconds and be recorded;
        // an executor's interruption is not the run's error.
        assert_eq!(search.run(&mut Quiet).unwrap(), Stop::Hours);
        assert!(search.state().nodes.is_empty());
        assert!(search.state().failures.is_empty());
        assert!(cancel.is_cancelled());
    }
}

#[test]
fn unknown_part_names_are_usage_errors_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let (search, _, _) = run(dir.path(), 1, vec![Ok("worse")]);
    let mut config = search.config().clone();
    drop(search);
    config.writer = "builtin".into();
    config.mutators = vec!["tuner".into()];
    config.executor = "local-threads".into();
    config.orchestrator = "oracle".into();
    let fresh = tempfile::tempdir().unwrap();
    let run_dir = fresh.path().join("run");
    let err = Search::start(&run_dir, config.clone(), 1, CancelToken::new())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("'oracle'") && err.contains("builtin"), "{err}");
    assert!(!run_dir.exists());
    config.orchestrator = "builtin".into();
    config.mutators = vec!["gardener".into()];
    let err = Search::start(&run_dir, config, 1, CancelToken::new())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("'gardener'"), "{err}");
    // A run recorded with parts this binary does not know cannot be resumed.
    let err = Search::resume(dir.path(), 1, CancelToken::new(), false)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("'scripted'"), "{err}");
}

#[test]
fn an_llm_mutators_tokens_and_diagnosis_and_an_llm_orchestrators_refusal_reach_the_lineage() {
    use crate::llm::scripted::ScriptedBackend;
    use crate::search::mutators::llm::LlmMutator;
    use crate::search::orchestrator::llm::LlmOrchestrator;
    let dir = tempfile::tempdir().unwrap();
    let seed = crate::harness::seed_harnesses().remove(1);
    let answer = |programs: usize| {
        let mut child = seed.clone();
        child.programs = programs;
        Ok(format!(
            "DIAGNOSIS: one program per task is too few.\n```toml\n{}```",
            child.to_toml()
        ))
    };
    let mutator = ScriptedBackend::new("model", vec![answer(5), answer(6)]);
    let refusal = r#"{"moves": [{"kind": "split", "island": 0, "diagnosis": "d"}]}"#;
    let orchestrator = ScriptedBackend::new("judge", vec![Ok(refusal.into())]);
    let script = Script {
        batches: Arc::default(),
        seen: Arc::default(),
        consultations: Arc::default(),
    };
    let parts = Parts {
        mutators: vec![Box::new(LlmMutator::new(crate::llm::ModelPool::new(vec![
            (1.0, Box::new(mutator)),
        ])))],
        orchestrator: Box::new(LlmOrchestrator::new(crate::llm::ModelPool::new(vec![(
            1.0,
            Box::new(orchestrator),
        )]))),
        executor: recording_executor(&script),
    };
    let mut config = settings(2);
    config.mutators = vec!["llm".into()];
    config.orchestrator = "llm".into();
    let mut search = Search::start_with(dir.path(), config, parts, CancelToken::new()).unwrap();
    search.run(&mut Quiet).unwrap();
    let (records, _) = crate::records::read_records::<LineageRecord>(
        &dir.path().join(super::super::lineage::LINEAGE_FILE),
    )
    .unwrap();
    let state = SearchState::replay(&records);
    assert!(state.nodes[0].usage.is_zero());
    let children: Vec<&NodeRecord> = state.nodes.iter().filter(|n| n.round > 0).collect();
    assert_eq!(children.len(), 2);
    for child in &children {
        assert_eq!(child.mutator, "llm");
        assert_eq!(child.usage.requests, 1);
        assert!(child.usage.prompt_tokens > 0 && child.usage.completion_tokens > 0);
        assert!(child
            .evidence
            .iter()
            .any(|l| l == "diagnosis (model): one program per task is too few."));
    }
    // Only an LLM node's line carries usage: a built-in one serialises as before.
    let text =
        std::fs::read_to_string(dir.path().join(super::super::lineage::LINEAGE_FILE)).unwrap();
    assert_eq!(
        text.matches("\"usage\"").count(),
        2 + state.consultations.len(),
        "{text}"
    );
    assert_eq!(state.consultations.len(), 1, "{:?}", state.consultations);
    let c = &state.consultations[0];
    assert_eq!((c.round, c.orchestrator.as_str()), (2, "llm"));
    assert_eq!(c.backend.as_deref(), Some("judge"));
    assert_eq!(c.usage.requests, 1);
    assert!(
        c.rejected[0].contains("unknown move 'split'"),
        "{:?}",
        c.rejected
    );
    assert_eq!(state.events.iter().filter(|e| e.round == 2).count(), 0);
}

/// A one-island run under the `race` policy with `children` children a step.
fn raced(
    dir: &Path,
    rounds: usize,
    children: usize,
    script: Vec<&'static str>,
) -> (Search, Script) {
    let children_script = script.into_iter().map(Ok).collect();
    let (search, stop, script) = run_with(dir, rounds, children_script, |c| {
        c.admission = crate::search::lineage::AdmissionPolicy::Race(
            crate::search::harness_race::RaceSettings {
                children,
                ..Default::default()
            },
        );
    });
    assert_eq!(stop, Stop::Rounds);
    (search, script)
}

#[test]
fn racing_rejects_a_worse_child_after_the_first_block_and_admits_at_the_cap_on_one_parent_run() {
    let dir = tempfile::tempdir().unwrap();
    // The default suite has two search slots: blocks of two tasks, four tasks a round.
    let (search, script) = raced(dir.path(), 1, 3, vec!["worse", "better", "cheaper"]);
    let children: Vec<&NodeRecord> = search.state().children(0);
    let names: Vec<&str> = children.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["worse", "better", "cheaper"]);
    let tasks = |n: &NodeRecord| n.evaluation.tasks.len();
    let (worse, better, cheaper) = (children[0], children[1], children[2]);
    assert!(
        !worse.admitted() && tasks(worse) == 2,
        "{:?}",
        worse.verdict
    );
    assert!(worse.verdict.reason.contains("after 2 tasks"));
    // Admitted only at the cap: every admitted child ran every task of the round.
    assert!(
        better.admitted() && tasks(better) == 4,
        "{:?}",
        better.verdict
    );
    // Same gain, half the work: a tie goes on to the cap, where it is admitted as cheaper.
    assert!(
        cheaper.admitted() && tasks(cheaper) == 4,
        "{:?}",
        cheaper.verdict
    );
    assert!(cheaper.verdict.reason.contains("cheaper"));
    // Each child's parent evaluation is on its own tasks; the parent's CPU is charged once, on
    // the child that ran longest.
    for child in &children {
        let parent = child.parent_evaluation.as_ref().unwrap();
        let ids = |e: &Evaluation| e.tasks.iter().map(|t| t.task.clone()).collect::<Vec<_>>();
        assert_eq!(ids(parent), ids(&child.evaluation));
        assert_eq!(parent.reused, child.name != "better", "{}", child.name);
    }
    // Round 1 ran the parent on two blocks (not once per child) and the children on 2 + 4 + 4.
    let batches = script.batches.lock().unwrap().clone();
    let round_one: Vec<(String, usize)> = batches
        .iter()
        .filter(|(_, ids, _, _)| ids.iter().all(|id| id.contains("/r1k")))
        .map(|(name, ids, _, _)| (name.clone(), ids.len()))
        .collect();
    let seed = node(&search, "n0000").name.clone();
    let runs = |who: &str| -> usize {
        round_one
            .iter()
            .filter(|(n, _)| n == who)
            .map(|(_, k)| k)
            .sum()
    };
    assert_eq!(runs(&seed), 4);
    assert_eq!(runs("worse") + runs("better") + runs("cheaper"), 10);
    // The parent's latest evaluation (what selection sees next) is its fullest re-run.
    let latest = search.state().latest_evaluation("n0000").unwrap();
    assert_eq!(latest.tasks.len(), 4);
}

#[test]
fn a_raced_run_replays_to_the_same_state_and_repeats_itself() {
    let script = vec!["worse", "better", "cheaper", "after", "other", "worse"];
    let one = tempfile::tempdir().unwrap();
    let (first, _) = raced(one.path(), 2, 3, script.clone());
    let two = tempfile::tempdir().unwrap();
    let (second, _) = raced(two.path(), 2, 3, script);
    let strip = |s: &Search| -> Vec<NodeRecord> {
        s.state()
            .nodes
            .iter()
            .map(|n| {
                let mut n = n.clone();
                n.at = None;
                for e in [
                    Some(&mut n.evaluation),
                    n.parent_evaluation.as_mut(),
                    n.validation.as_mut(),
                ]
                .into_iter()
                .flatten()
                {
                    for t in &mut e.tasks {
                        t.wall_seconds = 0.0;
                        t.cpu_seconds = 0.0;
                    }
                    e.fitness.latency = 0.0;
                }
                n
            })
            .collect()
    };
    assert_eq!(strip(&first), strip(&second));
    let (records, _) = crate::records::read_records::<LineageRecord>(
        &one.path().join(super::super::lineage::LINEAGE_FILE),
    )
    .unwrap();
    let replayed = SearchState::replay(&records);
    assert_eq!(replayed.nodes, first.state().nodes);
    assert_eq!(
        replayed.latest_evaluation("n0000"),
        first.state().latest_evaluation("n0000")
    );
}
