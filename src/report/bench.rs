//! The report of a benchmark (`BENCH_DIR/results.json`): every run's best-so-far curve against
//! CPU seconds (interactive, as the gap to the arena's #1; and as a figure for papers, one
//! colour per method, the re-run batch lighter and dashed, the arena's #1 as a line), the
//! pairwise verdicts, the per-method table, the ladder and every run.

use super::digits;
use super::html::{Cell, Page};
use super::interactive::bench_data;
use super::plot::{colour, legend, padded, save, steps, Drawn, Figure, ScoreAxis, FONT};
use crate::bench::results::{Batch, BenchResults, Interval};
use crate::bench::{read_progress, RESULTS_FILE};
use crate::bounded_read::{read_json_capped, RECORDS_JSON};
use crate::error::Result;
use crate::problems::spec::Direction;
use crate::suite::Suite;
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
        let axis = ScoreAxis::new(
            points().map(|p| p.best),
            self.results.arena_first,
            self.results.direction == "maximize",
        );
        let y_range = axis.range(points().map(|p| p.best));
        let mut chart = ChartBuilder::on(root)
            .caption(
                format!("Best so far, every run ({})", self.results.problem),
                (FONT, 20),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(110)
            .build_cartesian_2d(x_range.clone(), y_range)?;
        axis.draw_axes(&mut chart, "CPU seconds", &x_range)?;
        let mut labelled = vec![false; self.results.methods.len() + 1];
        for run in runs {
            let k = self.method_index(&run.method);
            let cells: Vec<(f64, f64)> = run
                .curve
                .iter()
                .map(|p| (p.cpu_seconds, axis.y(p.best)))
                .collect();
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
        // Scores fall when minimising and rise when maximising, and gaps always fall: the
        // legend goes where the curves are not.
        let corner = match (axis, self.results.direction.as_str()) {
            (ScoreAxis::Score, "maximize") => SeriesLabelPosition::LowerRight,
            _ => SeriesLabelPosition::UpperRight,
        };
        legend(&mut chart, corner)
    }
}

/// The results so far of the benchmark in `dir` while it runs (no `results.json` yet): its
/// finished runs, no analysis; and how many runs it plans.
fn results_so_far(dir: &Path) -> Result<(BenchResults, usize)> {
    let progress = read_progress(dir)?;
    let suite = Suite::load(&progress.config.suite)?;
    let spec = suite.problem.spec();
    let results = BenchResults {
        problem: spec.slug.clone(),
        direction: match spec.direction {
            Direction::Minimize => "minimize".into(),
            Direction::Maximize => "maximize".into(),
        },
        suite: progress.config.suite.display().to_string(),
        cpu_seconds: progress.config.cpu_seconds,
        arena_first: spec.arena_first().map(|r| r.value),
        methods: Vec::new(),
        runs: progress.finished,
        verdicts: Vec::new(),
        ladder: Vec::new(),
        transfers: Vec::new(),
    };
    Ok((results, progress.planned))
}

/// Reads `dir/results.json` (or, while the benchmark runs, its finished runs), writes its
/// figure into `out` and returns the page.
pub fn bench_page(dir: &Path, out: &Path) -> Result<Page> {
    let path = dir.join(RESULTS_FILE);
    // Anything there is read, and refused unless it is a regular file.
    let (results, planned) = if std::fs::symlink_metadata(&path).is_ok() {
        let results: BenchResults = read_json_capped(&path, RECORDS_JSON, "benchmark results")?;
        (results, None)
    } else {
        let (results, planned) = results_so_far(dir)?;
        (results, Some(planned))
    };
    let mut page = Page::new(&format!("milo benchmark report: {}", dir.display()));
    if let Some(planned) = planned {
        page.note(&format!(
            "In progress: {} of {planned} runs finished. The verdicts, the methods' intervals \
             and the ladder come when every run has finished.",
            results.runs.len()
        ));
    }
    page.heading("Settings");
    page.facts(vec![
        ("benchmark directory", Cell::text(dir.display().to_string())),
        ("problem", Cell::text(results.problem.clone())),
        ("direction", Cell::text(results.direction.clone())),
        ("suite", Cell::text(results.suite.clone())),
        ("CPU seconds per run", Cell::measure(results.cpu_seconds)),
        ("runs", Cell::text(results.runs.len().to_string())),
        ("arena #1", Cell::maybe(results.arena_first, Cell::score)),
    ]);

    page.heading("Best so far");
    page.paragraph(&match results.arena_first {
        Some(first) => format!(
            "Every run's best so far against CPU seconds, as its gap to the arena's #1 ({}) on \
             a log axis: one colour per method, the re-run batch dashed. Click a method in the \
             legend to hide or show it; hover a curve for its run.",
            digits::score(first)
        ),
        None => "Every run's best so far against CPU seconds: one colour per method, the re-run \
                 batch dashed."
            .into(),
    });
    page.widget("bench-curves");

    if planned.is_none() {
        analysis_tables(&mut page, &results);
    }

    page.heading("Runs");
    let rows: Vec<_> = results
        .runs
        .iter()
        .map(|r| {
            (
                false,
                vec![
                    Cell::text(r.method.clone()),
                    Cell::text(r.seed.to_string()),
                    Cell::text(r.batch.as_str()),
                    Cell::text(r.dir.clone()),
                    Cell::measure(r.cpu_seconds),
                    Cell::measure(r.wall_seconds),
                    Cell::text(r.steps.to_string()),
                    Cell::exact(&r.best_exact),
                    Cell::measure(r.quality),
                    Cell::maybe(r.validation_best_exact.as_deref(), Cell::exact),
                    Cell::maybe(r.validation_quality, Cell::measure),
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

    page.heading("Figures for papers");
    save(&Curves { results: &results }, out, "curves")?;
    page.figure(
        "curves",
        "Best so far against CPU seconds, every run: one colour per method, the re-run batch \
         dashed and lighter; dashed red: the arena's #1",
    );
    page.set_data(&bench_data(&results))?;
    Ok(page)
}

/// The analysis of a finished benchmark: the pairwise verdicts, the methods' intervals and the
/// ladder of known values.
fn analysis_tables(page: &mut Page, results: &BenchResults) {
    page.heading("Verdicts");
    let rows: Vec<_> = results
        .verdicts
        .iter()
        .map(|v| {
            (
                false,
                vec![
                    Cell::text(v.a.clone()),
                    Cell::text(v.b.clone()),
                    Cell::text(v.verdict.clone()),
                    Cell::gap(v.advantage),
                    Cell::gap(v.null_band),
                    Cell::maybe(v.rerun_advantage, Cell::gap),
                    Cell::maybe(v.rerun_null_band, Cell::gap),
                ],
            )
        })
        .collect();
    page.table(
        &[
            "a",
            "b",
            "verdict",
            "advantage of a",
            "null band",
            "re-run advantage",
            "re-run null band",
        ],
        &rows,
    );

    page.heading("Methods");
    page.paragraph("Means with 95% intervals (Student's t) over each batch's runs.");
    let interval = |i: &Interval, cell: fn(f64) -> Cell| {
        vec![
            Cell::text(i.n.to_string()),
            cell(i.mean),
            cell(i.low),
            cell(i.high),
        ]
    };
    let optional = |i: &Option<Interval>, format: fn(f64) -> String| match i {
        Some(i) => Cell::text(format!(
            "{} [{}, {}]",
            format(i.mean),
            format(i.low),
            format(i.high)
        )),
        None => Cell::text("—"),
    };
    let rows: Vec<_> = results
        .methods
        .iter()
        .map(|m| {
            let mut cells = vec![Cell::text(m.method.clone())];
            cells.extend(interval(&m.best, Cell::score));
            cells.extend(interval(&m.quality, Cell::measure)[1..].iter().cloned());
            cells.extend([
                optional(&m.rerun_best, digits::score),
                optional(&m.validation_best, digits::score),
                optional(&m.validation_quality, digits::measure),
                Cell::gap(m.null_band),
                Cell::maybe(m.rerun_null_band, Cell::gap),
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
                    Cell::text((k + 1).to_string()),
                    Cell::text(rung.label.clone()),
                    Cell::text(if rung.method { "method" } else { "known value" }),
                    Cell::score(rung.value),
                ],
            )
        })
        .collect();
    page.table(&["rank", "what", "kind", "score"], &rows);
}
