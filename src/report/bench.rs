//! The report of a benchmark (`BENCH_DIR/results.json`): every run's best-so-far curve against
//! CPU seconds (one colour per method, the re-run batch lighter and dashed, the arena's #1 as a
//! line), the per-method table, the pairwise verdicts and the ladder.

use super::html::{maybe, number, Page};
use super::plot::{
    arena_in_view, arena_line, axes, colour, legend, padded, save, steps, Drawn, Figure, FONT,
};
use crate::bench::results::{Batch, BenchResults, Interval};
use crate::bench::RESULTS_FILE;
use crate::bounded_read::{read_text_capped, RECORDS_CAP};
use crate::error::{MiloError, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// Best-so-far curves of every run.
struct Curves<'a> {
    results: &'a BenchResults,
}

impl Curves<'_> {
    /// The colour index of a method (its position in the method list, else after them).
    fn method_index(&self, method: &str) -> usize {
        let methods = &self.results.methods;
        methods
            .iter()
            .position(|m| m.method == method)
            .unwrap_or(methods.len())
    }
}

impl Figure for Curves<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        let runs = &self.results.runs;
        let points = || runs.iter().flat_map(|r| r.curve.iter());
        let x_range = padded(points().map(|p| p.cpu_seconds).chain([0.0]));
        let arena = arena_in_view(points().map(|p| p.best), self.results.arena_first);
        let y_range = padded(points().map(|p| p.best).chain(arena));
        let mut chart = ChartBuilder::on(root)
            .caption(
                format!("Best so far, every run ({})", self.results.problem),
                (FONT, 20),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(110)
            .build_cartesian_2d(x_range.clone(), y_range)?;
        axes(&mut chart, "CPU seconds", "best score")?;
        let mut labelled = vec![false; self.results.methods.len() + 1];
        for run in runs {
            let k = self.method_index(&run.method);
            let cells: Vec<(f64, f64)> =
                run.curve.iter().map(|p| (p.cpu_seconds, p.best)).collect();
            let end = cells.last().map_or(0.0, |p| p.0);
            let path = steps(&cells, end);
            let series = match run.batch {
                Batch::First => {
                    chart.draw_series(LineSeries::new(path, colour(k).stroke_width(2)))?
                }
                Batch::Rerun => chart.draw_series(DashedLineSeries::new(
                    path,
                    6,
                    4,
                    colour(k).mix(0.5).stroke_width(1),
                ))?,
            };
            if !labelled[k] {
                labelled[k] = true;
                series.label(run.method.as_str()).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], colour(k).stroke_width(2))
                });
            }
        }
        if let Some(first) = self.results.arena_first {
            arena_line(&mut chart, &x_range, first, arena.is_some())?;
        }
        let budget = self.results.cpu_seconds;
        let (bottom, top) = (chart.y_range().start, chart.y_range().end);
        chart
            .draw_series(DashedLineSeries::new(
                vec![(budget, bottom), (budget, top)],
                4,
                4,
                BLACK.mix(0.6).stroke_width(1),
            ))?
            .label(format!("budget ({budget} CPU s): runs are read here"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK.mix(0.6)));
        // Curves fall when minimising and rise when maximising: the legend goes where they are not.
        let corner = match self.results.direction.as_str() {
            "maximize" => SeriesLabelPosition::LowerRight,
            _ => SeriesLabelPosition::UpperRight,
        };
        legend(&mut chart, corner)
    }
}

/// Reads `dir/results.json`, writes its figure into `out` and returns the page.
pub fn bench_page(dir: &Path, out: &Path) -> Result<Page> {
    let path = dir.join(RESULTS_FILE);
    let text = read_text_capped(&path, RECORDS_CAP, "benchmark results")?;
    let results: BenchResults = serde_json::from_str(&text).map_err(|e| MiloError::Malformed {
        path: path.clone(),
        message: e.to_string(),
    })?;
    let mut page = Page::new(&format!("milo benchmark report: {}", dir.display()));
    page.heading("Settings");
    page.facts(&[
        ("benchmark directory", dir.display().to_string()),
        ("problem", results.problem.clone()),
        ("direction", results.direction.clone()),
        ("suite", results.suite.clone()),
        ("CPU seconds per run", number(results.cpu_seconds)),
        ("runs", results.runs.len().to_string()),
        ("arena #1", maybe(results.arena_first)),
    ]);

    page.heading("Best so far");
    save(&Curves { results: &results }, out, "curves")?;
    page.figure(
        "curves",
        "Best so far against CPU seconds, every run: one colour per method, the re-run batch \
         dashed and lighter; dashed red: the arena's #1",
    );

    page.heading("Methods");
    page.paragraph("Means with 95% intervals (Student's t) over each batch's runs.");
    let interval = |i: &Interval| {
        vec![
            i.n.to_string(),
            number(i.mean),
            number(i.low),
            number(i.high),
        ]
    };
    let optional = |i: &Option<Interval>| match i {
        Some(i) => format!("{} [{}, {}]", number(i.mean), number(i.low), number(i.high)),
        None => "—".into(),
    };
    let rows: Vec<_> = results
        .methods
        .iter()
        .map(|m| {
            let mut cells = vec![m.method.clone()];
            cells.extend(interval(&m.best));
            cells.extend(interval(&m.quality)[1..].iter().cloned());
            cells.extend([
                optional(&m.rerun_best),
                optional(&m.validation_best),
                optional(&m.validation_quality),
                number(m.null_band),
                maybe(m.rerun_null_band),
            ]);
            (false, cells)
        })
        .collect();
    page.table(
        &[
            "method",
            "runs",
            "best: mean",
            "best: 95% low",
            "best: 95% high",
            "quality: mean",
            "quality: 95% low",
            "quality: 95% high",
            "re-run best",
            "validation best",
            "validation quality",
            "null band",
            "re-run null band",
        ],
        &rows,
    );

    page.heading("Verdicts");
    let rows: Vec<_> = results
        .verdicts
        .iter()
        .map(|v| {
            (
                false,
                vec![
                    v.a.clone(),
                    v.b.clone(),
                    number(v.advantage),
                    number(v.null_band),
                    maybe(v.rerun_advantage),
                    maybe(v.rerun_null_band),
                    v.verdict.clone(),
                ],
            )
        })
        .collect();
    page.table(
        &[
            "a",
            "b",
            "advantage of a",
            "null band",
            "re-run advantage",
            "re-run null band",
            "verdict",
        ],
        &rows,
    );

    page.heading("Ladder");
    page.paragraph("Best first; benchmark methods highlighted.");
    let rows: Vec<_> = results
        .ladder
        .iter()
        .enumerate()
        .map(|(k, rung)| {
            (
                rung.method,
                vec![
                    (k + 1).to_string(),
                    rung.label.clone(),
                    if rung.method { "method" } else { "known value" }.to_string(),
                    number(rung.value),
                ],
            )
        })
        .collect();
    page.table(&["rank", "what", "kind", "score"], &rows);

    page.heading("Runs");
    let rows: Vec<_> = results
        .runs
        .iter()
        .map(|r| {
            (
                false,
                vec![
                    r.method.clone(),
                    r.seed.to_string(),
                    format!("{:?}", r.batch).to_lowercase(),
                    r.dir.clone(),
                    number(r.cpu_seconds),
                    number(r.wall_seconds),
                    r.steps.to_string(),
                    r.best_exact.clone(),
                    number(r.quality),
                    r.validation_best_exact
                        .clone()
                        .unwrap_or_else(|| "—".into()),
                    maybe(r.validation_quality),
                ],
            )
        })
        .collect();
    page.table(
        &[
            "method",
            "seed",
            "batch",
            "directory",
            "CPU s",
            "wall s",
            "steps",
            "best (exact)",
            "quality",
            "validation best (exact)",
            "validation quality",
        ],
        &rows,
    );
    Ok(page)
}
