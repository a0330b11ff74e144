//! What a running search (`milo evolve`, `milo campaign`) shows: one status line (round k of N
//! or the time left, the best construction against the suite's record and the arena's #1,
//! admitted and rejected children, the orchestrator's last move, an ETA), and every detail line
//! (a node, a move, a failure, a discovery, a round's summary) in the run's `milo.log`, and on
//! the terminal too with `--verbose`.

use super::status::{clock, eta, StatusLine};
use crate::exact::rational::{decimal_string, parse_decimal};
use crate::problems::Direction;
use crate::search::archive::search_evaluations;
use crate::search::evaluation::Discovery;
use crate::search::evolve::{Search, SearchObserver};
use crate::search::lineage::{EventRecord, FailureRecord, Move, NodeRecord};
use crate::search::state::SearchState;
use num_rational::BigRational;
use num_traits::ToPrimitive;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
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
        for t in search_evaluations(node)
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
    started: Instant,
    rounds_at_start: usize,
    rounds: Option<usize>,
    hours: Option<f64>,
    direction: Direction,
    record: f64,
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
        let status = SearchStatus {
            line,
            verbose: verbose || log.is_none(),
            log,
            log_path,
            started: Instant::now(),
            rounds_at_start: search.state().rounds_done,
            rounds: search.config().rounds,
            hours: search.config().hours,
            direction: spec.direction,
            record: search.suite().record.to_f64().unwrap_or(f64::NAN),
            arena_first: spec.arena_first().map(|r| r.value),
            last_move: None,
            discoveries: 0,
        };
        if let Some(hours) = status.hours {
            status
                .line
                .set_deadline(status.started + Duration::from_secs_f64(hours * 3600.0));
        }
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
            best_text.push_str(&format!(", record {:.8}", self.record));
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

    /// `round k/N, ETA …` or `round k` (or `seeding k/I`).
    fn progress(&self, state: &SearchState) -> String {
        let seeded = state.nodes.iter().filter(|n| n.round == 0).count();
        let round = match seeded < state.islands.len() {
            true => format!("seeding {seeded}/{}", state.islands.len()),
            false => format!("round {}", state.rounds_done + 1),
        };
        let elapsed = self.started.elapsed();
        // With --hours the line shows the time left itself (see `new`).
        let Some(rounds) = self.rounds.filter(|_| self.hours.is_none()) else {
            return round;
        };
        let round = match seeded < state.islands.len() {
            true => round,
            false => format!("round {}/{rounds}", (state.rounds_done + 1).min(rounds)),
        };
        let done = state.rounds_done.saturating_sub(self.rounds_at_start) as f64;
        let todo = rounds.saturating_sub(self.rounds_at_start) as f64;
        match eta(elapsed, done, todo) {
            Some(left) => format!("{round}, ETA {}", clock(left)),
            None => round,
        }
    }
}

impl SearchObserver for SearchStatus {
    fn node(&mut self, state: &SearchState, node: &NodeRecord) {
        let f = node.evaluation.fitness;
        let cost = state
            .config
            .as_ref()
            .map_or_else(|| format!("cost {:.4}", f.cost), |c| f.cost_text(c.cost));
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

    fn discovery(&mut self, path: &Path, discovery: &Discovery) {
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
        let harness = &seed_harnesses()[0];
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
