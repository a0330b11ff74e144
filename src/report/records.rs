//! The page of a folder of record campaigns: `milo optimize` runs with `--trace`, found as
//! `*.trace.json` files in the folder and its subfolders. Per problem: each run's best so far
//! over wall hours (all its segments on one clock) against the arena's #1, a table of the runs
//! (start, program, seed, budget against what was spent, best), and each run's ladder of n
//! (when the best first reached each length, and the best at it).

use super::html::{Cell, Page};
use super::plot::{save, ScoreAxis};
use super::progress::Progress;
use crate::error::Result;
use crate::problems::{by_slug, Direction};
use crate::runner::trace_file::TraceFile;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The ending of a trace file's name that marks it as a record campaign's.
pub const TRACE_SUFFIX: &str = ".trace.json";

/// How deep below the folder traces are looked for (`DIR/<slug>/<run>.trace.json` is depth 2).
const MAX_DEPTH: usize = 3;

/// One run of a campaign folder.
struct Run {
    /// The trace's path relative to the folder.
    name: String,
    file: TraceFile,
}

/// Every `*.trace.json` (or `*.trace.json.gz`) below `dir` (at most `depth` folders down), sorted
/// by path.
fn trace_paths(dir: &Path, depth: usize) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && depth > 1 {
            found.extend(trace_paths(&path, depth - 1));
        } else if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.strip_suffix(".gz").unwrap_or(n).ends_with(TRACE_SUFFIX))
        {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// The page of the record campaigns in `dir`, with its figures written into `out`; `None` when
/// `dir` holds no trace with a run's settings (within [`MAX_DEPTH`] folders).
pub fn records_page(dir: &Path, out: &Path) -> Result<Option<Page>> {
    let mut by_problem: BTreeMap<String, Vec<Run>> = BTreeMap::new();
    for path in trace_paths(dir, MAX_DEPTH) {
        if std::fs::metadata(&path).is_ok_and(|m| m.len() == 0) {
            continue; // a run's reservation before its first save
        }
        let file = TraceFile::read(&path)?;
        let Some(run) = &file.run else { continue };
        let name = path
            .strip_prefix(dir)
            .unwrap_or(&path)
            .display()
            .to_string();
        by_problem
            .entry(run.problem.clone())
            .or_default()
            .push(Run { name, file });
    }
    if by_problem.is_empty() {
        return Ok(None);
    }
    std::fs::create_dir_all(out).map_err(crate::error::write_error(out))?;
    let mut page = Page::new("Record campaigns");
    page.paragraph(&format!(
        "{} runs of milo optimize with a trace, from {}. Times are wall hours over all of a \
         run's segments (a killed segment counts up to its last save); scores on the curves are \
         float64, the best exact scores are milo verify's.",
        by_problem.values().map(Vec::len).sum::<usize>(),
        dir.display()
    ));
    for (slug, runs) in &by_problem {
        problem_section(&mut page, slug, runs, out)?;
    }
    Ok(Some(page))
}

fn problem_section(page: &mut Page, slug: &str, runs: &[Run], out: &Path) -> Result<()> {
    let problem = by_slug(slug)?;
    let spec = problem.spec();
    let direction = spec.direction;
    let first = spec.arena_first().map(|r| r.value);
    page.heading(slug);
    if let Some(first) = spec.arena_first() {
        page.paragraph(&format!(
            "The arena's #1: {} ({}, {}); a new #1 must beat it by {:e}.",
            first.value, first.holder, first.date, spec.min_improvement
        ));
    }
    let mut rows = Vec::new();
    for (k, run) in runs.iter().enumerate() {
        let header = run.file.run.as_ref().expect("only runs with settings");
        let (seconds, _) = run.file.spent();
        let mut points: Vec<(f64, f64)> = run
            .file
            .trace
            .points
            .iter()
            .map(|p| (p.seconds / 3600.0, p.score))
            .collect();
        let best = points.last().map(|p| p.1);
        // The curve runs on to the time spent, past the last improvement.
        if let Some((last, score)) = points.last().copied() {
            if seconds / 3600.0 > last {
                points.push((seconds / 3600.0, score));
            }
        }
        let cpu: f64 = run.file.segments.iter().map(|s| s.cpu_seconds).sum();
        let budget = header
            .budget_seconds
            .map(|s| format!("{s:.0} s"))
            .or(header
                .budget_evaluations
                .map(|e| format!("{e} evaluations")))
            .unwrap_or_default();
        let best_exact = run
            .file
            .segments
            .iter()
            .rev()
            .find_map(|s| s.best_exact.clone());
        rows.push((
            false,
            vec![
                Cell::text(run.name.clone()),
                Cell::text(header.start.display().to_string()),
                Cell::exact(&header.start_exact),
                Cell::text(header.program_name.clone()),
                Cell::text(header.seed.to_string()),
                Cell::text(budget),
                Cell::text(format!(
                    "{:.2} h wall, {:.2} h CPU, {} segment(s)",
                    seconds / 3600.0,
                    cpu / 3600.0,
                    run.file.segments.len()
                )),
                Cell::maybe(best_exact.as_deref(), Cell::exact),
                Cell::maybe(best, Cell::score),
                Cell::maybe(best.zip(first), |(b, f)| Cell::gap(direction.gain(f, b))),
                Cell::maybe(run.file.trace.points.last().and_then(|p| p.n), |n| {
                    Cell::text(n.to_string())
                }),
            ],
        ));
        if points.is_empty() {
            continue;
        }
        let stem = format!("{slug}-{k}");
        let figure = Progress {
            title: format!("{slug}: {}", run.name),
            x_desc: "wall hours (all segments)".into(),
            axis: ScoreAxis::new(
                points.iter().map(|p| p.1),
                first,
                direction == Direction::Maximize,
            ),
            points,
        };
        save(&figure, out, &stem)?;
        page.figure(
            &stem,
            &format!(
                "{}: best so far over wall hours; y: the gap to the arena's #1 on a log scale \
                 (dashed red: the #1) when the problem lists one, else the score",
                run.name
            ),
        );
        page.table(
            &["n", "first reached (h)", "best at this n"],
            &ladder(&run.file, direction),
        );
    }
    page.table(
        &[
            "run",
            "start",
            "start exact",
            "program",
            "seed",
            "budget",
            "spent",
            "best exact (verified)",
            "best float64",
            "behind the #1",
            "n",
        ],
        &rows,
    );
    Ok(())
}

/// The ladder of n of a run: each length its best reached, when first, and the best at it.
fn ladder(file: &TraceFile, direction: Direction) -> Vec<(bool, Vec<Cell>)> {
    let mut steps: Vec<(usize, f64, f64)> = Vec::new();
    for p in &file.trace.points {
        let Some(n) = p.n else { continue };
        match steps.iter_mut().find(|s| s.0 == n) {
            Some(step) if direction.better(&p.score, &step.2) => step.2 = p.score,
            Some(_) => {}
            None => steps.push((n, p.seconds / 3600.0, p.score)),
        }
    }
    steps
        .into_iter()
        .map(|(n, hours, best)| {
            (
                false,
                vec![
                    Cell::text(n.to_string()),
                    Cell::measure(hours),
                    Cell::score(best),
                ],
            )
        })
        .collect()
}
