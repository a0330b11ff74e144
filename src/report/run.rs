//! The report of a search run (`RUN_DIR/lineage.jsonl`): settings, node counts, orchestrator
//! moves, the best score and where it came from, per-island bests, and the figures (lineage
//! tree, best-so-far by round and over time, the best construction against its start).

use super::construction::{Curve, Profiles};
use super::html::{number, Page};
use super::lineage_tree::LineageTree;
use super::plot::save;
use super::progress::Progress;
use crate::bounded_read::{read_text_capped, CONFIG_CAP};
use crate::construction::read_values;
use crate::error::{MiloError, Result};
use crate::exact::rational::parse_decimal;
use crate::problems::spec::Direction;
use crate::problems::Problem;
use crate::search::archive::search_evaluations;
use crate::search::evaluation::TaskResult;
use crate::search::evolve::{read_best, BEST_FILE};
use crate::search::lineage::{read_records, Move, NodeRecord, LINEAGE_FILE};
use crate::search::state::SearchState;
use crate::suite::{Split, Suite};
use num_rational::BigRational;
use std::path::Path;

/// A search task result with its parsed exact end score.
struct Scored<'a> {
    node: &'a NodeRecord,
    task: &'a TaskResult,
    exact: BigRational,
}

/// The best search-task end score of `node` (its own evaluation and its parent's re-run) in
/// `direction` (the first on ties).
fn node_best(node: &NodeRecord, direction: Direction) -> Option<Scored<'_>> {
    search_evaluations(node)
        .flat_map(|e| &e.tasks)
        .filter(|t| t.split == Split::Search)
        .filter_map(|task| {
            Some(Scored {
                node,
                task,
                exact: parse_decimal(&task.end_exact)?,
            })
        })
        .reduce(|best, s| {
            if direction.better(&s.exact, &best.exact) {
                s
            } else {
                best
            }
        })
}

/// Writes the figures of the run in `dir` into `out` and returns the page.
pub fn run_page(dir: &Path, out: &Path) -> Result<Page> {
    let lineage = dir.join(LINEAGE_FILE);
    let (records, _) = read_records(&lineage)?;
    let state = SearchState::replay(&records);
    let config = state.config.clone().ok_or_else(|| MiloError::Malformed {
        path: lineage.clone(),
        message: "no run settings (the first record must be `started`)".into(),
    })?;
    let suite = Suite::load(&config.suite)?;
    let spec = suite.problem.spec();
    let direction = spec.direction;
    let arena = spec.arena_first();

    let mut page = Page::new(&format!("milo run report: {}", dir.display()));
    page.heading("Settings");
    let optional = |x: Option<String>| x.unwrap_or_else(|| "—".into());
    page.facts(&[
        ("run directory", dir.display().to_string()),
        ("suite", config.suite.display().to_string()),
        ("problem", spec.slug.clone()),
        ("direction", format!("{direction:?}").to_lowercase()),
        ("islands at the start", config.islands.to_string()),
        (
            "rounds asked",
            optional(config.rounds.map(|r| r.to_string())),
        ),
        ("hours asked", optional(config.hours.map(number))),
        ("rounds done", state.rounds_done.to_string()),
        ("seed", config.seed.to_string()),
        ("patience", config.patience.to_string()),
        ("quality", format!("{:?}", config.quality).to_lowercase()),
        (
            "cost",
            format!(
                "{} (cost in {}, latency in {})",
                format!("{:?}", config.cost).to_lowercase(),
                config.cost.cost_unit(),
                config.cost.latency_unit()
            ),
        ),
        ("attempts", config.attempts.to_string()),
        ("writer", config.writer.clone()),
        ("mutators", config.mutators.join(", ")),
    ]);

    let admitted = state.nodes.iter().filter(|n| n.admitted()).count();
    let best = state
        .nodes
        .iter()
        .filter_map(|n| node_best(n, direction))
        .reduce(|best, s| {
            if direction.better(&s.exact, &best.exact) {
                s
            } else {
                best
            }
        });
    page.heading("Result");
    let promotions = state
        .events
        .iter()
        .filter(|e| matches!(e.action, Move::Promote { .. }))
        .count();
    let mut facts = vec![
        ("nodes", state.nodes.len().to_string()),
        ("admitted", admitted.to_string()),
        ("rejected", (state.nodes.len() - admitted).to_string()),
        (
            "orchestrator moves",
            (state.events.len() - promotions).to_string(),
        ),
        ("promotions", promotions.to_string()),
    ];
    if let Some(best) = &best {
        facts.extend([
            ("best score (exact)", best.task.end_exact.clone()),
            ("best node", best.node.id.clone()),
            ("best task", best.task.task.clone()),
        ]);
    }
    facts.push((
        "suite record to beat",
        crate::exact::rational::decimal_string(&suite.record, 40),
    ));
    facts.push((
        "arena #1",
        arena.map_or_else(
            || "— (the problem file lists none)".into(),
            |r| format!("{} ({}, {})", number(r.value), r.holder, r.date),
        ),
    ));
    page.facts(&facts);

    page.heading("Islands");
    let island_rows: Vec<_> = state
        .islands
        .iter()
        .map(|island| {
            let best = state.island_best(island.id);
            let validation = island.best_validation;
            (
                false,
                vec![
                    island.id.to_string(),
                    island.mutator.clone(),
                    island.members.len().to_string(),
                    island.admitted.len().to_string(),
                    best.map_or_else(|| "—".into(), |n| n.id.clone()),
                    best.map_or_else(|| "—".into(), |n| number(n.evaluation.fitness.quality)),
                    if validation.is_finite() {
                        number(validation)
                    } else {
                        "—".into()
                    },
                ],
            )
        })
        .collect();
    page.table(
        &[
            "island",
            "mutator now",
            "nodes",
            "admitted",
            "best node",
            "best quality",
            "best validation quality",
        ],
        &island_rows,
    );

    page.heading("Lineage");
    save(&LineageTree::new(&state), out, "lineage-tree")?;
    page.figure(
        "lineage-tree",
        "Lineage tree: x = round, one lane per island; filled = admitted, crossed = rejected; \
         orange arrows = grafts; dashed = orchestrator moves",
    );
    let event_rows: Vec<_> = state
        .events
        .iter()
        .map(|e| {
            let islands: Vec<String> = e.islands.iter().map(|i| i.to_string()).collect();
            (
                false,
                vec![
                    e.round.to_string(),
                    e.action.kind().to_string(),
                    islands.join(", "),
                    e.diagnosis.clone(),
                ],
            )
        })
        .collect();
    if event_rows.is_empty() {
        page.paragraph("The orchestrator made no move.");
    } else {
        page.table(
            &["after round", "move", "islands", "diagnosis"],
            &event_rows,
        );
    }

    progress(&mut page, &state, direction, arena.map(|r| r.value), out)?;
    best_construction(&mut page, dir, &suite, out)?;

    page.heading("Nodes");
    let cost_header = format!("cost ({})", config.cost.cost_unit());
    let latency_header = format!("latency ({})", config.cost.latency_unit());
    let node_rows: Vec<_> = state
        .nodes
        .iter()
        .map(|n| {
            let f = n.evaluation.fitness;
            (
                false,
                vec![
                    n.id.clone(),
                    n.island.to_string(),
                    n.round.to_string(),
                    n.mutator.clone(),
                    n.parents.join(", "),
                    number(f.quality),
                    number(f.cost),
                    number(f.latency),
                    node_best(n, direction)
                        .map_or_else(|| "—".into(), |s| s.task.end_exact.clone()),
                    if n.admitted() { "admitted" } else { "rejected" }.to_string(),
                    n.verdict.reason.clone(),
                ],
            )
        })
        .collect();
    page.table(
        &[
            "node",
            "island",
            "round",
            "mutator",
            "parents",
            "quality",
            &cost_header,
            &latency_header,
            "best search score",
            "verdict",
            "reason",
        ],
        &node_rows,
    );
    Ok(page)
}

/// Best-so-far figures: against round, and against wall time since the first node (or, in a
/// lineage without timestamps, against cumulative task wall seconds).
fn progress(
    page: &mut Page,
    state: &SearchState,
    direction: Direction,
    arena_first: Option<f64>,
    out: &Path,
) -> Result<()> {
    page.heading("Progress");
    let first_at = state.nodes.first().and_then(|n| n.at);
    let timed = state.nodes.iter().all(|n| n.at.is_some());
    let mut best: Option<BigRational> = None;
    let mut best_value = f64::NAN;
    let (mut by_round, mut by_time) = (Vec::new(), Vec::new());
    let mut task_seconds = 0.0;
    for node in &state.nodes {
        task_seconds += node
            .evaluation
            .tasks
            .iter()
            .map(|t| t.wall_seconds)
            .sum::<f64>();
        if let Some(s) = node_best(node, direction) {
            if best.as_ref().is_none_or(|b| direction.better(&s.exact, b)) {
                best_value = crate::exact::rational::to_f64(&s.exact);
                best = Some(s.exact);
            }
        }
        if best.is_none() {
            continue;
        }
        by_round.push((node.round as f64, best_value));
        let x = match (timed, node.at, first_at) {
            (true, Some(at), Some(first)) => at - first,
            _ => task_seconds,
        };
        by_time.push((x, best_value));
    }
    if by_round.is_empty() {
        page.note("No node has a search-task score yet: no progress figures.");
        return Ok(());
    }
    let figures = [
        ("progress-round", "round", "Best so far by round", by_round),
        (
            "progress-time",
            if timed {
                "wall seconds since the first node"
            } else {
                "cumulative task wall seconds (the lineage has no timestamps)"
            },
            "Best so far over time",
            by_time,
        ),
    ];
    for (stem, x_desc, title, points) in figures {
        let figure = Progress {
            title: title.into(),
            x_desc: x_desc.into(),
            points: last_per_x(points),
            arena_first,
        };
        save(&figure, out, stem)?;
        page.figure(
            stem,
            &format!("{title} (x: {x_desc}); dashed red: the arena's #1"),
        );
    }
    Ok(())
}

/// The last point of every run of equal x.
fn last_per_x(points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(points.len());
    for p in points {
        match out.last_mut() {
            Some(last) if last.0 == p.0 => *last = p,
            _ => out.push(p),
        }
    }
    out
}

/// Figures of `RUN_DIR/best.json` against its task's start: the values, and the per-lag
/// quantity whose maximum the score takes, both normalised to the unit interval.
fn best_construction(page: &mut Page, dir: &Path, suite: &Suite, out: &Path) -> Result<()> {
    page.heading("Best construction");
    let best_path = dir.join(BEST_FILE);
    if !best_path.is_file() {
        page.note(&format!(
            "{} is absent (no construction improved on its start, or the run predates best.json): no construction figures.",
            best_path.display()
        ));
        return Ok(());
    }
    let best = read_best(&best_path, suite.problem.as_ref())?;
    let provenance_path = best_path.with_extension("provenance.json");
    let provenance: serde_json::Value =
        read_text_capped(&provenance_path, CONFIG_CAP, "provenance")
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
    let field = |key: &str| provenance[key].as_str().map(str::to_string);
    let task = field("task");
    let start = match task.as_deref().and_then(|t| suite.task(t)) {
        Some(task) => Some((task.start.label.clone(), task.start.values.to_vec())),
        None => field("start").and_then(|path| {
            let values = read_values(Path::new(&path)).ok()?;
            Some((path, values))
        }),
    };
    let problem: &dyn Problem = suite.problem.as_ref();
    let mut curves = vec![Curve {
        label: format!("best ({} values)", best.len()),
        values: best.clone(),
    }];
    if let Some((label, values)) = &start {
        curves.push(Curve {
            label: format!("start {label} ({} values)", values.len()),
            values: values.clone(),
        });
    }
    let lags: Vec<Curve> = curves
        .iter()
        .map(|c| Curve {
            label: c.label.clone(),
            values: scaled_lags(problem, &c.values),
        })
        .collect();
    let mut facts = vec![
        ("file", best_path.display().to_string()),
        ("values", best.len().to_string()),
        (
            "score (exact, from the provenance)",
            field("score_exact").unwrap_or_else(|| "—".into()),
        ),
        ("node", field("node").unwrap_or_else(|| "—".into())),
        ("task", task.clone().unwrap_or_else(|| "—".into())),
        (
            "start",
            start
                .as_ref()
                .map_or_else(|| "— (not found)".into(), |s| s.0.clone()),
        ),
    ];
    let maxima: Vec<String> = curves
        .iter()
        .zip(&lags)
        .map(|(curve, lag)| format!("{}: {}", curve.label, number(lag.max(2.0).1)))
        .collect();
    facts.push(("maximum of the lag quantity · 1/n", maxima.join("; ")));
    page.facts(&facts);
    if start.is_none() {
        page.note("The task's start could not be found: the figures show the best alone.");
    }
    let values = Profiles {
        title: "Best construction and its start".into(),
        y_desc: "value".into(),
        width: 1.0,
        mark_max: false,
        curves,
    };
    save(&values, out, "construction")?;
    page.figure(
        "construction",
        "The best construction and its task's start, as step functions over [0, 1)",
    );
    let lags = Profiles {
        title: "Lag quantity (f∗f for the autocorrelation problems) · 1/n".into(),
        y_desc: "lag quantity · 1/n".into(),
        width: 2.0,
        mark_max: true,
        curves: lags,
    };
    save(&lags, out, "autoconvolution")?;
    page.figure(
        "autoconvolution",
        "The per-lag quantity whose maximum the score takes (f∗f, or the Erdős correlation), \
         divided by n so constructions of different lengths compare; triangles mark the maxima",
    );
    Ok(())
}

/// The problem's per-lag quantity of `values`, times 1/n.
fn scaled_lags(problem: &dyn Problem, values: &[f64]) -> Vec<f64> {
    let n = values.len().max(1) as f64;
    problem.lags(values).into_iter().map(|v| v / n).collect()
}
