//! The report of a search run (`RUN_DIR/lineage.jsonl`): the result (node counts, the best
//! score and where it came from, its gap to the arena's #1), the interactive lineage and
//! best-so-far charts, per-island bests, orchestrator moves, failures, every node, the best
//! construction against its start, the settings, and the figures for papers (lineage tree,
//! best so far by round and over time).

use super::construction::{Curve, Profiles};
use super::digits::{self, SCORE_DIGITS};
use super::html::{Cell, Page};
use super::interactive;
use super::lineage_tree::LineageTree;
use super::plot::{save, ScoreAxis};
use super::progress::{best_so_far, node_best, BestSoFar, Progress};
use crate::bounded_read::{read_regular_text_capped, CONFIG_CAP};
use crate::construction::read_values;
use crate::error::{MiloError, Result};
use crate::exact::rational::{decimal_string, to_f64};
use crate::problems::spec::Direction;
use crate::problems::Problem;
use crate::search::evolve::{read_best, BEST_FILE};
use crate::search::lineage::{read_records, AdmissionPolicy, LineageRecord, Move, LINEAGE_FILE};
use crate::search::state::SearchState;
use crate::suite::Suite;
use std::path::Path;

/// Writes the figures of the run in `dir` into `out` and returns the page: the interactive
/// lineage and best-so-far charts (drawn by the page's script from the embedded data), the
/// tables, and the PNG/SVG figures.
pub fn run_page(dir: &Path, out: &Path) -> Result<Page> {
    let lineage = dir.join(LINEAGE_FILE);
    let (records, _) = read_records(&lineage)?;
    let malformed = |message: &str| MiloError::Malformed {
        path: lineage.clone(),
        message: message.into(),
    };
    let config = match records.first() {
        Some(LineageRecord::Started(config)) => config.as_ref().clone(),
        _ => {
            return Err(malformed(
                "no run settings (the first record must be `started`)",
            ))
        }
    };
    if config.mutators.is_empty() {
        return Err(malformed("the run settings name no mutator"));
    }
    let state = SearchState::replay(&records);
    check_lanes_and_rounds(&state).map_err(|message| malformed(&message))?;
    let suite = Suite::load(&config.suite)?;
    let spec = suite.problem.spec();
    let direction = spec.direction;
    let arena = spec.arena_first();

    let mut page = Page::new(&format!("milo run report: {}", dir.display()));
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
    page.heading("Lineage and best so far");
    page.paragraph(
        "One lane per island, one column per round. Filled: admitted; hollow: rejected; grey \
         lines join a child to its parent, orange arrows are grafts (a co-parent from another \
         island); diamonds are orchestrator moves after their round, P the promoted starts. \
         Hover a node for its score, click it for its verdict, its harness diff against its \
         parent, its program diff against its parent's (a seed's program whole), the evidence \
         its mutator read, its per-task gains and the programs it ran. Numbers are rounded \
         (about four significant digits in running text); click one for its full value. The \
         slider hides what came after a round.",
    );
    page.paragraph(&match arena {
        Some(r) => format!(
            "Best so far: the run's best search-task score after each node, as its gap to the \
             arena's #1 ({}) on a log axis, so the #1 is the floor and the suite's record to \
             beat (dashed) stays in view; a best that beats the #1 is drawn in the band below \
             the axis.",
            digits::score(r.value)
        ),
        None => "Best so far: the run's best search-task score after each node (the problem \
                 file lists no arena #1 to measure a gap to)."
            .into(),
    });
    page.widget("lineage");

    page.heading("Result");
    let promotions = state
        .events
        .iter()
        .filter(|e| matches!(e.action, Move::Promote { .. }))
        .count();
    let mut facts = vec![
        ("problem", Cell::text(spec.slug.clone())),
        ("rounds done", Cell::text(state.rounds_done.to_string())),
        ("nodes", Cell::text(state.nodes.len().to_string())),
        ("admitted", Cell::text(admitted.to_string())),
        (
            "rejected",
            Cell::text((state.nodes.len() - admitted).to_string()),
        ),
        (
            "orchestrator moves",
            Cell::text((state.events.len() - promotions).to_string()),
        ),
        ("promotions", Cell::text(promotions.to_string())),
    ];
    if let Some(best) = &best {
        facts.extend([
            ("best score (exact)", Cell::exact(&best.task.end_exact)),
            ("best node", Cell::text(best.node.id.clone())),
            ("best task", Cell::text(best.task.task.clone())),
        ]);
    }
    facts.push((
        "suite record to beat",
        Cell::exact(&decimal_string(&suite.record, SCORE_DIGITS)),
    ));
    facts.push((
        "arena #1",
        Cell::maybe(arena, |r| {
            Cell::text(format!(
                "{} ({}, {})",
                digits::score(r.value),
                r.holder,
                r.date
            ))
        }),
    ));
    if let (Some(best), Some(arena)) = (&best, arena) {
        let behind = interactive::gap(&best.exact, arena.value, direction);
        facts.push((
            "best against the arena #1",
            Cell::text(match behind > 0.0 {
                true => format!("{} behind", digits::gap(behind)),
                false => format!("beats it by {}", digits::gap(-behind)),
            }),
        ));
    }
    page.facts(facts);

    page.heading("Islands");
    let island_rows: Vec<_> = state
        .islands
        .iter()
        .map(|island| {
            let best = state.island_best(island.id);
            let validation = state.island_best_validation(island.id);
            (
                false,
                vec![
                    Cell::text(island.id.to_string()),
                    Cell::text(island.mutator.clone()),
                    Cell::text(island.members.len().to_string()),
                    Cell::text(island.admitted.len().to_string()),
                    Cell::maybe(best, |n| Cell::text(n.id.clone())),
                    Cell::maybe(best, |n| Cell::measure(n.evaluation.fitness.quality)),
                    Cell::maybe(validation, Cell::measure),
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

    page.heading("Orchestrator moves and promotions");
    let event_rows: Vec<_> = state
        .events
        .iter()
        .map(|e| {
            let islands: Vec<String> = e.islands.iter().map(|i| i.to_string()).collect();
            (
                false,
                vec![
                    Cell::text(e.round.to_string()),
                    Cell::text(e.action.kind()),
                    Cell::text(islands.join(", ")),
                    Cell::text(e.diagnosis.clone()),
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
    if !state.failures.is_empty() {
        page.heading("Failures");
        let rows: Vec<_> = state
            .failures
            .iter()
            .map(|f| {
                (
                    false,
                    vec![
                        Cell::text(f.round.to_string()),
                        Cell::text(f.island.to_string()),
                        Cell::text(format!("{} {}", f.part, f.name)),
                        Cell::text(f.message.clone()),
                    ],
                )
            })
            .collect();
        page.table(&["round", "island", "part", "message"], &rows);
    }

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
                    Cell::text(n.id.clone()),
                    Cell::text(n.island.to_string()),
                    Cell::text(n.round.to_string()),
                    Cell::text(n.mutator.clone()),
                    Cell::text(n.parents.join(", ")),
                    Cell::measure(f.quality),
                    Cell::measure(f.cost),
                    Cell::measure(f.latency),
                    Cell::maybe(node_best(n, direction), |s| Cell::exact(&s.task.end_exact)),
                    Cell::text(if n.admitted() { "admitted" } else { "rejected" }),
                    Cell::text(n.verdict.reason.clone()),
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

    best_construction(&mut page, dir, &suite, out)?;

    page.heading("Settings");
    let optional = |x: Option<String>| Cell::text(x.unwrap_or_else(|| "—".into()));
    page.facts(vec![
        ("run directory", Cell::text(dir.display().to_string())),
        ("suite", Cell::text(config.suite.display().to_string())),
        ("problem", Cell::text(spec.slug.clone())),
        (
            "direction",
            Cell::text(format!("{direction:?}").to_lowercase()),
        ),
        (
            "islands at the start",
            Cell::text(config.islands.to_string()),
        ),
        (
            "rounds asked",
            optional(config.rounds.map(|r| r.to_string())),
        ),
        ("hours asked", optional(config.hours.map(|h| h.to_string()))),
        ("seed", Cell::text(config.seed.to_string())),
        ("patience", Cell::text(config.patience.to_string())),
        (
            "quality",
            Cell::text(format!("{:?}", config.quality).to_lowercase()),
        ),
        (
            "cost",
            Cell::text(format!(
                "{} (cost in {}, latency in {})",
                format!("{:?}", config.cost).to_lowercase(),
                config.cost.cost_unit(),
                config.cost.latency_unit()
            )),
        ),
        ("attempts", Cell::text(config.attempts.to_string())),
        (
            "admission",
            Cell::text(match &config.admission {
                AdmissionPolicy::Paired => "paired".to_string(),
                AdmissionPolicy::Race(r) => format!(
                    "race: {} children a step, blocks of {}, cap {}, α {}, futility {}",
                    r.children,
                    r.block
                        .map_or("one task per slot".into(), |b| b.to_string()),
                    r.cap.map_or("the round's tasks".into(), |c| c.to_string()),
                    r.alpha,
                    r.futility
                ),
            }),
        ),
        (
            "search tasks per round",
            Cell::text(config.tasks_per_round.to_string()),
        ),
        (
            "task evaluations",
            Cell::text(match config.task_evaluations {
                Some(n) => format!("{n} (overriding the suite's)"),
                None => "the suite's".into(),
            }),
        ),
        ("writer", Cell::text(config.writer.clone())),
        ("mutators", Cell::text(config.mutators.join(", "))),
        (
            "promote discoveries",
            Cell::text(if config.promote_discoveries {
                "on"
            } else {
                "off"
            }),
        ),
    ]);

    page.heading("Figures for papers");
    save(&LineageTree::new(&state), out, "lineage-tree")?;
    page.figure(
        "lineage-tree",
        "Lineage tree: x = round, one lane per island; filled = admitted, crossed = rejected; \
         orange arrows = grafts; dashed = orchestrator moves",
    );
    progress_figures(&mut page, &state, direction, arena.map(|r| r.value), out)?;

    page.set_data(&interactive::run_data(&state, &suite, &config))?;
    Ok(page)
}

/// Every node's island must be one of the run's (the seeds' and those speciation made) and its
/// round within reach of the rounds recorded (each round leaves a node or a failure), or the
/// page would draw lanes and columns without end.
fn check_lanes_and_rounds(state: &SearchState) -> std::result::Result<(), String> {
    let reach = state.rounds_done + state.nodes.len() + state.failures.len() + 1;
    for node in &state.nodes {
        if node.island >= state.islands.len() {
            return Err(format!(
                "node {} names island {}, but the run has {} islands",
                node.id,
                node.island,
                state.islands.len()
            ));
        }
        if node.round > reach {
            return Err(format!(
                "node {} names round {}, beyond any round the records reach ({reach})",
                node.id, node.round
            ));
        }
    }
    Ok(())
}

/// Best-so-far figures: against round, and against wall time since the first node (or, in a
/// lineage without timestamps, against cumulative task wall seconds).
fn progress_figures(
    page: &mut Page,
    state: &SearchState,
    direction: Direction,
    arena_first: Option<f64>,
    out: &Path,
) -> Result<()> {
    let (points, timed) = best_so_far(state, direction);
    if points.is_empty() {
        page.note("No node has a search-task score yet: no best-so-far figures.");
        return Ok(());
    }
    let value = |p: &BestSoFar| to_f64(&p.best.exact);
    let by_round = points
        .iter()
        .map(|p| (p.node.round as f64, value(p)))
        .collect();
    let by_time = points.iter().map(|p| (p.time, value(p))).collect();
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
        let points = last_per_x(points);
        let axis = ScoreAxis::new(
            points.iter().map(|p| p.1),
            arena_first,
            direction == Direction::Maximize,
        );
        let figure = Progress {
            title: title.into(),
            x_desc: x_desc.into(),
            points,
            axis,
        };
        save(&figure, out, stem)?;
        page.figure(
            stem,
            &format!(
                "{title} (x: {x_desc}); y: the gap to the arena's #1 on a log scale (dashed \
                 red: the #1) when the problem lists one, else the score"
            ),
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
    // Anything there is read, and refused unless it is a regular file.
    if std::fs::symlink_metadata(&best_path).is_err() {
        page.note(&format!(
            "{} is absent (no construction improved on its start, or the run predates best.json): no construction figures.",
            best_path.display()
        ));
        return Ok(());
    }
    let best = read_best(&best_path, suite.problem.as_ref())?;
    let provenance_path = best_path.with_extension("provenance.json");
    let provenance: serde_json::Value =
        read_regular_text_capped(&provenance_path, CONFIG_CAP, "provenance")
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
    let text = |x: Option<String>| Cell::text(x.unwrap_or_else(|| "—".into()));
    let maxima: Vec<String> = curves
        .iter()
        .zip(&lags)
        .map(|(curve, lag)| format!("{}: {}", curve.label, digits::score(lag.max(2.0).1)))
        .collect();
    page.facts(vec![
        ("file", Cell::text(best_path.display().to_string())),
        ("values", Cell::text(best.len().to_string())),
        (
            "score (exact, from the provenance)",
            Cell::maybe(field("score_exact"), |s| Cell::exact(&s)),
        ),
        ("node", text(field("node"))),
        ("task", text(task.clone())),
        (
            "start",
            Cell::text(
                start
                    .as_ref()
                    .map_or_else(|| "— (not found)".into(), |s| s.0.clone()),
            ),
        ),
        (
            "maximum of the lag quantity · 1/n",
            Cell::text(maxima.join("; ")),
        ),
    ]);
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
