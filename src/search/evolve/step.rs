//! One island's step of a round (select a parent, mutate, evaluate, admit or reject, record,
//! validate the island's best) and an island's seed node, with the evaluations they make.

use super::dry_run::DryRun;
use super::{diff, Search, SearchObserver};
use crate::agent::{writer_by_name, GivenProgram, OptimizerWriter};
use crate::error::Result;
use crate::harness::{seed_harnesses_for, Evidence, Harness};
use crate::llm::Usage;
use crate::program::Program;
use crate::records::unix_seconds;
use crate::runner::derive_seed;
use crate::search::admission::{admit, Verdict};
use crate::search::evaluation::{evaluate, Evaluation, EvaluationSettings, Outcome};
use crate::search::lineage::{
    AdmissionPolicy, FailureRecord, LineageRecord, NodeRecord, ParentChoice,
};
use crate::search::mutators::{MutationContext, Proposal};
use crate::search::round_tasks::{slot_gains, slot_of};
use crate::search::selection::{select_parent, MemberScores, SelectionParams};
use crate::suite::{Split, Task};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;
use std::path::Path;

/// Largest number of programs offered to crossover edits.
const LIBRARY_SIZE: usize = 8;

/// Proposals a mutator gets before a child that behaves as its parent is recorded unevaluated.
const DRY_RUN_TRIES: usize = 4;

/// A child decided against its parent: its evaluation, the parent's on the same tasks, the
/// verdict.
pub(super) struct Decided {
    /// The child's evaluation.
    pub child: Evaluation,
    /// The parent's, on the same tasks (marked reused when another child's record carries it).
    pub parent: Evaluation,
    /// Admitted or not, and why.
    pub verdict: Verdict,
}

impl Search {
    fn task_ids(tasks: &[&Task]) -> Vec<String> {
        tasks.iter().map(|t| t.id.clone()).collect()
    }

    /// Programs that improved tasks on this island, newest first, without repeats.
    fn library(&self, island: usize) -> Vec<Program> {
        let mut programs: Vec<Program> = Vec::new();
        for node in self.state.admitted(island).into_iter().rev() {
            for text in node
                .evaluation
                .tasks
                .iter()
                .filter_map(|t| t.best_program.as_ref())
            {
                if let Ok(program) = Program::parse(text, Path::new("lineage")) {
                    if !programs.contains(&program) {
                        programs.push(program);
                    }
                }
                if programs.len() >= LIBRARY_SIZE {
                    return programs;
                }
            }
        }
        programs
    }

    /// Evaluates `harness` on `tasks` (of `round`) with the run's writer through the executor,
    /// saving discoveries and candidate starts (not when cancelled); reuses an identical earlier
    /// evaluation (same harness, same tasks) from the lineage, marked as reused and with no
    /// improvements of its own (they were saved when first found). A cancelled evaluation
    /// records nothing (a resumed run redoes it); a writer's failure is recorded by
    /// [`Search::finished`], and the step skips the round.
    pub(super) fn evaluate(
        &mut self,
        harness: &Harness,
        tasks: &[&Task],
        (island, round): (usize, usize),
        node: &str,
        observer: &mut dyn SearchObserver,
    ) -> Result<Outcome> {
        let writer = self.config().writer.clone();
        self.evaluate_with(&writer, harness, tasks, (island, round), node, observer)
    }

    /// [`Search::evaluate`] with `writer` in place of the run's (the seed round's unedited
    /// tasks run under `verbatim`); an earlier evaluation is reused only for the run's writer.
    fn evaluate_with(
        &mut self,
        writer: &str,
        harness: &Harness,
        tasks: &[&Task],
        (island, round): (usize, usize),
        node: &str,
        observer: &mut dyn SearchObserver,
    ) -> Result<Outcome> {
        let ids = Self::task_ids(tasks);
        let hash = harness.content_hash();
        let state = &self.state;
        let parent_harness = |n: &NodeRecord| {
            let parent = n.parents.first().and_then(|id| state.node(id));
            parent.map(|p| p.harness.as_str())
        };
        // Only the run's writer made the lineage's evaluations: another's is never looked up.
        let own_writer = writer == self.config().writer;
        let searched = if own_writer { &state.nodes[..] } else { &[] };
        let known = searched.iter().find_map(|n| {
            let own = (n.harness == hash).then_some([Some(&n.evaluation), n.validation.as_ref()]);
            let rerun =
                (parent_harness(n) == Some(hash.as_str())).then_some(n.parent_evaluation.as_ref());
            own.into_iter()
                .flatten()
                .chain(rerun)
                .flatten()
                .find(|e| e.tasks.iter().map(|t| &t.task).eq(ids.iter()))
                .cloned()
        });
        if let Some(mut known) = known {
            known.reused = true;
            return Ok(Outcome::Done(known, vec![]));
        }
        let library = self.library(island);
        let config = self.config();
        let settings = EvaluationSettings {
            problem: self.suite.problem.as_ref(),
            attempts: config.attempts,
            writer,
            quality: config.quality,
            cost: config.cost,
            library: &library,
            agents: config.agents.as_ref(),
            tally: Some(&self.tally),
            confine_commands: self.confine_commands,
        };
        let outcome = evaluate(
            self.parts.executor.as_ref(),
            harness,
            tasks,
            &settings,
            &self.cancel,
        )?;
        let Outcome::Done(mut evaluation, improvements) = outcome else {
            return Ok(outcome);
        };
        if !own_writer {
            for task in &mut evaluation.tasks {
                task.writer = Some(writer.to_string());
            }
        }
        if tasks.iter().all(|t| t.split == Split::Search) {
            self.save_candidate_starts(round, &mut evaluation, &improvements)?;
        }
        let direction = self.suite.problem.spec().direction;
        for improvement in &improvements {
            // Every construction past the suite's record is a record candidate, whatever the
            // harness's fate and whether or not it is the run's best.
            if direction.better(&improvement.exact, &self.suite.record) {
                let path = self.save_discovery(improvement, &hash, node)?;
                observer.discovery(&path, improvement);
            }
            let new_best = self
                .best
                .as_ref()
                .is_none_or(|best| direction.better(&improvement.exact, best));
            if new_best {
                self.save_best(improvement, &hash, node)?;
            }
        }
        Ok(Outcome::Done(evaluation, improvements))
    }

    /// Evaluates `harness` on the run's validation tasks (held-out starts and seeds).
    fn validate(
        &mut self,
        harness: &Harness,
        (island, round): (usize, usize),
        node: &str,
        observer: &mut dyn SearchObserver,
    ) -> Result<Outcome> {
        let tasks = self.validation.clone();
        let refs: Vec<&Task> = tasks.iter().collect();
        self.evaluate(harness, &refs, (island, round), node, observer)
    }

    /// Records a part's failure in an island's step (the island skips it).
    fn record_failure(
        &mut self,
        failure: FailureRecord,
        observer: &mut dyn SearchObserver,
    ) -> Result<()> {
        self.record(LineageRecord::Failure(failure.clone()))?;
        observer.failure(&failure);
        Ok(())
    }

    /// The evaluation of a finished `outcome`; `None` when the run was cancelled during it or
    /// the writer failed (the failure is then recorded, see [`Search::record_failure`]): either
    /// way the step ends there.
    pub(super) fn finished(
        &mut self,
        outcome: Outcome,
        round: usize,
        island: usize,
        observer: &mut dyn SearchObserver,
    ) -> Result<Option<Evaluation>> {
        match outcome {
            Outcome::Done(evaluation, _) => Ok(Some(evaluation)),
            Outcome::Cancelled => Ok(None),
            Outcome::Failed(failure) => {
                let writer = self.config().writer.clone();
                let message = format!("task {}: {}", failure.task, failure.error);
                let failure = FailureRecord {
                    round,
                    island,
                    part: "writer".into(),
                    name: writer,
                    message,
                    usage: Usage::default(),
                };
                self.record_failure(failure, observer)?;
                Ok(None)
            }
        }
    }

    /// Island `island`'s seed node (round 0): a seed harness, admitted by definition.
    pub(super) fn seed_island(
        &mut self,
        island: usize,
        observer: &mut dyn SearchObserver,
    ) -> Result<()> {
        let seeds = match self.config().seed_harnesses.is_empty() {
            true => seed_harnesses_for(&self.config().writer),
            false => self.config().seed_harnesses.clone(),
        };
        let harness = seeds[island % seeds.len()].clone();
        let id = self.state.next_node_id();
        let tasks = self.tasks_of_round(0);
        let outcome = self.evaluate_seed_round(&harness, &tasks, island, &id, observer)?;
        let Some(evaluation) = self.finished(outcome, 0, island, observer)? else {
            return Ok(());
        };
        let outcome = self.validate(&harness, (island, 0), &id, observer)?;
        let Some(validation) = self.finished(outcome, 0, island, observer)? else {
            return Ok(());
        };
        let node = NodeRecord {
            id,
            island,
            round: 0,
            parents: vec![],
            mutator: "seed".into(),
            harness: self.store.put_harness(&harness)?,
            name: harness.name.clone(),
            edit: String::new(),
            evidence: vec!["seed harness".into()],
            usage: Default::default(),
            evaluation,
            parent_evaluation: None,
            verdict: Verdict {
                admitted: true,
                hypervolume_before: 0.0,
                hypervolume_after: 0.0,
                reason: "seed harness".into(),
            },
            validation: Some(validation),
            at: Some(unix_seconds()),
        };
        self.harnesses.insert(node.harness.clone(), harness);
        self.record(LineageRecord::Node(Box::new(node.clone())))?;
        observer.node(&self.state, &node);
        Ok(())
    }

    /// The seed round's evaluation of island `island`'s seed `harness`. On island 0 the first
    /// task of each slot runs the slot's program unedited (the `verbatim` writer), as program
    /// evolution's first step runs its seed program: every slot's archive then holds the suite's
    /// program with the score it reached, whatever edits the seed harnesses draw. The other
    /// tasks, and every task of the other islands, run the harness.
    fn evaluate_seed_round(
        &mut self,
        harness: &Harness,
        tasks: &[Task],
        island: usize,
        node: &str,
        observer: &mut dyn SearchObserver,
    ) -> Result<Outcome> {
        let refs: Vec<&Task> = tasks.iter().collect();
        if island != 0 {
            return self.evaluate(harness, &refs, (island, 0), node, observer);
        }
        let mut seen = HashSet::new();
        let (unedited, edited): (Vec<&Task>, Vec<&Task>) =
            refs.iter().partition(|t| seen.insert(slot_of(&t.id)));
        let as_is = GivenProgram.name();
        let outcome = self.evaluate_with(as_is, harness, &unedited, (island, 0), node, observer)?;
        let Outcome::Done(first, mut found) = outcome else {
            return Ok(outcome);
        };
        let outcome = match edited.is_empty() {
            true => Outcome::Done(Evaluation::none(), vec![]),
            false => self.evaluate(harness, &edited, (island, 0), node, observer)?,
        };
        let Outcome::Done(rest, more) = outcome else {
            return Ok(outcome);
        };
        found.extend(more);
        let config = self.config();
        let (quality, cost) = (config.quality, config.cost);
        let evaluation =
            first
                .joined(&rest, quality, cost)
                .restricted(&Self::task_ids(&refs), quality, cost);
        Ok(Outcome::Done(evaluation, found))
    }

    /// One round of one island: select a parent, propose children (one under the `paired`
    /// policy, several under `race`), evaluate them against the parent on the round's tasks,
    /// admit or reject each, validate a child that becomes its island's best, record.
    pub(super) fn step(
        &mut self,
        island: usize,
        round: usize,
        observer: &mut dyn SearchObserver,
    ) -> Result<()> {
        let config = self.config().clone();
        let mut rng = ChaCha8Rng::seed_from_u64(derive_seed(
            derive_seed(config.seed, round as u64),
            island as u64,
        ));
        let tasks = self.tasks_of_round(round);
        let refs: Vec<&Task> = tasks.iter().collect();
        let slot_ids: Vec<String> = self.current_slots().iter().map(|s| s.id.clone()).collect();
        let view = |n: &NodeRecord| {
            // What mutators and selection see: the latest search evaluation, never validation.
            let mut n = n.clone();
            if let Some(latest) = self.state.latest_evaluation(&n.id) {
                n.evaluation = latest.clone();
            }
            n.validation = None;
            n
        };
        let admitted: Vec<NodeRecord> = self.state.admitted(island).into_iter().map(view).collect();
        if admitted.is_empty() {
            return Ok(());
        }
        let candidates: Vec<MemberScores> = admitted
            .iter()
            .map(|n| MemberScores {
                fitness: n.evaluation.fitness,
                gains: slot_gains(&n.evaluation, &slot_ids),
            })
            .collect();
        let chosen = match config.components.parent_choice {
            ParentChoice::Pareto => {
                select_parent(&candidates, &SelectionParams::default(), &mut rng)?
            }
            ParentChoice::Best => best_index(&candidates),
            ParentChoice::Uniform => rng.gen_range(0..candidates.len()),
        };
        let parent = &admitted[chosen];
        if !config.components.harness_evolution {
            return self.frozen_step(island, round, &refs, observer);
        }
        let co_parent = self.state.islands[island]
            .co_parent
            .as_ref()
            .and_then(|id| self.state.node(id))
            .map(view);
        let memory = config.components.memory;
        let history: Vec<NodeRecord> = match memory {
            true => self.state.children(island).into_iter().map(view).collect(),
            false => Vec::new(),
        };
        let forgotten = HashSet::new();
        let mutator_name = self.state.islands[island].mutator.clone();
        let mutator = self.parts.mutator(&mutator_name)?;
        let harness_of = |n: &NodeRecord| &self.harnesses[&n.harness];
        let mut ctx = MutationContext {
            parent: (parent, harness_of(parent)),
            co_parent: co_parent.as_ref().map(|n| (n, harness_of(n))),
            history: history.iter().map(|n| (n, harness_of(n))).collect(),
            rejected: if memory {
                &self.state.rejected
            } else {
                &forgotten
            },
            seed: rng.gen(),
            cost: config.cost,
            cancel: self.cancel.clone(),
        };
        // Dry run: a proposal that would make the agent behave as under the parent (on the
        // evidence of the parent's latest run) is re-proposed with a fresh seed, a few times.
        let evidence: Vec<Vec<Evidence>> = parent
            .evaluation
            .tasks
            .iter()
            .map(|t| t.evidence.clone())
            .collect();
        let library = self.library(island);
        let writer = writer_by_name(&config.writer, config.agents.as_ref()).ok();
        let dry_run = DryRun {
            writer: writer.as_deref(),
            problem: self.suite.problem.as_ref(),
            library: &library,
            tasks: &refs,
            evidence: &evidence,
        };
        let children = match config.admission {
            AdmissionPolicy::Paired => 1,
            AdmissionPolicy::Race(race) => race.children,
        };
        // Tokens of every proposal of the step, the re-proposed ones included.
        let mut spent = Usage::default();
        let mut proposals: Vec<(Proposal, bool)> = Vec::with_capacity(children);
        for k in 0..children {
            if k > 0 {
                ctx.seed = rng.gen();
            }
            let mut identical = 0;
            let mut own = Usage::default();
            let (mut proposal, behaves_as_parent) = loop {
                match mutator.propose(&ctx) {
                    Ok(mut p) => {
                        own += p.usage;
                        let alike = dry_run.behaves_alike(&p.harness, harness_of(parent));
                        if alike && identical + 1 < DRY_RUN_TRIES {
                            identical += 1;
                            ctx.seed = rng.gen();
                            continue;
                        }
                        p.usage = own;
                        break (p, alike);
                    }
                    Err(e) => {
                        // The failed proposal's tokens and those of earlier proposals of this
                        // step.
                        spent += own;
                        spent += e.usage();
                        let failure = FailureRecord {
                            round,
                            island,
                            part: "mutator".into(),
                            name: mutator_name,
                            message: e.to_string(),
                            usage: spent,
                        };
                        return self.record_failure(failure, observer);
                    }
                }
            };
            spent += own;
            if identical > 0 {
                proposal.evidence.push(format!(
                    "dry run: {identical} earlier proposal(s) behaved as the parent; re-proposed"
                ));
            }
            proposals.push((proposal, behaves_as_parent));
        }
        let mut parents = vec![parent.id.clone()];
        if let Some(co) = &co_parent {
            parents.push(co.id.clone());
        }
        let parent_harness = harness_of(parent).clone();
        let ids = self.state.next_node_ids(proposals.len());
        let forbidden = self.forbidden_words();
        let mut seen: HashSet<String> = HashSet::new();
        let unevaluated: Vec<Option<String>> = proposals
            .iter()
            .map(|(p, behaves_as_parent)| {
                let sibling = !seen.insert(p.harness.content_hash());
                match p.harness.check_general(&forbidden) {
                    Err(reason) => Some(format!("not general: {reason}")),
                    Ok(()) if *behaves_as_parent => Some(format!(
                        "behaves as its parent on the evidence of its runs (dry run, \
                         {DRY_RUN_TRIES} proposals): not evaluated"
                    )),
                    Ok(()) if sibling => {
                        Some("a sibling of this step is the same harness: not evaluated".into())
                    }
                    Ok(()) => None,
                }
            })
            .collect();
        let contenders: Vec<(usize, &Harness)> = unevaluated
            .iter()
            .enumerate()
            .filter(|(_, reason)| reason.is_none())
            .map(|(k, _)| (k, &proposals[k].0.harness))
            .collect();
        let decided = match config.admission {
            AdmissionPolicy::Paired => match contenders.first() {
                None => Some(vec![]),
                Some(&(k, child)) => self.paired(
                    &parent_harness,
                    child,
                    &refs,
                    (island, round),
                    &ids[k],
                    observer,
                )?,
            },
            AdmissionPolicy::Race(race) => {
                let contenders: Vec<(&str, &Harness)> = contenders
                    .iter()
                    .map(|&(k, h)| (ids[k].as_str(), h))
                    .collect();
                let slots = slot_ids.len();
                self.race(
                    &parent_harness,
                    &contenders,
                    &refs,
                    race,
                    slots,
                    (island, round),
                    observer,
                )?
            }
        };
        // A cancelled evaluation or a writer's failure ends the step (the failure is recorded).
        let Some(decided) = decided else {
            return Ok(());
        };
        let mut decided = decided.into_iter();
        let best = best_index(&candidates);
        let mut nodes = Vec::with_capacity(proposals.len());
        for (k, ((proposal, _), reason)) in proposals.into_iter().zip(unevaluated).enumerate() {
            let (evaluation, parent_evaluation, verdict) = match reason {
                Some(reason) => (Evaluation::none(), None, Verdict::unevaluated(reason)),
                None => {
                    let d = decided.next().expect("a decision per contender");
                    (d.child, Some(d.parent), d.verdict)
                }
            };
            let becomes_best = verdict.admitted
                && (chosen == best || evaluation.fitness.outranks(&candidates[best].fitness));
            let child = proposal.harness;
            let validation = if becomes_best {
                let outcome = self.validate(&child, (island, round), &ids[k], observer)?;
                let Some(validation) = self.finished(outcome, round, island, observer)? else {
                    return Ok(());
                };
                Some(validation)
            } else {
                None
            };
            let node = NodeRecord {
                id: ids[k].clone(),
                island,
                round,
                parents: parents.clone(),
                mutator: mutator_name.clone(),
                harness: self.store.put_harness(&child)?,
                name: child.name.clone(),
                edit: diff(&parent_harness.to_toml(), &child.to_toml()),
                evidence: proposal.evidence,
                usage: proposal.usage,
                evaluation,
                parent_evaluation,
                verdict,
                validation,
                at: Some(unix_seconds()),
            };
            self.harnesses.insert(node.harness.clone(), child);
            nodes.push(node);
        }
        // All children of a step are recorded at once: a resumed run finds the step whole or
        // not at all.
        let records: Vec<LineageRecord> = nodes
            .iter()
            .map(|n| LineageRecord::Node(Box::new(n.clone())))
            .collect();
        self.record_all(&records)?;
        for node in &nodes {
            observer.node(&self.state, node);
        }
        Ok(())
    }

    /// The `paired` policy: the parent and the child each on every task of the round, the child
    /// admitted by [`admit`]. `None` when the step ends (cancelled, or a writer failed).
    fn paired(
        &mut self,
        parent: &Harness,
        child: &Harness,
        tasks: &[&Task],
        (island, round): (usize, usize),
        id: &str,
        observer: &mut dyn SearchObserver,
    ) -> Result<Option<Vec<Decided>>> {
        let outcome = self.evaluate(parent, tasks, (island, round), id, observer)?;
        let Some(parent_evaluation) = self.finished(outcome, round, island, observer)? else {
            return Ok(None);
        };
        let outcome = self.evaluate(child, tasks, (island, round), id, observer)?;
        let Some(evaluation) = self.finished(outcome, round, island, observer)? else {
            return Ok(None);
        };
        let verdict = admit(&parent_evaluation, &evaluation, self.config().cost);
        Ok(Some(vec![Decided {
            child: evaluation,
            parent: parent_evaluation,
            verdict,
        }]))
    }

    /// A step with harness evolution off (`milo-frozen`): the best seed harness of the run runs
    /// on the round's tasks, so only the program archive and the promoted starts move.
    fn frozen_step(
        &mut self,
        island: usize,
        round: usize,
        tasks: &[&Task],
        observer: &mut dyn SearchObserver,
    ) -> Result<()> {
        let Some(seed) = self
            .state
            .nodes
            .iter()
            .filter(|n| n.round == 0)
            .reduce(
                |a, b| match b.evaluation.fitness.outranks(&a.evaluation.fitness) {
                    true => b,
                    false => a,
                },
            )
            .cloned()
        else {
            return Ok(());
        };
        let harness = self.harnesses[&seed.harness].clone();
        let id = self.state.next_node_id();
        let outcome = self.evaluate(&harness, tasks, (island, round), &id, observer)?;
        let Some(evaluation) = self.finished(outcome, round, island, observer)? else {
            return Ok(());
        };
        let node = NodeRecord {
            id,
            island,
            round,
            parents: vec![seed.id.clone()],
            mutator: "frozen".into(),
            harness: seed.harness.clone(),
            name: harness.name.clone(),
            edit: String::new(),
            evidence: vec!["harness evolution off: the best seed harness again".into()],
            usage: Default::default(),
            evaluation,
            parent_evaluation: None,
            verdict: Verdict {
                admitted: false,
                hypervolume_before: 0.0,
                hypervolume_after: 0.0,
                reason: "harness evolution off".into(),
            },
            validation: None,
            at: Some(unix_seconds()),
        };
        self.record(LineageRecord::Node(Box::new(node.clone())))?;
        observer.node(&self.state, &node);
        Ok(())
    }

    /// Words a general harness may not contain: task ids and start file names.
    fn forbidden_words(&self) -> Vec<String> {
        let mut words: Vec<String> = self.suite.tasks.iter().map(|t| t.id.clone()).collect();
        for start in &self.suite.starts {
            if let Some(name) = start.path.file_name() {
                words.push(name.to_string_lossy().into_owned());
            }
        }
        words
    }
}

/// The candidate with the best quality (ties: the lower cost, then the first).
fn best_index(candidates: &[MemberScores]) -> usize {
    let mut best = 0;
    for (i, c) in candidates.iter().enumerate() {
        if c.fitness.outranks(&candidates[best].fitness) {
            best = i;
        }
    }
    best
}
