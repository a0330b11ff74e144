//! What a running search (`milo evolve`, `milo campaign`) shows: one status line (a bar over the
//! round's task runs, the time left estimated from the task runs finished so far and counted down
//! between them, seeding or round k of N, the best construction against the suite's start and the
//! arena's #1, admitted and rejected children, the orchestrator's last move), and every detail line
//! (a node, a move, a failure, a discovery, a round's summary) in the run's `milo.log`, and on
//! the terminal too with `--verbose`.

use super::status::{Gauge, Pace, StatusLine};
use crate::exact::rational::{decimal_string, parse_decimal};
use crate::problems::Direction;
use crate::search::evaluation::Improvement;
use crate::search::evolve::{Search, SearchObserver};
use crate::search::lineage::{EventRecord, FailureRecord, Move, NodeRecord};
use crate::search::state::SearchState;
use crate::tally::TaskTally;
use num_rational::BigRational;
use num_traits::ToPrimitive;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The run's log of detail lines, beside its lineage.
pub const LOG_FILE: &str = "milo.log";

/// The best task result over all nodes of a search.
pub struct BestResult {
    /// Its exact end score, as recorded (decimal).
    pub score: String,
    /// The task.
    pub task: String,
    /// The node.
    pub node: String,
    /// The node's island.
    pub island: usize,
}

/// The best exact end score over every task of every node (search and validation), if any; on
/// ties the first reached, in the order the run evaluated them (the result `best.json` holds).
pub fn best_result(state: &SearchState, direction: Direction) -> Option<BestResult> {
    let mut best: Option<(BigRational, BestResult)> = None;
    for node in &state.nodes {
        for t in node
            .search_evaluations()
            .chain(node.validation.as_ref())
            .flat_map(|e| &e.tasks)
        {
            let Some(score) = parse_decimal(&t.end_exact) else {
                continue;
            };
            if best.as_ref().is_none_or(|b| direction.better(&score, &b.0)) {
                let result = BestResult {
                    score: t.end_exact.clone(),
                    task: t.task.clone(),
                    node: node.id.clone(),
                    island: node.island,
                };
                best = Some((score, result));
            }
        }
    }
    best.map(|(_, b)| b)
}

/// How many harnesses a search tried: its seeds, and its children admitted and rejected (a
/// child has a parent; the status line and the summary count alike).
pub fn node_counts(state: &SearchState) -> (usize, usize, usize) {
    let children: Vec<&NodeRecord> = state
        .nodes
        .iter()
        .filter(|n| !n.parents.is_empty())
        .collect();
    let admitted = children.iter().filter(|n| n.admitted()).count();
    (
        state.nodes.len() - children.len(),
        admitted,
        children.len() - admitted,
    )
}

/// The status line and log of a running search (see the module documentation).
pub struct SearchStatus {
    line: StatusLine,
    log: Option<File>,
    log_path: PathBuf,
    verbose: bool,
    rounds: Option<usize>,
    round: Arc<Mutex<RoundGauge>>,
    /// Whether the round in flight is the seeding.
    seeding: bool,
    direction: Direction,
    /// The suite's record, or its best start when it gives none, and which it is.
    record: (f64, &'static str),
    arena_first: Option<f64>,
    last_move: Option<String>,
    /// Discoveries saved by this process.
    discoveries: usize,
}

impl SearchStatus {
    /// The status of `search`, logging to its `milo.log`; `verbose` also prints detail lines,
    /// `quiet` shows no status line.
    pub fn new(search: &Search, verbose: bool, quiet: bool) -> SearchStatus {
        let log_path = search.dir().join(LOG_FILE);
        let log = crate::atomic_file::open_regular(
            &log_path,
            "log",
            std::fs::OpenOptions::new().create(true).append(true),
            crate::error::write_error(&log_path),
        );
        let line = StatusLine::start("milo evolve", quiet);
        let log = match log {
            Ok(file) => Some(file),
            Err(e) => {
                line.println(&format!(
                    "milo: cannot write {} ({e}); detail lines go to the terminal",
                    log_path.display()
                ));
                None
            }
        };
        let spec = search.suite().problem.spec();
        let config = search.config();
        let round = RoundGauge {
            tally: search.task_tally(),
            before: (0, 0),
            islands: search.state().islands.len() as u64,
            islands_done: 0,
            planned_by_done: 0,
            first_guess: 2 * (config.tasks_per_round * config.attempts.max(1)) as u64,
            pace: Pace::new(),
            rounds_after: None,
            deadline: config
                .hours
                .map(|hours| Instant::now() + Duration::from_secs_f64(hours * 3600.0)),
        };
        let round = Arc::new(Mutex::new(round));
        let read = Arc::clone(&round);
        line.set_gauge(Box::new(move || {
            read.lock().map(|mut r| r.read()).unwrap_or_default()
        }));
        let mut status = SearchStatus {
            line,
            verbose: verbose || log.is_none(),
            log,
            log_path,
            rounds: config.rounds.filter(|_| config.hours.is_none()),
            round,
            seeding: true,
            direction: spec.direction,
            record: (
                search.suite().record.to_f64().unwrap_or(f64::NAN),
                match search.suite().record_given {
                    true => "record",
                    false => "best start",
                },
            ),
            arena_first: spec.arena_first().map(|r| r.value),
            last_move: None,
            discoveries: 0,
        };
        status.new_round(search.state());
        status.refresh(search.state());
        status
    }

    /// Runs `print` (which writes to standard output) with the status line out of the way.
    pub fn suspend<T>(&self, print: impl FnOnce() -> T) -> T {
        self.line.suspend(print)
    }

    /// Writes a detail line to the log (and to the terminal with `--verbose`).
    fn detail(&mut self, line: String) {
        let line = crate::secrets::scrub(&line).into_owned();
        if let Some(log) = &mut self.log {
            if let Err(e) = writeln!(log, "{line}") {
                self.line.println(&format!(
                    "milo: cannot write {} ({e}); detail lines go to the terminal",
                    self.log_path.display()
                ));
                self.log = None;
                self.verbose = true;
            }
        }
        if self.verbose {
            self.line.println(&line);
        }
    }

    /// Redraws the status from the state.
    fn refresh(&self, state: &SearchState) {
        let mut parts = vec![self.progress(state)];
        // Most important first: a narrow terminal cuts the line at its right edge.
        if let Some(best) = best_result(state, self.direction) {
            let score: f64 = best.score.parse().unwrap_or(f64::NAN);
            let mut best_text = format!("best {score:.8}");
            if let Some(first) = self.arena_first {
                best_text.push_str(&format!(", #1 {first:.8}"));
            }
            let (record, name) = self.record;
            best_text.push_str(&format!(", {name} {record:.8}"));
            parts.push(best_text);
        }
        let (_, admitted, rejected) = node_counts(state);
        parts.push(format!(
            "children: admitted {admitted}, rejected {rejected}"
        ));
        if self.discoveries > 0 {
            parts.push(format!("{} discoveries", self.discoveries));
        }
        if let Some(last) = &self.last_move {
            parts.push(format!("last: {last}"));
        }
        self.line.set(parts.join(" · "));
    }

    /// `seeding`, `round k/N` or `round k`.
    fn progress(&self, state: &SearchState) -> String {
        if seeding(state) {
            return "seeding".into();
        }
        let round = state.rounds_done + 1;
        match self.rounds {
            Some(rounds) => format!("round {}/{rounds}", round.min(rounds)),
            None => format!("round {round}"),
        }
    }

    /// Starts the gauge of the round in flight (seeding, or the one after `state`'s last
    /// finished round).
    fn new_round(&mut self, state: &SearchState) {
        self.seeding = seeding(state);
        let rounds_after = self.rounds.map(|rounds| match self.seeding {
            true => rounds,
            false => rounds.saturating_sub(state.rounds_done + 1),
        });
        if let Ok(mut round) = self.round.lock() {
            round.restart(rounds_after);
        }
    }

    /// Counts the islands done with the round in flight.
    fn island_done(&self, state: &SearchState) {
        let round = if seeding(state) {
            0
        } else {
            state.rounds_done + 1
        };
        let done = (0..state.islands.len())
            .filter(|&i| state.has_step(round, i))
            .count();
        if let Ok(mut gauge) = self.round.lock() {
            gauge.islands_done(done as u64);
        }
    }
}

/// Whether the run is still seeding its islands (round 0).
fn seeding(state: &SearchState) -> bool {
    (0..state.islands.len()).any(|i| !state.has_step(0, i))
}

/// The round in flight's task runs: a bar over them, and the time left from the pace of those
/// finished so far (with the rounds after it, or up to the run's deadline).
struct RoundGauge {
    tally: TaskTally,
    /// The tally's planned and finished counts when the round began.
    before: (u64, u64),
    islands: u64,
    /// Islands done with the round, and the task runs they planned.
    islands_done: u64,
    planned_by_done: u64,
    /// Task runs an island plans before one has finished (its parent's and its child's runs).
    first_guess: u64,
    pace: Pace,
    /// Rounds to run after this one, when the run counts rounds.
    rounds_after: Option<usize>,
    deadline: Option<Instant>,
}

impl RoundGauge {
    /// Starts a round, with `rounds_after` rounds to run after it.
    fn restart(&mut self, rounds_after: Option<usize>) {
        self.before = (self.tally.planned.get(), self.tally.finished.get());
        self.islands_done = 0;
        self.planned_by_done = 0;
        self.pace = Pace::new();
        self.rounds_after = rounds_after;
    }

    /// Notes that `done` islands are done with the round.
    fn islands_done(&mut self, done: u64) {
        if done > self.islands_done {
            self.islands_done = done;
            self.planned_by_done = self.tally.planned.get() - self.before.0;
        }
    }

    /// The gauge now: the task runs finished of the round's (planned, and estimated for the
    /// islands still to come), the time left.
    fn read(&mut self) -> Gauge {
        let planned = self.tally.planned.get() - self.before.0;
        let finished = self.tally.finished.get() - self.before.1;
        self.pace.observe(finished);
        let per_island = match self.islands_done {
            0 => self.first_guess,
            done => self.planned_by_done.div_ceil(done),
        };
        let rest = self.islands.saturating_sub(self.islands_done) * per_island;
        let total = planned
            .max(self.planned_by_done + rest)
            .max(finished)
            .max(1);
        let round_left = self.pace.left(total);
        let later = |per_unit: Duration| {
            let rounds = self.rounds_after.unwrap_or(0) as u32;
            per_unit.saturating_mul(total as u32).saturating_mul(rounds)
        };
        let run_left = round_left
            .zip(self.pace.per_unit())
            .map(|(l, p)| l + later(p));
        let to_deadline = self
            .deadline
            .map(|d| d.saturating_duration_since(Instant::now()));
        let left = match (run_left, to_deadline) {
            (Some(run), Some(deadline)) => Some(run.min(deadline)),
            (run, deadline) => run.or(deadline),
        };
        Gauge {
            fraction: Some(finished as f64 / total as f64),
            left,
            figures: format!("{finished}/{total} task runs"),
        }
    }
}

impl SearchObserver for SearchStatus {
    fn node(&mut self, state: &SearchState, node: &NodeRecord) {
        let f = node.evaluation.fitness;
        let cost = state.config.as_ref().map_or_else(
            || format!("cost {:.4}", f.cost),
            |c| c.cost.fitness_text(&f),
        );
        self.detail(format!(
            "round {:>3} island {} {:<11} {} {:<28} quality {:>9.3} {cost}  {} ({})",
            node.round,
            node.island,
            node.mutator,
            node.id,
            node.name,
            f.quality,
            if node.admitted() {
                "admitted"
            } else {
                "rejected"
            },
            node.verdict.reason
        ));
        if self.seeding && !seeding(state) {
            self.new_round(state);
        } else {
            self.island_done(state);
        }
        self.refresh(state);
    }

    fn event(&mut self, event: &EventRecord) {
        self.detail(event.headline());
        if !matches!(event.action, Move::Promote { .. }) {
            self.last_move = Some(format!(
                "{} after round {}",
                event.action.kind(),
                event.round
            ));
        }
    }

    fn failure(&mut self, failure: &FailureRecord) {
        self.detail(format!(
            "round {:>3} island {} (skips the round): {}",
            failure.round,
            failure.island,
            failure.summary()
        ));
    }

    fn discovery(&mut self, path: &Path, discovery: &Improvement) {
        self.discoveries += 1;
        self.detail(format!(
            "DISCOVERY {} on task {} -> {}",
            decimal_string(&discovery.exact, 20),
            discovery.task,
            path.display()
        ));
    }

    fn round_end(&mut self, state: &SearchState, round: usize) {
        for island in &state.islands {
            let best = state
                .island_best(island.id)
                .map(|n| format!("{} {:.3}", n.id, n.evaluation.fitness.quality))
                .unwrap_or_else(|| "-".into());
            let children = state.children(island.id);
            let admitted = children.iter().filter(|n| n.admitted()).count();
            self.detail(format!(
                "  after round {round}: island {} [{}] best {best}  admitted {admitted} rejected {}  stalled {}",
                island.id,
                island.mutator,
                children.len() - admitted,
                island.stalled_rounds
            ));
        }
        self.new_round(state);
        self.refresh(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::seed_harnesses;
    use crate::search::mutators::fixtures::node;

    #[test]
    fn the_best_result_is_the_exact_best_first_reached_in_run_order() {
        let harness = &seed_harnesses()[1];
        let mut child = node("n0001", Some("n0000"), harness, &[1.0, 1.0], &[], true);
        let mut rerun = child.evaluation.clone();
        // The parent's re-run ran first and reached the child's best bits on another task.
        child.evaluation.tasks[0].end_exact = "0.75e0".into();
        rerun.tasks[1].end_exact = "0.75e0".into();
        child.parent_evaluation = Some(rerun);
        let mut state = SearchState::default();
        state.nodes.push(child.clone());
        let best = best_result(&state, Direction::Minimize).unwrap();
        assert_eq!((best.task.as_str(), best.score.as_str()), ("t1", "0.75e0"));

        // Equal as floats, apart exactly: the exact best wins, wherever it comes.
        child.evaluation.tasks[0].end_exact = "0.7499999999999999999999e0".into();
        state.nodes[0] = child;
        let best = best_result(&state, Direction::Minimize).unwrap();
        assert_eq!(best.task, "t0");
    }
}
