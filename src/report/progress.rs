//! A run's best so far: each node's best search-task score, the run's best after each node
//! (against round and time), and the figure of it (a step curve with the arena's #1 as a
//! horizontal line; with it, the gap to it on a log scale).

use super::plot::{colour, legend, padded, steps, Drawn, Figure, ScoreAxis, FONT};
use crate::exact::rational::parse_decimal;
use crate::problems::spec::Direction;
use crate::search::evaluation::TaskResult;
use crate::search::lineage::NodeRecord;
use crate::search::state::SearchState;
use crate::suite::Split;
use num_rational::BigRational;
use plotters::coord::Shift;
use plotters::prelude::*;

/// A search task result with its parsed exact end score.
pub struct Scored<'a> {
    /// The node whose evaluation (or parent re-run) ran the task.
    pub node: &'a NodeRecord,
    /// The task's result.
    pub task: &'a TaskResult,
    /// Its exact end score.
    pub exact: BigRational,
}

/// The best search-task end score of `node` (its own evaluation and its parent's re-run) in
/// `direction` (the first on ties); tasks whose score is not a decimal are skipped.
pub fn node_best(node: &NodeRecord, direction: Direction) -> Option<Scored<'_>> {
    node.search_evaluations()
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

/// The run's best after one node.
pub struct BestSoFar<'a> {
    /// The node just recorded.
    pub node: &'a NodeRecord,
    /// When: seconds since the first node, or (in a lineage without timestamps) cumulative task
    /// wall seconds.
    pub time: f64,
    /// The best so far and where it came from.
    pub best: Scored<'a>,
}

/// The run's best after every node from the first that has a search-task score on, and whether
/// the times are wall seconds since the first node (`true`) or cumulative task wall seconds
/// (`false`: the lineage has no timestamps).
pub fn best_so_far(state: &SearchState, direction: Direction) -> (Vec<BestSoFar<'_>>, bool) {
    let first_at = state.nodes.first().and_then(|n| n.at);
    let timed = state.nodes.iter().all(|n| n.at.is_some());
    let mut best: Option<Scored> = None;
    let mut points = Vec::new();
    let mut task_seconds = 0.0;
    for node in &state.nodes {
        task_seconds += node
            .evaluation
            .tasks
            .iter()
            .map(|t| t.wall_seconds)
            .sum::<f64>();
        if let Some(s) = node_best(node, direction) {
            if best
                .as_ref()
                .is_none_or(|b| direction.better(&s.exact, &b.exact))
            {
                best = Some(s);
            }
        }
        let Some(b) = &best else {
            continue;
        };
        let time = match (timed, node.at, first_at) {
            (true, Some(at), Some(first)) => at - first,
            _ => task_seconds,
        };
        points.push(BestSoFar {
            node,
            time,
            best: Scored {
                node: b.node,
                task: b.task,
                exact: b.exact.clone(),
            },
        });
    }
    (points, timed)
}

/// A best-so-far curve.
pub struct Progress {
    /// The figure's title.
    pub title: String,
    /// What x measures.
    pub x_desc: String,
    /// `(x, best so far)`, x increasing.
    pub points: Vec<(f64, f64)>,
    /// The y axis: the score, or the gap to the arena's #1 when the problem file lists one.
    pub axis: ScoreAxis,
}

impl Figure for Progress {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        let x_end = self.points.last().map_or(1.0, |p| p.0);
        let x_range = padded(self.points.iter().map(|p| p.0).chain([0.0, x_end]));
        let y_range = self.axis.range(self.points.iter().map(|p| p.1));
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, (FONT, 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(110)
            .build_cartesian_2d(x_range.clone(), y_range)?;
        self.axis
            .draw_axes(&mut chart, self.x_desc.as_str(), &x_range)?;
        let drawn: Vec<(f64, f64)> = self
            .points
            .iter()
            .map(|&(x, score)| (x, self.axis.y(score)))
            .collect();
        chart
            .draw_series(LineSeries::new(
                steps(&drawn, x_end),
                colour(0).stroke_width(2),
            ))?
            .label("best so far")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], colour(0)));
        chart.draw_series(drawn.iter().map(|&p| Circle::new(p, 3, colour(0).filled())))?;
        legend(&mut chart, SeriesLabelPosition::UpperRight)
    }
}
