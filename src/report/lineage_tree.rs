//! Figure: the lineage tree, one lane per island, x = round. Admitted nodes are filled circles,
//! rejected ones hollow circles with a cross; an edge joins each parent to its child, graft edges
//! (a co-parent on another island) are orange arrows; orchestrator moves are dashed vertical
//! lines after their round, labelled with the move's kind. Each node's id is written beside it
//! (up to [`MAX_LABELLED_NODES`]). The legend sits under the chart: every lane holds an island.

use super::plot::{legend_below, Drawn, Figure, Mark, FONT};
use crate::search::state::SearchState;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::HashMap;

/// Vertical offset between nodes of one island in one round (a resumed or speciated lane).
const SPREAD: f64 = 0.18;
/// Most nodes whose ids are written beside them (beyond, the labels would overlap; the
/// interactive page names every node).
const MAX_LABELLED_NODES: usize = 200;
const GRAFT: RGBColor = RGBColor(230, 120, 0);
const ADMITTED: RGBColor = RGBColor(31, 90, 200);
const REJECTED: RGBColor = RGBColor(200, 40, 40);
const MOVE: RGBColor = RGBColor(40, 150, 60);

/// A parent → child edge in (round, lane) coordinates.
struct Edge {
    from: (f64, f64),
    to: (f64, f64),
    /// Whether the parent is a co-parent on another island.
    graft: bool,
}

/// The lineage tree of a run, laid out.
pub struct LineageTree {
    /// `(round, lane position, admitted)` of every node.
    nodes: Vec<(f64, f64, bool)>,
    /// Every node's id, in the order of `nodes`.
    ids: Vec<String>,
    /// Parent → child edges.
    edges: Vec<Edge>,
    /// `(round, kind)` of every orchestrator move.
    moves: Vec<(usize, &'static str)>,
    islands: usize,
    rounds: usize,
}

impl LineageTree {
    /// Lays out the nodes and events of a replayed run.
    pub fn new(state: &SearchState) -> LineageTree {
        let mut at: HashMap<&str, (f64, f64)> = HashMap::new();
        let mut filled: HashMap<(usize, usize), usize> = HashMap::new();
        let mut nodes = Vec::new();
        let mut ids = Vec::new();
        for node in &state.nodes {
            ids.push(node.id.clone());
            let k = filled.entry((node.island, node.round)).or_default();
            let position = (node.round as f64, node.island as f64 + *k as f64 * SPREAD);
            *k += 1;
            at.insert(&node.id, position);
            nodes.push((position.0, position.1, node.admitted()));
        }
        let mut edges = Vec::new();
        for node in &state.nodes {
            let child = at[node.id.as_str()];
            for (k, parent) in node.parents.iter().enumerate() {
                let (Some(&from), Some(parent)) = (at.get(parent.as_str()), state.node(parent))
                else {
                    continue;
                };
                edges.push(Edge {
                    from,
                    to: child,
                    graft: k > 0 && parent.island != node.island,
                });
            }
        }
        let islands = state
            .nodes
            .iter()
            .map(|n| n.island + 1)
            .chain([state.islands.len(), 1])
            .max()
            .unwrap_or(1);
        let rounds = state.nodes.iter().map(|n| n.round).max().unwrap_or(0);
        LineageTree {
            nodes,
            ids,
            edges,
            moves: state
                .events
                .iter()
                .map(|e| (e.round, e.action.kind()))
                .collect(),
            islands,
            rounds: rounds.max(state.rounds_done),
        }
    }
}

impl Figure for LineageTree {
    fn size(&self) -> (u32, u32) {
        (1000, 200 + 110 * self.islands as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        let edge = BLACK.mix(0.45);
        let mut entries = vec![
            ("admitted", Mark::Dot(ADMITTED)),
            ("rejected", Mark::Crossed(REJECTED)),
            ("parent → child", Mark::Line(edge.into())),
            (
                "graft (co-parent from another island)",
                Mark::Line(GRAFT.stroke_width(2)),
            ),
        ];
        if !self.moves.is_empty() {
            entries.push(("orchestrator move", Mark::Dashed(MOVE)));
        }
        let area = legend_below(root, &entries)?;
        let top = self.islands as f64 - 0.35;
        let bottom = -0.5;
        let mut chart = ChartBuilder::on(&area)
            .caption("Lineage tree by island and round", (FONT, 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.5..self.rounds as f64 + 0.9, bottom..top)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("round")
            .x_labels(self.rounds.min(20) + 2)
            .x_label_formatter(&|x| whole(*x).map_or_else(String::new, |r| r.to_string()))
            .y_labels(self.islands + 1)
            .y_label_formatter(&|y| match whole(*y) {
                Some(i) if i >= 0 => format!("island {i}"),
                _ => String::new(),
            })
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .draw()?;
        chart.draw_series(
            self.edges
                .iter()
                .filter(|e| !e.graft)
                .map(|e| PathElement::new(arc(e.from, e.to), edge)),
        )?;
        chart.draw_series(
            self.edges
                .iter()
                .filter(|e| e.graft)
                .map(|e| PathElement::new(vec![e.from, e.to], GRAFT.stroke_width(2))),
        )?;
        for e in self.edges.iter().filter(|e| e.graft) {
            area.draw(&arrowhead(
                chart.backend_coord(&e.from),
                chart.backend_coord(&e.to),
            ))?;
        }
        chart.draw_series(
            self.nodes
                .iter()
                .filter(|n| n.2)
                .map(|&(x, y, _)| Circle::new((x, y), 6, ADMITTED.filled())),
        )?;
        chart.draw_series(self.nodes.iter().filter(|n| !n.2).map(|&(x, y, _)| {
            EmptyElement::at((x, y))
                + Circle::new((0, 0), 6, WHITE.filled())
                + Circle::new((0, 0), 6, REJECTED.stroke_width(2))
                + Cross::new((0, 0), 4, REJECTED.stroke_width(2))
        }))?;
        if self.nodes.len() <= MAX_LABELLED_NODES {
            for (&(x, y, _), id) in self.nodes.iter().zip(&self.ids) {
                let (px, py) = chart.backend_coord(&(x, y));
                area.draw(&Text::new(
                    id.as_str(),
                    (px + 7, py - 16),
                    (FONT, 10).into_font().color(&BLACK.mix(0.75)),
                ))?;
            }
        }
        let mut stacked: HashMap<usize, i32> = HashMap::new();
        for &(round, kind) in &self.moves {
            let x = round as f64 + 0.5;
            chart.draw_series(DashedLineSeries::new(
                vec![(x, bottom), (x, top)],
                6,
                4,
                MOVE.stroke_width(1),
            ))?;
            let line = stacked.entry(round).or_default();
            let (px, py) = chart.backend_coord(&(x, top));
            area.draw(&Text::new(
                kind,
                (px + 3, py + 2 + 14 * *line),
                (FONT, 12).into_font().color(&MOVE),
            ))?;
            *line += 1;
        }
        Ok(())
    }
}

/// A parent → child edge: straight between neighbouring rounds, else an arc above the lane
/// (higher for longer jumps, at most 0.4 of a lane) so that edges along one lane stay apart.
fn arc(from: (f64, f64), to: (f64, f64)) -> Vec<(f64, f64)> {
    let height = (0.12 * (to.0 - from.0 - 1.0)).clamp(0.0, 0.4);
    (0..=24)
        .map(|i| {
            let t = i as f64 / 24.0;
            (
                from.0 + (to.0 - from.0) * t,
                from.1 + (to.1 - from.1) * t + height * 4.0 * t * (1.0 - t),
            )
        })
        .collect()
}

/// `x` as a whole number when it is one (axis ticks at integers only).
fn whole(x: f64) -> Option<i64> {
    ((x - x.round()).abs() < 1e-9).then_some(x.round() as i64)
}

/// A filled triangle at pixel `to`, pointing away from `from`.
fn arrowhead(from: (i32, i32), to: (i32, i32)) -> Polygon<(i32, i32)> {
    let (dx, dy) = ((to.0 - from.0) as f64, (to.1 - from.1) as f64);
    let length = dx.hypot(dy).max(1.0);
    let (ux, uy) = (dx / length, dy / length);
    // Stop at the marker's rim (radius 6).
    let tip = (to.0 as f64 - 6.0 * ux, to.1 as f64 - 6.0 * uy);
    let base = (tip.0 - 11.0 * ux, tip.1 - 11.0 * uy);
    let corner = |side: f64| {
        (
            (base.0 - side * 5.0 * uy).round() as i32,
            (base.1 + side * 5.0 * ux).round() as i32,
        )
    };
    Polygon::new(
        vec![
            (tip.0.round() as i32, tip.1.round() as i32),
            corner(1.0),
            corner(-1.0),
        ],
        GRAFT.filled(),
    )
}
